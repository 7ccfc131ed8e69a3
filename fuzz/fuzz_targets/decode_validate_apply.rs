//! libFuzzer target: bytes → JSON or postcard `TreeUpdate` sequence →
//! `AppReplica` commits. Must never panic or hang.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    newton_cache_fuzz::decode_validate_apply(data);
});
