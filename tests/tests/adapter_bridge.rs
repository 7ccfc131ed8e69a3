//! The `newton-accesskit` adapter in this test process against the real bridge, bus and registry,
//! read back through pyatspi and `status`: the hello's identity (pid, app id, name, toolkit name and
//! version) reaches the AT-SPI Application and `status`; two windows on the one per-process
//! connection are two surfaces, two frames on the desktop under one application, each with its
//! own extents; `set_root_window_bounds` moves a window's extents (and its children's) on screen;
//! and a key offered while the bridge cannot answer (SIGSTOP) comes back not consumed within the
//! adapter's bounded wait, the next one at once.
//!
//! One test function: the adapter's connection is per process. No Orca. Needs the bridge binary:
//! `cargo build -p newton-atspi-bridge` first.

use std::time::{Duration, Instant};

use accesskit::{
    Action, ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, Node, NodeId,
    Rect, Role, TreeId, TreeInfo, TreeUpdate,
};
use newton_accesskit::{set_app_identity, Adapter, AppIdentity, KeyEvent, KeyEventKind, KEY_WAIT};
use newton_e2e::{python, wait_until, Bridge, SessionOptions, TestSession};
use rustix::process::{kill_process, Pid, Signal};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);
const APP_ID: &str = "org.newton.e2e.AdapterBridge";
const APP_NAME: &str = "Adapter e2e";
const TOOLKIT: &str = "newton-e2e-kit";
const TOOLKIT_VERSION: &str = "9.8.7";

/// A window (no bounds: it covers its surface) holding one button at (10, 10) 80×30.
fn window_tree(label: &str) -> TreeUpdate {
    let mut window = Node::new(Role::Window);
    window.set_label(label);
    window.set_children(vec![NodeId(2)]);
    let mut button = Node::new(Role::Button);
    button.set_label(format!("{label} button"));
    button.set_bounds(Rect::new(10.0, 10.0, 90.0, 40.0));
    button.add_action(Action::Click);
    TreeUpdate {
        nodes: vec![(NodeId(1), window), (NodeId(2), button)],
        tree: Some(TreeInfo::new(NodeId(1))),
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    }
}

struct Initial(&'static str);
impl ActivationHandler for Initial {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        Some(window_tree(self.0))
    }
}
struct NoActions;
impl ActionHandler for NoActions {
    fn do_action(&mut self, _: ActionRequest) {}
}
struct NoDeactivation;
impl DeactivationHandler for NoDeactivation {
    fn deactivate_accessibility(&mut self) {}
}

fn adapter(title: &'static str) -> Adapter {
    Adapter::with_title(
        Some(title.into()),
        Initial(title),
        NoActions,
        NoDeactivation,
    )
}

/// Inner bounds at (x, y), `width`×`height` (the outer bounds are not used by the bridge).
fn place(adapter: &mut Adapter, x: f64, y: f64, width: f64, height: f64) {
    let inner = Rect::new(x, y, x + width, y + height);
    adapter.set_root_window_bounds(inner, inner);
}

/// The application as pyatspi sees it: identity, and per window its name, role, screen extents
/// and its first child's name and extents.
const READ_APP_PY: &str = r#"
import json, sys
import gi
gi.require_version("Atspi", "2.0")
import pyatspi
desktop = pyatspi.Registry.getDesktop(0)
found = []
for i in range(desktop.childCount):
    app = desktop.getChildAtIndex(i)
    if app is None or app.name != sys.argv[1]:
        continue
    windows = []
    for w in range(app.childCount):
        window = app.getChildAtIndex(w)
        ext = window.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        child = window.getChildAtIndex(0)
        cext = child.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        windows.append({
            "name": window.name,
            "role": window.getRoleName(),
            "extents": [ext.x, ext.y, ext.width, ext.height],
            "child": child.name,
            "childExtents": [cext.x, cext.y, cext.width, cext.height],
        })
    found.append({
        "toolkitName": app.get_toolkit_name(),
        "version": app.get_toolkit_version(),
        "windows": windows,
    })
print(json.dumps(found))
"#;

fn read_app(session: &mut TestSession) -> Value {
    let mut cmd = session.command(python());
    cmd.arg("-c").arg(READ_APP_PY).arg(APP_NAME);
    let out = session
        .run_ok("read-app", cmd, WAIT)
        .expect("the pyatspi reader runs");
    serde_json::from_str(&out).expect("the reader prints JSON")
}

fn signal(pid: u32, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(pid).expect("a pid")).expect("a pid");
    kill_process(pid, signal).expect("signal our own bridge child");
}

/// Resumes the stopped bridge however the test ends.
struct Stopped(u32);
impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.0, Signal::CONT);
    }
}

fn key(keysym: u32, text: &str) -> KeyEvent {
    KeyEvent {
        kind: KeyEventKind::Press,
        keysym,
        keycode: 38,
        modifiers: 0,
        text: Some(text.into()),
        timestamp_ms: 1,
    }
}

