//! The C header of `newton-producer-c` as cbindgen writes it from `capi/src`
//! with `capi/header/cbindgen.toml`; `tests/header.rs` compares it with the
//! committed `capi/include/newton_producer.h`.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// `capi/` in the source tree.
pub fn capi_dir() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The committed header's path.
pub fn header_path() -> PathBuf {
    capi_dir().join("include/newton_producer.h")
}

/// The header cbindgen generates from capi/src (lib.rs and the modules it
/// declares; no `cargo metadata` run, no dependency parsed), or why it
/// cannot.
pub fn generate() -> Result<String, String> {
    let config_path = capi_dir().join("header/cbindgen.toml");
    let config = cbindgen::Config::from_file(&config_path)
        .map_err(|error| format!("read {}: {error}", config_path.display()))?;
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(capi_dir().join("src/lib.rs"))
        .generate()
        .map_err(|error| format!("cbindgen failed on capi/src: {error}"))?;
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).map_err(|error| format!("cbindgen wrote non-UTF-8: {error}"))
}
