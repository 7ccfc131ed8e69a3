//! A bridge restart as a screen-reader user lives it: the live adapter application
//! (`newton-live-app`, a real winit window under Xvfb), a reconnecting producer (this test, through
//! `newton_producer::ReconnectingSender`) and a reconnecting replay (`replay --reconnect --stay`)
//! are on the desktop while a real Orca 43.1 runs; the bridge is SIGKILLed and started again. All
//! three applications must come back by themselves with the very same trees as pyatspi saw before,
//! once each (no duplicate on the desktop, no dead application in `status`), and Orca must speak
//! the next focus move in the live app (a real Tab through `xdotool`) and in the producer.
//!
//! Orca tests take a machine-wide lock and run one at a time; NEWTON_E2E_SKIP_ORCA=1 skips this
//! one (loudly). Needs the binaries: `cargo build -p newton-atspi-bridge -p newton-live-app` first.

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_e2e::{
    bridge_binary, find_window, fixture, orca_tests_skipped, py_script, python, wait_until,
    workspace_binary_or_panic, Orca, OrcaVersion, SessionOptions, TestSession,
};
use newton_producer::{ConnectionEvent, ReconnectOptions, ReconnectingSender};
use newton_push_protocol::{AppInfo, Encoding, Geometry, Hello, SurfaceId, PROTOCOL_VERSION};
use rustix::process::{kill_process, Pid, Signal};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);
const APP_NAME: &str = "Reconnect app";
const SURFACE: SurfaceId = SurfaceId(1);
const WINDOW: u64 = 1;
const ALPHA: u64 = 2;
const GAMMA: u64 = 4;
const BASIC: &str = "generated-small/basic.jsonl";
const BASIC_NAME: &str = "Newton basic demo";
const LIVE_NAME: &str = "Newton Live";

