//! Child processes tracked by PID, stopped with SIGTERM, a bounded wait, then SIGKILL.

use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// A child started by the harness, with its stderr captured to a file in the session directory.
#[derive(Debug)]
pub struct TrackedChild {
    /// Short name used in messages and log file names (`xvfb`, `orca`, …).
    pub name: String,
    pub stderr_path: PathBuf,
    child: Child,
    exit: Option<ExitStatus>,
}

impl TrackedChild {
    pub(crate) fn new(name: String, child: Child, stderr_path: PathBuf) -> TrackedChild {
        TrackedChild {
            name,
            stderr_path,
            child,
            exit: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reaps the child if it has exited; returns its status then.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten();
        }
        self.exit
    }

    pub fn is_running(&mut self) -> bool {
        self.exit_status().is_none()
    }

    /// The last 4 KiB of the child's stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        file_tail(&self.stderr_path, 4096)
    }

    pub(crate) fn stdout_pipe(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL and reap. Returns the exit status, or `None` if
    /// the child could not be reaped (should not happen for our own children).
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.terminate_with(grace, || {})
    }

    /// [`terminate`](Self::terminate), calling `nudge` every 500 ms during the grace period.
    pub fn terminate_with(
        &mut self,
        grace: Duration,
        mut nudge: impl FnMut(),
    ) -> Option<ExitStatus> {
        if let Some(status) = self.exit_status() {
            return Some(status);
        }
        send_signal(self.pid(), Signal::TERM);
        let start = Instant::now();
        let mut last_nudge = Instant::now();
        while start.elapsed() < grace {
            if let Some(status) = self.exit_status() {
                return Some(status);
            }
            if last_nudge.elapsed() >= Duration::from_millis(500) {
                nudge();
                last_nudge = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "newton-e2e: {} (pid {}) ignored SIGTERM for {:.1} s; sending SIGKILL",
            self.name,
            self.pid(),
            grace.as_secs_f64()
        );
        let _ = self.child.kill();
        self.exit = self.child.wait().ok();
        self.exit
    }
}

/// Sends `signal` to `pid`, ignoring "no such process".
pub(crate) fn send_signal(pid: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(pid, signal);
    }
}

/// True while `/proc/<pid>` exists and the process is not a zombie.
pub(crate) fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// PIDs of processes whose environment contains `marker` (`NAME=value`), i.e. every descendant
/// of the session, including ones re-parented to init or started by D-Bus activation.
pub(crate) fn pids_with_env_marker(marker: &str) -> Vec<u32> {
    let own = std::process::id();
    let mut needle = marker.as_bytes().to_vec();
    needle.push(0);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                let mut env = env;
                env.push(0);
                env.starts_with(&needle) || contains(&env, &[b"\0".as_slice(), &needle].concat())
            })
        })
        .filter(|&pid| pid_alive(pid))
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Last `max` bytes of a file, lossily decoded.
pub(crate) fn file_tail(path: &std::path::Path, max: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let start = bytes.len().saturating_sub(max);
            String::from_utf8_lossy(bytes.get(start..).unwrap_or_default()).into_owned()
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}
