//! The system under test: a private session (session bus, accessibility bus, registry), the
//! bridge, in-process senders, replay children and legacy-reference processes, all started here
//! and stopped by PID.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use newton_e2e::{SessionOptions, TestSession};
use newton_producer::{replay_into, ReplayOptions, Sender, Timing};
use newton_push_protocol::Encoding;

use crate::dbus::{Client, Obj};
use crate::fixtures::Stream;
use crate::{fail, Result};

/// How long any start-up step may take (attaching 100k nodes included).
pub const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// A running bridge in a private session, with a client on its accessibility bus.
pub struct World {
    pub session: TestSession,
    pub bridge_pid: u32,
    pub socket: PathBuf,
    pub client: Client,
    pub legacy_bin: Option<PathBuf>,
    /// Where fixture files for child processes go.
    pub files: PathBuf,
}

/// A process the suite started whose application is on the desktop.
pub struct ChildApp {
    pub pid: u32,
    pub root: Obj,
}

/// An application attached by an in-process sender; dropping the sender removes it.
pub struct AttachedApp {
    pub sender: Sender,
    pub root: Obj,
}

impl World {
    /// A session with the accessibility bus enabled (`--a11y=1`) and the bridge serving it.
    pub fn start(files: PathBuf) -> Result<World> {
        World::start_with_env(files, &[])
    }

    /// [`World::start`] with extra environment variables for the bridge.
    pub fn start_with_env(files: PathBuf, bridge_env: &[(&str, &str)]) -> Result<World> {
        World::start_binary(files, bridge_env, bridge_binary()?)
    }

    /// [`World::start_with_env`] with the bridge binary at `bridge`: how one run compares two
    /// builds.
    pub fn start_binary(
        files: PathBuf,
        bridge_env: &[(&str, &str)],
        bridge: PathBuf,
    ) -> Result<World> {
        let session = TestSession::start(SessionOptions {
            xvfb: false,
            atspi: true,
            ready_timeout: Duration::from_secs(60),
        })
        .map_err(|e| fail(format!("cannot bring up the private session: {e}")))?;
        let address = session
            .a11y_bus_address()
            .ok_or_else(|| fail("the session has no accessibility bus"))?
            .to_owned();
        World::with_session_env(session, &address, files, bridge_env, bridge)
    }

    /// Starts the bridge in `session`, serving the accessibility bus at `a11y_address`.
    pub fn with_session(session: TestSession, a11y_address: &str, files: PathBuf) -> Result<World> {
        World::with_session_env(session, a11y_address, files, &[], bridge_binary()?)
    }

    fn with_session_env(
        mut session: TestSession,
        a11y_address: &str,
        files: PathBuf,
        bridge_env: &[(&str, &str)],
        bridge: PathBuf,
    ) -> Result<World> {
        let socket = session.dir().join("bridge.sock");
        let mut cmd = session.command(bridge);
        cmd.envs(bridge_env.iter().copied())
            .env("AT_SPI_BUS_ADDRESS", a11y_address)
            .arg("serve")
            .arg("--socket")
            .arg(&socket)
            // Debug logging would cost the bridge time on every call; warnings only.
            .args(["--log-level", "warn"])
            // The update benchmarks measure every commit's own latency and the sustained
            // rate: without the frame-rate limit, which would coalesce them (docs/protocol.md
            // §8.3).
            .args(["--max-fps", "0"]);
        let bridge_pid = session
            .spawn("bridge", cmd)
            .map_err(|e| fail(format!("cannot start the bridge: {e}")))?;
        wait_for("the bridge socket", Duration::from_secs(30), || {
            session
                .ensure_running(bridge_pid)
                .map_err(|e| fail(e.to_string()))?;
            Ok(UnixStream::connect(&socket).is_ok())
        })?;
        let client = Client::connect(a11y_address)?;
        Ok(World {
            session,
            bridge_pid,
            socket,
            client,
            legacy_bin: legacy_binary(),
            files,
        })
    }

    /// Attaches `stream` through an in-process sender (postcard, as fast as possible) and
    /// waits until the bridge acknowledged every commit and the application is on the desktop.
    pub fn attach(&self, stream: &Stream) -> Result<AttachedApp> {
        let mut hello = stream.hello()?;
        hello.encoding = Encoding::Postcard;
        let sender = Sender::connect(&self.socket, hello)
            .map_err(|e| fail(format!("cannot connect a sender to the bridge: {e}")))?;
        let options = ReplayOptions {
            timing: Timing::AsFastAsPossible,
            wait_for_acks: Some(READY_TIMEOUT),
            encoding: None,
            skip_goodbye: true,
        };
        let summary = replay_into(&sender, &stream.lines, options)
            .map_err(|e| fail(format!("attaching {} failed: {e}", stream.name)))?;
        if !summary.rejections.is_empty() {
            return Err(fail(format!(
                "the bridge rejected {} commit(s) of {}: {:?}",
                summary.rejections.len(),
                stream.name,
                summary.rejections.first()
            )));
        }
        let root = self.find_app(&stream.name, None)?;
        Ok(AttachedApp { sender, root })
    }

