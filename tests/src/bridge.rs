//! The bridge under test: `newton-atspi-bridge serve` in a session, and fixture replays into it.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use crate::{bridge_binary, wait_until, HarnessError, Result, TestSession};

/// A running `newton-atspi-bridge serve --socket <session>/bridge.sock`.
#[derive(Debug)]
pub struct Bridge {
    pid: u32,
    pub socket: PathBuf,
}

/// A `replay --fast --stay` whose whole stream has been acknowledged by the bridge (the app
/// stays on the desktop until the replay process is stopped).
#[derive(Debug)]
pub struct Replay {
    pub pid: u32,
    /// The replay's summary line ("replayed N messages (C commits) …; R rejected").
    pub summary: String,
}

impl Bridge {
    /// Starts the bridge and waits until its socket accepts connections.
    pub fn start(session: &mut TestSession) -> Result<Bridge> {
        let socket = session.dir().join("bridge.sock");
        let mut cmd = session.command(bridge_binary()?);
        cmd.arg("serve")
            .arg("--socket")
            .arg(&socket)
            .args(["--log-level", "debug"]);
        let pid = session.spawn("bridge", cmd)?;
        let timeout = session.ready_timeout();
        wait_until("the bridge socket to accept connections", timeout, || {
            session.ensure_running(pid)?;
            Ok(UnixStream::connect(&socket).is_ok())
        })
        .map_err(|e| match e {
            HarnessError::Timeout { what, .. } => {
                session.service_error("bridge", &format!("not ready: {what}"))
            }
            other => other,
        })?;
        Ok(Bridge { pid, socket })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Replays `fixture` with `--fast --stay`, waits until the replay reports that every
    /// message was acknowledged (it syncs with the bridge before printing its summary) and
    /// until `app_name` is a desktop child. `name` labels the logs.
    pub fn replay_and_stay(
        &self,
        session: &mut TestSession,
        name: &str,
        fixture: &Path,
        app_name: &str,
    ) -> Result<Replay> {
        let mut cmd = session.command(bridge_binary()?);
        cmd.arg("replay")
            .arg(fixture)
            .arg("--socket")
            .arg(&self.socket)
            .args(["--fast", "--stay"]);
        let pid = session.spawn(name, cmd)?;
        let out_path = session.dir().join("logs").join(format!("{name}.out"));
        let mut summary = String::new();
        wait_until(
            &format!("`{name}` to finish replaying {}", fixture.display()),
            session.ready_timeout(),
            || {
                session.ensure_running(pid)?;
                let out = std::fs::read_to_string(&out_path).unwrap_or_default();
                if out.contains("staying connected") {
                    summary = out.lines().next().unwrap_or_default().to_string();
                    return Ok(true);
                }
                Ok(false)
            },
        )
        .map_err(|e| match e {
            HarnessError::Timeout { what, .. } => {
                session.service_error(name, &format!("not ready: {what}"))
            }
            other => other,
        })?;
        session.ensure_running(self.pid)?;
        session.wait_for_app(app_name, pid)?;
        Ok(Replay { pid, summary })
    }
}

/// Path of a fixture, relative to the workspace's fixtures/ directory.
pub fn fixture(relative: &str) -> PathBuf {
    crate::workspace_root().join("fixtures").join(relative)
}
