//! The one launcher of private session and accessibility buses: dbus-daemon,
//! at-spi-bus-launcher (which starts the accessibility bus and answers
//! `org.a11y.Status.IsEnabled`) and at-spi2-registryd.
//!
//! Two layers. The steps ([`probe_launcher`], [`launcher_args`],
//! [`wait_for_a11y_bus`], [`enable_after_launch`], [`wait_for_registry`],
//! [`set_is_enabled`]) know how each part comes up and when it is ready;
//! callers that track their own children (the end-to-end harness, which logs
//! and restarts each part, and the benchmarks) spawn the processes themselves
//! and use them. [`PrivateSession`] runs the whole sequence for the CLI
//! (`demo`, `session`), owning its children: every process started here is
//! killed by PID on drop, nothing else.
//!
//! Launchers differ by release, and the difference is probed, not guessed
//! from a version string ([`probe_launcher`]): up to at-spi2-core 2.60 the
//! launcher takes `--a11y=0|1` (the initial `org.a11y.Status.IsEnabled`) and
//! `--screen-reader=0|1`; from 2.61 on it takes only `--launch-immediately`
//! (anything else makes it print its usage line and abort) and derives
//! `IsEnabled` from the event listeners ATs register with the registry,
//! keeping the property writable for compatibility. So "an AT is listening"
//! is set by the flag where the launcher takes it and by writing the
//! property after start where it does not; "no AT" is the default of both.

use crate::calls::{bus, launcher, Method};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The message bus daemon that runs the private session bus (Debian package
/// dbus-daemon).
pub const BUS_DAEMON: &str = "dbus-daemon";
/// at-spi2-core's accessibility bus launcher (Debian's path).
pub const BUS_LAUNCHER: &str = "/usr/libexec/at-spi-bus-launcher";
/// at-spi2-core's registry daemon (Debian's path).
pub const REGISTRYD: &str = "/usr/libexec/at-spi2-registryd";
/// The registry's well-known name on the accessibility bus.
pub const REGISTRY_NAME: &str = crate::calls::REGISTRY;
/// How often readiness is probed.
const PROBE_INTERVAL: Duration = Duration::from_millis(50);

/// What an installed at-spi-bus-launcher accepts on its command line, as
/// [`probe_launcher`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LauncherOptions {
    /// at-spi2-core up to 2.60: `--launch-immediately`, `--a11y=0|1` and
    /// `--screen-reader=0|1`.
    WithA11yFlags,
    /// at-spi2-core 2.61 and later: `--launch-immediately` only; `IsEnabled`
    /// follows the ATs' registered event listeners (and may be written).
    LaunchImmediatelyOnly,
}

/// How long the probe lets a launcher run: one that took `--a11y=0` goes on
/// to connect to the (unreachable) session bus and exits at once; one still
/// running after this got past its argument parsing all the same.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why [`probe_launcher`] could not tell.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("could not run {program} to probe its options: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("could not wait for the probe of {program}: {source}")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// Finds what the launcher that `command` runs accepts, by running it once
/// with `--a11y=0` against a session bus address that cannot be reached, so
/// that it never touches a real bus: a launcher that rejects the flag prints
/// its usage line and aborts while parsing arguments; one that accepts it
/// fails later, on the connection. `command` is the launcher as the caller
/// would start it (a chroot wrapper included); its arguments, environment
/// and standard streams are set here.
pub fn probe_launcher(mut command: Command) -> Result<LauncherOptions, ProbeError> {
    let program = format!("{:?}", command.get_program());
    let unreachable_dir = std::env::temp_dir().join(format!(
        "newton-launcher-probe-{}-missing",
        std::process::id()
    ));
    let mut child = command
        .arg("--a11y=0")
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            format!("unix:path={}/bus", unreachable_dir.display()),
        )
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("AT_SPI_BUS_ADDRESS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ProbeError::Spawn {
            program: program.clone(),
            source,
        })?;
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        }
        text
    });
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let wait_error = |source| ProbeError::Wait {
        program: program.clone(),
        source,
    };
    while child.try_wait().map_err(wait_error)?.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Still running: it parsed its arguments and went on (a launcher that
    // exits on a bad option does so before anything else).
    let _ = child.kill();
    let _ = child.wait();
    let stderr = reader.join().unwrap_or_default();
    Ok(options_from_probe(&stderr))
}

