//! A real Orca in a test session: start, wait until it listens, stop, read its speech.
//!
//! Two Orcas are supported: the host's (Debian 12, Orca 43.1) and, when `NEWTON_ORCA_ROOT` names
//! a root built by `scripts/orca-root.sh`, Debian 13's Orca 48.1 with its own libatspi 2.56.
//! That Orca runs chrooted in a private mount namespace (`unshare --mount`) that sees the host's
//! /tmp (session directory, bus sockets, X socket), /dev and a fresh /proc; the mounts exist only
//! in that namespace, so they vanish with Orca's process however it ends: nothing to unmount.
//! The private buses, Xvfb, the registry and the bridge stay on the host.
//!
//! Every Orca, the host's too, runs in a PID namespace of its own (`unshare --pid --fork`), where
//! it is process 1 and sees no other process. Orca refuses to start while `pgrep -u UID -x orca`
//! finds another Orca of its user (`/usr/bin/orca` `main`); in its own namespace it finds none, so
//! Orcas of different versions can run side by side (CI runs its Orca passes that way), and an
//! Orca the user runs on the same machine is neither seen nor touched. Orcas of one version still
//! take turns ([`OrcaLock`]), since one test binary runs its tests in parallel threads.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use newton_atspi_client::calls::{device_event_controller, REGISTRY};

use crate::{wait_until, BusClient, HarnessError, OrcaLock, Result, TestSession};

/// What Orca writes to its debug file just before it runs its main loop:
/// Orca 43 (`orca.py` `main`, before `start(pyatspi.Registry)`), Orca 48 and 51
/// (before `Atspi.event_main()`).
const MAIN_LOOP_LINES: &[&str] = &[
    "ORCA: Starting ATSPI registry.",
    "ORCA: Starting Atspi main event loop",
];

/// Events whose registration shows that Orca's event manager is up. Orca 43.1 registers 34 in one
/// batch, ending with the window events; names are compared without trailing ':'.
const ORCA_READY_EVENTS: &[&str] = &[
    "Object:StateChanged:Focused",
    "Object:TextCaretMoved",
    "Window:Activate",
    "Window:Destroy",
];
const ORCA_STOP_GRACE: Duration = Duration::from_secs(10);

/// A running Orca. Holds its version's Orca lock until stopped (or dropped).
#[derive(Debug)]
pub struct Orca {
    /// Orca's own process (as the host sees it): its CPU time, its bus connection, its signals.
    pid: u32,
    /// The session's child that holds Orca's PID namespace (`unshare`); it exits when Orca does.
    namespace_holder: u32,
    pub debug_file: PathBuf,
    _lock: OrcaLock,
}

/// What Orca said, read from its debug file after it exited.
#[derive(Debug, Clone)]
pub struct OrcaSpeech {
    pub utterances: Vec<String>,
    /// What Say All read, one entry per piece of content in reading order (the web script's
    /// `WEB SAY ALL CONTENT` log lines, Orca 51's `SAY ALL PRESENTER: CONTENT:`). With a voice, Say
    /// All's words reach the log only in these lines, not as `SPEECH OUTPUT`.
    pub say_all: Vec<String>,
    pub debug_file: PathBuf,
    /// Whether this Orca ends an object's presentation with a full stop ("OK button."): every
    /// Orca before 51 ([`OrcaVersion::ends_presentations_with_full_stop`]).
    pub full_stops: bool,
}

impl OrcaSpeech {
    /// True if some utterance is `text` as this Orca words it ([`OrcaSpeech::is`]).
    pub fn said(&self, text: &str) -> bool {
        self.utterances.iter().any(|u| self.is(u, text))
    }

    /// True if the utterance `said` is `want` as this Orca words it: exactly, or, under an Orca
    /// that ends an object's presentation without a full stop (51 and later), `want` without
    /// its final full stop. Expectations are written as Orca 43.1 and 48.1 say them ("OK
    /// button."); messages keep their full stop under 51 too ("Screen reader on.").
    pub fn is(&self, said: &str, want: &str) -> bool {
        said == want || (!self.full_stops && want.strip_suffix('.') == Some(said))
    }

    /// True if the utterance `said` contains `want` as this Orca words it: anywhere, or, under
    /// an Orca that ends an object's presentation without a full stop ([`OrcaSpeech::is`]),
    /// `want` without its final full stop at the end of `said` ("link 0.0 link." in "… link
    /// 0.0 link").
    pub fn contains(&self, said: &str, want: &str) -> bool {
        said.contains(want)
            || (!self.full_stops
                && want
                    .strip_suffix('.')
                    .is_some_and(|bare| said.ends_with(bare)))
    }

