//! A real Orca 43.1 reading documents and tables served by the bridge: headings (with their
//! level), links and table cells (with their headers and position), reached by focus moves the
//! application pushes, one step at a time with Orca idle in between.
//!
//! Orca 43.1 has no structural navigation (H, K, table keys) for a bridged application: only
//! the web, WebKitGtk, evince and soffice scripts bind those keys, and Orca picks a script by
//! application name or toolkit ("newton-fixtures" here), so the default script runs, whose
//! `getEnabledStructuralNavigationTypes()` is empty (orca/script.py) and whose key bindings never
//! include the structural-navigation ones (orca/scripts/default.py `getKeyBindings`;
//! structural_navigation.py `getKeyBindings` returns nothing, not even Orca+Z, without enabled
//! types). The test proves that part too: the registry reports H and K as not consumed, and
//! Orca does not move. See docs/interfaces.md.
//!
//! Orca tests run one at a time (machine-wide lock). NEWTON_E2E_SKIP_ORCA=1 skips them (loudly).
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::time::Duration;

use newton_e2e::{
    check_golden, fixture, orca_tests_skipped, py_script, python, Bridge, Orca, OrcaSpeech,
    SessionOptions, TestSession,
};
use newton_producer::Sender;
use newton_push_protocol::{BridgeMessage, RecordedLine, SenderMessage};
use serde_json::{json, Value};

const SYNC_TIMEOUT: Duration = Duration::from_secs(30);
const INJECT_TIMEOUT: Duration = Duration::from_secs(30);

fn skip_loudly() -> bool {
    if orca_tests_skipped() {
        eprintln!("\n!!!!! NEWTON_E2E_SKIP_ORCA=1: SKIPPING ORCA TEST — Orca behaviour is NOT being verified !!!!!\n");
        return true;
    }
    false
}

/// A fixture's sender: sends the recording's first frame, then focus moves the test asks for.
struct App {
    sender: Sender,
    lines: Vec<RecordedLine>,
    surface: Value,
    next_serial: u64,
}

impl App {
    /// Connects with the recording's hello and sends everything through commit 1 (surface,
    /// compositor focus, geometry, the full tree).
    fn start(socket: &std::path::Path, recording: &str) -> App {
        let lines = newton_producer::load_recording(fixture(recording))
            .unwrap_or_else(|e| panic!("load {recording}: {e}"));
        let hello = lines
            .first()
            .and_then(|l| l.hello.clone())
            .expect("the recording starts with a hello");
        let sender = Sender::connect(socket, hello).expect("connect to the bridge");
        let mut app = App {
            sender,
            lines,
            surface: json!(1),
            next_serial: 2,
        };
        app.send_first_frame();
        app
    }

    fn send_first_frame(&mut self) {
        let first_frame: Vec<SenderMessage> = self
            .lines
            .iter()
            .filter_map(|l| l.message.clone())
            .take_while(|m| !matches!(m, SenderMessage::Commit { serial, .. } if *serial > 1))
            .collect();
        let mut saw_focus = false;
        for message in &first_frame {
            saw_focus |= matches!(message, SenderMessage::Focus { surface: Some(_) });
            if let SenderMessage::Commit { .. } = message {
                self.send(message);
                break;
            }
            self.send(message);
        }
        // The window must be the compositor's focused one for Orca to present anything.
        assert!(
            saw_focus,
            "the fixture's first frame gives its surface no compositor focus"
        );
        self.sync();
    }

    fn send(&self, message: &SenderMessage) {
        self.sender
            .send(message)
            .unwrap_or_else(|e| panic!("send {message:?}: {e}"));
    }