    /// Starts `newton-atspi-bridge replay --fast --stay FILE` (a producer process the suite can
    /// SIGSTOP) and waits for its application `app_name`.
    pub fn spawn_replay(&mut self, file: &Path, app_name: &str) -> Result<ChildApp> {
        let mut cmd = self.session.command(bridge_binary()?);
        cmd.arg("replay")
            .arg(file)
            .arg("--socket")
            .arg(&self.socket)
            .args(["--fast", "--stay", "--log-level", "warn"]);
        let pid = self
            .session
            .spawn("replay", cmd)
            .map_err(|e| fail(format!("cannot start the replay: {e}")))?;
        let out = self.session.dir().join("logs/replay.out");
        self.wait_for_output(pid, &out, "staying connected", "replay")?;
        let root = self.find_app(app_name, None)?;
        Ok(ChildApp { pid, root })
    }

    /// Starts the legacy reference (accesskit_unix in-process) on `file`, waits for "ready"
    /// and for its application on the desktop. `None` when it is not built.
    pub fn spawn_legacy(&mut self, label: &str, file: &Path) -> Result<Option<ChildApp>> {
        let Some(bin) = self.legacy_bin.clone() else {
            return Ok(None);
        };
        let mut cmd = self.session.command(&bin);
        cmd.arg(file);
        let name = format!("legacy-{label}");
        let pid = self
            .session
            .spawn(&name, cmd)
            .map_err(|e| fail(format!("cannot start {}: {e}", bin.display())))?;
        let out = self.session.dir().join(format!("logs/{name}.out"));
        self.wait_for_output(pid, &out, "ready", &name)?;
        let root = self.find_app("", Some(pid))?;
        Ok(Some(ChildApp { pid, root }))
    }

    /// Stops a child the suite started (SIGTERM, then SIGKILL).
    pub fn stop(&mut self, pid: u32) {
        self.session.stop(pid, Duration::from_secs(5));
    }

    fn wait_for_output(&mut self, pid: u32, out: &Path, needle: &str, name: &str) -> Result<()> {
        let session = &mut self.session;
        wait_for(
            &format!("`{name}` to print {needle:?}"),
            READY_TIMEOUT,
            || {
                if let Err(e) = session.ensure_running(pid) {
                    return Err(fail(e.to_string()));
                }
                Ok(std::fs::read_to_string(out).is_ok_and(|text| text.contains(needle)))
            },
        )
    }

    /// The root of the desktop application named `name`, or owned by process `pid`.
    pub fn find_app(&self, name: &str, pid: Option<u32>) -> Result<Obj> {
        let mut found = None;
        let what = match pid {
            Some(pid) => format!("the application of process {pid} on the desktop"),
            None => format!("application {name:?} on the desktop"),
        };
        wait_for(&what, READY_TIMEOUT, || {
            for app in self.client.desktop_apps().unwrap_or_default() {
                let matches = match pid {
                    Some(pid) => self.client.pid_of(&app.dest).ok() == Some(pid),
                    None => self.client.name(&app).ok().as_deref() == Some(name),
                };
                if matches {
                    found = Some(app);
                    return Ok(true);
                }
            }
            Ok(false)
        })?;
        found.ok_or_else(|| fail(format!("{what}: vanished")))
    }
}

/// Polls `condition` every 50 ms until it holds, fails, or `timeout` passes.
pub fn wait_for(
    what: &str,
    timeout: Duration,
    mut condition: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let start = Instant::now();
    while !condition()? {
        if start.elapsed() > timeout {
            return Err(fail(format!(
                "timed out after {:.0} s waiting for {what}",
                timeout.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// `$NEWTON_BRIDGE_BIN`, else `newton-atspi-bridge` beside this binary (same profile), else
/// what the e2e harness finds.
pub fn bridge_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("NEWTON_BRIDGE_BIN") {
        return Ok(PathBuf::from(path));
    }
    if let Some(path) = beside_self("newton-atspi-bridge") {
        return Ok(path);
    }
    newton_e2e::bridge_binary().map_err(|e| {
        fail(format!(
            "{e}; build it with `cargo build --release -p newton-atspi-bridge`"
        ))
    })
}

/// `$NEWTON_LEGACY_BIN`, else `newton-legacy-reference` beside this binary, else in
/// target/release or target/debug; `None` when not built.
pub fn legacy_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NEWTON_LEGACY_BIN") {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let root = newton_e2e::workspace_root();
    beside_self("newton-legacy-reference").or_else(|| {
        ["target/release", "target/debug"]
            .iter()
            .map(|dir| root.join(dir).join("newton-legacy-reference"))
            .find(|p| p.is_file())
    })
}

pub fn beside_self(program: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.join(program)).filter(|p| p.is_file())
}
