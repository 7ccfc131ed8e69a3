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
    #[error(transparent)]
    Activation(#[from] crate::activation::ActivationError),
    #[error(
        "the service manager passed a socket bound to {passed} but the bridge serves {expected}; \
         make ListenStream= in newton-atspi-bridge.socket and --socket / NEWTON_ATSPI_SOCKET agree"
    )]
    PassedElsewhere { passed: String, expected: PathBuf },
    #[error(
        "something already listens at {0} without running a bridge: the socket unit \
         (newton-atspi-bridge.socket) starts the bridge when a sender connects; to run one by \
         hand, stop it first (systemctl --user stop newton-atspi-bridge.socket)"
    )]
    ListenedByOther(PathBuf),
}

/// A bound sender socket. Holding it holds the single-instance lock; dropping
/// it removes the socket file when the bridge bound it (a socket passed by
/// the service manager stays: it outlives the bridge, which is its point).
pub struct SenderSocket {
    pub listener: UnixListener,
    pub path: PathBuf,
    /// Whether the service manager passed the socket (socket activation).
    pub passed: bool,
    _lock: File,
}

impl Drop for SenderSocket {
    fn drop(&mut self) {
        if !self.passed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The sender socket at `path`: the one the service manager passed
/// (`LISTEN_FDS`, see activation.rs) when there is one, else bound here.
/// Either way the instance lock is taken first, so a second bridge refuses.
pub fn listen(path: &Path) -> Result<SenderSocket, SocketError> {
    match crate::activation::passed_listener()? {
        Some((listener, bound_to)) => adopt(path, listener, bound_to),
        None => bind(path),
    }
}

/// Takes the instance lock for a socket the service manager bound.
fn adopt(
    path: &Path,
    listener: UnixListener,
    bound_to: Option<PathBuf>,
) -> Result<SenderSocket, SocketError> {
    if bound_to.as_deref() != Some(path) {
        return Err(SocketError::PassedElsewhere {
            passed: bound_to.map_or_else(
                || "(an unnamed address)".into(),
                |p| p.display().to_string(),
            ),
            expected: path.to_owned(),
        });
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    ensure_private_dir(dir)?;
    let lock = take_instance_lock(path)?;
    Ok(SenderSocket {
        listener,
        path: path.to_owned(),
        passed: true,
        _lock: lock,
    })
}

/// Creates the private directory, takes the instance lock and binds.
pub fn bind(path: &Path) -> Result<SenderSocket, SocketError> {
    let io_error = |source| SocketError::Io {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    ensure_private_dir(dir)?;
    let lock = take_instance_lock(path)?;
    // We hold the lock, so a socket file left behind belongs to a dead
    // bridge — unless a socket unit listens there (its bridge is not
    // running): replacing its socket would cut off every sender it queues.
    if is_listening(path) {
        return Err(SocketError::ListenedByOther(path.to_owned()));
    }
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_error(e)),
        _ => {}
    }
    let listener = UnixListener::bind(path).map_err(io_error)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).map_err(io_error)?;
    Ok(SenderSocket {
        listener,
        path: path.to_owned(),
        passed: false,
        _lock: lock,
    })
}

fn take_instance_lock(path: &Path) -> Result<File, SocketError> {
    let lock = File::create(lock_path(path)).map_err(|source| SocketError::Io {
        path: path.to_owned(),
        source,
    })?;
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(SocketError::AlreadyRunning(path.to_owned()));
    }
    Ok(lock)
}

/// Whether some process holds a listening socket bound to `path`, read from
/// /proc/net/unix (connecting to find out would start a socket-activated
/// bridge).
fn is_listening(path: &Path) -> bool {
    let Ok(table) = fs::read_to_string("/proc/net/unix") else {
        return false;
    };
    listening_in_table(&table, path)
}

