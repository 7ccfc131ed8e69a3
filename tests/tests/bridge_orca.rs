//! A real Orca 43.1 against the bridge, driven step by step through the egui-form-focus
//! recording (fixtures/egui/egui-form-focus.steps.json): focus moves, a check box toggle,
//! typing, deleting, caret moves and slider values, each checked in Orca's SPEECH OUTPUT.
//!
//! Key presses are injected through the registry's DeviceEventController, as a desktop keyboard
//! path (atk-bridge's key snooper) would: Orca 43.1 echoes typed characters and presents caret
//! moves in response to key events, not from tree changes alone. Each key is pressed, the step's
//! commits are pushed (the application reacting to the key), then the key is released.
//!
//! Run alone with `cargo test -p newton-e2e --test bridge_orca` after
//! `cargo build -p newton-atspi-bridge`. Orca tests take a machine-wide lock and run one at a
//! time; NEWTON_E2E_SKIP_ORCA=1 skips them (loudly). NEWTON_E2E_KEEP=1 keeps the session
//! directory, which holds an a11y-bus trace (logs/a11y-trace.out) of what the bridge emitted.

use std::path::PathBuf;

use newton_e2e::{
    fixture, orca_tests_skipped, Bridge, KeyPhase, Orca, OrcaVersion, SessionOptions,
    SteppedReplay, TestSession,
};

const APP_NAME: &str = "egui form";
/// After this step (text "ab" typed) Orca's Where Am I is asked to read the focused entry.
const WHERE_AM_I_AFTER: u64 = 8;

fn skip_loudly() -> bool {
    if orca_tests_skipped() {
        eprintln!("\n!!!!! NEWTON_E2E_SKIP_ORCA=1: SKIPPING ORCA TEST — Orca behaviour is NOT being verified !!!!!\n");
        return true;
    }
    false
}

/// One entry of the steps file (only the fields this test uses).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Step {
    serial: u64,
    settled_serial: u64,
    action: String,
    keysym: Option<String>,
    result: String,
}

