//! Gives the shared library the SONAME `make install` installs it under
//! (libnewton_producer.so.ABI), so programs linked against it record that
//! name and not the build directory's file name.

/// The C ABI's version: bumped on every incompatible change to
/// include/newton_producer.h (a removed or changed function, struct or value).
const ABI_VERSION: u32 = 0;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnewton_producer.so.{ABI_VERSION}");
    }
    println!("cargo:rustc-env=NEWTON_PRODUCER_ABI_VERSION={ABI_VERSION}");
}
