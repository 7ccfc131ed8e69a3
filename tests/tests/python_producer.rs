//! The Python producer (producers/python/newton_producer.py, standard library only) against a
//! running bridge: its tree and its updates reach pyatspi, and an AT's DoAction reaches it as an
//! `action` request. Also checks that its action and flag bits are docs/schema's.
//!
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::path::PathBuf;
use std::time::Duration;

use newton_e2e::{
    py_script, python, wait_until, workspace_root, Bridge, SessionOptions, TestSession,
};
use serde_json::Value;

const APP: &str = "Python producer demo";
const TIMEOUT: Duration = Duration::from_secs(60);

fn producer_script() -> PathBuf {
    workspace_root().join("producers/python/newton_producer.py")
}

/// The producer's JSON event lines so far (`logs/<name>.out`).
fn events(session: &TestSession, name: &str) -> Vec<Value> {
    let path = session.dir().join("logs").join(format!("{name}.out"));
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn wait_for_event(session: &mut TestSession, pid: u32, name: &str, event: &str) -> Value {
    let mut found = None;
    wait_until(&format!("the producer's `{event}` event"), TIMEOUT, || {
        session.ensure_running(pid)?;
        found = events(session, name)
            .into_iter()
            .find(|line| line["event"] == event);
        Ok(found.is_some())
    })
    .unwrap_or_else(|error| panic!("{error}; producer stderr: {}", session.stderr_of(name)));
    found.unwrap_or_default()
}

/// The object at `path` ("role:name" segments below the application) in an atspi_dump.py tree.
fn find<'a>(tree: &'a Value, role: &str, name: &str) -> Option<&'a Value> {
    if tree["role"] == role && tree["name"] == name {
        return Some(tree);
    }
    let children = tree.get("children").and_then(Value::as_array)?;
    children.iter().find_map(|child| find(child, role, name))
}

fn dump(session: &mut TestSession) -> Value {
    let mut cmd = session.command(python());
    cmd.arg(py_script("atspi_dump.py"))
        .args(["--app", APP, "--format", "json", "--no-extents"]);
    let out = session
        .run_ok("atspi-dump", cmd, TIMEOUT)
        .expect("atspi_dump.py succeeds");
    let apps: Value = serde_json::from_str(&out).expect("atspi_dump.py prints JSON");
    apps.get(0).cloned().expect("one application")
}

fn status_text(app: &Value) -> String {
    let label = find(app, "label", "").or_else(|| {
        app.pointer("/children/0/children")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|n| n["role"] == "label"))
    });
    let label = label.unwrap_or_else(|| panic!("no label in {app:#}"));
    label
        .pointer("/text/text")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| label["name"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[test]
fn python_producer_tree_update_and_action_round_trip() {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");

    let mut cmd = session.command(python());
    cmd.arg(producer_script())
        .arg("demo")
        .arg("--socket")
        .arg(&bridge.socket)
        .args(["--app-name", APP]);
    let producer = session
        .spawn("python-producer", cmd)
        .expect("start the producer");
    let ready = wait_for_event(&mut session, producer, "python-producer", "ready");
    assert!(
        ready["capabilities"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c == "accesskitVersion")),
        "the welcome's capabilities reach the producer: {ready}"
    );
    session
        .wait_for_app(APP, producer)
        .expect("the Python producer's application appears on the desktop");

    // The tree: pyatspi sees the window, the button with its actions, the status label.
    let app = dump(&mut session);
    let button = find(&app, "push button", "Press me")
        .unwrap_or_else(|| panic!("no `Press me` button in {app:#}"));
    let actions: Vec<&str> = button["actions"]
        .as_array()
        .map(|a| a.iter().filter_map(|a| a["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(actions, ["click", "focus"], "{button:#}");
    assert!(find(&app, "frame", APP).is_some(), "{app:#}");
    assert_eq!(status_text(&app), "Not pressed yet", "{app:#}");

    // An AT's DoAction reaches the producer as an action request.
    let mut press = session.command(python());
    press.arg(py_script("do_action.py")).args([
        "--app",
        APP,
        "--role",
        "push button",
        "--name",
        "Press me",
    ]);
    let out = session
        .run_ok("do-action", press, TIMEOUT)
        .expect("DoAction succeeds");
    assert!(out.contains("\"done\": true"), "{out}");
    let action = wait_for_event(&mut session, producer, "python-producer", "action");
    assert_eq!(action["action"], "click", "{action}");
    assert_eq!(action["target"], 2, "{action}");
    assert_eq!(action["surface"], 1, "{action}");

    // The producer's update in answer reaches pyatspi.
    let updated = wait_for_event(&mut session, producer, "python-producer", "updated");
    assert_eq!(updated["rejected"], Value::Array(vec![]), "{updated}");
    let mut text = String::new();
    wait_until("pyatspi to see the updated label", TIMEOUT, || {
        text = status_text(&dump(&mut session));
        Ok(text == "Pressed 1 time")
    })
    .unwrap_or_else(|error| panic!("{error}; last label text {text:?}"));

    // SIGTERM: the producer says goodbye and the application leaves the desktop.
    let status = session.stop(producer, Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "producer exit {status:?}: {}",
        session.stderr_of("python-producer")
    );
    assert!(
        events(&session, "python-producer")
            .iter()
            .any(|line| line["event"] == "goodbye"),
        "no goodbye event"
    );
    session
        .ensure_running(bridge.pid())
        .expect("bridge still running");
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}

/// The Python producer's action and flag bits are the ones docs/schema lists.
#[test]
fn python_producer_bits_match_the_schema_vocabulary() {
    let output = std::process::Command::new(python())
        .arg(producer_script())
        .arg("check-vocabulary")
        .arg(workspace_root().join("docs/schema/vocabulary.json"))
        .output()
        .expect("run the Python producer");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
