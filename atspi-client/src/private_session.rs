//! The one launcher of private session and accessibility buses: dbus-daemon,
//! at-spi-bus-launcher (which starts the accessibility bus and answers
//! `org.a11y.Status.IsEnabled`) and at-spi2-registryd.
//!
//! Two layers. The steps ([`launcher_args`], [`wait_for_a11y_bus`],
//! [`wait_for_registry`], [`set_is_enabled`]) know how each part comes up and
//! when it is ready; callers that track their own children (the end-to-end
//! harness, which logs and restarts each part, and the benchmarks) spawn the
//! processes themselves and use them. [`PrivateSession`] runs the whole
//! sequence for the CLI (`demo`), owning its children: every process started
//! here is killed by PID on drop, nothing else.

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

/// at-spi-bus-launcher's arguments: start the bus at once, with
/// `org.a11y.Status.IsEnabled` as given (`true`: as after a screen reader was
/// turned on; `false`: the "no AT, no cost" state).
pub fn launcher_args(is_enabled: bool) -> [&'static str; 2] {
    let a11y = if is_enabled { "--a11y=1" } else { "--a11y=0" };
    ["--launch-immediately", a11y]
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
    /// Starts a session bus, the accessibility bus and the registry.
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
        session.start_launcher()?;
        session.a11y_address = session.wait_for_a11y_address()?;
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

    fn start_launcher(&mut self) -> Result<(), SessionError> {
        let child = self
            .command(BUS_LAUNCHER)
            .args(launcher_args(true))
            .arg("--screen-reader=0")
            .spawn()
            .map_err(|source| spawn_error(BUS_LAUNCHER, source, "at-spi2-core"))?;
        self.children.push(child);
        Ok(())
    }

    fn wait_for_a11y_address(&self) -> Result<String, SessionError> {
        wait_for_a11y_bus(&self.session_address, READY_TIMEOUT, || {
            Ok::<_, std::convert::Infallible>(())
        })
        .map_err(|e| step_failed("the accessibility bus launcher", e))
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
