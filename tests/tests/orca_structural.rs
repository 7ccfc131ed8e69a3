//! A real Orca 43.1 reading documents and tables served by the bridge: headings (with their
//! level), links and table cells (with their headers and position).
//!
//! Orca 43.1 picks a script by application name, then by toolkit name (the `toolkit` object
//! attribute, then `Application.ToolkitName`), both of which the bridge takes unchanged from the
//! sender's hello. Two cases, both tested:
//!
//! * **A GUI toolkit** ("newton-fixtures", the recordings' own hello): the default script runs.
//!   It has no structural navigation: its `getEnabledStructuralNavigationTypes()` is empty
//!   (orca/script.py) and its key bindings never include the structural-navigation ones
//!   (orca/scripts/default.py `getKeyBindings`; structural_navigation.py `getKeyBindings`
//!   returns nothing, not even Orca+Z, without enabled types). The registry reports H and K as
//!   not consumed and Orca does not move; it reads what the application's own focus moves reach,
//!   one step at a time with Orca idle in between.
//! * **A web engine** (a sender whose hello names "Chromium" or "Gecko", as a web engine pushing
//!   its page through Newton would; same tree): Orca's toolkit script of that name runs, built on
//!   the web script (orca/scripts/web/script.py), which binds structural navigation in browse
//!   mode. H, Shift+H, K and T find their targets with Collection.GetMatches on the document and
//!   Orca speaks them; Alt+Shift+arrows move between table cells. The bridge gives such a
//!   producer's document per-block text (docs/interfaces.md, "Per-block text"): Down and Up
//!   read it line by line, and Say All (KP_Add) reads it to the end, or, with a voice
//!   (`SilentVoice`, tests/README.md), until Control stops it.
//!
//! Details, line numbers in Orca's sources and the limits found: docs/interfaces.md, "Orca 43.1
//! and structural navigation".
//!
//! Under Orca 48.1 (`NEWTON_ORCA_ROOT`) the expectations follow the version where 48.1 words
//! things differently but says at least as much. Orca 48.1 speaks a heading's (and a header
//! cell's) Text, not its name: headings and header cells carry their name as Text, so it says
//! "Lists heading 2" and "Name column header." (docs/compat.md, "Two Orcas"). Under Orca 51.1
//! likewise, where 51 words things differently again: no full stop at the end of a presentation
//! (`OrcaSpeech::is`), a data cell reached from its own column's header without that header
//! (docs/compat.md, "Orca 51.1", "Structural navigation").
//!
//! Orca tests run one at a time (machine-wide lock). NEWTON_E2E_SKIP_ORCA=1 skips them (loudly).
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::time::Duration;

use accesskit::{NodeId, Role, TreeId, TreeUpdate};
use newton_e2e::{
    check_golden, fixture, orca_golden, orca_tests_skipped, Bridge, LegacyReference, Orca,
    OrcaSpeech, OrcaVersion, SessionOptions, SilentVoice, TestSession,
};
use newton_producer::Sender;
use newton_push_protocol::{BridgeMessage, RecordedLine, SenderMessage, SurfaceId};
use serde_json::json;

const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

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
    surface: SurfaceId,
    next_serial: u64,
}

