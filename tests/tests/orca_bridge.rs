//! A real Orca 43.1 against the bridge: replays recorded streams whose focus moves, and checks
//! what Orca says. Orca tests run one at a time (machine-wide lock); run alone with
//! `cargo test -p newton-e2e --test orca_bridge`. NEWTON_E2E_SKIP_ORCA=1 skips them (loudly).
//!
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::time::Duration;

use newton_e2e::{
    check_golden, fixture, orca_golden, orca_tests_skipped, Bridge, Orca, OrcaSpeech, OrcaVersion,
    SessionOptions, SteppedReplay, TestSession,
};
use serde_json::Value;

fn skip_loudly() -> bool {
    if orca_tests_skipped() {
        eprintln!("\n!!!!! NEWTON_E2E_SKIP_ORCA=1: SKIPPING ORCA TEST — Orca behaviour is NOT being verified !!!!!\n");
        return true;
    }
    false
}

/// Starts a session, the bridge and Orca, replays `fixture_file` (full speed, the app stays),
/// waits for Orca to settle, stops Orca and hands its speech to `check` — before teardown, so a
/// failing check keeps the session directory (logs, Orca debug file) for inspection.
fn orca_hears(fixture_file: &str, app_name: &str, check: impl FnOnce(&OrcaSpeech)) {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let orca = Orca::start(&mut session).expect("start Orca");
    let replay = bridge
        .replay_and_stay(&mut session, "replay", &fixture(fixture_file), app_name)
        .expect("replay the fixture");
    assert!(
        replay.summary.ends_with("; 0 rejected"),
        "replay had rejections: {}",
        replay.summary
    );
    orca.wait_idle(&mut session)
        .expect("Orca settles after the replay");
    let speech = orca
        .stop(&mut session)
        .expect("stop Orca and read its speech");
    eprintln!("Orca said: {:#?}", speech.utterances);
    check(&speech);
    session
        .ensure_running(bridge.pid())
        .expect("bridge survived Orca");
    session.stop(replay.pid, Duration::from_secs(10));
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}

#[test]
fn orca_speaks_focus_moves_of_the_basic_fixture() {
    if skip_loudly() {
        return;
    }
    orca_hears(
        "generated-small/basic.jsonl",
        "Newton basic demo",
        |speech| {
            assert!(speech.said("Screen reader on."), "{:?}", speech.utterances);
            // "Demo frame." (window activation) is spoken in most runs but not all: the app
            // appears, activates and moves focus within milliseconds of registering, and Orca
            // 43.1 sometimes presents only the focus. Not asserted; the stepped scenario checks
            // the full sequence. At full speed Orca may also skip the intermediate focus moves
            // (it re-reads FOCUSED when it handles an event); the final focus must be spoken.
            // Orca 48 drops "push" from the role name ("OK button.").
            let ok = if OrcaVersion::current().expect("Orca version").major() >= 48 {
                "OK button."
            } else {
                "OK push button."
            };
            assert!(
                speech.said(ok),
                "final focus on OK not spoken: {:?}",
                speech.utterances
            );
        },
    );
}

/// One step of fixtures/egui/egui-form-focus.steps.json.
struct Step {
    settled_serial: u64,
    keysym: Option<String>,
    result: String,
}

fn load_steps(relative: &str) -> Vec<Step> {
    let path = fixture(relative);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let steps: Value = serde_json::from_str(&text).expect("steps file is JSON");
    steps
        .as_array()
        .expect("steps file is a JSON array")
        .iter()
        .map(|s| Step {
            settled_serial: s["settledSerial"].as_u64().expect("settledSerial"),
            keysym: s["keysym"].as_str().map(str::to_string),
            result: s["result"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

/// Replays egui-form-focus step by step like a user session: each step's key goes to Orca
/// through the registry (as a toolkit's key forwarding would), then the app's reaction (the
/// step's commits) is pushed, then Orca is given time to settle.
#[test]
fn orca_follows_the_egui_form_focus_scenario() {
    if skip_loudly() {
        return;
    }
    let steps = load_steps("egui/egui-form-focus.steps.json");
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let orca = Orca::start(&mut session).expect("start Orca");
    let mut replay = SteppedReplay::connect(&bridge.socket, &fixture("egui/egui-form-focus.jsonl"))
        .expect("connect the replay");
    for (i, step) in steps.iter().enumerate() {
        if let Some(key) = &step.keysym {
            orca.press(&mut session, &format!("key-{i}"), key)
                .expect("press the step's key");
        }
        replay
            .send_through_commit(step.settled_serial)
            .unwrap_or_else(|e| panic!("step {i} ({}): {e}", step.result));
        if i == 0 {
            session
                .wait_for_app("egui form", bridge.pid())
                .expect("the egui form app appears");
        }
        orca.wait_idle(&mut session)
            .expect("Orca settles after the step");
    }
    let speech = orca
        .stop(&mut session)
        .expect("stop Orca and read its speech");
    eprintln!("Orca said: {:#?}", speech.utterances);
    drop(replay);
    // Reviewed reference run on Orca 43.1 (Debian 12): focus, state, key echo, deleted
    // character, caret moves (character at the caret, "blank" at the end) and value changes.
    if let Err(e) = check_golden(
        &orca_golden("orca-egui-form-focus.json").expect("Orca version"),
        &serde_json::json!(speech.utterances),
    ) {
        session.keep_dir();
        panic!("{e}");
    }
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}
