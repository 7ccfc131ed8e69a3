//! Building C programs against the C library as a C developer would: the
//! build's libnewton_producer_c staged under the installed names
//! (libnewton_producer.so.0, libnewton_producer.a) with the header and a
//! newton-producer.pc made from capi/newton-producer.pc.in, then
//! `cc FILE $(pkg-config --cflags --libs newton-producer)`.
//!
//! Shared by capi/tests/c_abi.rs and the e2e test tests/tests/c_producer.rs
//! (included there with `#[path]`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// capi/ in the source tree.
pub fn capi_dir() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Compiled into newton-producer-c's tests or newton-e2e's (tests/).
    if here.join("newton-producer.pc.in").is_file() {
        here.to_path_buf()
    } else {
        here.parent().unwrap_or(here).join("capi")
    }
}

/// Where cargo writes libnewton_producer_c.{so,a} for the running test:
/// target/PROFILE/deps. (`cargo build` also copies them up to
/// target/PROFILE, `cargo test` does not: the copies there can be stale.)
pub fn artifact_dir() -> PathBuf {
    profile_dir().join("deps")
}

/// The profile directory the running test was built into (target/debug).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/debug/deps/TEST-HASH
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("the test executable lives in target/PROFILE/deps")
}

/// How the program links the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linking {
    /// libnewton_producer.so.0, found at run time through the rpath.
    Shared,
    /// libnewton_producer.a, with the .pc file's Libs.private.
    Static,
}

/// Stages the built library in `dir` as `make install PREFIX=dir` lays it
/// out (only the .a for [`Linking::Static`], so that `-lnewton_producer`
/// cannot pick the shared one) and returns the directory to put in
/// `PKG_CONFIG_PATH`.
pub fn stage(dir: &Path, linking: Linking) -> PathBuf {
    let built = artifact_dir();
    let (from, names): (PathBuf, &[&str]) = match linking {
        Linking::Shared => (
            built.join("libnewton_producer_c.so"),
            &["libnewton_producer.so.0", "libnewton_producer.so"],
        ),
        Linking::Static => (
            built.join("libnewton_producer_c.a"),
            &["libnewton_producer.a"],
        ),
    };
    assert!(
        from.is_file(),
        "{} is missing: run `cargo build -p newton-producer-c` (scripts/test.sh builds the \
         workspace first)",
        from.display()
    );
    let lib = dir.join("lib");
    let pkgconfig = lib.join("pkgconfig");
    std::fs::create_dir_all(&pkgconfig)
        .unwrap_or_else(|error| panic!("create {}: {error}", pkgconfig.display()));
    // Copies, not links: another cargo run on the same target directory (CI's second Orca pass
    // runs beside the first) may rebuild the file while the program runs.
    let (first, rest) = names.split_first().expect("at least one name");
    std::fs::copy(&from, lib.join(first))
        .unwrap_or_else(|error| panic!("copy {}: {error}", from.display()));
    for name in rest {
        let link = lib.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(first, &link)
            .unwrap_or_else(|error| panic!("link {}: {error}", link.display()));
    }
    let template = capi_dir().join("newton-producer.pc.in");
    let pc = std::fs::read_to_string(&template)
        .unwrap_or_else(|error| panic!("read {}: {error}", template.display()))
        .replace("@prefix@", &dir.display().to_string())
        .replace("@libdir@", &lib.display().to_string())
        .replace(
            "@includedir@",
            &capi_dir().join("include").display().to_string(),
        )
        .replace("@version@", env!("CARGO_PKG_VERSION"));
    std::fs::write(pkgconfig.join("newton-producer.pc"), pc).expect("write newton-producer.pc");
    pkgconfig
}

/// `pkg-config ARGS newton-producer` against the staged .pc file, split
/// into arguments.
fn pkg_config(pkgconfig: &Path, args: &[&str]) -> Vec<String> {
    let output = Command::new("pkg-config")
        .args(args)
        .arg("newton-producer")
        .env("PKG_CONFIG_PATH", pkgconfig)
        .output()
        .unwrap_or_else(|error| {
            panic!("run pkg-config: {error}; install it (scripts/install-deps.sh)")
        });
    assert!(
        output.status.success(),
        "pkg-config {args:?} newton-producer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Compiles `source` into `dir/NAME` with `cc`, warnings as errors, linked
/// as `linking` says through the staged .pc file; returns the program.
pub fn compile(source: &Path, dir: &Path, linking: Linking) -> PathBuf {
    let staged = dir.join(match linking {
        Linking::Shared => "shared",
        Linking::Static => "static",
    });
    let pkgconfig = stage(&staged, linking);
    let mut flags = pkg_config(&pkgconfig, &["--cflags"]);
    flags.extend(match linking {
        Linking::Shared => pkg_config(&pkgconfig, &["--libs"]),
        Linking::Static => pkg_config(&pkgconfig, &["--static", "--libs"]),
    });
    let name = source
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    let program = dir.join(name);
    let mut cc = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()));
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"])
        .arg(source)
        .arg("-o")
        .arg(&program)
        .args(&flags);
    if linking == Linking::Shared {
        cc.arg(format!("-Wl,-rpath,{}", staged.join("lib").display()));
    }
    let output = cc
        .output()
        .unwrap_or_else(|error| panic!("run cc: {error}; install gcc (scripts/install-deps.sh)"));
    assert!(
        output.status.success(),
        "cc {} failed ({cc:?}):\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    program
}

/// A fresh scratch directory for one test under target/tmp.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = profile_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
        .join("tmp")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|error| panic!("create {}: {error}", dir.display()));
    dir
}