impl App {
    /// Connects with the recording's hello and sends everything through commit 1 (surface,
    /// compositor focus, geometry, the full tree). `producer` names the producer's toolkit in
    /// the hello instead of the recording's (see [`Producer`]).
    fn start(socket: &std::path::Path, recording: &str, producer: Producer) -> App {
        let lines = newton_producer::load_recording(fixture(recording))
            .unwrap_or_else(|e| panic!("load {recording}: {e}"));
        let mut hello = lines
            .first()
            .and_then(|l| l.hello.clone())
            .expect("the recording starts with a hello");
        let mut lines = lines;
        if let Producer::WebEngine(toolkit) = producer {
            hello.app.toolkit_name = Some(toolkit.to_owned());
            hello.app.name = producer.app_name(&hello.app.name);
            as_web_engine_sends_it(&mut lines);
        }
        let sender = Sender::connect(socket, hello).expect("connect to the bridge");
        let mut app = App {
            sender,
            lines,
            surface: SurfaceId(1),
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

    /// Node id (from the recording's trees) of the first node with this role and label.
    fn node_id(&self, role: &str, label: &str) -> u64 {
        node_with(&self.lines, role, label)
    }

    /// Pushes a commit that only moves the application's focus to `node`.
    fn focus(&mut self, node: u64) {
        let update = SenderMessage::Update {
            surface: self.surface,
            update: TreeUpdate {
                nodes: vec![],
                tree: None,
                tree_id: TreeId::ROOT,
                focus: NodeId(node),
            },
        };
        let commit = SenderMessage::Commit {
            surface: self.surface,
            serial: self.next_serial,
        };
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

/// Who the sender says produces the tree. The hello's `toolkitName` comes from the sender (the
/// compositor side, docs/protocol.md) and the bridge reports it unchanged as
/// `Application.ToolkitName` and the `toolkit` attribute; Orca 43.1 picks its script by it.
#[derive(Clone, Copy)]
enum Producer {
    /// The recording's own hello: toolkit "newton-fixtures", Orca's default script.
    Recording,
    /// A web engine pushing its page through Newton (an AccessKit-based engine, say), whose
    /// hello names its engine as Orca knows it: "Gecko" or "Chromium" (Orca's toolkit scripts,
    /// both built on the web script). Same tree as the recording.
    WebEngine(&'static str),
}

impl Producer {
    /// The application's name as this producer gives it. A web engine's application is its
    /// browser, named as the browser names itself ("Chromium", "Firefox"): Orca 51.1 takes a
    /// Chromium application whose name is no known browser's for an Electron application and
    /// puts it in sticky focus mode on entering its document (document_presenter.py
    /// `_is_likely_electron_app`), where H and K only echo. A browser is what these tests mean.
    fn app_name(self, recording_name: &str) -> String {
        match self {
            Producer::Recording => recording_name.to_owned(),
            Producer::WebEngine("Chromium") => "Chromium".to_owned(),
            Producer::WebEngine("Gecko") => "Firefox".to_owned(),
            Producer::WebEngine(toolkit) => format!("{recording_name} ({toolkit})"),
        }
    }
}

/// What a web engine pushes that the fixture's generator does not give doc-small: the page root
/// as AccessKit's `RootWebArea` and each element's HTML tag.
///
/// * The root: `RootWebArea` is Chromium's root role; the bridge, as accesskit_unix, exposes it as
///   `document web`, the fixture's generic `Document` as `document frame`. Orca 43.1's web script
///   took either for the page (scripts/web/script_utilities.py `isDocument`: document frame,
///   document web, embedded); Orca 48.1's takes only document web and embedded
///   (`isDocument(obj, excludeDocumentFrame=True)`), so with the fixture's role it finds no
///   document around the caret, keeps structural navigation suspended ("in document content:
///   False") and H, K and T only echo.
/// * The document's URL: Orca's Chromium script ignores focus and load-complete events from a
///   document without one (`documentFrameURI`), and then the page's first focus was set quietly
///   and never spoken.
/// * The tags (`html_tag`, exposed as the `tag` object attribute, as Chromium and Gecko do; the
///   root's is the DOM's "#document", without which Orca 48.1's caret stopped at the end of the
///   first paragraph, "Non-element cannot have caret context [document web]"):
///   Orca 48.1's web script places its caret only in web elements, objects with a `tag`
///   attribute (`_canHaveCaretContext` → `AXUtilities.is_web_element`); without tags every
///   object is a "non-element", and browse-mode line navigation (Down) finds nothing.
fn as_web_engine_sends_it(lines: &mut [RecordedLine]) {
    for message in lines.iter_mut().filter_map(|l| l.message.as_mut()) {
        if let SenderMessage::Update { update, .. } = message {
            for (_, node) in &mut update.nodes {
                if node.role() == Role::Document {
                    node.set_role(Role::RootWebArea);
                    node.set_url("file:///newton/doc-small.html");
                }
                if let Some(tag) = html_tag(node) {
                    node.set_html_tag(tag);
                }
            }
        }
    }
}

/// The HTML element a web engine would have made `node` from (doc-small's and doc-100k's roles).
fn html_tag(node: &accesskit::Node) -> Option<String> {
    let tag = match node.role() {
        // The DOM's name of the document node, which Chromium gives its root.
        Role::RootWebArea => "#document",
        Role::Heading => return Some(format!("h{}", node.level().unwrap_or(2))),
        Role::Paragraph => "p",
        Role::Section => "section",
        Role::Link => "a",
        Role::List => "ul",
        Role::ListItem => "li",
        Role::Form => "form",
        Role::TextInput | Role::CheckBox => "input",
        Role::Button => "button",
        Role::Table => "table",
        Role::Row => "tr",
        Role::Cell => "td",
        Role::ColumnHeader | Role::RowHeader => "th",
        _ => return None,
    };
    Some(tag.to_owned())
}

/// One thing the test does, then waits for Orca to settle.
enum Step<'a> {
    /// Inject a key through the registry, optionally with modifiers ("shift+h",
    /// "shift+alt+Down"); the bool is whether Orca must consume it.
    Key(&'a str, bool),
    /// The application moves its focus to the node with this role and label.
    Focus(&'a str, &'a str),
    /// The application moves its focus to the node with this id.
    FocusNode(u64),
}

/// A session with the bridge, an Orca and one application sending `recording`, Orca settled
/// after the application's first frame. [`Listening::finish`] stops Orca and tears it all down.
struct Listening {
    session: TestSession,
    bridge: Bridge,
    orca: Orca,
    app: App,
}

impl Listening {
    /// `before_orca` runs on the session before Orca starts (to give it a voice, say).
    fn start(
        recording: &str,
        app_name: &str,
        producer: Producer,
        before_orca: impl FnOnce(&TestSession),
    ) -> Listening {
        let mut session =
            TestSession::start(SessionOptions::default()).expect("start the test session");
        let bridge = Bridge::start(&mut session).expect("start the bridge");
        before_orca(&session);
        let orca = Orca::start(&mut session).expect("start Orca");
        // Orca 43.1 presents the focused object at the end of its start-up (orca.py `main`),
        // after registering its listeners: let it finish before the application appears.
        orca.wait_idle(&mut session)
            .expect("Orca settles after starting");
        let app = App::start(&bridge.socket, recording, producer);
        session
            .wait_for_app(&producer.app_name(app_name), bridge.pid())
            .expect("the application appears on the desktop");
        orca.wait_idle(&mut session)
            .expect("Orca settles after the first frame");
        Listening {
            session,
            bridge,
            orca,
            app,
        }
    }

    /// Takes `step` (the `i`th), then waits for Orca to settle.
    fn step(&mut self, i: usize, step: &Step) {
        match step {
            Step::Key(key, must_consume) => {
                let consumed = self
                    .orca
                    .press(&mut self.session, &format!("key-{i}"), key)
                    .expect("press the key");
                // Orca 48 reads keys from the X server: no registry answer to check (None);
                // what it says shows that it took the key.
                if let Some(consumed) = consumed {
                    assert_eq!(
                        consumed, *must_consume,
                        "key {key}: consumed={consumed}, expected {must_consume}"
                    );
                }
            }
            Step::Focus(role, label) => {
                let node = self.app.node_id(role, label);
                self.app.focus(node)
            }
            Step::FocusNode(id) => self.app.focus(*id),
        }
        self.orca
            .wait_idle(&mut self.session)
            .expect("Orca settles after the step");
    }

    /// Stops Orca, checks that the bridge outlived it, tears the session down and returns what
    /// Orca said.
    fn finish(mut self) -> OrcaSpeech {
        let speech = self
            .orca
            .stop(&mut self.session)
            .expect("stop Orca and read its speech");
        eprintln!("Orca said: {:#?}", speech.utterances);
        self.session
            .ensure_running(self.bridge.pid())
            .expect("bridge survived Orca");
        drop(self.app);
        let report = self.session.shutdown();
        assert!(report.is_clean(), "processes survived teardown: {report:?}");
        speech
    }
}

/// Runs `steps` against `recording` with Orca listening; returns Orca's speech.
fn orca_hears(recording: &str, app_name: &str, producer: Producer, steps: &[Step]) -> OrcaSpeech {
    let mut listening = Listening::start(recording, app_name, producer, |_| {});
    for (i, step) in steps.iter().enumerate() {
        listening.step(i, step);
    }
    listening.finish()
}

/// [`orca_hears`] with the recording sent as Chromium would send it (`Producer::WebEngine`).
fn chromium_hears(recording: &str, app_name: &str, steps: &[Step]) -> OrcaSpeech {
    orca_hears(recording, app_name, Producer::WebEngine("Chromium"), steps)
}

/// Fails unless every `expected` utterance was said, in this order (others may come between).
fn assert_said_in_order(speech: &OrcaSpeech, expected: &[&str]) {
    let mut said = speech.utterances.iter();
    for want in expected {
        assert!(
            said.any(|u| speech.is(u, want)),
            "Orca did not say {want:?} (in order after the previous expectations): {:#?}",
            speech.utterances
        );
    }
}

/// The major version of the Orca under test (43 on the host, 48 from `NEWTON_ORCA_ROOT`).
fn orca_major() -> u32 {
    OrcaVersion::current().expect("which Orca runs").major()
}

fn check_reference(golden: &str, speech: &OrcaSpeech) {
    let mut said = speech.utterances.clone();
    // Orca 48.1 does not always get to say "Screen reader off." when the harness stops it (its
    // log then ends with the last step's speech), so its references end before it.
    if orca_major() >= 48 && said.last().is_some_and(|u| u == "Screen reader off.") {
        said.pop();
    }
    if let Err(e) = check_golden(
        &orca_golden(&format!("collection/{golden}")).expect("Orca version"),
        &json!(said),
    ) {
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
        Producer::Recording,
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
    let document = match orca_major() {
        0..=47 => "Newton fixtures document frame Newton fixtures.",
        // Orca 48.1 reads the document's first line with its line break.
        48..=50 => "Newton fixtures document frame Newton fixtures\n                  ",
        // Orca 51.1 without it. (Its default script also navigates a document frame by
        // structure: H moves to "Newton fixtures heading 1", K to the first link. The
        // expectations below are met either way: they follow the focus moves.)
        _ => "Newton fixtures document frame Newton fixtures",
    };
    let (lists, details, components) = (
        heading("Lists", 2),
        heading("Details", 3),
        heading("Components", 2),
    );
    assert_said_in_order(
        &speech,
        &[
            document,
            // The key echo: H and K are plain letters for the default script.
            &key_echo("h"),
            &key_echo("k"),
            &lists,
            "AccessKit link.",
            &details,
            "protocol notes link.",
            &components,
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
        Producer::Recording,
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
    match orca_major() {
        major if major < 48 => assert_said_in_order(
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
                // Where Am I: the row and column headers, the role and the cell, then its
                // position in the full layout (fixtures/gen/src/table.rs: row 0 and column 0
                // are headers, so Ada's Science score is row 1, column 2, 0-based). Orca 43.1
                // (speech_generator.py `_generateColumnAndRow`) finds it through the cell's
                // `table-cell-index` attribute and Table.GetRowAtIndex/GetColumnAtIndex;
                // without the attribute it would use GetIndexInParent (the column, as cells
                // live in rows) and say "row 1 of 6".
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
        ),
        // Orca 51.1 as 48.1, but Where Am I says the row header, the column header and the
        // cell in one utterance ("Ada Science 93").
        major if major >= 51 => assert_said_in_order(
            &speech,
            &[
                "table with 6 rows 5 columns",
                "Ada",
                "80",
                "93",
                "65",
                "78",
                "Science column header 93",
                "Ada Science 93",
                "column 3 of 5 row 2 of 6",
                "Grace",
                "87",
                "100",
                "72",
                "85",
                "Edsger",
                "60",
                "73",
                "86",
                "99",
                "Edsger Music 99",
                "column 5 of 5 row 5 of 6",
            ],
        ),
        // Orca 48.1 words the same table differently, for any toolkit (docs/compat.md, "Two
        // Orcas"): entering the table it builds "table with 6 rows 5 columns" as the cell's
        // ancestor context but reads the focused cell as its whole row instead of speaking it;
        // Where Am I says the cell, then the column header with the cell, then the position,
        // and no row header: its speech generator speaks a row header only when the row
        // changed since the previous object (`_generate_table_cell_row_header`, `newOnly`).
        _ => assert_said_in_order(
            &speech,
            &[
                "Ada.",
                "80.",
                "93.",
                "65.",
                "78.",
                "Science column header 93.",
                // Where Am I on Ada's Science score: row 1, column 2 (0-based), found through
                // the cell's `table-cell-index` attribute as under 43.1.
                "93.",
                "Science 93.",
                "column 3 of 5 row 2 of 6",
                // A new row: read whole, as under 43.1.
                "Grace.",
                "87.",
                "100.",
                "72.",
                "85.",
                "Edsger.",
                "60.",
                "73.",
                "86.",
                "99.",
                "Music 99.",
                "column 5 of 5 row 5 of 6",
            ],
        ),
    }
    check_reference("orca-grid-small.json", &speech);
}

/// A web engine's page: Orca 43.1's web script navigates it by structure. The document is
/// doc-small's (headings "Newton fixtures" 1, "Lists" 2, "Details" 3, "Sign up" 2, "Components"
/// 2; links "AccessKit" in the first paragraph, "protocol notes" after "Details"), sent by a
/// producer whose hello names a web engine. Orca asks the bridge for the headings and links
/// with Collection.GetMatches on the document (structural_navigation.py `_getAll`), moves its
/// caret there and speaks the object. Every step says something the previous one did not, so a
/// step that does nothing, or an utterance said twice, cannot satisfy the next expectation.
fn web_engine_navigates_headings_and_links(toolkit: &'static str) {
    if skip_loudly() {
        return;
    }
    let speech = orca_hears(
        "generated-small/doc-small.jsonl",
        "Newton small document",
        Producer::WebEngine(toolkit),
        &[
            // The page's focus is on the first link (browse mode: Orca only leaves it for a
            // focused form field); Orca's caret follows focus.
            Step::Focus("link", "AccessKit"),
            Step::Key("h", true),
            Step::Key("h", true),
            Step::Key("k", true),
            Step::Key("shift+h", true),
            Step::Key("shift+h", true),
        ],
    );
    let (lists, details) = (heading("Lists", 2), heading("Details", 3));
    // Orca 48.1 echoes Shift+H as "left shift", "H"; 43.1 as "h ".
    let shift_h = if orca_major() < 48 { "h " } else { "H" };
    assert_said_in_order(
        &speech,
        &[
            "AccessKit link.",
            &key_echo("h"),
            // H: the next heading after the link, with its level.
            &lists,
            &key_echo("h"),
            &details,
            &key_echo("k"),
            // K: the next link after "Details".
            "protocol notes link.",
            shift_h,
            // Shift+H: back to the heading before the link, then the one before it.
            &details,
            shift_h,
            &lists,
        ],
    );
}

/// A heading as each Orca says it: Orca 43.1 its name and "heading level N.", Orca 48.1 its
/// Text (headings carry their name as Text) and "heading N".
fn heading(name: &str, level: u32) -> String {
    if orca_major() < 48 {
        format!("{name} heading level {level}.")
    } else {
        format!("{name} heading {level}")
    }
}

/// The echo of a plain letter key: "h " under Orca 43.1, "h" under 48.1.
fn key_echo(key: &str) -> String {
    if orca_major() < 48 {
        format!("{key} ")
    } else {
        key.to_owned()
    }
}

#[test]
fn orca_web_script_navigates_headings_and_links_chromium() {
    if skip_loudly() {
        return;
    }
    web_engine_navigates_headings_and_links("Chromium");
}

#[test]
fn orca_web_script_navigates_headings_and_links_gecko() {
    if skip_loudly() {
        return;
    }
    web_engine_navigates_headings_and_links("Gecko");
}

/// Orca 43.1's web script table keys on doc-small's "Components" table (a header row "Name",
/// "Role", then three rows): T to the table, Down (browse-mode caret) into the first data row,
/// then Alt+Shift+arrows from cell to cell, Orca speaking the column header when the column
/// changes. Table.GetAccessibleAt, TableCell and the cells' `table-cell-index` attribute answer
/// Orca's `cellForCoordinates` / `coordinatesForCell`.
///
/// Navigation that starts on the header T lands on: the next test.
#[test]
fn orca_web_script_navigates_table_cells_chromium() {
    if skip_loudly() {
        return;
    }
    let speech = chromium_hears(
        "generated-small/doc-small.jsonl",
        "Newton small document",
        &[
            Step::Focus("link", "AccessKit"),
            Step::Key("t", true),
            Step::Key("Down", true),
            Step::Key("shift+alt+Right", true),
            Step::Key("shift+alt+Down", true),
            Step::Key("shift+alt+Left", true),
            Step::Key("shift+alt+Up", true),
        ],
    );
    if orca_major() < 48 {
        assert_said_in_order(
            &speech,
            &[
                "AccessKit link.",
                "t ",
                // T: the next table, its size, then its first cell.
                "table with 4 rows 2 columns",
                "Name column header.",
                // Down: the next line, the first data row.
                "Orca.",
                "Screen reader.",
                // Alt+Shift+Right: new column, so its header first.
                "Role",
                "Screen reader.",
                // Alt+Shift+Down: same column, next row.
                "Accessibility bus.",
                // Alt+Shift+Left: back to the first column.
                "Name",
                "AT-SPI.",
                // Alt+Shift+Up.
                "Orca.",
            ],
        );
        return;
    }
    // Orca 48.1: the same moves, each cell with its header when the column changed and its
    // position in the table (the header row is row 1). It reads a COLUMN_HEADER as a text block,
    // from its Text: header cells carry their name as Text (docs/compat.md, "Two Orcas").
    assert_said_in_order(
        &speech,
        &[
            "AccessKit link.",
            "t",
            "table with 4 rows 2 columns",
            "Name column header.",
            // Down: the first data row, read whole with its headers.
            "Name column header Orca.",
            "Role column header Screen reader.",
            // Alt+Shift+Right (Orca 48.1 echoes the modifiers, Alt as "left meta" here).
            "Role column header Screen reader.",
            "Row 2, column 2.",
            // Alt+Shift+Down: same column, next row.
            "Accessibility bus.",
            "Row 3, column 2.",
            // Alt+Shift+Left: back to the first column, its header first.
            "Name column header AT-SPI.",
            "Row 3, column 1.",
            // Alt+Shift+Up.
            "Orca.",
            "Row 2, column 1.",
        ],
    );
}

/// Table navigation from a header cell (issue 17): T lands on doc-small's "Name" column header
/// and Alt+Shift+arrows start from there: Down into the first data row, Up back to the header,
/// Right along the header row, Down again. Orca 43.1's web script counts only TABLE_CELL,
/// COLUMN_HEADER and ROW_HEADER as table cells (structural_navigation.py `getCellForObj`): with
/// GTK's TABLE_COLUMN_HEADER / TABLE_ROW_HEADER, which the bridge gave headers before, each of
/// these keys said "Not in a table." (docs/compat.md, difference 22).
#[test]
fn orca_web_script_navigates_table_cells_from_a_header_chromium() {
    if skip_loudly() {
        return;
    }
    let speech = chromium_hears(
        "generated-small/doc-small.jsonl",
        "Newton small document",
        &[
            Step::Focus("link", "AccessKit"),
            Step::Key("t", true),
            Step::Key("shift+alt+Down", true),
            Step::Key("shift+alt+Up", true),
            Step::Key("shift+alt+Right", true),
            Step::Key("shift+alt+Down", true),
        ],
    );
    assert!(
        !speech.utterances.iter().any(|u| u == "Not in a table."),
        "Orca did not take the header for a table cell: {:#?}",
        speech.utterances
    );
    if orca_major() < 48 {
        assert_said_in_order(
            &speech,
            &[
                "AccessKit link.",
                "t ",
                // T: the table, then its first cell, the "Name" header.
                "table with 4 rows 2 columns",
                "Name column header.",
                // Alt+Shift+Down from the header: the first data row, same column.
                "Orca.",
                // Alt+Shift+Up: back to the header.
                "Name column header.",
                // Alt+Shift+Right from the header: the next header.
                "Role column header.",
                // Alt+Shift+Down: the data cell below it.
                "Screen reader.",
            ],
        );
        return;
    }
    if orca_major() >= 51 {
        // Orca 51.1 as 48.1, but a data cell reached from its own column's header is said
        // without that header: 51 speaks a cell's column header only when the column changed
        // since the cell the move started from (`speech_generator.py`
        // `_generate_table_cell_column_header` → `AXUtilities.cell_column_changed`, with
        // `table_navigator.py` `_present_cell` passing that cell as the prior object), where
        // 48.1 speaks the headers the starting cell did not have (`get_new_column_headers`),
        // and a header cell has none. The same for any toolkit's table (docs/compat.md,
        // "Orca 51.1").
        assert_said_in_order(
            &speech,
            &[
                "AccessKit link.",
                "t",
                "table with 4 rows 2 columns",
                "Name column header.",
                // Alt+Shift+Down from the header: same column, so the cell alone.
                "Orca.",
                "Row 2, column 1.",
                // Alt+Shift+Up: the header.
                "Name column header.",
                "Row 1, column 1.",
                // Alt+Shift+Right: the next header.
                "Role column header.",
                "Row 1, column 2.",
                // Alt+Shift+Down: same column again.
                "Screen reader.",
                "Row 2, column 2.",
            ],
        );
        return;
    }
    // Orca 48.1 says each cell's position after it (the header row is row 1). It reads a
    // COLUMN_HEADER as a text block, from its Text: header cells carry their name as Text
    // (docs/compat.md, "Two Orcas").
    assert_said_in_order(
        &speech,
        &[
            "AccessKit link.",
            "t",
            "table with 4 rows 2 columns",
            "Name column header.",
            // Alt+Shift+Down from the header.
            "Name column header Orca.",
            "Row 2, column 1.",
            // Alt+Shift+Up: the header.
            "Name column header.",
            "Row 1, column 1.",
            // Alt+Shift+Right: the next header.
            "Role column header.",
            "Row 1, column 2.",
            // Alt+Shift+Down.
            "Role column header Screen reader.",
            "Row 2, column 2.",
        ],
    );
}

/// Browse-mode caret through doc-small (issue 17): from the first paragraph's link, Down reads
/// the document line by line in order, through a heading, a paragraph, a list's items and the
/// next heading; Up goes back. Orca's web script reads a line from the Text of the object its
/// caret is in, U+FFFC standing for each child object in its parent's Text: with one Text over
/// the whole document (the inline layout) it found no caret context in a paragraph and Down
/// from "Lists" skipped "Three things to know:". The same page and keys through accesskit_unix
/// (`newton-legacy-reference`, the page's tree naming "Chromium" as its toolkit) are heard first,
/// for comparison: Orca says less there.
#[test]
fn orca_web_script_reads_doc_small_line_by_line_chromium() {
    if skip_loudly() {
        return;
    }
    let recording = web_recording(
        "doc-small-line-by-line",
        "generated-small/doc-small.jsonl",
        "Chromium",
        ("link", "AccessKit"),
    );
    let keys = [
        Step::Key("Down", true),
        Step::Key("Down", true),
        Step::Key("Down", true),
        Step::Key("Down", true),
        Step::Key("Down", true),
        Step::Key("Down", true),
        Step::Key("Down", true),
        Step::Key("Up", true),
    ];
    let through_accesskit_unix = orca_hears_through_accesskit_unix(recording.recording(), &keys);
    let mut steps = vec![Step::Focus("link", "AccessKit")];
    steps.extend(keys);
    let speech = chromium_hears(recording.recording(), "Newton small document", &steps);
    // Orca 48.1 drops the full stop after the list's size.
    let list = if orca_major() < 48 {
        "List with 3 items."
    } else {
        "List with 3 items"
    };
    let (lists, details) = (heading("Lists", 2), heading("Details", 3));
    assert_said_in_order(
        &speech,
        &[
            "AccessKit link.",
            // Down: the line after the first paragraph's, the heading.
            &lists,
            // The paragraph the inline layout skipped.
            "Three things to know:",
            // Into the list: its size, then its items one line each.
            list,
            "Trees are pushed.",
            "Replicas are validated.",
            "Orca reads them.",
            // Out of the list to the next heading.
            "leaving list.",
            &details,
            // The paragraph's line: its text and its link in order.
            "Read the ",
            "protocol notes link.",
            " first.",
            // Up: back to the heading.
            &details,
        ],
    );
    // The same keys on the same page through accesskit_unix (docs/compat.md, "A web engine's
    // document"): everything Orca says there, it says through the bridge, and the bridge gives
    // it more. Under 43.1 accesskit_unix's headings lack their level and the lines with no
    // Text of their own are skipped; under 48.1 Down and Up say nothing at all.
    assert_says_at_least(&speech, &through_accesskit_unix);
    for only_bridged in ["Three things to know:", "Read the ", " first."] {
        assert!(
            !through_accesskit_unix.said(only_bridged),
            "through accesskit_unix Orca now says {only_bridged:?}: update docs/compat.md \
             (\"A web engine's document\") and this test"
        );
    }
}

/// Fails unless each utterance of `less`, in order, begins an utterance of `more` (its final
/// full stop aside: "Lists heading." is said as "Lists heading level 2." with the level).
/// "Screen reader off." is Orca's own, and not always said: Orca 48.1 sometimes outlasts the
/// harness's grace on stop and is killed before it says it (CI, session 21).
fn assert_says_at_least(more: &OrcaSpeech, less: &OrcaSpeech) {
    let bare = |text: &str| text.trim().trim_end_matches('.').to_owned();
    let mut said = more.utterances.iter();
    for want in less
        .utterances
        .iter()
        .filter(|u| *u != "Screen reader off.")
    {
        let want = bare(want);
        assert!(
            said.any(|u| bare(u).starts_with(&want)),
            "the bridge's Orca said nothing beginning {want:?} (in order) where accesskit_unix's \
             did: bridge {:#?}, accesskit_unix {:#?}",
            more.utterances,
            less.utterances
        );
    }
}

/// How long the quick silent voice of the Say All tests that read to the end takes per
/// character: doc-small's Say All (about 350 characters) is said in well under a second.
const QUICK_VOICE_PER_CHARACTER: Duration = Duration::from_millis(1);

/// Say All (KP_Add) with Orca's caret where the application's focus `focus` puts it, read to the
/// end of the document: Orca speaks through a quick silent voice (`SilentVoice`), which paces
/// Say All as a listener's synthesizer does, and the test waits until the voice has said `last`
/// (the document's last block), then until Orca is idle. Returns what Orca said; its Say All
/// pieces are in `OrcaSpeech::say_all`.
///
/// The voice is needed under Orca 51.1: when speech-dispatcher cannot be reached, 43.1 and 48.1
/// have no speech server and run Say All as one synchronous loop to the end, but 51.1 keeps a
/// server without a client (`speechdispatcherfactory.py` `_init` catches the failed connection)
/// and sends Say All through it (`speech_presenter.py` `say_all`); the server's `_say_all` asks
/// for the next piece only when the previous one is reported ended, which never comes, so
/// without a voice 51.1's Say All reads its first piece and stops (docs/compat.md, "Orca 51.1").
fn says_all_to_the_end(recording: &str, app_name: &str, focus: &Step, last: &str) -> OrcaSpeech {
    let mut voice = None;
    let mut listening = Listening::start(
        recording,
        app_name,
        Producer::WebEngine("Chromium"),
        |session| {
            voice = Some(
                SilentVoice::install(
                    session,
                    std::path::Path::new(env!("CARGO_BIN_EXE_newton-silent-voice")),
                    QUICK_VOICE_PER_CHARACTER,
                )
                .expect("give Orca a silent voice"),
            )
        },
    );
    let voice = voice.expect("the voice was installed");
    listening.step(0, focus);
    let Listening { session, orca, .. } = &mut listening;
    orca.press_while_speaking(session, "say-all", "KP_Add")
        .expect("press KP_Add");
    if let Err(e) = voice.wait_to_hear(last, SAY_ALL_REACHES_BLOCK) {
        panic!(
            "Say All did not reach the document's end ({e}); it read {:#?}",
            orca.say_all_so_far().unwrap_or_default()
        );
    }
    orca.wait_idle(session).expect("Orca settles after Say All");
    listening.finish()
}

/// Say All (KP_Add, the desktop layout's key) from doc-small's first link (issue 17): Orca reads
/// from its caret to the end of the document in document order, block after block, through the
/// list, the form and the table, paced by a quick voice ([`says_all_to_the_end`]); stopping it
/// is tested on doc-100k (`orca_web_script_says_all_of_doc_100k_until_stopped_chromium`).
#[test]
fn orca_web_script_says_all_of_doc_small_chromium() {
    if skip_loudly() {
        return;
    }
    let speech = says_all_to_the_end(
        "generated-small/doc-small.jsonl",
        "Newton small document",
        &Step::Focus("link", "AccessKit"),
        "Push protocol",
    );
    // Each piece Orca read, in order (the form's check box and button carry no text: their
    // name and role are spoken, their content is empty). Both Orcas read the same pieces.
    let read: Vec<&str> = speech
        .say_all
        .iter()
        .map(String::as_str)
        .filter(|text| !text.is_empty())
        .collect();
    assert_eq!(
        read,
        [
            // From the caret's line (the link's paragraph) ...
            "Trees are pushed with",
            "AccessKit",
            "updates.",
            "Lists",
            "Three things to know:",
            "Trees are pushed",
            "Replicas are validated",
            "Orca reads them",
            "Details",
            "Read the",
            "protocol notes",
            "first.",
            "Sign up",
            "me@example.org",
            "Components",
            // ... to the end of the document: the table, row by row.
            "Name",
            "Role",
            "Orca",
            "Screen reader",
            "AT-SPI",
            "Accessibility bus",
            "Newton",
            "Push protocol",
        ],
        "Say All read doc-small out of order or not to its end: {:#?}",
        speech.say_all
    );
}

/// doc-100k (4,000 sections of a heading, paragraphs with links and a list: about 100,000
/// nodes) as a web engine sends it, written for this run and removed after it.
struct LargeDocument {
    file: TempRecording,
    /// The first frame's tree.
    tree: TreeUpdate,
}

impl LargeDocument {
    /// `test` names the temporary directory ([`TempRecording::write`]).
    fn write(test: &str) -> LargeDocument {
        let lines = newton_fixtures::doc_100k();
        let tree = lines
            .iter()
            .filter_map(|l| l.message.as_ref())
            .find_map(|m| match m {
                SenderMessage::Update { update, .. } if update.tree.is_some() => {
                    Some(update.clone())
                }
                _ => None,
            })
            .expect("doc-100k starts with a full tree");
        let file = TempRecording::write(&format!("doc-100k-{test}"), &lines);
        LargeDocument { file, tree }
    }

    fn recording(&self) -> &str {
        self.file.recording()
    }

    /// The tree's nodes in document order (depth first, children in order) with their parents.
    fn in_order(&self) -> Vec<(NodeId, Option<NodeId>, &accesskit::Node)> {
        let nodes: std::collections::HashMap<NodeId, &accesskit::Node> = self
            .tree
            .nodes
            .iter()
            .map(|(id, node)| (*id, node))
            .collect();
        let root = self.tree.tree.as_ref().map_or(NodeId(1), |t| t.root);
        let mut order = Vec::new();
        let mut stack = vec![(root, None)];
        while let Some((id, parent)) = stack.pop() {
            let Some(node) = nodes.get(&id) else { continue };
            order.push((id, parent, *node));
            stack.extend(node.children().iter().rev().map(|child| (*child, Some(id))));
        }
        order
    }

    fn links(&self) -> Vec<(NodeId, Option<NodeId>)> {
        self.in_order()
            .into_iter()
            .filter(|(_, _, node)| node.role() == Role::Link)
            .map(|(id, parent, _)| (id, parent))
            .collect()
    }

    /// The first run's text (trimmed) of each paragraph, heading and list item after `block`,
    /// in document order.
    fn text_blocks_after(&self, block: NodeId) -> Vec<String> {
        let order = self.in_order();
        let first_run = |id: NodeId| {
            order
                .iter()
                .find(|(_, parent, node)| *parent == Some(id) && node.role() == Role::TextRun)
                .and_then(|(_, _, node)| node.value())
                .map(|text| text.trim().to_owned())
        };
        order
            .iter()
            .skip_while(|(id, _, _)| *id != block)
            .skip(1)
            .filter(|(_, _, node)| {
                matches!(
                    node.role(),
                    Role::Paragraph | Role::Heading | Role::ListItem
                )
            })
            .filter_map(|(id, _, _)| first_run(*id))
            .collect()
    }

    /// Every run's text from the first run inside `block` to the end of the document, without
    /// whitespace (Orca splits and trims the pieces it reads; their order and words must match).
    fn words_from(&self, block: NodeId) -> String {
        let order = self.in_order();
        let parents: std::collections::HashMap<NodeId, Option<NodeId>> =
            order.iter().map(|(id, parent, _)| (*id, *parent)).collect();
        let inside = |mut id: NodeId| loop {
            if id == block {
                return true;
            }
            match parents.get(&id).copied().flatten() {
                Some(parent) => id = parent,
                None => return false,
            }
        };
        let start = order
            .iter()
            .position(|(id, _, node)| node.role() == Role::TextRun && inside(*id))
            .expect("the block has text");
        order[start..]
            .iter()
            .filter(|(_, _, node)| node.role() == Role::TextRun)
            .flat_map(|(_, _, node)| node.value().unwrap_or_default().chars())
            .filter(|c| !c.is_whitespace())
            .collect()
    }
}

/// Browse-mode caret on doc-100k sent by a web engine (issue 17): from the first section's first
/// link, Down reads on line by line in document order, as on doc-small.
#[test]
fn orca_web_script_reads_doc_100k_line_by_line_chromium() {
    if skip_loudly() {
        return;
    }
    let document = LargeDocument::write("line-by-line");
    let (first_link, paragraph) = document.links()[0];
    let speech = chromium_hears(
        document.recording(),
        "Newton document",
        &[
            Step::FocusNode(first_link.0),
            Step::Key("Down", true),
            Step::Key("Down", true),
            Step::Key("Down", true),
            Step::Key("Down", true),
            Step::Key("Down", true),
            Step::Key("Up", true),
        ],
    );
    // Down five times: the five text blocks after the link's paragraph, each read when the
    // caret reaches it (its first run's words, then the rest of its line); Up: the fourth again.
    let blocks = document.text_blocks_after(paragraph.expect("a link has a parent"));
    let first_words: Vec<String> = blocks.into_iter().take(5).collect();
    assert_eq!(
        first_words.len(),
        5,
        "doc-100k has five blocks after its first paragraph"
    );
    let mut expected: Vec<&str> = vec!["link 0.0 link."];
    expected.extend(first_words.iter().map(String::as_str));
    expected.push(&first_words[3]);
    assert_said_containing_in_order(&speech, &expected);
}

/// Fails unless an utterance containing each of `expected` (as this Orca words it,
/// [`OrcaSpeech::contains`]) was said, in this order.
fn assert_said_containing_in_order(speech: &OrcaSpeech, expected: &[&str]) {
    let mut said = speech.utterances.iter();
    for want in expected {
        assert!(
            said.any(|u| speech.contains(u, want)),
            "Orca said nothing containing {want:?} (in order after the previous expectations): \
             {:#?}",
            speech.utterances
        );
    }
}

/// Say All on doc-100k sent by a web engine (issue 17), from a link in the last section: Orca
/// reads from the caret's line to the end of the 100,000-node document, every piece in order
/// ([`says_all_to_the_end`]). It starts near the end because Say All reads on to the end of the
/// document (`orca_web_script_says_all_of_doc_100k_until_stopped_chromium` stops it early);
/// what it reads is answered per block, so the size of the document before the caret does not
/// enter into it.
#[test]
fn orca_web_script_says_all_of_doc_100k_from_its_last_section_chromium() {
    if skip_loudly() {
        return;
    }
    let document = LargeDocument::write("say-all");
    let links = document.links();
    let (last_link, paragraph) = *links.last().expect("doc-100k has links");
    let last_block = document
        .text_blocks_after(paragraph.expect("a link has a parent"))
        .pop()
        .expect("doc-100k's last section has blocks after its link's paragraph");
    let speech = says_all_to_the_end(
        document.recording(),
        "Newton document",
        &Step::FocusNode(last_link.0),
        &last_block,
    );
    let read: String = speech
        .say_all
        .iter()
        .flat_map(|piece| piece.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    let expected = document.words_from(paragraph.expect("a link has a parent"));
    eprintln!(
        "Say All read {} pieces: {:#?}",
        speech.say_all.len(),
        speech.say_all
    );
    assert_eq!(
        read, expected,
        "Say All did not read from the caret's paragraph to the end in order"
    );
}

/// How many text blocks past the caret's paragraph Say All reads on doc-100k before the test
/// stops it.
const BLOCKS_BEFORE_STOP: usize = 12;
/// How long the silent voice takes per character: the twelfth block, "Section 2: …" (29
/// characters), takes 870 ms, so Control, pressed as soon as it is heard, arrives while it is
/// said. Pressed in the gap between two pieces (one ended, the next not yet asked for), it did
/// not stop Orca 48.1's Say All: its speech-dispatcher client asks for the next piece on the
/// previous one's end, and the interrupt found nothing to cancel (CI, session 20, at 5 ms per
/// character, 145 ms for that block).
const VOICE_PER_CHARACTER: Duration = Duration::from_millis(30);
/// Bound for Say All to reach that block (about 17 s of speech at 30 ms per character).
const SAY_ALL_REACHES_BLOCK: Duration = Duration::from_secs(120);

/// Say All on doc-100k, stopped by the listener (issue 17). With a voice (speech-dispatcher and
/// the silent module, `SilentVoice`), Orca asks for each next piece only when the previous one
/// has been said. From the first section's first link, KP_Add reads on through the following
/// sections; once the voice has said the twelfth block after the link's paragraph, Control
/// stops it, and nothing more is read or said.
#[test]
fn orca_web_script_says_all_of_doc_100k_until_stopped_chromium() {
    if skip_loudly() {
        return;
    }
    let document = LargeDocument::write("say-all-stopped");
    let (first_link, paragraph) = document.links()[0];
    let paragraph = paragraph.expect("a link has a parent");
    let blocks = document.text_blocks_after(paragraph);
    let stop_after = blocks
        .get(BLOCKS_BEFORE_STOP)
        .expect("doc-100k has enough blocks after its first paragraph");

    let mut voice = None;
    let mut listening = Listening::start(
        document.recording(),
        "Newton document",
        Producer::WebEngine("Chromium"),
        |session| {
            voice = Some(
                SilentVoice::install(
                    session,
                    std::path::Path::new(env!("CARGO_BIN_EXE_newton-silent-voice")),
                    VOICE_PER_CHARACTER,
                )
                .expect("give Orca a silent voice"),
            )
        },
    );
    let voice = voice.expect("the voice was installed");
    listening.step(0, &Step::FocusNode(first_link.0));
    let Listening { session, orca, .. } = &mut listening;
    orca.press_while_speaking(session, "say-all", "KP_Add")
        .expect("press KP_Add");
    voice
        .wait_to_hear(stop_after, SAY_ALL_REACHES_BLOCK)
        .expect("Say All reads on through the sections");
    orca.press_while_speaking(session, "stop-say-all", "Control_L")
        .expect("press Control");
    if let Err(e) = orca.wait_idle(session) {
        panic!(
            "Orca did not settle after Control ({e}): Say All went on; the voice heard {:#?}",
            voice.heard().unwrap_or_default()
        );
    }
    let read_at_stop = orca.say_all_so_far().expect("read Orca's log");
    let heard_at_stop = voice.heard().expect("read the voice's log");
    // Unstopped, Say All starts a piece every few hundred milliseconds: three seconds is ample
    // to show that it does not go on.
    std::thread::sleep(Duration::from_secs(3));
    orca.wait_idle(session).expect("Orca stays settled");
    let read_later = orca.say_all_so_far().expect("read Orca's log");
    let heard_later = voice.heard().expect("read the voice's log");
    let speech = listening.finish();
    eprintln!("The voice heard: {heard_later:#?}");
    eprintln!("Say All read: {read_later:#?}");

    assert_eq!(
        read_later, read_at_stop,
        "Say All read on after Control stopped it"
    );
    assert_eq!(
        heard_later, heard_at_stop,
        "Orca spoke on after Control stopped Say All"
    );
    let read: String = read_at_stop
        .iter()
        .flat_map(|piece| piece.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    let expected = document.words_from(paragraph);
    let compact = |text: &str| -> String { text.chars().filter(|c| !c.is_whitespace()).collect() };
    assert!(
        expected.starts_with(&read),
        "Say All did not read doc-100k from the caret's paragraph in order: {read_at_stop:#?}"
    );
    assert!(
        read.contains(&compact(stop_after)),
        "Say All stopped before the block the voice said: {read_at_stop:#?}"
    );
    assert!(
        read.len() < expected.len() / 2,
        "Say All was not stopped: it read {} of {} characters",
        read.len(),
        expected.len()
    );
    assert_heard_in_order(&heard_at_stop, &read_at_stop);
    assert!(
        !speech.utterances.is_empty(),
        "Orca logged no speech at all"
    );
}

/// Fails unless the voice said each piece Say All read (but the last, which may have been cut
/// short), in order.
fn assert_heard_in_order(heard: &[String], pieces: &[String]) {
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let heard = words(&heard.join(" "));
    let mut from = 0;
    for piece in pieces.iter().take(pieces.len().saturating_sub(1)) {
        let piece = words(piece);
        if piece.is_empty() {
            continue;
        }
        match heard[from..].find(&piece) {
            Some(at) => from += at + piece.len(),
            None => panic!(
                "the voice did not say {piece:?} (in order after the previous pieces); it heard: \
                 {heard:?}"
            ),
        }
    }
}

/// A recording as a web engine would send it, written to a temporary file for both sides of a
/// comparison: the fixture's first frame with what a web engine adds (`as_web_engine_sends_it`),
/// the engine named in the tree (accesskit_unix reports the tree's toolkit name, and Orca picks
/// its script by it) and the application named as its browser names itself, as on the bridged
/// side (`Producer::app_name`; `newton-legacy-reference` names the application after the
/// hello: with the recording's own name Orca 51.1 took accesskit_unix's page for an Electron
/// application's and entered it in sticky focus mode, "Focus mode is sticky."), then one commit
/// (serial 2) moving the focus to `focus`.
fn web_recording(
    test: &str,
    fixture_name: &str,
    engine: &'static str,
    focus: (&str, &str),
) -> TempRecording {
    let mut lines = newton_producer::load_recording(fixture(fixture_name))
        .unwrap_or_else(|e| panic!("load {fixture_name}: {e}"));
    as_web_engine_sends_it(&mut lines);
    let first_commit = lines
        .iter()
        .position(|l| matches!(&l.message, Some(SenderMessage::Commit { .. })))
        .expect("the recording has a commit");
    lines.truncate(first_commit + 1);
    let surface = SurfaceId(1);
    for line in &mut lines {
        if let Some(line) = line.hello.as_mut() {
            line.app.toolkit_name = Some(engine.to_owned());
            line.app.name = Producer::WebEngine(engine).app_name(&line.app.name);
        }
        if let Some(SenderMessage::Update { update, .. }) = line.message.as_mut() {
            if let Some(tree) = update.tree.as_mut() {
                tree.toolkit_name = Some(engine.to_owned());
            }
        }
    }
    let focus = node_with(&lines, focus.0, focus.1);
    let mut moved = lines[first_commit].clone();
    moved.message = Some(SenderMessage::Update {
        surface,
        update: TreeUpdate {
            nodes: vec![],
            tree: None,
            tree_id: TreeId::ROOT,
            focus: NodeId(focus),
        },
    });
    let mut committed = lines[first_commit].clone();
    committed.message = Some(SenderMessage::Commit { surface, serial: 2 });
    lines.extend([moved, committed]);
    TempRecording::write(&format!("web-{test}"), &lines)
}

/// A recording written for one test to a directory of its own, removed on drop.
struct TempRecording {
    dir: std::path::PathBuf,
    path: std::path::PathBuf,
}

impl TempRecording {
    /// `name` names the directory: the tests of one process run in parallel until they take the
    /// Orca lock.
    fn write(name: &str, lines: &[RecordedLine]) -> TempRecording {
        let dir = std::env::temp_dir().join(format!("newton-orca-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let path = dir.join("recording.jsonl");
        newton_fixtures::write_jsonl(&path, lines)
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        TempRecording { dir, path }
    }

    fn recording(&self) -> &str {
        self.path.to_str().expect("a UTF-8 temporary path")
    }
}

impl Drop for TempRecording {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The id of the first node of the recording's trees with this role and label.
fn node_with(lines: &[RecordedLine], role: &str, label: &str) -> u64 {
    lines
        .iter()
        .filter_map(|l| match &l.message {
            Some(SenderMessage::Update { update, .. }) => serde_json::to_value(update).ok(),
            _ => None,
        })
        .find_map(|tree| {
            tree["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|entry| entry[1]["role"] == role && entry[1]["properties"]["label"] == label)
                .and_then(|entry| entry[0].as_u64())
        })
        .unwrap_or_else(|| panic!("no {role} labelled {label:?} in the recording"))
}

/// Runs `steps` (keys only) with Orca listening to `recording` exposed through accesskit_unix
/// (`newton-legacy-reference`): its first commit, then commit 2 (the focus move), then the keys.
fn orca_hears_through_accesskit_unix(recording: &str, steps: &[Step]) -> OrcaSpeech {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let orca = Orca::start(&mut session).expect("start Orca");
    orca.wait_idle(&mut session)
        .expect("Orca settles after starting");
    let mut legacy = LegacyReference::start(&session, std::path::Path::new(recording))
        .expect("start the legacy reference");
    legacy
        .wait_on_desktop(&session)
        .expect("the legacy application registers with the desktop");
    orca.wait_idle(&mut session)
        .expect("Orca settles after the first frame");
    legacy.goto(2).expect("move the focus");
    orca.wait_idle(&mut session)
        .expect("Orca settles after the focus move");
    for (i, step) in steps.iter().enumerate() {
        let Step::Key(key, _) = step else {
            panic!("only keys can be pressed in the legacy application");
        };
        // What Orca consumes differs between the sides; it is compared in what Orca says.
        orca.press(&mut session, &format!("key-{i}"), key)
            .expect("press the key");
        orca.wait_idle(&mut session)
            .expect("Orca settles after the step");
    }
    let speech = orca
        .stop(&mut session)
        .expect("stop Orca and read its speech");
    eprintln!("Orca said through accesskit_unix: {:#?}", speech.utterances);
    drop(legacy);
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
    speech
}

/// Structural navigation on doc-100k sent by a web engine (issue 17), among 100,000 nodes
/// (Collection on the document): from the last section's last link, Shift+H goes back through
/// the last two headings, H forward again to the last one and on, wrapping to the first, then
/// the second, and K finds the next link.
///
/// It starts at the end because Orca 48.1's Shift+H (`goObject`) walks the document's 4,000
/// headings from the last one back to the caret, about ten AT-SPI calls each
/// (`Properties.Get` and `GetIndexInParent` four times each for the heading's path, `GetState`,
/// `GetRole`, ...): from a link in the third section it had not arrived after 30 s on the debug
/// bridge (session 20; the 48.1 pass now runs the release bridge), where Orca 43.1 went back at once (docs/compat.md, "Two Orcas"). Its
/// H walks from the first heading, or from the heading the caret is on. The focus moves once,
/// first: an application focus move made after H and K went unspoken under Orca 43.1 and its
/// caret stayed where the keys had put it.
#[test]
fn orca_web_script_navigates_headings_and_links_of_doc_100k_chromium() {
    if skip_loudly() {
        return;
    }
    let document = LargeDocument::write("structural");
    let order = document.in_order();
    let (last_link, _) = *document.links().last().expect("doc-100k has links");
    let headings: Vec<(String, u32)> = order
        .iter()
        .filter(|(_, _, node)| node.role() == Role::Heading)
        .map(|(_, _, node)| {
            let name = node.label().expect("doc-100k's headings are labelled");
            let level = node.level().and_then(|l| u32::try_from(l).ok());
            (name.to_owned(), level.unwrap_or(2))
        })
        .collect();
    assert!(headings.len() > 4, "doc-100k has its sections' headings");
    let said = |(name, level): &(String, u32)| heading(name, *level);
    let second_heading = order
        .iter()
        .position(|(_, _, node)| {
            node.role() == Role::Heading && node.label() == Some(headings[1].0.as_str())
        })
        .expect("doc-100k's second heading is in the tree");
    let link_after_second = order[second_heading..]
        .iter()
        .find(|(_, _, node)| node.role() == Role::Link)
        .and_then(|(_, _, node)| node.label())
        .expect("a link follows the second heading");
    let speech = chromium_hears(
        document.recording(),
        "Newton document",
        &[
            Step::FocusNode(last_link.0),
            Step::Key("shift+h", true),
            Step::Key("shift+h", true),
            Step::Key("h", true),
            Step::Key("h", true),
            Step::Key("h", true),
            Step::Key("k", true),
        ],
    );
    let link = format!("{link_after_second} link.");
    let shift_h = if orca_major() < 48 { "h " } else { "H" };
    let last = headings.len() - 1;
    assert_said_in_order(
        &speech,
        &[
            shift_h,
            // Shift+H from the last link: the last section's heading, then the one before it.
            &said(&headings[last]),
            shift_h,
            &said(&headings[last - 1]),
            &key_echo("h"),
            // H: the last heading again, then past the end, wrapping to the first heading.
            &said(&headings[last]),
            &key_echo("h"),
            "Wrapping to top.",
            &said(&headings[0]),
            &key_echo("h"),
            &said(&headings[1]),
            &key_echo("k"),
            // K: the first link after that heading.
            &link,
        ],
    );
}
