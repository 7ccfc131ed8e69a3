//! The harness against a real GTK3 app: bring up a private session, start the reference app on
//! Xvfb, and check that pyatspi (through tests/py/atspi_dump.py) sees its widgets.

use std::time::Duration;

use newton_e2e::{py_script, python, wait_until, SessionOptions, TestSession};
use serde_json::Value;

const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

/// Finds the first node (depth first) with this role and name.
fn find<'a>(node: &'a Value, role: &str, name: &str) -> Option<&'a Value> {
    if node["role"] == role && node["name"] == name {
        return Some(node);
    }
    node["children"]
        .as_array()?
        .iter()
        .find_map(|c| find(c, role, name))
}

fn states(node: &Value) -> Vec<&str> {
    node["states"]
        .as_array()
        .map_or(Vec::new(), |s| s.iter().filter_map(Value::as_str).collect())
}

#[test]
fn pyatspi_sees_the_gtk_reference_app() {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let mut app = session.command(python());
    app.arg(py_script("gtk_reference_app.py"));
    let pid = session
        .spawn("gtk-app", app)
        .expect("start the GTK reference app");
    session
        .wait_for_app("BridgeTest", pid)
        .expect("GTK app registers on the a11y bus");

    let mut dump = session.command(python());
    dump.arg(py_script("atspi_dump.py"))
        .args(["--app", "BridgeTest", "--format", "json"]);
    let out = session
        .run_ok("atspi-dump", dump, DUMP_TIMEOUT)
        .expect("atspi_dump.py succeeds");
    let tree: Value = serde_json::from_str(&out).expect("atspi_dump.py prints JSON");
    let app = &tree[0];
    assert_eq!(app["role"], "application", "dump: {out}");

    let frame = find(app, "frame", "BridgeTest").expect("a frame named BridgeTest");
    assert!(
        states(frame).contains(&"showing"),
        "frame states: {:?}",
        states(frame)
    );

    let ok = find(app, "push button", "OK").expect("an OK push button");
    assert!(
        states(ok).contains(&"focusable"),
        "OK states: {:?}",
        states(ok)
    );
    let actions: Vec<&str> = ok["actions"]
        .as_array()
        .expect("OK has actions")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert!(actions.contains(&"click"), "OK actions: {actions:?}");

    let entry = find(app, "text", "Name").expect("a text entry named Name");
    assert_eq!(entry["text"]["text"], "hello world");
    assert_eq!(entry["text"]["character_count"], 11);
    assert!(
        states(entry).contains(&"editable"),
        "entry states: {:?}",
        states(entry)
    );
    assert!(
        entry["relations"]["labelled-by"].is_array(),
        "entry relations: {}",
        entry["relations"]
    );

    let check = find(app, "check box", "Enable feature").expect("an Enable feature check box");
    assert!(!states(check).contains(&"checked"));

    let slider = find(app, "slider", "Volume").expect("a Volume slider");
    assert_eq!(slider["value"]["current"], 50.0);
    assert_eq!(slider["value"]["maximum"], 100.0);

    // The same dump twice must be identical (golden files rely on it).
    let mut again = session.command(python());
    again
        .arg(py_script("atspi_dump.py"))
        .args(["--app", "BridgeTest", "--format", "json"]);
    let out2 = session
        .run_ok("atspi-dump-2", again, DUMP_TIMEOUT)
        .expect("second dump");
    assert_eq!(out, out2, "two dumps of an idle app differ");

    let report = session.shutdown();
    eprintln!("teardown: {report:?}");
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}

#[test]
fn session_without_xvfb_still_gets_a_registry_and_tears_down_cleanly() {
    let opts = SessionOptions {
        xvfb: false,
        ..SessionOptions::default()
    };
    let session = TestSession::start(opts).expect("start the test session");
    assert!(session.display().is_none());
    let client = session.a11y_client().expect("connect to the a11y bus");
    wait_until(
        "registry answers GetChildren",
        Duration::from_secs(30),
        || Ok(client.desktop_children().is_ok()),
    )
    .expect("registry is up");
    let dir = session.dir().to_path_buf();
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
    assert!(!dir.exists(), "session dir {} not removed", dir.display());
}