/// The probe's verdict from what the launcher wrote to its standard error.
fn options_from_probe(stderr: &str) -> LauncherOptions {
    if stderr.contains("usage:") {
        LauncherOptions::LaunchImmediatelyOnly
    } else {
        LauncherOptions::WithA11yFlags
    }
}

/// at-spi-bus-launcher's arguments: start the bus at once, with
/// `org.a11y.Status.IsEnabled` as given where the launcher takes it as a flag
/// (`true`: as after a screen reader was turned on; `false`: the "no AT, no
/// cost" state). Where it does not, call [`enable_after_launch`] once the bus
/// is up.
pub fn launcher_args(options: LauncherOptions, is_enabled: bool) -> Vec<&'static str> {
    match options {
        LauncherOptions::WithA11yFlags => {
            let a11y = if is_enabled { "--a11y=1" } else { "--a11y=0" };
            vec!["--launch-immediately", a11y]
        }
        LauncherOptions::LaunchImmediatelyOnly => vec!["--launch-immediately"],
    }
}

/// Sets `IsEnabled` on a launcher that could not take it as a flag: from
/// at-spi2-core 2.61 on it starts `false` (no AT listening yet) and is
/// writable, as GNOME's settings write it. Nothing to do for `false`, nor for
/// a launcher that took `--a11y=N`.
pub fn enable_after_launch(
    options: LauncherOptions,
    session_bus: &str,
    is_enabled: bool,
) -> zbus::Result<()> {
    match (options, is_enabled) {
        (LauncherOptions::LaunchImmediatelyOnly, true) => set_is_enabled(session_bus, true),
        _ => Ok(()),
    }
}

/// dbus-daemon's arguments for a private session bus: the configuration file
/// `config` (`None`: the system's session configuration), in the foreground,
/// printing its address as the first line of its standard output.
pub fn session_bus_args(config: Option<&Path>) -> Vec<String> {
    let config = match config {
        Some(file) => format!("--config-file={}", file.display()),
        None => "--session".to_owned(),
    };
    vec![
        config,
        "--nofork".to_owned(),
        "--print-address=1".to_owned(),
    ]
}

