//! A real Orca 43.1 in a test session: start, wait until it listens, stop, read its speech.

use std::path::PathBuf;
use std::time::Duration;

use crate::process::pid_alive;
use newton_atspi_client::calls::{device_event_controller, REGISTRY};

use crate::{wait_until, BusClient, HarnessError, OrcaLock, Result, TestSession};

/// Events whose registration shows that Orca's event manager is up. Orca 43.1 registers 34 in one
/// batch, ending with the window events; names are compared without trailing ':'.
const ORCA_READY_EVENTS: &[&str] = &[
    "Object:StateChanged:Focused",
    "Object:TextCaretMoved",
    "Window:Activate",
    "Window:Destroy",
];
const ORCA_STOP_GRACE: Duration = Duration::from_secs(10);

/// A running Orca. Holds the machine-wide Orca lock until stopped (or dropped).
#[derive(Debug)]
pub struct Orca {
    pid: u32,
    pub debug_file: PathBuf,
    _lock: OrcaLock,
}

/// What Orca said, read from its debug file after it exited.
#[derive(Debug, Clone)]
pub struct OrcaSpeech {
    pub utterances: Vec<String>,
    pub debug_file: PathBuf,
}

impl OrcaSpeech {
    /// True if some utterance equals `text` exactly.
    pub fn said(&self, text: &str) -> bool {
        self.utterances.iter().any(|u| u == text)
    }
    /// True if some utterance contains `text`.
    pub fn said_containing(&self, text: &str) -> bool {
        self.utterances.iter().any(|u| u.contains(text))
    }
}

