//! Where the bridge listens by default.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Environment variable overriding the socket path.
pub const SOCKET_ENV_VAR: &str = "NEWTON_ATSPI_SOCKET";

/// Directory, under `$XDG_RUNTIME_DIR`, holding the socket (mode 0700).
pub const SOCKET_DIR_NAME: &str = "newton-atspi";

/// File name of the socket inside [`SOCKET_DIR_NAME`].
pub const SOCKET_FILE_NAME: &str = "bridge.sock";

/// Why no default socket path could be found.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SocketPathError {
    /// `$XDG_RUNTIME_DIR` is unset or empty and there is no override.
    #[error(
        "XDG_RUNTIME_DIR is not set, so the default socket path \
         $XDG_RUNTIME_DIR/{SOCKET_DIR_NAME}/{SOCKET_FILE_NAME} is unknown; set XDG_RUNTIME_DIR \
         (normally /run/user/$UID), set {SOCKET_ENV_VAR}, or pass --socket PATH"
    )]
    RuntimeDirUnset,
    /// `$XDG_RUNTIME_DIR` is relative, which the XDG spec says to ignore.
    #[error(
        "XDG_RUNTIME_DIR is {0:?}, a relative path, which must be ignored; set it to an \
         absolute path, set {SOCKET_ENV_VAR}, or pass --socket PATH"
    )]
    RuntimeDirRelative(PathBuf),
}

/// The socket path from the process environment: `$NEWTON_ATSPI_SOCKET` if
/// set and non-empty, else `$XDG_RUNTIME_DIR/newton-atspi/bridge.sock`.
pub fn default_socket_path() -> Result<PathBuf, SocketPathError> {
    socket_path_from_env(
        std::env::var_os(SOCKET_ENV_VAR),
        std::env::var_os("XDG_RUNTIME_DIR"),
    )
}

/// [`default_socket_path`] over explicit environment values (for tests and
/// for callers that read the environment themselves).
pub fn socket_path_from_env(
    override_path: Option<OsString>,
    xdg_runtime_dir: Option<OsString>,
) -> Result<PathBuf, SocketPathError> {
    if let Some(path) = override_path.filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let runtime_dir = xdg_runtime_dir
        .filter(|value| !value.is_empty())
        .ok_or(SocketPathError::RuntimeDirUnset)?;
    let runtime_dir = PathBuf::from(runtime_dir);
    if runtime_dir.is_relative() {
        return Err(SocketPathError::RuntimeDirRelative(runtime_dir));
    }
    Ok(socket_path_in(&runtime_dir))
}

/// The socket path inside a given runtime directory.
pub fn socket_path_in(runtime_dir: &Path) -> PathBuf {
    runtime_dir.join(SOCKET_DIR_NAME).join(SOCKET_FILE_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(value: &str) -> Option<OsString> {
        Some(OsString::from(value))
    }

    #[test]
    fn uses_the_runtime_dir() {
        let path = socket_path_from_env(None, os("/run/user/1000")).unwrap();
        assert_eq!(
            path,
            PathBuf::from("/run/user/1000/newton-atspi/bridge.sock")
        );
    }

    #[test]
    fn override_wins_even_without_runtime_dir() {
        assert_eq!(
            socket_path_from_env(os("/tmp/x.sock"), None).unwrap(),
            PathBuf::from("/tmp/x.sock")
        );
        let path = socket_path_from_env(os("/tmp/x.sock"), os("/run/user/1")).unwrap();
        assert_eq!(path, PathBuf::from("/tmp/x.sock"));
    }

    #[test]
    fn empty_values_count_as_unset() {
        let error = socket_path_from_env(os(""), os("")).unwrap_err();
        assert_eq!(error, SocketPathError::RuntimeDirUnset);
        let message = error.to_string();
        assert!(
            message.contains("--socket") && message.contains(SOCKET_ENV_VAR),
            "{message}"
        );
    }

    #[test]
    fn relative_runtime_dir_is_refused() {
        let error = socket_path_from_env(None, os("run/user")).unwrap_err();
        assert_eq!(
            error,
            SocketPathError::RuntimeDirRelative(PathBuf::from("run/user"))
        );
    }
}
