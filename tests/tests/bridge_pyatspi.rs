//! The bridge as pyatspi sees it: replay a recorded stream into `newton-atspi-bridge serve` and
//! compare atspi_dump.py's view of the application with a reviewed golden file
//! (tests/golden/<fixture>.json; NEWTON_UPDATE_GOLDENS=1 rewrites them).
//!
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::time::Duration;

use newton_e2e::{check_golden, fixture, py_script, python, Bridge, SessionOptions, TestSession};
use serde_json::Value;

const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

/// Replays `fixture_file`, dumps the app `app_name` and checks it against `golden`.
fn dump_matches_golden(fixture_file: &str, app_name: &str, golden: &str) {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let replay = bridge
        .replay_and_stay(&mut session, "replay", &fixture(fixture_file), app_name)
        .expect("replay the fixture");
    assert!(
        replay.summary.ends_with("; 0 rejected"),
        "replay had rejections: {}",
        replay.summary
    );

    let mut dump = session.command(python());
    dump.arg(py_script("atspi_dump.py"))
        .args(["--app", app_name, "--format", "json"]);
    let out = session
        .run_ok("atspi-dump", dump, DUMP_TIMEOUT)
        .expect("atspi_dump.py succeeds");
    let tree: Value = serde_json::from_str(&out).expect("atspi_dump.py prints JSON");
    session
        .ensure_running(bridge.pid())
        .expect("bridge still running after the dump");
    if let Err(e) = check_golden(golden, &tree) {
        session.keep_dir();
        panic!("{e}");
    }

    session.stop(replay.pid, Duration::from_secs(10));
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}

#[test]
fn basic_fixture_matches_golden() {
    dump_matches_golden(
        "generated-small/basic.jsonl",
        "Newton basic demo",
        "basic.json",
    );
}

#[test]
fn doc_small_fixture_matches_golden() {
    dump_matches_golden(
        "generated-small/doc-small.jsonl",
        "Newton small document",
        "doc-small.json",
    );
}

#[test]
fn grid_small_fixture_matches_golden() {
    dump_matches_golden(
        "generated-small/grid-small.jsonl",
        "Newton table",
        "grid-small.json",
    );
}

#[test]
fn egui_widgets_fixture_matches_golden() {
    dump_matches_golden(
        "egui/egui-widgets.jsonl",
        "egui widgets",
        "egui-widgets.json",
    );
}

#[test]
fn egui_form_focus_fixture_matches_golden() {
    dump_matches_golden(
        "egui/egui-form-focus.jsonl",
        "egui form",
        "egui-form-focus.json",
    );
}
