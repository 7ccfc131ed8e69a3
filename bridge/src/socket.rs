//! The sender socket: a private directory, a single-instance lock, and the
//! admission of senders (peer uid, optional executable allow-list).

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

/// Who may push trees: this user's own uid always, the `--allow-uid` uids
/// besides, and, when `--allow-exe` lists any, only those executables.
#[derive(Clone, Debug, Default)]
pub struct Admission {
    pub extra_uids: Vec<u32>,
    pub executables: Vec<PathBuf>,
}

/// Why a connecting sender was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The peer's credentials could not be read.
    #[error("cannot read the peer's credentials: {0}")]
    NoCredentials(String),
    /// Another user (rule `peer-uid`): closed without a reply (docs/protocol.md §2.1).
    #[error("peer uid {uid} is neither this user's uid {mine} nor allowed by --allow-uid (rule peer-uid)")]
    Uid { uid: u32, mine: u32 },
    /// Not an allowed executable (rule `allow-exe`): told why, then closed.
    #[error(
        "sender executable {exe} (pid {pid}) is not allowed by the bridge's --allow-exe list \
         (rule allow-exe); ask the user to add it"
    )]
    Executable { pid: u32, exe: String },
}

impl Refusal {
    /// Whether the sender should get an `error` frame saying why (same user,
    /// only not on the allow-list) rather than a silent close.
    pub fn tell_sender(&self) -> bool {
        matches!(self, Refusal::Executable { .. })
    }
}

impl Admission {
    /// Whether a peer with `uid` running `exe` (None: unreadable) may connect.
    pub fn check(&self, uid: u32, mine: u32, pid: u32, exe: Option<&Path>) -> Result<(), Refusal> {
        if uid != mine && !self.extra_uids.contains(&uid) {
            return Err(Refusal::Uid { uid, mine });
        }
        if self.executables.is_empty() {
            return Ok(());
        }
        match exe {
            Some(exe) if self.executables.iter().any(|allowed| allowed == exe) => Ok(()),
            Some(exe) => Err(Refusal::Executable {
                pid,
                exe: exe.display().to_string(),
            }),
            None => Err(Refusal::Executable {
                pid,
                exe: "(unreadable: the process is gone or not ours)".into(),
            }),
        }
    }
}

/// A connected peer's credentials (SO_PEERCRED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub pid: u32,
    pub uid: u32,
}

/// Checks a connecting sender against `admission` (SO_PEERCRED); returns its credentials.
///
/// The executable is `/proc/PID/exe` read at accept time. That is a check of
/// the process that holds the pid *now*: a sender that connected, then
/// `exec`ed another program, or exited so that its pid was reused, is
/// judged by the new program. Every such process runs as an allowed uid
/// anyway (the uid check comes first and is race-free), so the allow-list
/// narrows which of the user's own programs may push trees; it is no
/// boundary against code already running as the user.
pub fn check_peer(stream: &UnixStream, admission: &Admission) -> Result<Peer, Refusal> {
    let cred = rustix::net::sockopt::socket_peercred(stream)
        .map_err(|e| Refusal::NoCredentials(e.to_string()))?;
    let mine = rustix::process::getuid().as_raw();
    let pid = cred.pid.as_raw_nonzero().get() as u32;
    let exe = if admission.executables.is_empty() {
        None
    } else {
        peer_executable(pid)
    };
    let uid = cred.uid.as_raw();
    admission.check(uid, mine, pid, exe.as_deref())?;
    Ok(Peer { pid, uid })
}

/// Same-user only, whatever the sender allow-lists say: the status socket,
/// peer-to-peer AT clients and the recorder.
pub fn check_same_user(stream: &UnixStream) -> Result<Peer, Refusal> {
    check_peer(stream, &Admission::default())
}

/// `/proc/PID/exe`, without the " (deleted)" the kernel appends once the
/// file was replaced (a package upgrade while the compositor runs): the path
/// it was started from is what the allow-list names.
fn peer_executable(pid: u32) -> Option<PathBuf> {
    let link = fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let text = link.to_str()?;
    Some(PathBuf::from(
        text.strip_suffix(" (deleted)").unwrap_or(text),
    ))
}

/// Canonical form of an `--allow-exe` path (symlinks resolved, as
/// `/proc/PID/exe` shows them); a path that does not exist is kept as given.
pub fn canonical_executable(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_admits_only_this_user() {
        let admission = Admission::default();
        assert!(admission.check(1000, 1000, 7, None).is_ok());
        let refused = admission.check(0, 1000, 7, None).unwrap_err();
        assert!(matches!(refused, Refusal::Uid { uid: 0, mine: 1000 }));
        assert!(!refused.tell_sender());
        assert!(refused.to_string().contains("rule peer-uid"));
    }

    #[test]
    fn extra_uids_are_admitted_besides_our_own() {
        let admission = Admission {
            extra_uids: vec![0],
            executables: Vec::new(),
        };
        assert!(admission.check(0, 1000, 7, None).is_ok());
        assert!(admission.check(1000, 1000, 7, None).is_ok());
        assert!(admission.check(1001, 1000, 7, None).is_err());
    }

    #[test]
    fn executables_narrow_the_admitted_senders() {
        let admission = Admission {
            extra_uids: Vec::new(),
            executables: vec![PathBuf::from("/usr/bin/compositor")],
        };
        let allowed = Path::new("/usr/bin/compositor");
        assert!(admission.check(1000, 1000, 7, Some(allowed)).is_ok());
        let refused = admission
            .check(1000, 1000, 7, Some(Path::new("/home/u/evil")))
            .unwrap_err();
        assert!(refused.tell_sender());
        let text = refused.to_string();
        assert!(
            text.contains("/home/u/evil") && text.contains("rule allow-exe"),
            "{text}"
        );
        // Unreadable executable: refused, never admitted by default.
        assert!(admission.check(1000, 1000, 7, None).is_err());
        // The uid check still comes first.
        assert!(matches!(
            admission.check(0, 1000, 7, Some(allowed)),
            Err(Refusal::Uid { .. })
        ));
    }

    #[test]
    fn a_replaced_executable_is_named_by_its_path() {
        let own = peer_executable(std::process::id()).expect("our own exe");
        assert!(own.is_absolute());
        assert!(!own.to_string_lossy().ends_with(" (deleted)"));
    }
}