#[test]
fn a_restarted_bridge_gets_every_application_back_and_orca_speaks_the_next_focus_move() {
    if orca_tests_skipped() {
        eprintln!("\n!!!!! NEWTON_E2E_SKIP_ORCA=1: SKIPPING ORCA TEST — reconnect is NOT being verified with Orca !!!!!\n");
        return;
    }
    let mut session = TestSession::start(SessionOptions {
        ready_timeout: WAIT,
        ..SessionOptions::default()
    })
    .expect("start the test session");
    let socket = session.dir().join("bridge.sock");
    let first = start_bridge(&mut session, "bridge-1", &socket);

    let producer = ReconnectingSender::new(&socket, hello(), ReconnectOptions::default())
        .expect("start the reconnecting producer");
    assert!(producer.wait_connected(WAIT), "the producer connects");
    show_window(&producer);
    let replay = start_reconnecting_replay(&mut session, &socket);
    let mut live = session.command(workspace_binary_or_panic("newton-live-app"));
    live.env("NEWTON_ATSPI_SOCKET", &socket);
    let live = session
        .spawn("live-app", live)
        .expect("start newton-live-app");
    session
        .wait_for_app(BASIC_NAME, replay)
        .expect("the replay is on the desktop");
    session
        .wait_for_app(APP_NAME, first)
        .expect("the producer is on the desktop");
    session
        .wait_for_app(LIVE_NAME, live)
        .expect("the live app is on the desktop");
    let live_window = find_window(&mut session, LIVE_NAME).expect("find the Newton Live window");
    // X input focus on the live window (no window manager here): the adapter reports the
    // window focused, so its frame is the active one before and after the restart.
    newton_e2e::xdotool(
        &mut session,
        "focus",
        &["windowfocus", "--sync", &live_window],
    )
    .expect("xdotool windowfocus");
    wait_until("the live window to get focus", WAIT, || {
        Ok(live_output(&session)
            .lines()
            .any(|l| l == "window focused true"))
    })
    .unwrap_or_else(|e| panic!("{e}; the app printed:\n{}", live_output(&session)));
    let producer_before = dump(&mut session, APP_NAME);
    let replay_before = dump(&mut session, BASIC_NAME);
    // The focus fact travels app → bridge after the app printed it: wait for the frame to be
    // active on the desktop, so the snapshot holds the settled state.
    let mut live_before = Value::Null;
    wait_until("the live app's frame to be active", WAIT, || {
        live_before = dump(&mut session, LIVE_NAME);
        Ok(live_before.to_string().contains("\"active\""))
    })
    .unwrap_or_else(|e| panic!("{e}; pyatspi saw {live_before}"));

    let orca = Orca::start(&mut session).expect("start Orca");
    orca.wait_idle(&mut session).expect("Orca settles");

    kill(first);
    session.stop(first, Duration::from_secs(5));
    wait_until("the killed bridge's applications to leave", WAIT, || {
        Ok(session.apps_named(APP_NAME)? == 0
            && session.apps_named(BASIC_NAME)? == 0
            && session.apps_named(LIVE_NAME)? == 0)
    })
    .expect("the registry drops the dead bridge's applications");

    let second = start_bridge(&mut session, "bridge-2", &socket);
    wait_until("all three applications to come back", WAIT, || {
        Ok(session.apps_named(APP_NAME)? == 1
            && session.apps_named(BASIC_NAME)? == 1
            && session.apps_named(LIVE_NAME)? == 1)
    })
    .expect("the producer, the replay and the live app reconnect by themselves");
    assert_reconnected(&producer);

    // Full trees: pyatspi sees exactly what it saw before the restart.
    assert_eq!(
        dump(&mut session, APP_NAME),
        producer_before,
        "the producer's tree"
    );
    assert_eq!(
        dump(&mut session, BASIC_NAME),
        replay_before,
        "the replay's tree"
    );
    // The adapter pushes its full tree only once the new bridge asks for it (updatesWanted),
    // from its UI thread: the application is on the desktop a moment before its frame is.
    let mut live_after = Value::Null;
    wait_until("the live app's full tree to come back", WAIT, || {
        live_after = dump(&mut session, LIVE_NAME);
        Ok(live_after == live_before)
    })
    .unwrap_or_else(|e| {
        panic!("{e}: the live app's tree\nbefore: {live_before}\nafter:  {live_after}")
    });
    // Nothing stale: once each on the desktop, exactly the three live senders in `status`.
    assert_eq!(
        session.apps_named(APP_NAME).expect("read the desktop"),
        1,
        "no duplicate application"
    );
    assert_eq!(
        session.apps_named(BASIC_NAME).expect("read the desktop"),
        1,
        "no duplicate application"
    );
    assert_eq!(
        session.apps_named(LIVE_NAME).expect("read the desktop"),
        1,
        "no duplicate application"
    );
    let status = session.bridge_status(&socket).expect("status answers");
    let mut names: Vec<&str> = status["apps"]
        .as_array()
        .map(|apps| apps.iter().filter_map(|a| a["name"].as_str()).collect())
        .unwrap_or_default();
    names.sort_unstable();
    assert_eq!(
        names,
        vec![LIVE_NAME, BASIC_NAME, APP_NAME],
        "status: {status}"
    );

    // A real Tab in the live app's window: the app moves its focus to Cancel and pushes the
    // new tree through the restarted bridge.
    newton_e2e::xdotool(
        &mut session,
        "key-Tab",
        &["key", "--window", &live_window, "Tab"],
    )
    .expect("xdotool succeeds");
    wait_until("the live app to move its focus", WAIT, || {
        Ok(live_output(&session).lines().any(|l| l == "focus Cancel"))
    })
    .unwrap_or_else(|e| panic!("{e}; the app printed:\n{}", live_output(&session)));
    orca.wait_idle(&mut session)
        .expect("Orca presents the live app's focus move");

    // The compositor makes the producer's window the active one, then focus moves to Gamma.
    producer.focus(None).expect("unfocus");
    producer.focus(Some(SURFACE)).expect("focus the window");
    producer
        .sync(WAIT)
        .expect("the bridge took the focus facts");
    orca.wait_idle(&mut session)
        .expect("Orca settles on the window");
    producer
        .update(SURFACE, window(GAMMA))
        .expect("move the focus");
    producer.commit(SURFACE).expect("commit the focus move");
    producer.sync(WAIT).expect("the bridge took the focus move");
    orca.wait_idle(&mut session)
        .expect("Orca presents the focus move");
    let speech = orca.stop(&mut session).expect("stop Orca");
    let push_button = OrcaVersion::current()
        .expect("which Orca runs")
        .push_button();
    let cancel = speech
        .utterances
        .iter()
        .position(|u| u.contains("Cancel") && u.contains(push_button));
    assert!(
        cancel.is_some(),
        "Orca must speak the live app's focus move to Cancel after the restart; it said {:#?} (log {})",
        speech.utterances,
        speech.debug_file.display()
    );
    assert!(
        speech
            .utterances
            .iter()
            .any(|u| u.contains("Gamma") && u.contains(push_button)),
        "Orca must speak the focus move to Gamma after the restart; it said {:#?} (log {})",
        speech.utterances,
        speech.debug_file.display()
    );

    session.stop(replay, Duration::from_secs(10));
    session.stop(live, Duration::from_secs(10));
    drop(producer);
    session.stop(second, Duration::from_secs(20));
    let report = session.shutdown();
    assert!(report.is_clean(), "teardown left processes: {report:?}");
}

