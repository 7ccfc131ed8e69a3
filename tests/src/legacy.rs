//! The legacy application: `newton-legacy-reference --step`, a recording exposed in-process
//! through accesskit_unix, as an AccessKit application would be, driven on stdin. Tests compare
//! what an AT gets from it with what it gets through the bridge for the same content.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use crate::{wait_until, HarnessError, Result, TestSession};

/// How long the legacy reference may take to answer one stdin command.
const LINE_TIMEOUT: Duration = Duration::from_secs(120);

/// `$NEWTON_LEGACY_BIN`, else [`crate::paths::workspace_binary`]'s `newton-legacy-reference`.
pub fn legacy_binary() -> Result<PathBuf> {
    let path = match std::env::var_os("NEWTON_LEGACY_BIN") {
        Some(path) => PathBuf::from(path),
        None => crate::paths::workspace_binary("newton-legacy-reference"),
    };
    crate::paths::existing(path, "NEWTON_LEGACY_BIN")
}

/// A running `newton-legacy-reference --step`, its stdout read line by line. Killed (this
/// harness's own child, by handle) on drop.
pub struct LegacyReference {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr_path: PathBuf,
}

impl LegacyReference {
    /// Starts the reference in `session`; it applies the recording's first commit at once and
    /// says `ready`.
    pub fn start(session: &TestSession, recording: &Path) -> Result<LegacyReference> {
        let mut legacy = Self::spawn(session, recording, false)?;
        legacy.expect_line("ready")?;
        Ok(legacy)
    }

    /// Starts the reference in `session` with `--connect-first`: it registers with the desktop
    /// (no window yet) and waits for [`LegacyReference::begin`]. Started before the screen
    /// reader, it meets the reader with a connection that already serves calls (the legacy
    /// binary's `--connect-first` says why).
    ///
    /// accesskit_unix connects only while `org.a11y.Status.IsEnabled` is true. From at-spi2-core
    /// 2.61 the launcher derives that from the listeners ATs register, so once an earlier Orca
    /// of the session has left it is false until the next one registers, and the reference would
    /// connect only as that Orca starts: the race this method exists to avoid. Accessibility is
    /// therefore turned on first, as a desktop's setting does (the property stays writable).
    pub fn connect(session: &TestSession, recording: &Path) -> Result<LegacyReference> {
        newton_atspi_client::private_session::set_is_enabled(session.session_bus_address(), true)
            .map_err(|source| HarnessError::Dbus {
            what: "turn accessibility on (org.a11y.Status.IsEnabled) before the legacy \
                       reference connects"
                .to_owned(),
            source: Box::new(source),
        })?;
        let mut legacy = Self::spawn(session, recording, true)?;
        legacy.expect_line("connected")?;
        Ok(legacy)
    }

    /// Applies the first commit of a reference started with [`LegacyReference::connect`].
    pub fn begin(&mut self) -> Result<()> {
        writeln!(self.stdin, "start")
            .and_then(|()| self.stdin.flush())
            .map_err(HarnessError::io("write to the legacy reference".to_owned()))?;
        self.expect_line("ready")
    }

    fn spawn(
        session: &TestSession,
        recording: &Path,
        connect_first: bool,
    ) -> Result<LegacyReference> {
        let stderr_path = session.dir().join("logs").join("legacy.err");
        let stderr = File::create(&stderr_path).map_err(HarnessError::io(format!(
            "create {}",
            stderr_path.display()
        )))?;
        let mut cmd = session.command(legacy_binary()?);
        cmd.arg(recording).arg("--step");
        if connect_first {
            cmd.arg("--connect-first");
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut child = cmd
            .spawn()
            .map_err(HarnessError::io("start newton-legacy-reference".to_owned()))?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(HarnessError::Other(
                "newton-legacy-reference started without piped stdin and stdout".into(),
            ));
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout)
                .lines()
                .map_while(std::io::Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(LegacyReference {
            child,
            stdin,
            lines,
            stderr_path,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the registry lists an application owned by this process (it is not a
    /// tracked child of the session, so `TestSession::wait_for_app` cannot watch it).
    pub fn wait_on_desktop(&self, session: &TestSession) -> Result<()> {
        let client = session.a11y_client()?;
        let pid = self.pid();
        wait_until(
            "the legacy application on the desktop",
            session.ready_timeout(),
            || {
                Ok(client
                    .desktop_children()?
                    .iter()
                    .any(|(name, _)| client.pid_of(name).is_ok_and(|p| p == pid)))
            },
        )
    }

    /// Applies commits up to `serial` and waits until they are visible on the bus.
    pub fn goto(&mut self, serial: u64) -> Result<()> {
        writeln!(self.stdin, "goto {serial}")
            .and_then(|()| self.stdin.flush())
            .map_err(HarnessError::io("write to the legacy reference".to_owned()))?;
        self.expect_line(&format!("applied {serial}"))
    }

    fn expect_line(&mut self, wanted: &str) -> Result<()> {
        let start = Instant::now();
        loop {
            let left = LINE_TIMEOUT.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) if line == wanted => return Ok(()),
                Ok(line) if line.starts_with("error") || line.starts_with("rejected") => {
                    return Err(HarnessError::Other(format!(
                        "legacy reference said {line:?}; stderr:\n{}",
                        self.stderr()
                    )))
                }
                Ok(_) => continue,
                Err(_) => {
                    return Err(HarnessError::Other(format!(
                        "legacy reference did not say {wanted:?} within {} s; stderr:\n{}",
                        LINE_TIMEOUT.as_secs(),
                        self.stderr()
                    )))
                }
            }
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }
}

impl Drop for LegacyReference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
