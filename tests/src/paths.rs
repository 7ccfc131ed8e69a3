//! Where the workspace, the Python helpers and the bridge binary live.

use std::path::{Path, PathBuf};

use crate::{HarnessError, Result};

/// The interpreter for tests/py scripts: Debian's, because pyatspi and python3-dbus are Debian
/// packages (a pyenv or venv `python3` on PATH would not have them).
pub fn python() -> &'static Path {
    Path::new("/usr/bin/python3")
}

/// Root of the Cargo workspace (parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Path of a script in tests/py.
pub fn py_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("py").join(name)
}

/// The `newton-atspi-bridge` binary: `$NEWTON_BRIDGE_BIN` if set (the CI's Orca 48.1 pass sets
/// it to the release build the package ships), else [`workspace_binary`]'s.
pub fn bridge_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("NEWTON_BRIDGE_BIN") {
        return existing(PathBuf::from(path), "NEWTON_BRIDGE_BIN");
    }
    let path = existing(workspace_binary("newton-atspi-bridge"), "NEWTON_BRIDGE_BIN")?;
    warn_if_stale(&path);
    Ok(path)
}

/// A workspace binary named after its package (`newton-live-app`, `newton-live-egui`). Panics
/// with the build command when it is missing: a test cannot run without it.
pub fn workspace_binary_or_panic(package: &str) -> PathBuf {
    let path = workspace_binary(package);
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build -p {package}`",
        path.display()
    );
    path
}

/// Where a workspace binary is: in the running test executable's target directory and profile
/// (`target/debug/deps/x` → `target/debug/<name>`) if it is there, else
/// `<workspace>/target/debug/<name>`.
pub fn workspace_binary(name: &str) -> PathBuf {
    let beside_tests = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join(name)));
    beside_tests
        .filter(|path| path.is_file())
        .unwrap_or_else(|| workspace_root().join("target/debug").join(name))
}

/// Crates compiled into the bridge binary; a source newer than the binary means a stale build.
const BRIDGE_SOURCES: &[&str] = &[
    "bridge/src",
    "tools/src",
    "atspi-client/src",
    "atspi-shim/src",
    "cache/src",
    "protocol/src",
    "producer/src",
];

/// Warns (loudly, without failing) when a bridge source is newer than the binary: the tests
/// would then exercise old code. `cargo build -p newton-atspi-bridge` fixes it.
fn warn_if_stale(binary: &Path) {
    // Once per test binary: the bridge is looked up by every test.
    static CHECKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if CHECKED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let Ok(built) = binary.metadata().and_then(|m| m.modified()) else {
        return;
    };
    let root = workspace_root();
    let newer = BRIDGE_SOURCES
        .iter()
        .find_map(|dir| newer_file(&root.join(dir), built));
    if let Some(source) = newer {
        crate::summary_note(
            "stale binary",
            &format!(
                "WARNING: {} is newer than {}; the tests run a stale bridge. \
                 Run `cargo build -p newton-atspi-bridge` (scripts/test.sh does).",
                source.display(),
                binary.display()
            ),
        );
    }
}

fn newer_file(dir: &Path, than: std::time::SystemTime) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .find_map(|entry| {
            let path = entry.path();
            let meta = entry.metadata().ok()?;
            if meta.is_dir() {
                newer_file(&path, than)
            } else {
                (meta.modified().ok()? > than).then_some(path)
            }
        })
}

/// `path` if it is a file; else an error saying what to build, or which variable to set.
pub(crate) fn existing(path: PathBuf, variable: &str) -> Result<PathBuf> {
    if path.is_file() {
        return Ok(path);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Err(HarnessError::Other(format!(
        "{} not found: run `cargo build -p {name}` first (or set {variable} to an absolute \
         path: cargo runs tests from their crate's directory)",
        path.display()
    )))
}
