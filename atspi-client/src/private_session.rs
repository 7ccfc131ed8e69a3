//! Private session and accessibility buses for the demo when no desktop
//! session is running: dbus-daemon, at-spi-bus-launcher, at-spi2-registryd.
//! Every process started here is killed by PID on drop, nothing else.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BUS_LAUNCHER: &str = "/usr/libexec/at-spi-bus-launcher";
const REGISTRYD: &str = "/usr/libexec/at-spi2-registryd";

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
        let mut child = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| spawn_error("dbus-daemon", source, "dbus-daemon"))?;
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
            .args(["--launch-immediately", "--a11y=1", "--screen-reader=0"])
            .spawn()
            .map_err(|source| spawn_error(BUS_LAUNCHER, source, "at-spi2-core"))?;
        self.children.push(child);
        Ok(())
    }

    fn wait_for_a11y_address(&self) -> Result<String, SessionError> {
        let address = self.session_address.clone();
        poll(
            Duration::from_secs(20),
            "the accessibility bus launcher",
            || {
                async_io::block_on(async {
                    let conn = zbus::connection::Builder::address(address.as_str())
                        .ok()?
                        .build()
                        .await
                        .ok()?;
                    let reply = conn
                        .call_method(
                            Some("org.a11y.Bus"),
                            "/org/a11y/bus",
                            Some("org.a11y.Bus"),
                            "GetAddress",
                            &(),
                        )
                        .await
                        .ok()?;
                    reply
                        .body()
                        .deserialize::<String>()
                        .ok()
                        .filter(|a| !a.is_empty())
                })
            },
        )
    }

    fn start_registry(&mut self) -> Result<(), SessionError> {
        let child = self
            .command(REGISTRYD)
            .env("AT_SPI_BUS_ADDRESS", &self.a11y_address)
            .spawn()
            .map_err(|source| spawn_error(REGISTRYD, source, "at-spi2-core"))?;
        self.children.push(child);
        let address = self.a11y_address.clone();
        poll(Duration::from_secs(20), "the AT-SPI registry", || {
            async_io::block_on(async {
                let conn = zbus::connection::Builder::address(address.as_str())
                    .ok()?
                    .build()
                    .await
                    .ok()?;
                let proxy = zbus::fdo::DBusProxy::new(&conn).await.ok()?;
                let name = zbus::names::BusName::try_from("org.a11y.atspi.Registry").ok()?;
                proxy.name_has_owner(name).await.ok().filter(|owned| *owned)
            })
        })
        .map(|_| ())
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

/// Polls `probe` until it yields a value; used only for readiness.
fn poll<T>(
    limit: Duration,
    what: &'static str,
    mut probe: impl FnMut() -> Option<T>,
) -> Result<T, SessionError> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            return Err(SessionError::Timeout {
                what,
                seconds: limit.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
