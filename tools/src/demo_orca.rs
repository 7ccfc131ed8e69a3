//! The demo's screen reader: a real Orca on a private X display, with speech
//! made unavailable (speech-dispatcher's dummy module) so that what it would
//! say is only written to its debug log, which the demo prints. Used only on
//! private buses, never next to a user's own Orca.

use newton_atspi_client::calls::{device_event_controller, REGISTRY};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// Why Orca was not run (the demo then prints only the tree).
#[derive(Debug, thiserror::Error)]
pub enum OrcaError {
    #[error("{0} is not installed")]
    Missing(&'static str),
    #[error("another Orca runs for this user; the demo leaves it alone")]
    OtherOrca,
    #[error("{what} did not start: {why}")]
    Start { what: &'static str, why: String },
}

/// Xvfb and Orca, stopped (Orca gracefully, so its log is complete) on drop.
pub struct DemoOrca {
    xvfb: Child,
    orca: Child,
    log: PathBuf,
}

impl DemoOrca {
    /// Starts Xvfb and Orca on the private session in `dir`, and waits until
    /// Orca has registered its event listeners.
    pub fn start(dir: &Path, session_bus: &str, a11y_bus: &str) -> Result<Self, OrcaError> {
        which("orca")?;
        which("Xvfb")?;
        if other_orca_running() {
            return Err(OrcaError::OtherOrca);
        }
        let (xvfb, display) = start_xvfb()?;
        let home = dir.join("home");
        let speechd = home.join(".config/speech-dispatcher");
        let _ = std::fs::create_dir_all(&speechd);
        let _ = std::fs::write(
            speechd.join("speechd.conf"),
            "DefaultModule dummy\nAddModule \"dummy\" \"sd_dummy\" \"\"\n",
        );
        let log = dir.join("orca-debug.out");
        let orca = Command::new("orca")
            .arg(format!("--debug-file={}", log.display()))
            .arg("-u")
            .arg(dir.join("orca-prefs"))
            .env("DISPLAY", &display)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("GSETTINGS_BACKEND", "memory")
            .env("LANG", "C.UTF-8")
            .env("BRLAPI_HOST", "127.0.0.1:9999")
            .env("DBUS_SESSION_BUS_ADDRESS", session_bus)
            .env("AT_SPI_BUS_ADDRESS", a11y_bus)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| OrcaError::Start {
                what: "orca",
                why: e.to_string(),
            })?;
        let demo = DemoOrca { xvfb, orca, log };
        demo.wait_until_listening(a11y_bus)?;
        Ok(demo)
    }

    fn wait_until_listening(&self, a11y_bus: &str) -> Result<(), OrcaError> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let registered = async_io::block_on(async {
                let conn = newton_atspi_daemon::a11y_bus::connect(a11y_bus)
                    .await
                    .ok()?;
                newton_atspi_daemon::registry::registered_events(&conn)
                    .await
                    .ok()
            });
            let ready = registered
                .unwrap_or_default()
                .iter()
                .any(|(_, event)| event.starts_with("Window:Activate"));
            if ready {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(OrcaError::Start {
            what: "orca",
            why: "it registered no event listeners within 60 s".into(),
        })
    }

    /// Lets Orca finish speaking, stops it and returns what it said.
    pub fn stop(mut self, a11y_bus: &str) -> Vec<String> {
        std::thread::sleep(Duration::from_secs(2));
        let pid = Pid::from_child(&self.orca);
        let _ = kill_process(pid, Signal::TERM);
        // Orca handles SIGTERM in Python, which only runs when an event
        // arrives: nudge it with a no-op key release until it exits.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && matches!(self.orca.try_wait(), Ok(None)) {
            nudge(a11y_bus);
            std::thread::sleep(Duration::from_millis(300));
        }
        let _ = self.orca.kill();
        let _ = self.orca.wait();
        std::fs::read(&self.log)
            .map(|bytes| utterances(&String::from_utf8_lossy(&bytes)))
            .unwrap_or_default()
    }
}

impl Drop for DemoOrca {
    fn drop(&mut self) {
        let _ = self.orca.kill();
        let _ = self.orca.wait();
        let _ = self.xvfb.kill();
        let _ = self.xvfb.wait();
    }
}

fn which(program: &'static str) -> Result<(), OrcaError> {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false);
    if found {
        Ok(())
    } else {
        Err(OrcaError::Missing(program))
    }
}

fn other_orca_running() -> bool {
    Command::new("pgrep")
        .args([
            "-u",
            &rustix::process::getuid().as_raw().to_string(),
            "-x",
            "orca",
        ])
        .stdout(Stdio::null())
        .status()
        .map(|status| status.success())
        .unwrap_or(false)
}

/// Xvfb picks a free display and writes its number on stdout (`-displayfd 1`).
fn start_xvfb() -> Result<(Child, String), OrcaError> {
    let mut xvfb = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1024x768x24",
            "-nolisten",
            "tcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| OrcaError::Start {
            what: "Xvfb",
            why: e.to_string(),
        })?;
    let mut line = String::new();
    if let Some(stdout) = xvfb.stdout.take() {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    let number = line.trim();
    if number.is_empty() {
        let _ = xvfb.kill();
        let _ = xvfb.wait();
        return Err(OrcaError::Start {
            what: "Xvfb",
            why: "it reported no display".into(),
        });
    }
    Ok((xvfb, format!(":{number}")))
}

fn nudge(a11y_bus: &str) {
    let release_of_nothing = (1, 0, 0, 0, 0, String::new(), false);
    let address = a11y_bus.to_owned();
    std::thread::spawn(move || {
        async_io::block_on(async {
            if let Ok(conn) = newton_atspi_daemon::a11y_bus::connect(&address).await {
                let _ = device_event_controller::NOTIFY_LISTENERS_SYNC
                    .call_fixed(&conn, REGISTRY, &(release_of_nothing,))
                    .await;
            }
        })
    });
}

/// Every `SPEECH OUTPUT: '…'` utterance of an Orca debug log; an utterance
/// may span lines and ends at a quote followed by Orca's voice settings.
pub fn utterances(log: &str) -> Vec<String> {
    const START: &str = "SPEECH OUTPUT: '";
    let mut found = Vec::new();
    let mut rest = log;
    while let Some(at) = rest.find(START) {
        let body = &rest[at + START.len()..];
        let end = body.char_indices().find(|(i, c)| {
            *c == '\''
                && body[i + 1..]
                    .trim_start_matches([' ', '\t'])
                    .starts_with(['{', '['])
        });
        match end {
            Some((end, _)) => {
                found.push(body[..end].to_string());
                rest = &body[end + 1..];
            }
            None => break,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::utterances;

    #[test]
    fn reads_single_and_multi_line_utterances() {
        let log = "12:00:00.1 - SPEECH OUTPUT: 'OK push button.'{'established': False}\n\
                   12:00:00.2 - SPEECH OUTPUT: 'First line\nsecond line' [{'a': 1}]\n\
                   12:00:00.3 - SPEECH OUTPUT: 'it's here' {'voice-type': 1}\n";
        assert_eq!(
            utterances(log),
            vec!["OK push button.", "First line\nsecond line", "it's here"]
        );
    }
}
