//! libFuzzer target: structured AT-SPI method calls → the shim's
//! `handle_call` on fixture and fuzzed replicas. See
//! `newton_cache_fuzz::shim`.
#![no_main]

libfuzzer_sys::fuzz_target!(init: {
    // Build the fixture replicas before the first input, so their cost is
    // not charged to it (libFuzzer's -timeout).
    newton_cache_fuzz::shim::fixture_subjects();
}, |data: &[u8]| {
    newton_cache_fuzz::shim::atspi_calls(data);
});