    /// True if some utterance contains `text`.
    pub fn said_containing(&self, text: &str) -> bool {
        self.utterances.iter().any(|u| u.contains(text))
    }
}

/// How long [`Orca::command_key`] holds a key down on the X server: as long as a typing person
/// does, and well under Xvfb's auto-repeat delay (660 ms), so the key is never repeated.
pub const COMMAND_KEY_HOLD: Duration = Duration::from_millis(300);

impl Orca {
    /// Takes the lock of this Orca version, starts `orca --debug-file=F -u PREFS` in a PID
    /// namespace of its own, and waits until it has registered its event listeners with the
    /// registry and entered its main loop — no fixed sleep.
    pub fn start(session: &mut TestSession) -> Result<Orca> {
        let lock = OrcaLock::acquire(&orca_lock_name(), Duration::from_secs(600))?;
        if atspi_release().is_some_and(|release| release >= RAW_KEY_FALLBACK) {
            crate::focus_stand_in_window(session)?;
        }
        let debug_file = fresh_debug_file(session.dir());
        let prefs = session.dir().join("orca-prefs");
        std::fs::create_dir_all(&prefs)
            .map_err(HarnessError::io(format!("create {}", prefs.display())))?;
        let hooks = write_line_buffering_hook(session.dir())?;
        let mut cmd = orca_process_command(session)?;
        cmd.arg(format!("--debug-file={}", debug_file.display()))
            .arg("-u")
            .arg(&prefs)
            .env("PYTHONPATH", &hooks)
            .env(DEBUG_FILE_VAR, &debug_file);
        let namespace_holder = session.spawn("orca", cmd)?;
        let pid = namespaced_process(session, namespace_holder)?;
        let orca = Orca {
            pid,
            namespace_holder,
            debug_file,
            _lock: lock,
        };
        orca.wait_until_listening(session)?;
        Ok(orca)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// One press or release of the X key `name`, the way this Orca reads keys: through the
    /// registry for Orca 43 (returns whether it consumed it). For Orca 48, which reads the X
    /// server, the press is a whole real X key (`xdotool key`: press and release) and the
    /// release does nothing (returns `None`): a key held down on Xvfb auto-repeats, and Orca
    /// 48 echoed the repeats for as long as the test took to push the application's reaction.
    pub fn key_event(
        &self,
        session: &mut TestSession,
        phase: crate::KeyPhase,
        name: &str,
    ) -> Result<Option<bool>> {
        if OrcaVersion::current()?.reads_keys_from_x() {
            if phase == crate::KeyPhase::Press {
                self.press(session, &format!("key-{name}"), name)?;
            }
            return Ok(None);
        }
        crate::registry_key(&session.a11y_client()?, phase, name).map(Some)
    }

    /// One of Orca's own commands (Where Am I, flat review's lines: `KP_Enter`, `KP_Up`, ...),
    /// pressed as a person presses it. For Orca 48 and later, which read the X server, the key
    /// is held for [`COMMAND_KEY_HOLD`] before it is released. Orca 51 runs a command's handler
    /// after processing the key's press, and flat review reuses its context only while the
    /// previous input event is the previous review command: with `xdotool`'s usual 6 ms
    /// between press and release, whether the release came first (a new context, back at the
    /// top) or the handler (the same context, the same line) was a race, and the two sides of
    /// one speech-parity run could lose it differently (grid-small, step 2's current line).
    /// Held as long as a typing person holds a key, the handler wins. Orca 43 gets the press
    /// and the release through the registry on `a11y`, which returns only once Orca has
    /// handled each; the press's answer says whether Orca consumed it.
    pub fn command_key(
        &self,
        session: &mut TestSession,
        a11y: &BusClient,
        key: &str,
    ) -> Result<Option<bool>> {
        if !OrcaVersion::current()?.reads_keys_from_x() {
            let consumed = crate::registry_key(a11y, crate::KeyPhase::Press, key)?;
            crate::registry_key(a11y, crate::KeyPhase::Release, key)?;
            return Ok(Some(consumed));
        }
        // xdotool waits half its --delay between a key's press and its release.
        let delay = (2 * COMMAND_KEY_HOLD.as_millis()).to_string();
        crate::xdotool(
            session,
            &format!("command-{key}"),
            &["key", "--clearmodifiers", "--delay", &delay, key],
        )?;
        self.wait_idle(session)?;
        Ok(None)
    }

    /// Presses and releases `key` (xdotool's form: `KP_Enter`, `shift+alt+Down`) the way this
    /// Orca reads keys. Orca 43 learns keys only from the registry's key listeners, so the key is
    /// injected there (tests/py/inject_key.py) and the answer says whether Orca consumed it.
    /// Orca 48 reads keys from the X server itself and registers no key listener, so the key is
    /// a real X key (`xdotool`, to the focused X window; a chord nested as a user presses it,
    /// [`xdotool_key_args`]) and `None` is returned: whether Orca took it shows in what it says
    /// and in the application not acting on it.
    ///
    /// Either way it returns once Orca has handled the key: the registry call is synchronous,
    /// and after an X key the harness waits for Orca to go idle. Without that wait Orca 48
    /// presented the key only after a replayed reaction had already arrived, found the new
    /// focus itself (Collection) while presenting the key, and then stayed silent for the
    /// focus event ("OK button." missing after Tab in egui-form-focus) — an order no real
    /// application produces, since it reacts to the key after it was sent.
    pub fn press(&self, session: &mut TestSession, label: &str, key: &str) -> Result<Option<bool>> {
        let consumed = self.press_while_speaking(session, label, key)?;
        if consumed.is_none() {
            self.wait_idle(session)?;
        }
        Ok(consumed)
    }

    /// [`Orca::press`] without waiting for Orca to go idle afterwards: for a key that starts
    /// speech going on for a while (Say All with a [`crate::SilentVoice`]), during which Orca
    /// keeps working and never idles.
    pub fn press_while_speaking(
        &self,
        session: &mut TestSession,
        label: &str,
        key: &str,
    ) -> Result<Option<bool>> {
        if OrcaVersion::current()?.reads_keys_from_x() {
            let args = xdotool_key_args(key);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            crate::xdotool(session, label, &args)?;
            return Ok(None);
        }
        let (modifiers, name) = atspi_modifiers(key)?;
        let mut inject = session.command(crate::python());
        inject
            .arg(crate::py_script("inject_key.py"))
            .arg(format!("--modifiers={modifiers}"))
            .arg(name);
        let out = session.run_ok(label, inject, Duration::from_secs(30))?;
        Ok(Some(out.contains(&format!("{name} press consumed=True"))))
    }

    /// Waits until Orca has been idle (no CPU time used) for one second, i.e. it has processed
    /// the events and keys sent so far. This is readiness, not a speed assertion: the bound is
    /// the session's ready timeout.
    pub fn wait_idle(&self, session: &mut TestSession) -> Result<()> {
        const QUIET_SAMPLES: u32 = 4;
        let mut last = cpu_ticks(self.pid);
        let mut quiet = 0;
        wait_until("Orca to become idle", session.ready_timeout(), || {
            session.ensure_running(self.namespace_holder)?;
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
                session.ensure_running(self.namespace_holder)?;
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
        })?;
        self.wait_for_main_loop(session)
    }

    /// Waits until Orca has entered its main loop, which its debug file says
    /// ([`MAIN_LOOP_LINES`]). Orca registers its listeners during start-up,
    /// before it says "Screen reader on." and looks for the active window and
    /// the focused object there (`orca.py` `main`); until its main loop runs,
    /// nothing answers a key the registry hands it. With an application
    /// already on the desktop that search can take long (a whole-tree walk
    /// where the application has no Collection).
    fn wait_for_main_loop(&self, session: &mut TestSession) -> Result<()> {
        wait_until(
            "Orca to enter its main loop (its debug file)",
            session.ready_timeout(),
            || {
                session.ensure_running(self.namespace_holder)?;
                let log = std::fs::read_to_string(&self.debug_file).unwrap_or_default();
                Ok(MAIN_LOOP_LINES.iter().any(|line| log.contains(line)))
            },
        )
        .map_err(|e| match e {
            HarnessError::Timeout { seconds, what, .. } => session.service_error(
                "orca",
                &format!("not ready: timed out after {seconds:.0} s waiting for {what}"),
            ),
            other => other,
        })
    }

    /// Everything Orca has spoken so far (its `SPEECH OUTPUT` lines, as [`OrcaSpeech`] holds
    /// them after [`Orca::stop`]): the debug file is line-buffered (see
    /// [`LINE_BUFFERING_HOOK`]), so it can be read while Orca runs.
    pub fn speech_so_far(&self) -> Result<Vec<String>> {
        let bytes = std::fs::read(&self.debug_file).map_err(HarnessError::io(format!(
            "read Orca debug file {}",
            self.debug_file.display()
        )))?;
        Ok(extract_speech(&String::from_utf8_lossy(&bytes)))
    }

    /// What Say All has read so far (its `WEB SAY ALL CONTENT` or, under 51, `SAY ALL PRESENTER:
    /// CONTENT:` lines): the debug file is line-buffered (see [`LINE_BUFFERING_HOOK`]), so it
    /// can be read while Orca runs.
    pub fn say_all_so_far(&self) -> Result<Vec<String>> {
        let bytes = std::fs::read(&self.debug_file).map_err(HarnessError::io(format!(
            "read Orca debug file {}",
            self.debug_file.display()
        )))?;
        Ok(extract_say_all(&String::from_utf8_lossy(&bytes)))
    }

    /// SIGTERM, wait ≤ 10 s (then SIGKILL), then read the now complete debug file.
    ///
    /// Orca 43.1 handles SIGTERM in Python, but it idles inside libatspi's C main loop, so the
    /// handler only runs once some Python callback does. While waiting, the harness therefore
    /// nudges it every 500 ms with a no-op key release (keysym 0) through the registry.
    pub fn stop(self, session: &mut TestSession) -> Result<OrcaSpeech> {
        let a11y = session.a11y_bus_address().map(str::to_string);
        // Orca itself gets the SIGTERM: util-linux 2.38's `unshare --fork` does not pass it on.
        // Its namespace holder exits once Orca has (and kills Orca if it is killed itself).
        crate::process::send_signal(self.pid, rustix::process::Signal::TERM);
        session.stop_with(self.namespace_holder, ORCA_STOP_GRACE, || {
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
            say_all: extract_say_all(&text),
            debug_file: self.debug_file.clone(),
            full_stops: OrcaVersion::current()?.ends_presentations_with_full_stop(),
        })
    }
}

/// The text of each `WEB SAY ALL CONTENT: N. [object] 'text' (start-end)` line (Orca 43.1 to
/// 50) or `SAY ALL PRESENTER: CONTENT:` line (Orca 51), trimmed. Orca
/// 43.1 writes the object as `[role | name]`, 48.1 as `[role: 'name']` and pads the text and
/// the offsets with spaces; the text is what lies between the quote after the object and the
/// last quote before the offsets.
fn extract_say_all(log: &str) -> Vec<String> {
    // Orca 51 moved Say All out of the web script into say_all_presenter.py, whose line for
    // each piece of content is `SAY ALL PRESENTER: CONTENT: N . [object] 'text' (start - end)`.
    const MARKS: [&str; 2] = ["WEB SAY ALL CONTENT: ", "SAY ALL PRESENTER: CONTENT: "];
    log.lines()
        .filter_map(|line| {
            let content = MARKS
                .iter()
                .find_map(|mark| Some(&line[line.find(mark)? + mark.len()..]))?;
            // Orca 51 joins the object and the quote without a space.
            let text_start = match content.find("] '") {
                Some(at) => at + 3,
                None => content.find("]'")? + 2,
            };
            let text_end = content.rfind("' (")?;
            let text = content.get(text_start..text_end)?;
            Some(text.trim().to_owned())
        })
        .collect()
}

/// The `xdotool` arguments that press and release `key` (xdotool's form: `KP_Enter`,
/// `shift+alt+Down`) as a user does. A plain key is one `key` command. A chord is pressed
/// modifiers first and released the other way round, the key before its modifiers, as fingers
/// leave a chord: `xdotool key shift+h` releases Shift first, so the X server reports the key's
/// release as "h" without Shift, and Orca 51.1 does not take it for the release of the "H" it
/// bound (`input_event_manager.py` `is_release_for` compares the key names). It then presents
/// Shift+H's heading as if no navigation command had moved there: its name alone, "Details",
/// where the nested chord gets "Details heading 3" (docs/compat.md, "Orca 51.1", "Structural
/// navigation").
fn xdotool_key_args(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('+').collect();
    let Some((key, modifiers)) = parts.split_last().filter(|(_, m)| !m.is_empty()) else {
        return vec!["key".into(), "--clearmodifiers".into(), key.into()];
    };
    let mut args = Vec::new();
    for modifier in modifiers {
        args.extend(["keydown".to_owned(), (*modifier).to_owned()]);
    }
    args.extend(["key".to_owned(), (*key).to_owned()]);
    for modifier in modifiers.iter().rev() {
        args.extend(["keyup".to_owned(), (*modifier).to_owned()]);
    }
    args
}

/// The index of the first utterance at or after `from` that contains `text`: how the live
/// tests find a step's speech in order.
pub fn utterance_position(utterances: &[String], from: usize, text: &str) -> Option<usize> {
    utterances
        .iter()
        .skip(from)
        .position(|u| u.contains(text))
        .map(|at| at + from)
}

/// `orca-debug.out` for a session's first Orca, `orca-debug-2.out` for its second, and so on:
/// a test that starts Orca more than once keeps every log.
fn fresh_debug_file(dir: &Path) -> PathBuf {
    let first = dir.join("orca-debug.out");
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| dir.join(format!("orca-debug-{n}.out")))
        .find(|path| !path.exists())
        .unwrap_or(first)
}