/// Why a start-up step failed. `E` is what the caller's liveness check
/// returned (a process that exited, with whatever the caller knows of it).
#[derive(Debug, thiserror::Error)]
pub enum StepError<E: std::fmt::Display> {
    #[error("{0}")]
    Exited(E),
    #[error("timed out after {seconds:.0} s waiting for {what}")]
    Timeout { what: &'static str, seconds: f64 },
    #[error("{what}: {source}")]
    Bus {
        what: String,
        #[source]
        source: Box<zbus::Error>,
    },
    #[error("org.a11y.Bus.GetAddress returned an empty address")]
    EmptyAddress,
}

/// Waits until at-spi-bus-launcher owns `org.a11y.Bus` on `session_bus`,
/// then returns the accessibility bus address it gives. Only `NameHasOwner`
/// while waiting: a call to the unowned name would make the bus activate a
/// second launcher. `still_running` is asked before every probe, so a
/// launcher that died fails the wait at once.
pub fn wait_for_a11y_bus<E: std::fmt::Display>(
    session_bus: &str,
    timeout: Duration,
    still_running: impl FnMut() -> Result<(), E>,
) -> Result<String, StepError<E>> {
    let conn = connect(session_bus)?;
    wait_for_name(
        &conn,
        launcher::NAME,
        "org.a11y.Bus on the session bus",
        timeout,
        still_running,
    )?;
    let address = call(&conn, &launcher::GET_ADDRESS, launcher::NAME, &())?;
    if address.is_empty() {
        return Err(StepError::EmptyAddress);
    }
    Ok(address)
}

/// Waits until the registry owns its name on `a11y_bus`. `not_owned_yet` is
/// asked after every probe that found no owner (the owner may also be a
/// registry the bus activated meanwhile, so a registry process that exited
/// is only a failure while nobody owns the name).
pub fn wait_for_registry<E: std::fmt::Display>(
    a11y_bus: &str,
    timeout: Duration,
    not_owned_yet: impl FnMut() -> Result<(), E>,
) -> Result<(), StepError<E>> {
    let conn = connect(a11y_bus)?;
    let mut not_owned_yet = not_owned_yet;
    let deadline = Instant::now() + timeout;
    loop {
        if name_has_owner(&conn, REGISTRY_NAME)? {
            return Ok(());
        }
        not_owned_yet().map_err(StepError::Exited)?;
        if Instant::now() >= deadline {
            return Err(StepError::Timeout {
                what: "org.a11y.atspi.Registry on the a11y bus",
                seconds: timeout.as_secs_f64(),
            });
        }
        std::thread::sleep(PROBE_INTERVAL);
    }
}

/// Sets `org.a11y.Status.IsEnabled` on the launcher, as GNOME does when a
/// screen reader is turned on or off.
pub fn set_is_enabled(session_bus: &str, enabled: bool) -> zbus::Result<()> {
    async_io::block_on(async {
        let conn = connect_async(session_bus).await?;
        launcher::IS_ENABLED
            .set(&conn, launcher::NAME, launcher::PATH, enabled)
            .await
    })
}

/// Reads `org.a11y.Status.IsEnabled` from the launcher.
pub fn is_enabled(session_bus: &str) -> zbus::Result<bool> {
    async_io::block_on(async {
        let conn = connect_async(session_bus).await?;
        launcher::IS_ENABLED
            .get(&conn, launcher::NAME, launcher::PATH)
            .await
    })
}

async fn connect_async(address: &str) -> zbus::Result<zbus::Connection> {
    zbus::connection::Builder::address(address)?.build().await
}

fn connect<E: std::fmt::Display>(address: &str) -> Result<zbus::Connection, StepError<E>> {
    async_io::block_on(connect_async(address)).map_err(|source| StepError::Bus {
        what: format!("connect to bus {address}"),
        source: Box::new(source),
    })
}

fn call<A, R, E>(
    conn: &zbus::Connection,
    method: &Method<A, R>,
    dest: &str,
    args: &A,
) -> Result<R, StepError<E>>
where
    A: serde::Serialize + zbus::zvariant::DynamicType,
    R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
    E: std::fmt::Display,
{
    let path = method.fixed_path.unwrap_or("/");
    method
        .call_blocking(conn, dest, path, args)
        .map_err(|source| StepError::Bus {
            what: format!("{dest} {path} {}.{}", method.interface, method.member),
            source: Box::new(source),
        })
}

fn name_has_owner<E: std::fmt::Display>(
    conn: &zbus::Connection,
    name: &str,
) -> Result<bool, StepError<E>> {
    call(conn, &bus::NAME_HAS_OWNER, bus::NAME, &(name.to_owned(),))
}

fn wait_for_name<E: std::fmt::Display>(
    conn: &zbus::Connection,
    name: &str,
    what: &'static str,
    timeout: Duration,
    mut still_running: impl FnMut() -> Result<(), E>,
) -> Result<(), StepError<E>> {
    let deadline = Instant::now() + timeout;
    loop {
        still_running().map_err(StepError::Exited)?;
        if name_has_owner(conn, name)? {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(StepError::Timeout {
                what,
                seconds: timeout.as_secs_f64(),
            });
        }
        std::thread::sleep(PROBE_INTERVAL);
    }
}

/// Why the private session could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{program} is not installed; install it with: apt-get install {package}")]
    Missing {
        program: String,
        package: &'static str,
    },
    #[error("could not start {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{what} did not come up within {seconds} s")]
    Timeout { what: &'static str, seconds: u64 },
    #[error("{what} did not come up: {reason}")]
    Bus { what: &'static str, reason: String },
    #[error(
        "the accessibility bus launcher {launcher} did not start: {said} \
         (is at-spi2-core installed and complete? try running it by hand)"
    )]
    Launcher {
        launcher: &'static str,
        said: String,
    },
}

/// The running private buses.
pub struct PrivateSession {
    pub session_address: String,
    pub a11y_address: String,
    pub runtime_dir: PathBuf,
    children: Vec<Child>,
}

impl Drop for PrivateSession {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let pid = rustix::process::Pid::from_child(child);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for child in self.children.iter_mut().rev() {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.runtime_dir);
    }
}

