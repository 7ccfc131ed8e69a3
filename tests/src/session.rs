//! A private desktop session for one test: session bus, optional Xvfb, AT-SPI bus and registry.

use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::process::Signal;

use newton_atspi_client::private_session::{self, StepError};

use crate::bus::BusClient;
use crate::process::{file_tail, pid_alive, pids_with_env_marker, send_signal, TrackedChild};
use crate::{wait_until, HarnessError, Result};

/// Name of the variable every child gets; its value is the session directory. It lets teardown
/// find descendants that were re-parented or started by D-Bus activation.
const MARKER_VAR: &str = "NEWTON_E2E_SESSION";
/// PATH for children: the system one, so `python3` is Debian's and not a pyenv shim.
const CHILD_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const SPEECHD_DUMMY_CONF: &str = "DefaultModule dummy\nAddModule \"dummy\" \"sd_dummy\" \"\"\n";

/// What to bring up.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Start Xvfb and set DISPLAY (needed by Orca and GTK apps).
    pub xvfb: bool,
    /// Start the AT-SPI bus launcher and the registry.
    pub atspi: bool,
    /// Bound for each readiness wait.
    pub ready_timeout: Duration,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            xvfb: true,
            atspi: true,
            ready_timeout: Duration::from_secs(30),
        }
    }
}

/// Outcome of [`TestSession::shutdown`]: what was still alive after teardown.
#[derive(Debug, Default)]
pub struct ShutdownReport {
    /// Tracked children that could not be reaped.
    pub surviving_children: Vec<(String, u32)>,
    /// Untracked descendants (found by the environment marker) that had to be killed.
    pub stray_descendants: Vec<u32>,
    /// Descendants still alive after SIGKILL.
    pub surviving_descendants: Vec<u32>,
}

impl ShutdownReport {
    /// True when nothing the session started is left running.
    pub fn is_clean(&self) -> bool {
        self.surviving_children.is_empty() && self.surviving_descendants.is_empty()
    }
}

/// A running private session. Dropping it stops every child (reverse start order) and removes
/// the session directory, unless the test panicked or `NEWTON_E2E_KEEP=1` (then the path is
/// printed).
#[derive(Debug)]
pub struct TestSession {
    dir: PathBuf,
    env: Vec<(String, String)>,
    children: Vec<TrackedChild>,
    session_bus: String,
    a11y_bus: Option<String>,
    display: Option<String>,
    ready_timeout: Duration,
    /// What at-spi-bus-launcher accepts, once probed.
    launcher_options: Option<private_session::LauncherOptions>,
    keep_dir: bool,
    shut_down: bool,
}