    /// Node id (from the recording's first tree) of the first node with this role and label.
    fn node_id(&self, role: &str, label: &str) -> u64 {
        let tree = self
            .lines
            .iter()
            .filter_map(|l| l.message.as_ref())
            .find_map(|m| match m {
                SenderMessage::Update { update, .. } => serde_json::to_value(update).ok(),
                _ => None,
            })
            .expect("the recording has a tree update");
        tree["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|entry| entry[1]["role"] == role && entry[1]["properties"]["label"] == label)
            .and_then(|entry| entry[0].as_u64())
            .unwrap_or_else(|| panic!("no {role} labelled {label:?} in the recording"))
    }

    /// Pushes a commit that only moves the application's focus to `node`.
    fn focus(&mut self, node: u64) {
        let update: SenderMessage = serde_json::from_value(json!({"update": {
            "surface": self.surface,
            "update": {"nodes": [], "tree": null,
                       "treeId": "00000000-0000-0000-0000-000000000000", "focus": node}
        }}))
        .expect("a focus-only update is a valid sender message");
        let commit: SenderMessage = serde_json::from_value(
            json!({"commit": {"surface": self.surface, "serial": self.next_serial}}),
        )
        .expect("a commit is a valid sender message");
        self.next_serial += 1;
        self.send(&update);
        self.send(&commit);
        self.sync();
    }

    /// Waits until the bridge processed everything; fails on any rejection.
    fn sync(&self) {
        self.sender
            .sync(SYNC_TIMEOUT)
            .unwrap_or_else(|e| panic!("sync with the bridge: {e}"));
        while let Some(message) = self.sender.try_recv().expect("bridge connection open") {
            if let BridgeMessage::Rejected { rule, reason, .. } = &message {
                panic!("bridge rejected a commit: {rule}: {reason}");
            }
        }
    }
}

/// One thing the test does, then waits for Orca to settle.
enum Step<'a> {
    /// Inject a key through the registry; the bool is whether Orca must consume it.
    Key(&'a str, bool),
    /// The application moves its focus to the node with this role and label.
    Focus(&'a str, &'a str),
}

/// Runs `steps` against `recording` with Orca listening; returns Orca's speech.
fn orca_hears(recording: &str, app_name: &str, steps: &[Step]) -> OrcaSpeech {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let orca = Orca::start(&mut session).expect("start Orca");
    // Orca 43.1 presents the focused object at the end of its start-up (orca.py `main`), after
    // registering its listeners: let it finish before the application appears.
    orca.wait_idle(&mut session)
        .expect("Orca settles after starting");
    let mut app = App::start(&bridge.socket, recording);
    session
        .wait_for_app(app_name, bridge.pid())
        .expect("the application appears on the desktop");
    orca.wait_idle(&mut session)
        .expect("Orca settles after the first frame");
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Key(key, must_consume) => {
                let mut inject = session.command(python());
                inject.arg(py_script("inject_key.py")).arg(key);
                let out = session
                    .run_ok(&format!("inject-{i}"), inject, INJECT_TIMEOUT)
                    .expect("inject_key.py succeeds");
                let consumed = out.contains(&format!("{key} press consumed=True"));
                assert_eq!(
                    consumed, *must_consume,
                    "key {key}: consumed={consumed}, expected {must_consume} ({out})"
                );
            }
            Step::Focus(role, label) => app.focus(app.node_id(role, label)),
        }
        orca.wait_idle(&mut session)
            .expect("Orca settles after the step");
    }
    let speech = orca
        .stop(&mut session)
        .expect("stop Orca and read its speech");
    eprintln!("Orca said: {:#?}", speech.utterances);
    session
        .ensure_running(bridge.pid())
        .expect("bridge survived Orca");
    drop(app);
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
    speech
}

/// Fails unless every `expected` utterance was said, in this order (others may come between).
fn assert_said_in_order(speech: &OrcaSpeech, expected: &[&str]) {
    let mut said = speech.utterances.iter();
    for want in expected {
        assert!(
            said.any(|u| u == want),
            "Orca did not say {want:?} (in order after the previous expectations): {:#?}",
            speech.utterances
        );
    }
}

