//! The sender socket: a private directory, a single-instance lock, and the
//! peer-uid check.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

/// Why the sender socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("another bridge already serves {0}; stop it first (only one bridge runs per session)")]
    AlreadyRunning(PathBuf),
    #[error("socket directory {path} is not private to this user ({why}); remove it or fix its permissions")]
    UnsafeDirectory { path: PathBuf, why: String },
    #[error("could not set up the sender socket at {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// A bound sender socket. Holding it holds the single-instance lock; dropping
/// it removes the socket file.
pub struct SenderSocket {
    pub listener: UnixListener,
    pub path: PathBuf,
    _lock: File,
}

impl Drop for SenderSocket {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Creates the private directory, takes the instance lock and binds.
pub fn bind(path: &Path) -> Result<SenderSocket, SocketError> {
    let io_error = |source| SocketError::Io {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    ensure_private_dir(dir)?;
    let lock = File::create(lock_path(path)).map_err(io_error)?;
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(SocketError::AlreadyRunning(path.to_owned()));
    }
    // We hold the lock, so a socket file left behind belongs to a dead bridge.
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_error(e)),
        _ => {}
    }
    let listener = UnixListener::bind(path).map_err(io_error)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).map_err(io_error)?;
    Ok(SenderSocket {
        listener,
        path: path.to_owned(),
        _lock: lock,
    })
}

fn lock_path(socket: &Path) -> PathBuf {
    let mut name = socket
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".lock");
    socket.with_file_name(name)
}

fn ensure_private_dir(dir: &Path) -> Result<(), SocketError> {
    let unsafe_dir = |why: String| SocketError::UnsafeDirectory {
        path: dir.to_owned(),
        why,
    };
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(source) => {
            return Err(SocketError::Io {
                path: dir.to_owned(),
                source,
            })
        }
    }
    let meta = fs::metadata(dir).map_err(|source| SocketError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let my_uid = rustix::process::getuid().as_raw();
    if meta.uid() != my_uid {
        return Err(unsafe_dir(format!(
            "owned by uid {}, not {my_uid}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(unsafe_dir(format!(
            "mode {:o} lets others in; expected 700",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

/// Only senders running as our own user may push trees.
pub fn check_peer(stream: &UnixStream) -> Result<u32, String> {
    let cred = rustix::net::sockopt::socket_peercred(stream)
        .map_err(|e| format!("cannot read the peer's credentials: {e}"))?;
    let my_uid = rustix::process::getuid();
    if cred.uid != my_uid {
        return Err(format!(
            "peer uid {} is not this user's uid {}",
            cred.uid.as_raw(),
            my_uid.as_raw()
        ));
    }
    Ok(cred.pid.as_raw_nonzero().get() as u32)
}