fn load_steps() -> Vec<Step> {
    let path = fixture("egui/egui-form-focus.steps.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// How an utterance must match one expectation.
#[derive(Debug, Clone)]
enum Heard {
    /// The utterance contains every one of these substrings.
    Containing(Vec<&'static str>),
    /// The utterance, without surrounding whitespace and a final '.', is exactly this.
    Exactly(&'static str),
}

impl Heard {
    fn matches(&self, utterance: &str) -> bool {
        match self {
            Heard::Containing(parts) => parts.iter().all(|p| utterance.contains(p)),
            Heard::Exactly(text) => utterance.trim().trim_end_matches('.').trim() == *text,
        }
    }
}

fn containing(parts: &[&'static str]) -> Heard {
    Heard::Containing(parts.to_vec())
}

/// What Orca (43.1, 48.1 or 51.1) must say for each step, in order (wording of the GTK reference
/// run, see shared notes "headless-orca" §8). Keyed by the step's commit serial.
fn expected_for(step: &Step) -> Vec<Heard> {
    match step.serial {
        // Orca 51 presents the window without its role ("Form"): OrcaVersion::window.
        1 if orca_major() >= 51 => vec![Heard::Exactly("Form")],
        1 => vec![containing(&["Form frame"])],
        // Orca 43.1: "OK push button."; Orca 48.1: "OK button.".
        2 => vec![containing(&["OK", "button"])],
        3 => vec![containing(&["Enable feature check box", "not checked"])],
        4 => vec![Heard::Exactly("checked")],
        // AccessKit's TextInput is ROLE_ENTRY ("entry"); GTK3's GtkEntry is ROLE_TEXT, which
        // Orca 43.1 speaks as "Name: text." in the reference run.
        5 => vec![containing(&["Name", "entry"])],
        // Key echo of the injected key, then (after step 8) Where Am I reads the text the bridge
        // holds, which proves the pushed insertions reached the replica.
        7 => vec![Heard::Exactly("a")],
        8 => vec![Heard::Exactly("b"), containing(&["ab"])],
        // Key echo, then the deleted character from object:text-changed:delete.
        9 => vec![Heard::Exactly("backspace"), Heard::Exactly("b")],
        // Character at the caret after each move: Left to 0 is on "a", End after it is on
        // nothing ("blank"), Home back on "a".
        10 => vec![Heard::Exactly("a")],
        11 => vec![Heard::Exactly("blank")],
        12 => vec![Heard::Exactly("a")],
        13 => vec![containing(&["Volume", "slider", "50"])],
        15 => vec![Heard::Exactly("51")],
        16 => vec![Heard::Exactly("52")],
        17 => vec![Heard::Exactly("51")],
        other => panic!("no expectation for step serial {other} ({})", step.result),
    }
}

fn orca_major() -> u32 {
    OrcaVersion::current().expect("which Orca runs").major()
}

/// Keys are injected for input the application answers with text, caret or value changes;
/// focus moves and the toggle are presented from the tree alone.
fn injects_key(step: &Step) -> bool {
    matches!(step.action.as_str(), "type" | "delete" | "caret" | "value")
}

/// A dbus-monitor of the whole a11y bus, for diagnosing what the bridge emitted (optional: the
/// test does not depend on it).
fn start_trace(session: &mut TestSession) {
    let Some(address) = session.a11y_bus_address().map(str::to_string) else {
        return;
    };
    let mut cmd = session.command("dbus-monitor");
    cmd.arg("--address").arg(address);
    if let Err(e) = session.spawn("a11y-trace", cmd) {
        eprintln!("bridge_orca: no a11y-bus trace ({e})");
    }
}

/// Index just after the first utterance at or after `from` that matches `heard`.
fn find_from(utterances: &[String], from: usize, heard: &Heard) -> Option<usize> {
    utterances
        .get(from..)?
        .iter()
        .position(|u| heard.matches(u))
        .map(|i| from + i + 1)
}

/// Checks each step's expectations as an ordered subsequence of the speech; returns the steps
/// that were not heard (with what was expected), in order.
fn unheard_steps(steps: &[Step], utterances: &[String]) -> Vec<String> {
    let mut at = 0;
    let mut missing = Vec::new();
    for step in steps {
        for heard in expected_for(step) {
            match find_from(utterances, at, &heard) {
                Some(next) => at = next,
                None => missing.push(format!(
                    "step {} ({}: {}) expected {heard:?} after utterance #{at}",
                    step.serial, step.action, step.result
                )),
            }
        }
    }
    missing
}

#[test]
fn orca_speaks_every_egui_form_focus_step() {
    if skip_loudly() {
        return;
    }
    let steps = load_steps();
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    start_trace(&mut session);
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let orca = Orca::start(&mut session).expect("start Orca");
    let recording: PathBuf = fixture("egui/egui-form-focus.jsonl");
    let mut replay = SteppedReplay::connect(&bridge.socket, &recording).expect("connect a sender");

    let mut consumed = Vec::new();
    for step in &steps {
        let key_name = step.keysym.as_deref().filter(|_| injects_key(step));
        if let Some(name) = key_name {
            let press = orca.key_event(&mut session, KeyPhase::Press, name);
            consumed.push((name.to_string(), press.expect("press the step's key")));
        }
        replay
            .send_through_commit(step.settled_serial)
            .unwrap_or_else(|e| panic!("push step {} ({}): {e}", step.serial, step.result));
        if let Some(name) = key_name {
            orca.key_event(&mut session, KeyPhase::Release, name)
                .expect("release the step's key");
        }
        if step.serial == 1 {
            session
                .wait_for_app(APP_NAME, bridge.pid())
                .expect("the bridged app is on the desktop");
        }
        orca.wait_idle(&mut session)
            .unwrap_or_else(|e| panic!("Orca settles after step {}: {e}", step.serial));
        if step.serial == WHERE_AM_I_AFTER {
            // Orca's basic Where Am I (KP_Enter): reads the focused entry, text included.
            for phase in [KeyPhase::Press, KeyPhase::Release] {
                let event = orca.key_event(&mut session, phase, "KP_Enter");
                consumed.push(("KP_Enter".into(), event.expect("Where Am I key")));
            }
            orca.wait_idle(&mut session)
                .expect("Orca settles after Where Am I");
        }
    }

    let speech = orca
        .stop(&mut session)
        .expect("stop Orca and read its speech");
    let bridge_alive = session.ensure_running(bridge.pid());
    let bridge_stderr = session.stderr_of("bridge");
    eprintln!("Orca said: {:#?}", speech.utterances);
    eprintln!("keys consumed by Orca: {consumed:?}");
    let missing = unheard_steps(&steps, &speech.utterances);
    if !missing.is_empty() || bridge_alive.is_err() {
        session.keep_dir();
        panic!(
            "Orca did not present every step:\n  {}\nbridge: {bridge_alive:?}\nfull speech: {:#?}\n\
             session directory kept: {} (logs/a11y-trace.out has the bus trace)\n\
             --- bridge stderr (tail) ---\n{bridge_stderr}",
            missing.join("\n  "),
            speech.utterances,
            session.dir().display()
        );
    }
    assert!(speech.said("Screen reader on."), "{:?}", speech.utterances);
    // Orca 43 answers through the registry; Orca 48 reads the X server (None): its Where Am I
    // speech (checked above) shows that it took the key.
    assert!(
        consumed
            .iter()
            .any(|(key, yes)| key == "KP_Enter" && *yes != Some(false)),
        "Orca did not consume its Where Am I key: {consumed:?}"
    );
    drop(replay);
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}
