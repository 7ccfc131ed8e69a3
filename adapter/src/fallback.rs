//! The in-process bridge: when no bridge answers on the session's socket, the
//! project's own daemon runs on a thread of this process, for this one
//! application, on a socket of its own; the adapter's connection goes there,
//! and the application is on the accessibility bus as it would be with
//! accesskit_unix. When the session's bridge appears, the connection moves to
//! it (docs/adoption.md).
//!
//! Turned on by [`crate::serve_in_process_without_bridge`] (the
//! `accesskit_unix` shim calls it), and off again by
//! `NEWTON_ACCESSKIT_IN_PROCESS=0` in the environment.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use newton_atspi_daemon::ServeArgs;

/// Whether the application asked for the in-process bridge.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// The environment variable that turns the in-process bridge off (`0`).
pub const IN_PROCESS_ENV: &str = "NEWTON_ACCESSKIT_IN_PROCESS";

/// How long the in-process daemon may take to bind its socket.
const READY_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether the adapter serves in-process when no bridge answers.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
        && std::env::var_os(IN_PROCESS_ENV).is_none_or(|value| value != "0")
}

/// The daemon on a thread of this process.
pub(crate) struct InProcessBridge {
    stop: async_channel::Sender<()>,
    thread: std::thread::JoinHandle<Result<(), String>>,
    dir: PathBuf,
    socket: PathBuf,
}

impl InProcessBridge {
    /// Starts the daemon and waits (at most [`READY_TIMEOUT`]) until its
    /// socket exists. The daemon then connects to the accessibility bus by
    /// itself (waiting for it when there is none yet) before it answers.
    pub(crate) fn start() -> Result<Self, String> {
        let dir = private_dir()?;
        let socket = dir.join("bridge.sock");
        let serve_args = ServeArgs {
            socket: Some(socket.clone()),
            // This process's one connection, and the next while the last
            // one closes. (The directory is private to the user; an
            // executable allow-list would add little, and would refuse this
            // very process once its executable was replaced by an upgrade.)
            max_senders: 2,
            max_senders_per_uid: 2,
            ..ServeArgs::default_limits()
        };
        let (stop, stop_rx) = async_channel::bounded::<()>(1);
        let thread = std::thread::Builder::new()
            .name("newton-accesskit-bridge".into())
            .spawn(move || {
                newton_atspi_daemon::run_embedded(serve_args, stop_rx).map_err(|e| e.to_string())
            })
            .map_err(|e| format!("cannot start the in-process bridge's thread: {e}"))?;
        let bridge = InProcessBridge {
            stop,
            thread,
            dir,
            socket,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !bridge.socket.exists() {
            if bridge.thread.is_finished() || Instant::now() >= deadline {
                let socket = bridge.socket.display().to_string();
                let why = match bridge.stop() {
                    Err(error) => error,
                    Ok(()) => format!("no socket at {socket} after {READY_TIMEOUT:?}"),
                };
                return Err(format!("the in-process bridge did not start: {why}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(bridge)
    }

    /// Whether the daemon's thread still runs (it ends only when stopped,
    /// or when it failed).
    pub(crate) fn is_running(&self) -> bool {
        !self.thread.is_finished()
    }

    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stops the daemon and waits until it has ended: every application it
    /// served has left the accessibility bus (the daemon's shutdown removes
    /// them, bounded by its own 2 s). Removes its directory.
    pub(crate) fn stop(self) -> Result<(), String> {
        self.stop.close();
        let ended = self
            .thread
            .join()
            .map_err(|_| "the in-process bridge's thread panicked".to_string())
            .and_then(|result| result);
        let _ = std::fs::remove_dir_all(&self.dir);
        ended
    }
}

/// `$XDG_RUNTIME_DIR/newton-accesskit/<pid>` (the daemon creates it private
/// to the user and checks it), or the same under the temporary directory
/// when the runtime directory is not set.
fn private_dir() -> Result<PathBuf, String> {
    let base = match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(runtime) => PathBuf::from(runtime).join("newton-accesskit"),
        None => std::env::temp_dir().join(format!(
            "newton-accesskit-{}",
            rustix::process::getuid().as_raw()
        )),
    };
    if base.is_relative() {
        return Err(format!(
            "XDG_RUNTIME_DIR is relative ({}); cannot place the in-process bridge's socket",
            base.display()
        ));
    }
    remove_stale_dirs(&base);
    Ok(base.join(std::process::id().to_string()))
}

/// Removes what in-process bridges of processes that no longer run left in
/// `base` (a process that exits while serving in-process never stops its
/// daemon, so its directory, socket and lock file stay). Best effort: a
/// directory of a live process, or anything not named by a pid, is left.
fn remove_stale_dirs(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether a bridge listens on the session's socket: its file exists and a
/// connection is accepted (a socket unit accepts for a bridge it starts).
/// The probe connection is closed before any hello: the bridge counts it and
/// forgets it.
pub(crate) fn session_bridge_listens(path: &Path) -> bool {
    path.exists() && std::os::unix::net::UnixStream::connect(path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "newton-accesskit-test-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a scratch directory");
        dir
    }

    #[test]
    fn stale_directories_of_dead_processes_go_and_the_others_stay() {
        let base = scratch("stale");
        // Above any pid_max Linux allows (2^22): no such process.
        let dead = base.join("4194305");
        let mine = base.join(std::process::id().to_string());
        let other = base.join("not-a-pid");
        for dir in [&dead, &mine, &other] {
            std::fs::create_dir_all(dir).expect("create");
            std::fs::write(dir.join("bridge.sock.lock"), b"").expect("write");
        }
        remove_stale_dirs(&base);
        assert!(!dead.exists(), "a dead process's directory stays");
        assert!(mine.exists(), "this process's directory went");
        assert!(other.exists(), "a directory not named by a pid went");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_session_bridge_listens_only_while_its_socket_accepts() {
        let base = scratch("listens");
        let path = base.join("bridge.sock");
        assert!(!session_bridge_listens(&path), "no socket file");
        let listener = UnixListener::bind(&path).expect("bind");
        assert!(session_bridge_listens(&path), "a listening socket");
        drop(listener);
        assert!(path.exists(), "the socket file outlives its listener");
        assert!(
            !session_bridge_listens(&path),
            "a socket file left by a killed bridge"
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