/// Splits "shift+alt+Down" into the AT-SPI modifier mask and the key name. The bits are
/// pyatspi's `MODIFIER_SHIFT` (0) and `MODIFIER_ALT` (3), as Orca's keybindings.py masks them.
fn atspi_modifiers(key: &str) -> Result<(u16, &str)> {
    let mut mask = 0;
    let mut rest = key;
    while let Some((modifier, tail)) = rest.split_once('+') {
        mask |= match modifier {
            "shift" => 1 << 0,
            "alt" => 1 << 3,
            other => {
                return Err(HarnessError::Other(format!(
                    "unknown modifier {other:?} in {key:?}"
                )))
            }
        };
        rest = tail;
    }
    Ok((mask, rest))
}

/// The root holding the Orca under test (`NEWTON_ORCA_ROOT`, absolute or relative to the
/// workspace), or `None` for the host's Orca.
pub fn orca_root() -> Option<PathBuf> {
    // A relative path is taken from the workspace root (cargo runs tests in the crate's
    // directory, children in the session directory).
    std::env::var_os("NEWTON_ORCA_ROOT")
        .filter(|v| !v.is_empty())
        .map(|v| crate::workspace_root().join(v))
}

/// The Orca under test, by its Debian package version (`43.1-1`, `48.1-1+deb13u2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrcaVersion {
    pub package: String,
}

