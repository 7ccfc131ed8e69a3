//! The committed C header (capi/include/newton_producer.h) is what cbindgen
//! generates from the Rust source: a change to an exported function, type or
//! its documentation must come with the regenerated header.
//! `cd capi/header && NEWTON_UPDATE_HEADER=1 cargo test` rewrites it
//! (refused under CI).

use newton_producer_c_header::{generate, header_path};

#[test]
fn the_committed_header_is_generated_from_the_source() {
    let path = header_path();
    let generated = generate().unwrap_or_else(|error| panic!("{error}"));
    if std::env::var("NEWTON_UPDATE_HEADER").is_ok_and(|value| value == "1") {
        assert!(
            std::env::var_os("CI").is_none_or(|value| value.is_empty() || value == "false"),
            "NEWTON_UPDATE_HEADER=1 is refused under CI: CI compares the committed header"
        );
        std::fs::write(&path, &generated)
            .unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "{} differs from what cbindgen generates from capi/src (first at line {}: committed \
             {:?}, generated {:?}); run `cd capi/header && NEWTON_UPDATE_HEADER=1 cargo \
             test` and commit the header (and raise ABI_VERSION in \
             capi/build.rs if the change is incompatible)",
            path.display(),
            first + 1,
            committed.lines().nth(first).unwrap_or("<end>"),
            generated.lines().nth(first).unwrap_or("<end>"),
        );
    }
}