impl PrivateSession {
    /// Starts a session bus, the accessibility bus (with `IsEnabled` true, as
    /// after a screen reader was turned on, on every launcher release) and
    /// the registry.
    pub fn start() -> Result<Self, SessionError> {
        require(BUS_LAUNCHER, "at-spi2-core")?;
        require(REGISTRYD, "at-spi2-core")?;
        let runtime_dir = std::env::temp_dir().join(format!("newton-demo-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&runtime_dir);
        let mut session = PrivateSession {
            session_address: String::new(),
            a11y_address: String::new(),
            runtime_dir,
            children: Vec::new(),
        };
        session.session_address = session.start_session_bus()?;
        let options = session.start_launcher()?;
        session.a11y_address = session.wait_for_a11y_address()?;
        enable_after_launch(options, &session.session_address, true).map_err(|e| {
            SessionError::Bus {
                what: "org.a11y.Status.IsEnabled",
                reason: e.to_string(),
            }
        })?;
        session.start_registry()?;
        Ok(session)
    }

    fn start_session_bus(&mut self) -> Result<String, SessionError> {
        let mut child = Command::new(BUS_DAEMON)
            .args(session_bus_args(None))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| spawn_error(BUS_DAEMON, source, "dbus-daemon"))?;
        let stdout = child.stdout.take();
        self.children.push(child);
        let mut line = String::new();
        if let Some(stdout) = stdout {
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        let address = line.trim().to_owned();
        if address.is_empty() {
            return Err(SessionError::Timeout {
                what: "the private session bus",
                seconds: 0,
            });
        }
        Ok(address)
    }

    fn start_launcher(&mut self) -> Result<LauncherOptions, SessionError> {
        let options =
            probe_launcher(self.command(BUS_LAUNCHER)).map_err(|e| SessionError::Launcher {
                launcher: BUS_LAUNCHER,
                said: e.to_string(),
            })?;
        let mut command = self.command(BUS_LAUNCHER);
        command.args(launcher_args(options, true));
        if options == LauncherOptions::WithA11yFlags {
            // Not a screen-reader session: nothing should start Orca for it.
            command.arg("--screen-reader=0");
        }
        // Its standard error goes to a file, read only if it fails (a pipe
        // nobody drains could block it, a closed one could kill it).
        let log =
            std::fs::File::create(self.launcher_log()).map_err(|source| SessionError::Spawn {
                program: BUS_LAUNCHER.to_owned(),
                source,
            })?;
        let child = command
            .stderr(log)
            .spawn()
            .map_err(|source| spawn_error(BUS_LAUNCHER, source, "at-spi2-core"))?;
        self.children.push(child);
        Ok(options)
    }

    /// Waits for the accessibility bus; a launcher that exited meanwhile
    /// fails the wait at once, with what it wrote to its standard error.
    fn wait_for_a11y_address(&mut self) -> Result<String, SessionError> {
        let launcher_index = self.children.len() - 1;
        let launcher = &mut self.children[launcher_index];
        let waited = wait_for_a11y_bus(&self.session_address, READY_TIMEOUT, || {
            match launcher.try_wait() {
                Ok(Some(status)) => Err(status),
                _ => Ok(()),
            }
        });
        let said = || launcher_said(&self.launcher_log());
        match waited {
            Ok(address) => Ok(address),
            Err(StepError::Exited(status)) => Err(SessionError::Launcher {
                launcher: BUS_LAUNCHER,
                said: format!("it exited ({status}) saying: {}", said()),
            }),
            Err(StepError::Timeout { seconds, .. }) => {
                // Still running but absent from the bus: say what it said so far.
                Err(SessionError::Launcher {
                    launcher: BUS_LAUNCHER,
                    said: format!(
                        "it did not own org.a11y.Bus within {seconds:.0} s; it said: {}",
                        said()
                    ),
                })
            }
            Err(other) => Err(SessionError::Bus {
                what: "the accessibility bus launcher",
                reason: other.to_string(),
            }),
        }
    }

    fn start_registry(&mut self) -> Result<(), SessionError> {
        let child = self
            .command(REGISTRYD)
            .env("AT_SPI_BUS_ADDRESS", &self.a11y_address)
            .spawn()
            .map_err(|source| spawn_error(REGISTRYD, source, "at-spi2-core"))?;
        self.children.push(child);
        wait_for_registry(&self.a11y_address, READY_TIMEOUT, || {
            Ok::<_, std::convert::Infallible>(())
        })
        .map_err(|e| step_failed("the AT-SPI registry", e))
    }

    fn launcher_log(&self) -> PathBuf {
        self.runtime_dir.join("at-spi-bus-launcher.log")
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .env("DBUS_SESSION_BUS_ADDRESS", &self.session_address)
            .env("XDG_RUNTIME_DIR", &self.runtime_dir)
            .env_remove("AT_SPI_BUS_ADDRESS")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }
}

/// What the launcher wrote to its standard error, for an error message.
fn launcher_said(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    match text.trim() {
        "" => "(nothing on its standard error)".to_owned(),
        said => said.to_owned(),
    }
}

fn require(program: &str, package: &'static str) -> Result<(), SessionError> {
    if std::path::Path::new(program).exists() {
        Ok(())
    } else {
        Err(SessionError::Missing {
            program: program.to_owned(),
            package,
        })
    }
}

fn spawn_error(program: &str, source: std::io::Error, package: &'static str) -> SessionError {
    if source.kind() == std::io::ErrorKind::NotFound {
        SessionError::Missing {
            program: program.to_owned(),
            package,
        }
    } else {
        SessionError::Spawn {
            program: program.to_owned(),
            source,
        }
    }
}

/// How long each part of [`PrivateSession`] may take to come up.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

fn step_failed(what: &'static str, error: StepError<std::convert::Infallible>) -> SessionError {
    match error {
        StepError::Timeout { seconds, .. } => SessionError::Timeout {
            what,
            seconds: seconds as u64,
        },
        other => SessionError::Bus {
            what,
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What at-spi2-core 2.62's launcher prints for `--a11y=0` before aborting
    /// (its usage line still lists the options it no longer takes).
    const USAGE_2_62: &str = "\n(at-spi-bus-launcher:12): GLib-ERROR **: 10:00:00.000: usage: \
        /usr/libexec/at-spi-bus-launcher [--launch-immediately] [--a11y=0|1] [--screen-reader=0|1]\n";
    /// What 2.46's prints for `--a11y=0` when the session bus cannot be reached.
    const NO_BUS_2_46: &str = "Failed to launch bus: Failed to connect to session bus";

    #[test]
    fn a_usage_line_means_launch_immediately_only() {
        assert_eq!(
            options_from_probe(USAGE_2_62),
            LauncherOptions::LaunchImmediatelyOnly
        );
        assert_eq!(
            options_from_probe(NO_BUS_2_46),
            LauncherOptions::WithA11yFlags
        );
        assert_eq!(options_from_probe(""), LauncherOptions::WithA11yFlags);
    }

    #[test]
    fn only_launchers_that_take_the_flag_are_given_it() {
        let flags = LauncherOptions::WithA11yFlags;
        let only = LauncherOptions::LaunchImmediatelyOnly;
        assert_eq!(
            launcher_args(flags, true),
            ["--launch-immediately", "--a11y=1"]
        );
        assert_eq!(
            launcher_args(flags, false),
            ["--launch-immediately", "--a11y=0"]
        );
        assert_eq!(launcher_args(only, true), ["--launch-immediately"]);
        assert_eq!(launcher_args(only, false), ["--launch-immediately"]);
    }

    /// The probe against the installed launcher agrees with the installed
    /// at-spi2-core's version: the flag went in 2.61.
    #[test]
    fn the_installed_launcher_is_probed_as_its_release_says() {
        if !Path::new(BUS_LAUNCHER).exists() {
            eprintln!("SKIP: {BUS_LAUNCHER} is not installed");
            return;
        }
        let Some(version) = installed_at_spi2_core() else {
            eprintln!("SKIP: no at-spi2-core in the dpkg database");
            return;
        };
        let expected = if version >= (2, 61) {
            LauncherOptions::LaunchImmediatelyOnly
        } else {
            LauncherOptions::WithA11yFlags
        };
        let probed = probe_launcher(Command::new(BUS_LAUNCHER)).expect("probe");
        assert_eq!(probed, expected, "at-spi2-core {version:?}");
    }

    fn installed_at_spi2_core() -> Option<(u32, u32)> {
        let status = std::fs::read_to_string("/var/lib/dpkg/status").ok()?;
        let stanza = status
            .split("\n\n")
            .find(|s| s.lines().any(|l| l == "Package: at-spi2-core"))?;
        let version = stanza.lines().find_map(|l| l.strip_prefix("Version: "))?;
        let mut parts = version.split(['.', '-']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some((major, minor))
    }
}