impl OrcaVersion {
    /// The Orca of this run: read from the dpkg database of the host or of `NEWTON_ORCA_ROOT`.
    pub fn current() -> Result<OrcaVersion> {
        let root = orca_root().unwrap_or_else(|| PathBuf::from("/"));
        let status = root.join("var/lib/dpkg/status");
        let text = std::fs::read_to_string(&status)
            .map_err(HarnessError::io(format!("read {}", status.display())))?;
        let package = installed_version(&text, "orca").ok_or_else(|| {
            HarnessError::Other(format!(
                "no installed orca package in {} (install it, or build the Orca 48 root \
                 with scripts/orca-root.sh)",
                status.display()
            ))
        })?;
        Ok(OrcaVersion { package })
    }

    /// Major version: 43 on Debian 12, 48 on Debian 13.
    pub fn major(&self) -> u32 {
        self.package
            .split(['.', '-', ':'])
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0)
    }

    /// Orca 48 and later read keys themselves (X server on X11) instead of from the registry's
    /// key listeners: keys injected through `NotifyListenersSync` never reach them.
    pub fn reads_keys_from_x(&self) -> bool {
        self.major() >= 48
    }

    /// How this Orca words the push-button role in speech: Orca 48 says "OK button.", Orca 43.1
    /// "OK push button.".
    pub fn push_button(&self) -> &'static str {
        if self.major() >= 48 {
            "button"
        } else {
            "push button"
        }
    }

    /// Orca 51 speaks an object's presentation without the full stop earlier Orcas end it with
    /// ("OK button" for "OK button."): its speech generator puts no pause after the last item
    /// (docs/compat.md "Orca 51.1"). Messages keep theirs ("Screen reader on.").
    pub fn ends_presentations_with_full_stop(&self) -> bool {
        self.major() < 51
    }

    /// How this Orca presents a window that becomes active: "Demo frame." under 43.1, "Demo
    /// frame" under 48.1 (no full stop after a window's role), "Demo" from 51 on (it does not
    /// speak the role of an ancestor of the object about to be presented,
    /// `_should_speak_role`).
    pub fn window(&self, name: &str) -> String {
        match self.major() {
            0..=47 => format!("{name} frame."),
            48..=50 => format!("{name} frame"),
            _ => name.to_owned(),
        }
    }

    /// Directory for per-version reference lists: none for Orca 43 (the original lists),
    /// `"orca48"` for Orca 48 to 50, `"orca51"` from Orca 51 on (it words windows, roles and
    /// sentence ends differently: docs/compat.md "Orca 51.1").
    pub fn golden_dir(&self) -> Option<&'static str> {
        match self.major() {
            0..=47 => None,
            48..=50 => Some("orca48"),
            _ => Some("orca51"),
        }
    }
}

