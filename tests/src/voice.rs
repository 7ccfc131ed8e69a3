//! A silent voice for Orca: speech-dispatcher with the `newton-silent-voice` module, so Orca
//! waits on its speech as it does for a listener, and the test reads what was "heard".
//!
//! A session's default speech-dispatcher configuration names the dummy module, which fails to
//! start, so Orca 43.1 and 48.1 have no speech server and present Say All as one synchronous
//! loop; Orca 51.1 keeps a server without a client and its Say All stops after the first piece.
//! A test that needs Orca to speak over time (Say All that can be stopped), or a Say All read to
//! its end under every Orca, installs this voice before starting Orca. Orca's speech client then
//! spawns a real speech-dispatcher inside the session (its configuration, socket and pid file
//! lie in the session's directories, and it carries the session's marker, so teardown stops it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{HarnessError, Result, TestSession};

/// How often [`SilentVoice::wait_to_hear`] reads the log.
const HEARING_POLL: Duration = Duration::from_millis(20);

/// The module binary's name in the session directory.
const MODULE_FILE: &str = "newton-silent-voice";

/// What the silent voice heard, read from its log while Orca runs.
#[derive(Debug)]
pub struct SilentVoice {
    log: PathBuf,
}

/// The line the module writes after a message cut short by a stop.
pub const STOPPED: &str = "[stopped]";

impl SilentVoice {
    /// Makes `module` (the `newton-silent-voice` binary) speech-dispatcher's default module for
    /// this session, each character taking `per_char`. Call before `Orca::start`. The binary is
    /// copied into the session directory, which Orca 48.1's root also sees.
    pub fn install(
        session: &TestSession,
        module: &Path,
        per_char: Duration,
    ) -> Result<SilentVoice> {
        let dir = session.dir();
        let binary = dir.join(MODULE_FILE);
        std::fs::copy(module, &binary).map_err(HarnessError::io(format!(
            "copy the silent voice {} into the session (build it with `cargo build -p newton-e2e`)",
            module.display()
        )))?;
        let log = dir.join("voice-heard.log");
        let module_conf = dir.join("newton-silent-voice.conf");
        write(
            &module_conf,
            &format!(
                "VoiceLog {}\nMillisecondsPerCharacter {}\n",
                log.display(),
                per_char.as_millis()
            ),
        )?;
        let speechd_conf = dir.join("home/.config/speech-dispatcher/speechd.conf");
        write(
            &speechd_conf,
            &format!(
                "DefaultModule silent\nAddModule \"silent\" \"{}\" \"{}\"\n",
                binary.display(),
                module_conf.display()
            ),
        )?;
        write(&log, "")?;
        Ok(SilentVoice { log })
    }

    /// Every message heard so far, one per entry, with [`STOPPED`] after a message cut short.
    pub fn heard(&self) -> Result<Vec<String>> {
        let text = std::fs::read_to_string(&self.log)
            .map_err(HarnessError::io(format!("read {}", self.log.display())))?;
        Ok(text.lines().map(str::to_owned).collect())
    }

    /// Waits (at most `timeout`) until the voice starts a message containing `text`. It looks
    /// every 20 ms, not at the harness's usual 100 ms, so that a key pressed next reaches Orca
    /// while that message is still being said.
    pub fn wait_to_hear(&self, text: &str, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            let heard = self.heard()?;
            if heard.iter().any(|line| line.contains(text)) {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                return Err(HarnessError::Other(format!(
                    "the voice did not say {text:?} within {} s; it heard: {heard:#?}",
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(HEARING_POLL);
        }
    }

    pub fn log(&self) -> &Path {
        &self.log
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(HarnessError::io(format!("write {}", path.display())))
}