impl TestSession {
    /// Brings up the session. On failure everything started so far is stopped again and the
    /// error names the service that failed, with its stderr.
    pub fn start(opts: SessionOptions) -> Result<TestSession> {
        let dir = make_session_dir()?;
        let mut session = TestSession {
            env: base_env(&dir),
            dir,
            children: Vec::new(),
            session_bus: String::new(),
            a11y_bus: None,
            display: None,
            ready_timeout: opts.ready_timeout,
            launcher_options: None,
            keep_dir: false,
            shut_down: false,
        };
        session.prepare_dirs()?;
        session.start_session_bus()?;
        if opts.xvfb {
            session.start_xvfb()?;
        }
        if opts.atspi {
            session.start_atspi()?;
        }
        Ok(session)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn session_bus_address(&self) -> &str {
        &self.session_bus
    }
    pub fn a11y_bus_address(&self) -> Option<&str> {
        self.a11y_bus.as_deref()
    }
    pub fn display(&self) -> Option<&str> {
        self.display.as_deref()
    }
    pub fn ready_timeout(&self) -> Duration {
        self.ready_timeout
    }

    /// How many desktop applications are named `name` (each one's root `Name`).
    pub fn apps_named(&self, name: &str) -> Result<usize> {
        Ok(self.a11y_client()?.applications_named(name)?.len())
    }

    /// `newton-atspi-bridge status --json --socket <socket>`: what the bridge on `socket` says
    /// about itself.
    pub fn bridge_status(&mut self, socket: &Path) -> Result<serde_json::Value> {
        let mut cmd = self.command(crate::bridge_binary()?);
        cmd.args(["status", "--json", "--socket"]).arg(socket);
        let out = self.run_ok("status", cmd, self.ready_timeout)?;
        serde_json::from_str(&out).map_err(|e| {
            HarnessError::Other(format!("`status --json` printed no JSON: {e}: {out}"))
        })
    }

    /// A client on the a11y bus (fails if the session was started without AT-SPI).
    pub fn a11y_client(&self) -> Result<BusClient> {
        let address = self.a11y_bus.as_deref().ok_or_else(|| {
            HarnessError::Other("session started without AT-SPI (SessionOptions::atspi)".into())
        })?;
        BusClient::connect(address)
    }

    /// Environment every child gets (also usable for commands the test runs itself).
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// A command with a clean environment: only the session's variables, cwd = session dir.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear().current_dir(&self.dir).stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Starts `cmd` as a tracked child; stdout goes to `logs/<name>.out`, stderr to
    /// `logs/<name>.err`. Returns its PID.
    pub fn spawn(&mut self, name: &str, cmd: Command) -> Result<u32> {
        self.spawn_inner(name, cmd, false)
            .map(|i| self.child_pid(i))
    }

    /// Runs `cmd` to completion (bounded by `timeout`) and returns its exit status and stdout.
    /// The child is killed and an error returned if it runs too long.
    pub fn run(
        &mut self,
        name: &str,
        cmd: Command,
        timeout: Duration,
    ) -> Result<(ExitStatus, String)> {
        let index = self.spawn_inner(name, cmd, false)?;
        let start = Instant::now();
        let status = loop {
            let child = self.children.get_mut(index).ok_or_else(missing_child)?;
            if let Some(status) = child.exit_status() {
                break status;
            }
            if start.elapsed() >= timeout {
                child.terminate(Duration::from_secs(2));
                return Err(HarnessError::Timeout {
                    what: format!("`{name}` to finish"),
                    seconds: timeout.as_secs_f64(),
                    detail: format!("; its stderr:\n{}", child.stderr_tail()),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stdout_path = self.log_path(name, "out");
        let stdout = fs::read_to_string(&stdout_path)
            .map_err(HarnessError::io(format!("read {}", stdout_path.display())))?;
        Ok((status, stdout))
    }

    /// Like [`run`](Self::run) but fails (with stderr) unless the command exits 0.
    pub fn run_ok(&mut self, name: &str, cmd: Command, timeout: Duration) -> Result<String> {
        let (status, stdout) = self.run(name, cmd, timeout)?;
        if status.success() {
            Ok(stdout)
        } else {
            Err(self.service_error(name, &format!("exited with {status}")))
        }
    }

    /// Stops the tracked child with this PID (SIGTERM, ≤ `grace`, SIGKILL).
    pub fn stop(&mut self, pid: u32, grace: Duration) -> Option<ExitStatus> {
        self.children
            .iter_mut()
            .find(|c| c.pid() == pid)
            .and_then(|c| c.terminate(grace))
    }

    /// Like [`stop`](Self::stop), calling `nudge` every 500 ms while waiting for the child to exit
    /// (for children that only notice signals when something wakes them up).
    pub fn stop_with(
        &mut self,
        pid: u32,
        grace: Duration,
        nudge: impl FnMut(),
    ) -> Option<ExitStatus> {
        self.children
            .iter_mut()
            .find(|c| c.pid() == pid)
            .and_then(|c| c.terminate_with(grace, nudge))
    }

    /// True while the tracked child with this PID runs.
    pub fn is_running(&mut self, pid: u32) -> bool {
        self.children
            .iter_mut()
            .find(|c| c.pid() == pid)
            .is_some_and(|c| c.is_running())
    }

    /// The tail of a tracked child's stderr, by name (most recent child of that name).
    pub fn stderr_of(&self, name: &str) -> String {
        file_tail(&self.log_path(name, "err"), 8192)
    }

    /// A service error for the child `name`, with its stderr.
    pub fn service_error(&self, name: &str, reason: &str) -> HarnessError {
        let stderr_path = self.log_path(name, "err");
        HarnessError::Service {
            service: name.to_string(),
            reason: reason.to_string(),
            stderr: file_tail(&stderr_path, 8192),
            stderr_path,
        }
    }

    /// Fails with the child's stderr if the tracked child `pid` has exited.
    pub fn ensure_running(&mut self, pid: u32) -> Result<()> {
        let Some(child) = self.children.iter_mut().find(|c| c.pid() == pid) else {
            return Err(missing_child());
        };
        match child.exit_status() {
            None => Ok(()),
            Some(status) => {
                let name = child.name.clone();
                Err(self.service_error(&name, &format!("exited early with {status}")))
            }
        }
    }

    /// Waits until the registry knows an application named `app_name` (Accessible.Name of a
    /// desktop child), failing early if the tracked process `pid` exits.
    pub fn wait_for_app(&mut self, app_name: &str, pid: u32) -> Result<()> {
        let client = self.a11y_client()?;
        let timeout = self.ready_timeout;
        let mut last_seen = Vec::new();
        let result = wait_until(
            &format!("application `{app_name}` on the a11y bus"),
            timeout,
            || {
                self.ensure_running(pid)?;
                last_seen = app_names(&client);
                Ok(last_seen.iter().any(|n| n == app_name))
            },
        );
        result.map_err(|e| match e {
            HarnessError::Timeout { what, seconds, .. } => HarnessError::Timeout {
                what,
                seconds,
                detail: format!("; desktop children seen: {last_seen:?}"),
            },
            other => other,
        })
    }

    /// Stops everything (reverse start order), kills untracked descendants, and reports what
    /// survived. Tests call this at the end and assert [`ShutdownReport::is_clean`].
    pub fn shutdown(mut self) -> ShutdownReport {
        let report = self.teardown();
        if !report.is_clean() {
            self.keep_dir = true;
        }
        report
    }

    /// Keeps the session directory after drop (its path is printed).
    pub fn keep_dir(&mut self) {
        self.keep_dir = true;
    }

    fn teardown(&mut self) -> ShutdownReport {
        self.shut_down = true;
        let mut report = ShutdownReport::default();
        for child in self.children.iter_mut().rev() {
            if child.terminate(Duration::from_secs(10)).is_none() || pid_alive(child.pid()) {
                report
                    .surviving_children
                    .push((child.name.clone(), child.pid()));
            }
        }
        let marker = format!("{MARKER_VAR}={}", self.dir.display());
        report.stray_descendants = pids_with_env_marker(&marker);
        for &pid in &report.stray_descendants {
            send_signal(pid, Signal::TERM);
        }
        let _ = wait_until("stray descendants to exit", Duration::from_secs(5), || {
            Ok(pids_with_env_marker(&marker).is_empty())
        });
        for pid in pids_with_env_marker(&marker) {
            send_signal(pid, Signal::KILL);
        }
        let _ = wait_until(
            "killed descendants to vanish",
            Duration::from_secs(2),
            || Ok(pids_with_env_marker(&marker).is_empty()),
        );
        report.surviving_descendants = pids_with_env_marker(&marker);
        report
    }

    fn child_pid(&self, index: usize) -> u32 {
        self.children.get(index).map_or(0, TrackedChild::pid)
    }

    fn log_path(&self, name: &str, ext: &str) -> PathBuf {
        self.dir.join("logs").join(format!("{name}.{ext}"))
    }

    fn spawn_inner(&mut self, name: &str, mut cmd: Command, pipe_stdout: bool) -> Result<usize> {
        let err_path = self.log_path(name, "err");
        let out_path = self.log_path(name, "out");
        let err = fs::File::create(&err_path)
            .map_err(HarnessError::io(format!("create {}", err_path.display())))?;
        cmd.stderr(err);
        if pipe_stdout {
            cmd.stdout(Stdio::piped());
        } else {
            let out = fs::File::create(&out_path)
                .map_err(HarnessError::io(format!("create {}", out_path.display())))?;
            cmd.stdout(out);
        }
        let program = cmd.get_program().to_string_lossy().into_owned();
        let child = cmd
            .spawn()
            .map_err(|source| HarnessError::Spawn { program, source })?;
        self.children
            .push(TrackedChild::new(name.to_string(), child, err_path));
        Ok(self.children.len() - 1)
    }

    /// Reads the first stdout line of child `index` (an address or display number), failing
    /// with its stderr if it exits or stays silent for the ready timeout.
    fn first_stdout_line(&mut self, index: usize, what: &str) -> Result<String> {
        let child = self.children.get_mut(index).ok_or_else(missing_child)?;
        let name = child.name.clone();
        let Some(stdout) = child.stdout_pipe() else {
            return Err(self.service_error(&name, "stdout was not piped"));
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let result = reader.read_line(&mut line).map(|_| line);
            let _ = tx.send(result);
            // Keep draining so the child never blocks on a full pipe.
            let _ = reader.read_to_end(&mut Vec::new());
        });
        match rx.recv_timeout(self.ready_timeout) {
            Ok(Ok(line)) if !line.trim().is_empty() => Ok(line.trim().to_string()),
            Ok(_) => Err(self.service_error(&name, &format!("exited before printing {what}"))),
            Err(_) => Err(self.service_error(
                &name,
                &format!(
                    "printed no {what} within {:.0} s",
                    self.ready_timeout.as_secs_f64()
                ),
            )),
        }
    }

    fn prepare_dirs(&self) -> Result<()> {
        let rt = self.dir.join("rt");
        for sub in ["rt", "logs", "bus", "home/.config/speech-dispatcher"] {
            let path = self.dir.join(sub);
            fs::create_dir_all(&path)
                .map_err(HarnessError::io(format!("create {}", path.display())))?;
        }
        fs::set_permissions(&rt, fs::Permissions::from_mode(0o700))
            .map_err(HarnessError::io(format!("chmod 700 {}", rt.display())))?;
        let conf = self.dir.join("home/.config/speech-dispatcher/speechd.conf");
        fs::write(&conf, SPEECHD_DUMMY_CONF)
            .map_err(HarnessError::io(format!("write {}", conf.display())))?;
        let bus_conf = self.dir.join("session-bus.conf");
        fs::write(&bus_conf, session_bus_config(&self.dir.join("bus")))
            .map_err(HarnessError::io(format!("write {}", bus_conf.display())))
    }

    fn start_session_bus(&mut self) -> Result<()> {
        let mut cmd = self.command(private_session::BUS_DAEMON);
        cmd.args(private_session::session_bus_args(Some(
            &self.dir.join("session-bus.conf"),
        )));
        let index = self.spawn_inner("dbus-session", cmd, true)?;
        let address = self.first_stdout_line(index, "its address")?;
        self.set_env("DBUS_SESSION_BUS_ADDRESS", &address);
        self.session_bus = address;
        Ok(())
    }

    fn start_xvfb(&mut self) -> Result<()> {
        let mut cmd = self.command("Xvfb");
        // -displayfd 1: Xvfb picks a free display itself and writes its number to stdout.
        cmd.args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1280x1024x24",
            "-nolisten",
            "tcp",
            "-noreset",
        ]);
        let index = self.spawn_inner("xvfb", cmd, true)?;
        let number = self.first_stdout_line(index, "its display number")?;
        let display = format!(":{number}");
        self.set_env("DISPLAY", &display);
        self.display = Some(display);
        Ok(())
    }

    fn start_atspi(&mut self) -> Result<()> {
        let (_, address) = self.start_a11y_bus("at-spi-bus-launcher", true)?;
        self.set_env("AT_SPI_BUS_ADDRESS", &address);
        self.a11y_bus = Some(address.clone());
        self.start_registry("at-spi2-registryd", &address)
            .map(|_| ())
    }

    /// Starts at-spi-bus-launcher as child `name` (IsEnabled as given) and waits for the bus;
    /// returns the launcher's PID and the bus address. The session's environment is left as
    /// it is (a test decides whether children see AT_SPI_BUS_ADDRESS). Call it again, with a
    /// new name, to restart the accessibility bus after stopping the old launcher.
    pub fn start_a11y_bus(&mut self, name: &str, is_enabled: bool) -> Result<(u32, String)> {
        let options = self.launcher_options()?;
        let mut cmd = self.platform_command(private_session::BUS_LAUNCHER)?;
        cmd.args(private_session::launcher_args(options, is_enabled));
        let launcher = self.spawn(name, cmd)?;
        let session_bus = self.session_bus.clone();
        let timeout = self.ready_timeout;
        let address = private_session::wait_for_a11y_bus(&session_bus, timeout, || {
            self.ensure_running(launcher)
        })
        .map_err(|e| self.step_error(e, name))?;
        private_session::enable_after_launch(options, &session_bus, is_enabled).map_err(
            |source| HarnessError::Dbus {
                what: format!("{name}: set org.a11y.Status.IsEnabled"),
                source: Box::new(source),
            },
        )?;
        Ok((launcher, address))
    }

    /// A command running one of at-spi2-core's programs (the launcher, the registry) from the
    /// root in `NEWTON_ATSPI_ROOT` when set (Debian unstable's 2.62 in `scripts/test.sh`'s
    /// platform step), else the host's (2.46).
    pub fn platform_command(&self, program: &str) -> Result<Command> {
        crate::orca::atspi_command(self, program)
    }

    /// What this session's at-spi-bus-launcher accepts (probed once per session); with
    /// `LaunchImmediatelyOnly` (at-spi2-core 2.61 and later) `IsEnabled` follows the listeners
    /// ATs register.
    pub fn launcher_options(&mut self) -> Result<private_session::LauncherOptions> {
        if let Some(options) = self.launcher_options {
            return Ok(options);
        }
        let probe = self.platform_command(private_session::BUS_LAUNCHER)?;
        let options = private_session::probe_launcher(probe)
            .map_err(|e| HarnessError::Other(format!("at-spi-bus-launcher: {e}")))?;
        self.launcher_options = Some(options);
        Ok(options)
    }

    /// Starts at-spi2-registryd as child `name` on the accessibility bus `a11y_address` and waits for
    /// its name. The owner may also be a registry the bus activated meanwhile (it has a service
    /// file), so an early exit only fails while nobody owns the name. Returns the child's PID.
    pub fn start_registry(&mut self, name: &str, a11y_address: &str) -> Result<u32> {
        let mut cmd = self.platform_command(private_session::REGISTRYD)?;
        cmd.env("AT_SPI_BUS_ADDRESS", a11y_address);
        let registryd = self.spawn(name, cmd)?;
        let timeout = self.ready_timeout;
        private_session::wait_for_registry(a11y_address, timeout, || {
            if self.is_running(registryd) {
                Ok(())
            } else {
                self.ensure_running(registryd)
            }
        })
        .map_err(|e| self.step_error(e, name))?;
        Ok(registryd)
    }

    /// A start-up step's error as a harness error naming `service`, with its stderr.
    fn step_error(&self, error: StepError<HarnessError>, service: &str) -> HarnessError {
        match error {
            StepError::Exited(error) => error,
            StepError::Timeout { what, seconds } => self.annotate(
                HarnessError::Timeout {
                    what: what.to_string(),
                    seconds,
                    detail: String::new(),
                },
                service,
            ),
            StepError::EmptyAddress => {
                self.service_error(service, "org.a11y.Bus.GetAddress returned an empty address")
            }
            StepError::Bus { what, source } => HarnessError::Dbus { what, source },
        }
    }

    /// Adds the stderr of `service` to a timeout error.
    fn annotate(&self, error: HarnessError, service: &str) -> HarnessError {
        match error {
            HarnessError::Timeout { what, seconds, .. } => self.service_error(
                service,
                &format!("not ready: timed out after {seconds:.0} s waiting for {what}"),
            ),
            other => other,
        }
    }

    fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
    }
}

impl Drop for TestSession {
    fn drop(&mut self) {
        if !self.shut_down {
            let report = self.teardown();
            if !report.is_clean() {
                eprintln!("newton-e2e: processes survived teardown: {report:?}");
                self.keep_dir = true;
            }
        }
        let keep = self.keep_dir
            || std::thread::panicking()
            || std::env::var("NEWTON_E2E_KEEP").is_ok_and(|v| v == "1");
        if keep {
            eprintln!(
                "newton-e2e: session directory kept for inspection: {}",
                self.dir.display()
            );
        } else if let Err(e) = fs::remove_dir_all(&self.dir) {
            eprintln!("newton-e2e: could not remove {}: {e}", self.dir.display());
        }
    }
}

fn missing_child() -> HarnessError {
    HarnessError::Other("internal: tracked child vanished".into())
}

/// Names of the applications on the desktop, best effort (unreadable ones are skipped).
fn app_names(client: &BusClient) -> Vec<String> {
    let Ok(children) = client.desktop_children() else {
        return Vec::new();
    };
    children
        .iter()
        .filter_map(|(bus, path)| {
            client
                .get(
                    &newton_atspi_client::calls::accessible::NAME,
                    bus,
                    path.as_str(),
                )
                .ok()
        })
        .collect()
}

fn make_session_dir() -> Result<PathBuf> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // Short path under /tmp: unix socket paths are limited to 108 bytes.
    let dir = std::env::temp_dir().join(format!("nte2e-{}-{n}-{nanos:x}", std::process::id()));
    fs::create_dir(&dir).map_err(HarnessError::io(format!(
        "create session dir {}",
        dir.display()
    )))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
        .map_err(HarnessError::io(format!("chmod 700 {}", dir.display())))?;
    Ok(dir)
}

fn base_env(dir: &Path) -> Vec<(String, String)> {
    let d = |sub: &str| dir.join(sub).display().to_string();
    let mut env = vec![
        (MARKER_VAR.to_string(), dir.display().to_string()),
        ("PATH".into(), CHILD_PATH.into()),
        ("XDG_RUNTIME_DIR".into(), d("rt")),
        ("HOME".into(), d("home")),
        ("XDG_CONFIG_HOME".into(), d("home/.config")),
        ("GSETTINGS_BACKEND".into(), "memory".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("BRLAPI_HOST".into(), "127.0.0.1:9999".into()),
        ("GDK_BACKEND".into(), "x11".into()),
    ];
    // Diagnostics knobs and the bridge's own settings (NEWTON_ATSPI_*) pass through.
    for (key, value) in std::env::vars() {
        if key == "RUST_LOG" || key == "RUST_BACKTRACE" || key.starts_with("NEWTON_ATSPI_") {
            env.push((key, value));
        }
    }
    env
}

/// A minimal session-bus configuration: listens only in the session directory and has no
/// service directories, so nothing is activated behind the harness's back.
fn session_bus_config(listen_dir: &Path) -> String {
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:dir={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
        listen_dir.display()
    )
}