fn hello() -> Hello {
    Hello {
        protocol: PROTOCOL_VERSION,
        encoding: Encoding::Postcard,
        app: AppInfo {
            app_id: "org.newton.e2e.Reconnect".into(),
            name: APP_NAME.into(),
            pid: Some(std::process::id()),
            toolkit_name: Some("newton-e2e".into()),
            toolkit_version: Some("1".into()),
        },
        accesskit_version: None,
    }
}

/// A window with buttons Alpha, Beta and Gamma; `focus` is the focused node.
fn window(focus: u64) -> TreeUpdate {
    let labels = ["Alpha", "Beta", "Gamma"];
    let ids: Vec<NodeId> = (ALPHA..ALPHA + labels.len() as u64).map(NodeId).collect();
    let mut root = Node::new(Role::Window);
    root.set_label("Reconnect window");
    root.set_children(ids.clone());
    let mut nodes = vec![(NodeId(WINDOW), root)];
    for (id, label) in ids.into_iter().zip(labels) {
        let mut button = Node::new(Role::Button);
        button.set_label(label);
        button.add_action(accesskit::Action::Click);
        button.add_action(accesskit::Action::Focus);
        nodes.push((id, button));
    }
    TreeUpdate {
        nodes,
        tree: Some(TreeInfo::new(NodeId(WINDOW))),
        tree_id: TreeId::ROOT,
        focus: NodeId(focus),
    }
}

fn show_window(producer: &ReconnectingSender) {
    producer
        .create_surface(SURFACE, Some("Reconnect window"))
        .expect("create the surface");
    let geometry = Geometry {
        x: 40,
        y: 30,
        width: 400,
        height: 300,
        scale: 1.0,
    };
    producer.geometry(SURFACE, geometry).expect("geometry");
    producer.update(SURFACE, window(ALPHA)).expect("the tree");
    producer.commit(SURFACE).expect("commit");
    producer.focus(Some(SURFACE)).expect("focus");
    producer.sync(WAIT).expect("the bridge took the window");
}

/// The producer saw its connection end and come back with its state resent.
fn assert_reconnected(producer: &ReconnectingSender) {
    let mut lost = false;
    while let Ok(Some(event)) = producer.try_recv() {
        match event {
            ConnectionEvent::Disconnected { .. } => lost = true,
            ConnectionEvent::Connected { resent } if lost => {
                assert!(
                    resent >= 4,
                    "surface, geometry, tree, commit, focus: {resent}"
                );
                return;
            }
            _ => {}
        }
    }
    panic!("the producer reported no disconnect and reconnect");
}

fn start_bridge(session: &mut TestSession, name: &str, socket: &Path) -> u32 {
    let mut cmd = session.command(bridge_binary().expect("cargo build -p newton-atspi-bridge"));
    cmd.arg("serve")
        .arg("--socket")
        .arg(socket)
        .args(["--log-level", "debug"]);
    let pid = session.spawn(name, cmd).expect("start the bridge");
    wait_until("the bridge socket to accept connections", WAIT, || {
        session.ensure_running(pid)?;
        Ok(UnixStream::connect(socket).is_ok())
    })
    .expect("the bridge accepts senders");
    pid
}

fn start_reconnecting_replay(session: &mut TestSession, socket: &Path) -> u32 {
    let mut cmd = session.command(bridge_binary().expect("the bridge binary"));
    cmd.arg("replay")
        .arg(fixture(BASIC))
        .arg("--socket")
        .arg(socket)
        .args(["--fast", "--stay", "--reconnect"]);
    session.spawn("replay", cmd).expect("start the replay")
}

fn live_output(session: &TestSession) -> String {
    std::fs::read_to_string(session.dir().join("logs").join("live-app.out")).unwrap_or_default()
}

fn kill(pid: u32) {
    let pid = Pid::from_raw(i32::try_from(pid).expect("a pid")).expect("a pid");
    kill_process(pid, Signal::KILL).expect("SIGKILL our own bridge");
}

/// atspi_dump.py's JSON view of the application.
fn dump(session: &mut TestSession, app: &str) -> Value {
    let mut cmd = session.command(python());
    cmd.arg(py_script("atspi_dump.py"))
        .args(["--app", app, "--format", "json"]);
    let out = session
        .run_ok("atspi-dump", cmd, WAIT)
        .expect("atspi_dump.py succeeds");
    serde_json::from_str(&out).expect("atspi_dump.py prints JSON")
}
