//! What a listener hears from egui-like widgets through the bridge, with a real Orca (43.1 or 48.1)
//! (issue 15, items 6 and 7): the name of an inner window focus enters, one "pressed" per
//! toggle, a colour button's name, a spin button without bounds, and no "Text unselected." when
//! a field's selection collapses after focus left it. Orca tests run one at a time (machine-wide
//! lock); run alone with `cargo test -p newton-e2e --test orca_listener`.
//! NEWTON_E2E_SKIP_ORCA=1 skips them (loudly).
//!
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::path::Path;

use accesskit::{Action, Node, NodeId, Role, TextPosition, TextSelection, Toggled};
use newton_e2e::{
    orca_tests_skipped, Bridge, Orca, OrcaVersion, SessionOptions, SteppedReplay, TestSession,
};
use newton_fixtures::stream::{full_tree, incremental, rect, StreamBuilder};
use newton_fixtures::text::text_run;

const ROOT: NodeId = NodeId(1);
const OPEN: NodeId = NodeId(2);
const SETTINGS: NodeId = NodeId(3);
const BOLD: NodeId = NodeId(4);
const COLOUR: NodeId = NodeId(5);
const SPEED: NodeId = NodeId(6);
const SPEED_RUN: NodeId = NodeId(7);
const ZOOM: NodeId = NodeId(8);

fn focusable(role: Role, label: &str, y: f64) -> Node {
    let mut node = Node::new(role);
    node.set_label(label);
    node.set_bounds(rect(30.0, y, 120.0, 20.0));
    node.add_action(Action::Focus);
    node.add_action(Action::Click);
    node
}

fn bold(on: bool) -> Node {
    // egui's selectable label / toggle: a button with a toggled state.
    let mut node = focusable(Role::Button, "Bold", 80.0);
    node.set_toggled(if on { Toggled::True } else { Toggled::False });
    node
}

fn speed(selected: bool) -> Node {
    let mut node = focusable(Role::TextInput, "Speed", 140.0);
    node.set_children(vec![SPEED_RUN]);
    let at = |character_index| TextPosition {
        node: SPEED_RUN,
        character_index,
    };
    // egui selects a field's whole text while it edits it and collapses the selection a
    // frame after focus left it.
    node.set_text_selection(TextSelection {
        anchor: at(if selected { 0 } else { 4 }),
        focus: at(4),
    });
    node
}

fn zoom() -> Node {
    // An egui DragValue without a range: no minimum or maximum from the producer.
    let mut node = focusable(Role::SpinButton, "Zoom", 170.0);
    node.set_numeric_value(250.0);
    node.set_value("250.0");
    node
}

/// The stream, by commit serial: 1 focus on "Open" (in the root window), 2 focus on "Bold"
/// in the inner window "Settings", 3 "Bold" toggled on, 4 focus on the colour button, 5 focus
/// on "Speed" (its "10.0" selected), 6 focus on "Zoom", 7 "Speed"'s selection collapses.
fn stream() -> Vec<newton_push_protocol::RecordedLine> {
    let mut root = Node::new(Role::Window);
    root.set_bounds(rect(0.0, 0.0, 400.0, 300.0));
    root.set_children(vec![OPEN, SETTINGS]);
    let mut settings = Node::new(Role::Window);
    settings.set_label("Settings");
    settings.set_bounds(rect(20.0, 60.0, 300.0, 200.0));
    settings.set_children(vec![BOLD, COLOUR, SPEED, ZOOM]);
    let mut colour = focusable(Role::ColorWell, "Color", 110.0);
    colour.set_value("#add7e580");
    let mut stream = StreamBuilder::new("org.newton.listener", "Gallery", "Gallery", 400, 300);
    stream.frame(full_tree(
        ROOT,
        vec![
            (ROOT, root),
            (OPEN, focusable(Role::Button, "Open", 20.0)),
            (SETTINGS, settings),
            (BOLD, bold(false)),
            (COLOUR, colour),
            (SPEED, speed(true)),
            (
                SPEED_RUN,
                text_run("10.0", Some(rect(30.0, 140.0, 40.0, 20.0))),
            ),
            (ZOOM, zoom()),
        ],
        OPEN,
    ));
    stream.frame(incremental(vec![], BOLD));
    stream.frame(incremental(vec![(BOLD, bold(true))], BOLD));
    stream.frame(incremental(vec![], COLOUR));
    stream.frame(incremental(vec![], SPEED));
    stream.frame(incremental(vec![], ZOOM));
    stream.frame(incremental(vec![(SPEED, speed(false))], ZOOM));
    stream.finish()
}

const LAST_SERIAL: u64 = 7;

fn hear(recording: &Path) -> Vec<String> {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let orca = Orca::start(&mut session).expect("start Orca");
    let mut replay = SteppedReplay::connect(&bridge.socket, recording).expect("connect the replay");
    for serial in 1..=LAST_SERIAL {
        replay
            .send_through_commit(serial)
            .unwrap_or_else(|e| panic!("commit {serial}: {e}"));
        if serial == 1 {
            session
                .wait_for_app("Gallery", bridge.pid())
                .expect("the app appears");
        }
        orca.wait_idle(&mut session)
            .expect("Orca settles after the step");
    }
    let speech = orca
        .stop(&mut session)
        .expect("stop Orca and read its speech");
    eprintln!("Orca said: {:#?}", speech.utterances);
    drop(replay);
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
    speech.utterances
}

#[test]
fn orca_hears_window_names_one_toggle_colour_names_and_no_stray_unselected() {
    if orca_tests_skipped() {
        eprintln!("\n!!!!! NEWTON_E2E_SKIP_ORCA=1: SKIPPING ORCA TEST — Orca behaviour is NOT being verified !!!!!\n");
        return;
    }
    let dir = std::env::temp_dir().join(format!("newton-orca-listener-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let recording = dir.join("listener.jsonl");
    newton_fixtures::write_jsonl(&recording, &stream()).expect("write the stream");
    let heard = hear(&recording);
    let _ = std::fs::remove_dir_all(&dir);
    let count = |text: &str| heard.iter().filter(|u| u.as_str() == text).count();
    // Orca 48.1 says a spin button's role before its value (43.1 after it); both say the name
    // and the value.
    let orca = OrcaVersion::current().expect("which Orca runs");
    let colour = format!("Color {}", orca.push_button());
    let zoom = if orca.major() >= 48 {
        "Zoom spin button 250.0"
    } else {
        "Zoom 250.0 spin button"
    };
    assert!(
        heard.iter().any(|u| u == "Settings"),
        "focus entering the inner window names it: {heard:#?}"
    );
    assert_eq!(
        count("pressed"),
        1,
        "one toggle, one \"pressed\": {heard:#?}"
    );
    assert!(
        heard.iter().any(|u| u.starts_with(&colour)),
        "the colour button's name: {heard:#?}"
    );
    assert!(
        heard.iter().any(|u| u.starts_with(zoom)),
        "the unbounded spin button's value: {heard:#?}"
    );
    assert!(
        !heard.iter().any(|u| u.contains("unselected")),
        "a selection collapsing after focus left is not spoken: {heard:#?}"
    );
}