fn check_reference(golden: &str, speech: &OrcaSpeech) {
    if let Err(e) = check_golden(&format!("collection/{golden}"), &json!(speech.utterances)) {
        panic!("{e}");
    }
}

/// Headings and links inside the document. Hypertext.GetLink answers with each link's own
/// hyperlink object (`<surface>_<node>_hyperlink`), not the link's accessible path: libatspi
/// keeps accessibles and hyperlinks in one per-application table keyed by path
/// (atspi-misc.c `ref_hyperlink`/`ref_accessible`), so a shared path made pyatspi hand Orca an
/// Accessible where it wants a Hyperlink, and Orca 43.1's braille code (braille.py 740,
/// `link.startIndex`) raised for every focus inside the document, speaking nothing.
#[test]
fn orca_reads_headings_and_links_of_doc_small() {
    if skip_loudly() {
        return;
    }
    let speech = orca_hears(
        "generated-small/doc-small.jsonl",
        "Newton small document",
        &[
            // Orca 43.1's default script binds neither H nor K (see the module doc).
            Step::Key("h", false),
            Step::Key("k", false),
            Step::Focus("heading", "Lists"),
            Step::Focus("link", "AccessKit"),
            Step::Focus("heading", "Details"),
            Step::Focus("link", "protocol notes"),
            Step::Focus("heading", "Components"),
        ],
    );
    assert_said_in_order(
        &speech,
        &[
            "Newton fixtures document frame Newton fixtures.",
            // The key echo: H and K are plain letters for the default script.
            "h ",
            "k ",
            "Lists heading level 2.",
            "AccessKit link.",
            "Details heading level 3.",
            "protocol notes link.",
            "Components heading level 2.",
        ],
    );
    // Reference reviewed against fixtures/gen/src/doc.rs: the document's label, heading texts
    // and levels, link texts.
    check_reference("orca-doc-small.json", &speech);
}

#[test]
fn orca_reads_cells_of_grid_small_with_headers() {
    if skip_loudly() {
        return;
    }
    let speech = orca_hears(
        "generated-small/grid-small.jsonl",
        "Newton table",
        &[
            Step::Focus("cell", "80"),
            Step::Focus("cell", "93"),
            // Where Am I (basic) on Ada's Science score.
            Step::Key("KP_Enter", true),
            Step::Focus("cell", "87"),
            Step::Focus("cell", "99"),
            Step::Key("KP_Enter", true),
        ],
    );
    assert_said_in_order(
        &speech,
        &[
            "table with 6 rows 5 columns",
            // Focus on Ada's Math score: Orca 43.1 reads the whole row of a GUI table.
            "Ada.",
            "80.",
            "93.",
            "65.",
            "78.",
            // Same row, next column: the column header, then the cell.
            "Science column header 93.",
            // Where Am I: the row and column headers, the role and the cell, then its position
            // in the full layout (fixtures/gen/src/table.rs: row 0 and column 0 are headers, so
            // Ada's Science score is row 1, column 2, 0-based). Orca 43.1
            // (speech_generator.py `_generateColumnAndRow`) finds it through the cell's
            // `table-cell-index` attribute and Table.GetRowAtIndex/GetColumnAtIndex; without
            // the attribute it would use GetIndexInParent (the column, as cells live in rows)
            // and say "row 1 of 6".
            "Science.",
            "Ada.",
            "93.",
            "column 3 of 5 row 2 of 6.",
            // A new row is read whole again (only the first frame is sent: 72, not "100").
            "Grace.",
            "87.",
            "100.",
            "72.",
            "85.",
            "Edsger.",
            "99.",
            "Music.",
            "Edsger.",
            "99.",
            // Edsger's Music score: row 4, column 4 (0-based) of the full layout.
            "column 5 of 5 row 5 of 6.",
        ],
    );
    check_reference("orca-grid-small.json", &speech);
}