/// The first at-spi2-core whose libatspi reads XInput2's raw key events while no X window has
/// the focus (2.60.2), which makes a windowless session report each key more than once
/// ([`crate::focus_stand_in_window`]).
const RAW_KEY_FALLBACK: (u32, u32) = (2, 60);

/// The at-spi2-core release (major, minor) beside the Orca under test: the root's when
/// `NEWTON_ORCA_ROOT` is set, else the host's.
pub fn atspi_release() -> Option<(u32, u32)> {
    release_in(orca_root())
}

/// The at-spi2-core release (major, minor) of the sessions' launcher and registry
/// ([`atspi_root`]).
pub fn registry_release() -> Option<(u32, u32)> {
    release_in(atspi_root())
}

fn release_in(root: Option<PathBuf>) -> Option<(u32, u32)> {
    let root = root.unwrap_or_else(|| PathBuf::from("/"));
    let status = std::fs::read_to_string(root.join("var/lib/dpkg/status")).ok()?;
    let version = installed_version(&status, "at-spi2-core")?;
    let mut parts = version.split(['.', '-', ':']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The `Version:` of an installed package in a dpkg status file.
fn installed_version(status: &str, package: &str) -> Option<String> {
    status.split("\n\n").find_map(|stanza| {
        let mut lines = stanza.lines();
        let is_it = lines.clone().any(|l| l == format!("Package: {package}"));
        let installed = lines.clone().any(|l| l == "Status: install ok installed");
        if !(is_it && installed) {
            return None;
        }
        lines.find_map(|l| l.strip_prefix("Version: ").map(str::to_string))
    })
}

/// Mounts the host's /tmp, /dev and a fresh /proc into the root, then execs the command chrooted.
/// Runs as `unshare --mount --propagation private -- /bin/sh -euc SCRIPT root program args…`;
/// every step execs, so the PID the harness tracks is the program's own.
const ROOTED_EXEC: &str = r#"root=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /tmp "$root/tmp"
exec chroot "$root" "$@""#;

/// Names Orca's debug file for [`LINE_BUFFERING_HOOK`].
const DEBUG_FILE_VAR: &str = "NEWTON_ORCA_DEBUG_FILE";

/// Orca opens its debug file with Python's default block buffering (8 KiB). When its shutdown
/// hangs past its own 10 s hang timeout (`settings.timeoutTime`), Orca SIGKILLs itself and the
/// unwritten tail of the log is lost — seen as a last Where Am I and "Screen reader off."
/// missing from the speech of a passing run. This `sitecustomize` (found on `PYTHONPATH` before
/// Debian's, which only installs an apport hook) opens that one file line-buffered, so every
/// line Orca writes reaches the file at once. Orca's code and behaviour are unchanged.
const LINE_BUFFERING_HOOK: &str = r#"import builtins, os
_debug_file = os.environ.get("NEWTON_ORCA_DEBUG_FILE")
_open = builtins.open
def _line_buffered_debug_file(file, mode="r", buffering=-1, *args, **kwargs):
    if _debug_file and file == _debug_file and "w" in mode:
        buffering = 1
    return _open(file, mode, buffering, *args, **kwargs)
builtins.open = _line_buffered_debug_file
"#;

/// Writes [`LINE_BUFFERING_HOOK`] into the session directory; returns the directory to put on
/// Orca's `PYTHONPATH` (under /tmp, so the Orca 48 root sees it at the same path).
fn write_line_buffering_hook(session_dir: &Path) -> Result<PathBuf> {
    let dir = session_dir.join("orca-python");
    std::fs::create_dir_all(&dir).map_err(HarnessError::io(format!("create {}", dir.display())))?;
    let file = dir.join("sitecustomize.py");
    std::fs::write(&file, LINE_BUFFERING_HOOK)
        .map_err(HarnessError::io(format!("write {}", file.display())))?;
    Ok(dir)
}

/// A session command running `program` from the Orca root when `NEWTON_ORCA_ROOT` is set (with
/// the session's environment and paths, which lie under /tmp), else from the host.
pub fn orca_command(session: &TestSession, program: &str) -> Result<Command> {
    rooted_command(session, orca_root(), program, &[])
}

/// The command that runs Orca (from [`orca_root`] or the host) as process 1 of a PID namespace
/// of its own, with a /proc that shows that namespace only; `--kill-child` takes Orca down with
/// the `unshare` that holds the namespace, however that ends.
fn orca_process_command(session: &TestSession) -> Result<Command> {
    const OWN_PIDS: &[&str] = &["--pid", "--fork", "--kill-child"];
    if orca_root().is_some() {
        // The root's /proc is mounted inside the namespace (ROOTED_EXEC).
        return rooted_command(session, orca_root(), "orca", OWN_PIDS);
    }
    let mut cmd = session.command("unshare");
    cmd.args(["--mount", "--propagation", "private", "--mount-proc"])
        .args(OWN_PIDS)
        .args(["--", "orca"]);
    Ok(cmd)
}

/// The process that `unshare --fork` (the session's child `holder`) started: Orca, once the
/// shell and `chroot` before it have exec'd.
fn namespaced_process(session: &mut TestSession, holder: u32) -> Result<u32> {
    let mut child = None;
    wait_until(
        "Orca's PID namespace to hold its first process",
        session.ready_timeout(),
        || {
            session.ensure_running(holder)?;
            child = std::fs::read_to_string(format!("/proc/{holder}/task/{holder}/children"))
                .ok()
                .and_then(|children| children.split_whitespace().next()?.parse().ok());
            Ok(child.is_some())
        },
    )?;
    child.ok_or_else(|| HarnessError::Other("internal: Orca's namespace has no process".into()))
}

/// Which Orca lock a test takes: one per Orca installation, the host's or a root's, so that
/// Orcas of different versions run side by side and one version's tests take turns.
fn orca_lock_name() -> String {
    match orca_root() {
        None => "host".to_string(),
        Some(root) => {
            let root = root.canonicalize().unwrap_or(root);
            root.to_string_lossy()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect()
        }
    }
}

/// The root whose at-spi2-core (the a11y bus launcher and the registry) the sessions run
/// (`NEWTON_ATSPI_ROOT`, absolute or relative to the workspace), or `None` for the host's. Apart
/// from `NEWTON_ORCA_ROOT`, so that an Orca can be heard against another platform's registry;
/// CI's Orca 48.1 pass sets both to Debian 13's root; its 2.62 step sets this one alone.
pub fn atspi_root() -> Option<PathBuf> {
    std::env::var_os("NEWTON_ATSPI_ROOT")
        .filter(|v| !v.is_empty())
        .map(|v| crate::workspace_root().join(v))
}

/// A session command running one of at-spi2-core's programs from [`atspi_root`].
pub fn atspi_command(session: &TestSession, program: &str) -> Result<Command> {
    rooted_command(session, atspi_root(), program, &[])
}

/// `program` chrooted into `root` (its /proc, /dev and the host's /tmp mounted in a private
/// mount namespace, which `unshare_args` may extend), or from the host when `root` is `None`.
fn rooted_command(
    session: &TestSession,
    root: Option<PathBuf>,
    program: &str,
    unshare_args: &[&str],
) -> Result<Command> {
    let Some(root) = root else {
        return Ok(session.command(program));
    };
    check_root(&root)?;
    let mut cmd = session.command("unshare");
    cmd.args(["--mount", "--propagation", "private"])
        .args(unshare_args)
        .args(["--", "/bin/sh", "-euc"])
        .arg(ROOTED_EXEC)
        .arg("orca-root")
        .arg(&root)
        .arg(program);
    Ok(cmd)
}

fn check_root(root: &Path) -> Result<()> {
    if root.join(".newton-orca-root-ready").is_file() {
        Ok(())
    } else {
        Err(HarnessError::Other(format!(
            "NEWTON_ORCA_ROOT={} is not a finished Orca root: build it with \
             `scripts/orca-root.sh trixie|sid {}`",
            root.display(),
            root.display()
        )))
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

#[cfg(test)]
mod tests {

    #[test]
    fn say_all_content_is_read_in_both_orca_formats() {
        let log = "04:25:22.58 - WEB SAY ALL CONTENT: 1. [link | AccessKit] 'AccessKit' (0-9)\n\
                   04:25:22.59 - WEB SAY ALL: [link | AccessKit] 'link' (0-9, current: 0)\n\
                   04:25:50.18 - WEB SAY ALL CONTENT: 0. [heading: 'Sign up'] ' Sign up ' ( 0 - 7)\n\
                   04:25:50.19 - WEB SAY ALL CONTENT: 2. [paragraph] ' first. ' ( 10 - 17)\n";
        assert_eq!(extract_say_all(log), ["AccessKit", "Sign up", "first."]);
        // Orca 51.1 (say_all_presenter.py, joined by debug.py's `_join_tokens`).
        let log = "SAY ALL PRESENTER: CONTENT: 0. [link: 'AccessKit']'AccessKit' (0 - 9)\n\
                   SAY ALL PRESENTER: Speaking (contents): [link: 'AccessKit']'link' (0 - 9)\n\
                   SAY ALL PRESENTER: CONTENT: 2. [paragraph: '']' first. ' (10 - 17)\n";
        assert_eq!(extract_say_all(log), ["AccessKit", "first."]);
    }
    use super::{extract_say_all, extract_speech};

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
    fn reads_the_installed_orca_version_from_a_dpkg_status_file() {
        let status = "Package: orca-sounds\nStatus: install ok installed\nVersion: 1\n\n\
                      Package: orca\nStatus: deinstall ok config-files\nVersion: 43.1-1\n\n\
                      Package: orca\nStatus: install ok installed\nVersion: 48.1-1+deb13u2\n";
        let version = super::installed_version(status, "orca").expect("orca is installed");
        assert_eq!(version, "48.1-1+deb13u2");
        let version = super::OrcaVersion { package: version };
        assert_eq!(version.major(), 48);
        assert!(version.reads_keys_from_x());
        assert_eq!(version.golden_dir(), Some("orca48"));
        let old = super::OrcaVersion {
            package: "43.1-1".into(),
        };
        assert!(!old.reads_keys_from_x());
        assert_eq!(old.golden_dir(), None);
        let next = super::OrcaVersion {
            package: "51.1-1".into(),
        };
        assert!(next.reads_keys_from_x());
        assert_eq!(next.golden_dir(), Some("orca51"));
    }

    #[test]
    fn contains_takes_a_missing_final_full_stop_only_from_orca_51() {
        let speech = |full_stops| super::OrcaSpeech {
            utterances: vec![],
            say_all: vec![],
            debug_file: std::path::PathBuf::new(),
            full_stops,
        };
        let (orca48, orca51) = (speech(true), speech(false));
        assert!(orca48.contains("x link 0.0 link. y", "link 0.0 link."));
        assert!(!orca48.contains("x link 0.0 link", "link 0.0 link."));
        assert!(orca51.contains("x link 0.0 link", "link 0.0 link."));
        assert!(orca51.contains("x link 0.0 link. y", "link 0.0 link."));
        assert!(!orca51.contains("x link 0.0 link y", "link 0.0 link."));
    }

    #[test]
    fn presses_a_chord_nested_and_a_plain_key_whole() {
        assert_eq!(
            super::xdotool_key_args("KP_Add"),
            ["key", "--clearmodifiers", "KP_Add"]
        );
        assert_eq!(
            super::xdotool_key_args("shift+alt+Down"),
            [
                "keydown", "shift", "keydown", "alt", "key", "Down", "keyup", "alt", "keyup",
                "shift"
            ]
        );
    }

    #[test]
    fn splits_modifiers_into_the_atspi_mask() {
        assert_eq!(
            super::atspi_modifiers("shift+alt+Down").ok(),
            Some((9, "Down"))
        );
        assert_eq!(super::atspi_modifiers("h").ok(), Some((0, "h")));
        assert!(super::atspi_modifiers("ctrl+h").is_err());
    }

    #[test]
    fn ignores_an_unterminated_utterance() {
        assert!(extract_speech("SPEECH OUTPUT: 'cut off").is_empty());
    }
}