#[test]
fn adapter_identity_two_windows_bounds_and_the_key_wait_through_the_real_bridge() {
    let mut session = TestSession::start(SessionOptions {
        xvfb: false,
        ..SessionOptions::default()
    })
    .expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    std::env::set_var("NEWTON_ATSPI_SOCKET", &bridge.socket);

    set_app_identity(AppIdentity {
        app_id: Some(APP_ID.into()),
        name: Some(APP_NAME.into()),
        toolkit_name: Some(TOOLKIT.into()),
        toolkit_version: Some(TOOLKIT_VERSION.into()),
    })
    .expect("identity before the first adapter");
    let mut first = adapter("First window");
    let mut second = adapter("Second window");
    place(&mut first, 10.0, 20.0, 300.0, 200.0);
    place(&mut second, 500.0, 100.0, 200.0, 150.0);
    first.update_window_focus_state(true);

    // Two surfaces, two frames, one application; each window where its bounds put it.
    let mut seen = Value::Null;
    wait_until("both windows on the desktop", WAIT, || {
        seen = read_app(&mut session);
        Ok(seen[0]["windows"].as_array().map(Vec::len) == Some(2))
    })
    .unwrap_or_else(|e| panic!("{e}; pyatspi saw {seen}"));
    assert_eq!(
        seen.as_array().map(Vec::len),
        Some(1),
        "one application for one process: {seen}"
    );
    let app = &seen[0];
    assert_eq!(app["toolkitName"], TOOLKIT, "ToolkitName from the hello");
    assert_eq!(app["version"], TOOLKIT_VERSION, "Version from the hello");
    let windows = app["windows"].as_array().expect("windows");
    let by_name = |name: &str| {
        windows
            .iter()
            .find(|w| w["name"] == name)
            .unwrap_or_else(|| panic!("no window {name:?}: {seen}"))
    };
    let one = by_name("First window");
    let two = by_name("Second window");
    assert_eq!(one["role"], "frame", "{seen}");
    assert_eq!(two["role"], "frame", "{seen}");
    assert_eq!(one["child"], "First window button");
    assert_eq!(two["child"], "Second window button");
    assert_eq!(one["extents"], serde_json::json!([10, 20, 300, 200]));
    assert_eq!(one["childExtents"], serde_json::json!([20, 30, 80, 30]));
    assert_eq!(two["extents"], serde_json::json!([500, 100, 200, 150]));
    assert_eq!(two["childExtents"], serde_json::json!([510, 110, 80, 30]));

    // The process's identity in `status`: one application, two surfaces, this pid.
    let status = session.bridge_status(&bridge.socket).expect("status");
    let apps = status["apps"].as_array().expect("status lists apps");
    assert_eq!(apps.len(), 1, "{status}");
    assert_eq!(apps[0]["name"], APP_NAME, "{status}");
    assert_eq!(apps[0]["appId"], APP_ID, "{status}");
    assert_eq!(apps[0]["pid"], std::process::id(), "{status}");
    assert_eq!(apps[0]["surfaces"], 2, "{status}");

    // set_root_window_bounds: the second window moves and grows; its extents follow, the
    // first window's do not change.
    place(&mut second, 600.0, 300.0, 250.0, 180.0);
    wait_until("the second window's extents to follow", WAIT, || {
        seen = read_app(&mut session);
        let windows = seen[0]["windows"].as_array().cloned().unwrap_or_default();
        Ok(windows.iter().any(|w| {
            w["name"] == "Second window"
                && w["extents"] == serde_json::json!([600, 300, 250, 180])
                && w["childExtents"] == serde_json::json!([610, 310, 80, 30])
        }))
    })
    .unwrap_or_else(|e| panic!("{e}; pyatspi saw {seen}"));
    let windows = seen[0]["windows"].as_array().expect("windows");
    let one = windows
        .iter()
        .find(|w| w["name"] == "First window")
        .expect("the first window");
    assert_eq!(one["extents"], serde_json::json!([10, 20, 300, 200]));

    // Keys: with the bridge answering and no AT listening, not consumed.
    assert!(
        !first.key_event(key(0x61, "a")),
        "no AT listens: not consumed"
    );
    // The bridge cannot answer (stopped): the adapter gives up after its bounded wait and
    // reports not consumed, so the app handles the key itself; the next key does not wait.
    // The upper bounds are generous (a loaded CI machine); they only prove the wait is bounded.
    signal(bridge.pid(), Signal::STOP);
    let stopped = Stopped(bridge.pid());
    let started = Instant::now();
    let consumed = first.key_event(key(0x62, "b"));
    let waited = started.elapsed();
    assert!(!consumed, "an unanswered key is not consumed");
    assert!(
        waited >= KEY_WAIT.saturating_sub(Duration::from_millis(50)),
        "the adapter waited for the answer ({waited:?})"
    );
    assert!(
        waited < KEY_WAIT + Duration::from_secs(3),
        "the wait is bounded by KEY_WAIT ({KEY_WAIT:?}), took {waited:?}"
    );
    let started = Instant::now();
    assert!(!first.key_event(key(0x63, "c")), "still not consumed");
    let next = started.elapsed();
    assert!(
        next < KEY_WAIT,
        "after an unanswered key the next one does not wait ({next:?})"
    );
    drop(stopped);

    drop(second);
    drop(first);
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}
