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

/// The `newton-atspi-bridge` binary: `$NEWTON_BRIDGE_BIN` if set, else the one in the same
/// target directory and profile as the running test executable (`target/debug/deps/x` →
/// `target/debug/newton-atspi-bridge`), else `<workspace>/target/debug/newton-atspi-bridge`.
pub fn bridge_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("NEWTON_BRIDGE_BIN") {
        return existing(PathBuf::from(path));
    }
    let beside_tests = std::env::current_exe().ok().and_then(|exe| {
        exe.parent()?
            .parent()
            .map(|profile| profile.join("newton-atspi-bridge"))
    });
    if let Some(path) = beside_tests.filter(|p| p.is_file()) {
        return Ok(path);
    }
    existing(workspace_root().join("target/debug/newton-atspi-bridge"))
}

fn existing(path: PathBuf) -> Result<PathBuf> {
    if path.is_file() {
        Ok(path)
    } else {
        Err(HarnessError::Other(format!(
            "bridge binary {} not found: run `cargo build -p newton-atspi-bridge` first \
             (or set NEWTON_BRIDGE_BIN)",
            path.display()
        )))
    }
}