impl Orca {
    /// Takes the Orca lock, waits for any other Orca of this uid to go away (Orca refuses to
    /// start next to one, and `--replace` would kill someone else's), starts
    /// `orca --debug-file=F -u PREFS`, and waits until it has registered its event listeners
    /// with the registry — no fixed sleep.
    pub fn start(session: &mut TestSession) -> Result<Orca> {
        let lock = OrcaLock::acquire(Duration::from_secs(600))?;
        wait_for_no_other_orca(session.ready_timeout())?;
        let debug_file = session.dir().join("orca-debug.out");
        let prefs = session.dir().join("orca-prefs");
        std::fs::create_dir_all(&prefs)
            .map_err(HarnessError::io(format!("create {}", prefs.display())))?;
        let mut cmd = session.command("orca");
        cmd.arg(format!("--debug-file={}", debug_file.display()))
            .arg("-u")
            .arg(&prefs);
        let pid = session.spawn("orca", cmd)?;
        let orca = Orca {
            pid,
            debug_file,
            _lock: lock,
        };
        orca.wait_until_listening(session)?;
        Ok(orca)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits until Orca has been idle (no CPU time used) for one second, i.e. it has processed
    /// the events and keys sent so far. This is readiness, not a speed assertion: the bound is
    /// the session's ready timeout.
    pub fn wait_idle(&self, session: &mut TestSession) -> Result<()> {
        const QUIET_SAMPLES: u32 = 4;
        let mut last = cpu_ticks(self.pid);
        let mut quiet = 0;
        wait_until("Orca to become idle", session.ready_timeout(), || {
            session.ensure_running(self.pid)?;
            std::thread::sleep(Duration::from_millis(150));
            let now = cpu_ticks(self.pid);
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
            Ok(quiet >= QUIET_SAMPLES)
        })
    }

    fn wait_until_listening(&self, session: &mut TestSession) -> Result<()> {
        let client = session.a11y_client()?;
        let mut seen = Vec::new();
        let result = wait_until(
            "Orca to register its event listeners",
            session.ready_timeout(),
            || {
                session.ensure_running(self.pid)?;
                seen = client.events_registered_by_pid(self.pid)?;
                Ok(ORCA_READY_EVENTS
                    .iter()
                    .all(|e| seen.iter().any(|s| s.trim_end_matches(':') == *e)))
            },
        );
        result.map_err(|e| match e {
            HarnessError::Timeout { seconds, what, .. } => session.service_error(
                "orca",
                &format!("not ready: timed out after {seconds:.0} s waiting for {what}; it registered {seen:?}"),
            ),
            other => other,
        })
    }

    /// SIGTERM, wait ≤ 10 s (then SIGKILL), then read the now complete debug file.
    ///
    /// Orca 43.1 handles SIGTERM in Python, but it idles inside libatspi's C main loop, so the
    /// handler only runs once some Python callback does. While waiting, the harness therefore
    /// nudges it every 500 ms with a no-op key release (keysym 0) through the registry.
    pub fn stop(self, session: &mut TestSession) -> Result<OrcaSpeech> {
        let a11y = session.a11y_bus_address().map(str::to_string);
        session.stop_with(self.pid, ORCA_STOP_GRACE, || {
            if let Some(address) = a11y.clone() {
                nudge_key_listeners(address);
            }
        });
        let bytes = std::fs::read(&self.debug_file).map_err(HarnessError::io(format!(
            "read Orca debug file {}",
            self.debug_file.display()
        )))?;
        let text = String::from_utf8_lossy(&bytes);
        Ok(OrcaSpeech {
            utterances: extract_speech(&text),
            debug_file: self.debug_file.clone(),
        })
    }
}

/// Sends a key release of keysym 0 to the registry's key listeners from a detached thread (the
/// synchronous call could block while Orca shuts down; the thread then just ends with the test).
fn nudge_key_listeners(address: String) {
    std::thread::spawn(move || {
        let Ok(client) = BusClient::connect(&address) else {
            return;
        };
        let release_of_nothing = (1, 0, 0, 0, 0, String::new(), false);
        let _ = client.call_fixed(
            &device_event_controller::NOTIFY_LISTENERS_SYNC,
            REGISTRY,
            &(release_of_nothing,),
        );
    });
}

/// Every `SPEECH OUTPUT: '…'` utterance of an Orca debug log, in order. Multi-line utterances
/// are kept whole: an utterance ends at a `'` followed by optional whitespace and `{` or `[`
/// (Orca 43.1 and 51 formats), like `re.findall(r"SPEECH OUTPUT: '(.*?)'\s*[\[{]", s, re.S)`.
pub fn extract_speech(log: &str) -> Vec<String> {
    const START: &str = "SPEECH OUTPUT: '";
    let mut utterances = Vec::new();
    let mut rest = log;
    while let Some(at) = rest.find(START) {
        let body = &rest[at + START.len()..];
        match utterance_end(body) {
            Some(end) => {
                utterances.push(body[..end].to_string());
                rest = &body[end + 1..];
            }
            None => break,
        }
    }
    utterances
}

/// Byte index of the closing quote: the first `'` followed by optional whitespace and `{`/`[`.
fn utterance_end(body: &str) -> Option<usize> {
    body.match_indices('\'')
        .map(|(i, _)| i)
        .find(|&i| body[i + 1..].trim_start().starts_with(['{', '[']))
}

/// utime + stime of a process, in clock ticks (None once it is gone).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    // Fields after the command: state is field 3, utime 14 and stime 15 (1-based).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// PIDs of processes named `orca` owned by this uid (what `orca` itself checks at start-up).
fn other_orcas() -> Vec<u32> {
    let uid = rustix::process::getuid().as_raw();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "orca")
        })
        .filter(|pid| owned_by(*pid, uid) && pid_alive(*pid))
        .collect()
}

fn owned_by(pid: u32, uid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .is_some_and(|real| real == uid.to_string())
    })
}

fn wait_for_no_other_orca(timeout: Duration) -> Result<()> {
    let mut others = Vec::new();
    wait_until("other Orca processes of this uid to exit", timeout, || {
        others = other_orcas();
        Ok(others.is_empty())
    })
    .map_err(|_| {
        HarnessError::Other(format!(
            "another Orca of this uid is running (pids {others:?}), not started by this test; \
             Orca refuses to start next to it and `--replace` would kill it. Stop it and rerun."
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::extract_speech;

    #[test]
    fn extracts_single_and_multi_line_utterances_in_both_formats() {
        let log = "08:17:53.1 - SPEECH OUTPUT: 'OK push button.'{'established': False}\n\
                   junk\n08:17:54.2 - SPEECH OUTPUT: 'First line\nit's second'[{'a': 1}]\n\
                   08:17:55 - SPEECH OUTPUT: 'OK button' {'voice-type': 1}\n";
        assert_eq!(
            extract_speech(log),
            vec!["OK push button.", "First line\nit's second", "OK button"]
        );
    }

    #[test]
    fn ignores_an_unterminated_utterance() {
        assert!(extract_speech("SPEECH OUTPUT: 'cut off").is_empty());
    }
}
