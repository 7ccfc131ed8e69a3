//! libFuzzer target: a sender byte stream → `ReceiverSession` in arbitrary
//! chunks → replica. See `newton_cache_fuzz::protocol`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    newton_cache_fuzz::protocol::protocol_session(data);
});