/// /proc/net/unix rows: `Num RefCount Protocol Flags Type St Inode Path`;
/// flag 0x10000 (`__SO_ACCEPTCON`) marks a listening socket.
fn listening_in_table(table: &str, path: &Path) -> bool {
    let Some(wanted) = path.to_str() else {
        return false;
    };
    table.lines().skip(1).any(|row| {
        let fields: Vec<&str> = row.split_whitespace().collect();
        let listening = fields
            .get(3)
            .and_then(|flags| u32::from_str_radix(flags, 16).ok())
            .is_some_and(|flags| flags & 0x10000 != 0);
        listening && fields.get(7) == Some(&wanted)
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

/// A connected peer's credentials (SO_PEERCRED), as the kernel translates
/// them into the bridge's own pid and user namespaces: a sender in a sandbox
/// (its own pid namespace, Flatpak's or bubblewrap's user namespace) shows
/// here with its pid and uid as the bridge's side of the desktop sees them.
/// A pid of 0 is a peer the bridge's pid namespace cannot see (a bridge in a
/// container, its sender outside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub pid: u32,
    pub uid: u32,
}

/// What the bridge knows of the process behind an application's sender
/// connection: the kernel's word ([`Peer`], read once at accept) and the
/// hello's (`app.pid`), kept apart. The bridge reports and checks only the
/// kernel's; the hello's pid is a claim, shown beside it and never used to
/// find, count or admit anything. A sandboxed sender's claim is its pid in
/// its own pid namespace, and a compositor sending for an application
/// claims the application's pid while the kernel reports the compositor's:
/// neither is an error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderCredentials {
    /// SO_PEERCRED at accept; `None` for `serve --stdio`, which has no peer.
    pub peer: Option<Peer>,
    /// The hello's `app.pid`, unverified.
    pub claimed_pid: Option<u32>,
}

impl SenderCredentials {
    /// Takes the hello's pid out of `info` into `claimed_pid`, so that no
    /// later reader of the application's [`AppInfo`] can mistake the claim
    /// for the process: the bridge's copy of a hello carries no pid.
    ///
    /// [`AppInfo`]: newton_push_protocol::AppInfo
    pub fn from_hello(info: &mut newton_push_protocol::AppInfo, peer: Option<Peer>) -> Self {
        Self {
            peer,
            claimed_pid: info.pid.take(),
        }
    }

    /// The sender's pid as the kernel reports it.
    pub fn pid(&self) -> Option<u32> {
        self.peer.map(|peer| peer.pid)
    }

    /// The sender's uid as the kernel reports it.
    pub fn uid(&self) -> Option<u32> {
        self.peer.map(|peer| peer.uid)
    }

    /// `(claimed, kernel's)` when the hello names a pid other than the
    /// kernel's; nothing when they agree or either is unknown.
    pub fn mismatch(&self) -> Option<(u32, u32)> {
        let claimed = self.claimed_pid?;
        let real = self.pid()?;
        (claimed != real).then_some((claimed, real))
    }
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
    let (pid, uid) = crate::unsafe_os::peer_credentials(stream)
        .map_err(|e| Refusal::NoCredentials(e.to_string()))?;
    let mine = rustix::process::getuid().as_raw();
    // 0: a peer outside this pid namespace, whose executable cannot be
    // looked up (an allow-list then refuses it).
    let pid = pid.unwrap_or(0);
    let exe = if admission.executables.is_empty() || pid == 0 {
        None
    } else {
        peer_executable(pid)
    };
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
    fn the_hello_pid_is_only_a_claim_beside_the_kernels() {
        let mut info = newton_push_protocol::AppInfo {
            app_id: "org.example.Sandboxed".into(),
            name: "Sandboxed".into(),
            pid: Some(2),
            ..Default::default()
        };
        let peer = Peer {
            pid: 40123,
            uid: 1000,
        };
        let credentials = SenderCredentials::from_hello(&mut info, Some(peer));
        assert_eq!(
            info.pid, None,
            "the bridge's copy of the hello keeps no pid"
        );
        assert_eq!(credentials.pid(), Some(40123));
        assert_eq!(credentials.uid(), Some(1000));
        assert_eq!(credentials.claimed_pid, Some(2));
        assert_eq!(credentials.mismatch(), Some((2, 40123)));

        // Agreeing, unclaimed and peerless (--stdio) hellos are no mismatch.
        let mut agreeing = newton_push_protocol::AppInfo {
            pid: Some(40123),
            ..Default::default()
        };
        assert_eq!(
            SenderCredentials::from_hello(&mut agreeing, Some(peer)).mismatch(),
            None
        );
        let mut unclaimed = newton_push_protocol::AppInfo::default();
        let unclaimed = SenderCredentials::from_hello(&mut unclaimed, Some(peer));
        assert_eq!((unclaimed.pid(), unclaimed.mismatch()), (Some(40123), None));
        let mut stdio = newton_push_protocol::AppInfo {
            pid: Some(7),
            ..Default::default()
        };
        let stdio = SenderCredentials::from_hello(&mut stdio, None);
        assert_eq!(
            (
                stdio.pid(),
                stdio.uid(),
                stdio.claimed_pid,
                stdio.mismatch()
            ),
            (None, None, Some(7), None)
        );
    }

    #[test]
    fn listening_sockets_are_found_by_path_in_the_proc_table() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 16161 /run/user/1000/newton-atspi/bridge.sock\n\
            0000000000000000: 00000003 00000000 00000000 0001 03 16162 /tmp/connected.sock\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 16163\n";
        let path = Path::new("/run/user/1000/newton-atspi/bridge.sock");
        assert!(listening_in_table(table, path));
        assert!(!listening_in_table(table, Path::new("/tmp/connected.sock")));
        assert!(!listening_in_table(table, Path::new("/tmp/other.sock")));
    }

    #[test]
    fn our_own_listener_shows_in_proc_net_unix() {
        let dir = std::env::temp_dir().join(format!("newton-listening-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("l.sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        assert!(is_listening(&path));
        drop(listener);
        assert!(!is_listening(&path), "a file left behind is stale");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_replaced_executable_is_named_by_its_path() {
        let own = peer_executable(std::process::id()).expect("our own exe");
        assert!(own.is_absolute());
        assert!(!own.to_string_lossy().ends_with(" (deleted)"));
    }
}
