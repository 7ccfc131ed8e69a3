//! The daemon as distributions ship it: `newton-atspi-bridge serve` surviving what a desktop
//! session does to it — the registry restarting, the accessibility bus restarting, a sender dying
//! in the middle of a frame, SIGTERM at logout, a second instance at login, a sender coming back —
//! and telling senders whether an assistive technology wants their trees at all.
//!
//! Every test brings up its own private session (session bus, at-spi-bus-launcher, registry) and
//! its own bridge. The launcher and registry are started here, not by the harness, because these
//! tests restart them and need the launcher's `--a11y=0` mode; every process is killed by PID and
//! only after checking that it belongs to this test's session.
//!
//! Senders are raw socket clients written here (JSON frames, docs/protocol.md), so a test can stop
//! one in the middle of a frame; one of them is a Python process that is SIGKILLed.
//!
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_e2e::raw_sender::{as_received, button, frame, RawSender, Received};
use newton_e2e::{
    bridge_binary, fixture, python, wait_until, BusClient, SessionOptions, TestSession,
};
use newton_push_protocol::{BridgeMessage, SenderMessage, SurfaceId};
use rustix::process::{kill_process, Pid, Signal};
use serde_json::Value;

/// Bound for every wait: generous, the machine is shared.
const WAIT: Duration = Duration::from_secs(60);
/// Grace given to a process asked to stop before it is SIGKILLed.
const GRACE: Duration = Duration::from_secs(30);
use newton_atspi_client::calls::{accessible, registry, REGISTRY};
use newton_atspi_client::private_session::LauncherOptions;
/// The harness's marker variable (every process of a session carries it, activated ones too).
const SESSION_MARKER: &str = "NEWTON_E2E_SESSION";
const BYSTANDER_FIXTURE: &str = "generated-small/basic.jsonl";
const BYSTANDER_NAME: &str = "Newton basic demo";

// ---------------------------------------------------------------------------------------------
// A private desktop: session bus, accessibility bus (launcher) and registry, restartable.
// ---------------------------------------------------------------------------------------------

/// Whether the launcher reports an assistive technology (`org.a11y.Status.IsEnabled`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum AtSpi {
    /// `--a11y=1`: IsEnabled true, as after a screen reader was turned on.
    Enabled,
    /// `--a11y=0`: IsEnabled false and no AT running: the "no AT, no cost" state.
    Disabled,
}

struct Desk {
    session: TestSession,
    at_spi: AtSpi,
    launcher: u32,
    registry: u32,
    a11y_address: String,
    /// Counts restarts so each process gets its own log file.
    generation: u32,
}

impl Desk {
    fn start(at_spi: AtSpi) -> Desk {
        let options = SessionOptions {
            xvfb: false,
            atspi: false,
            ready_timeout: WAIT,
        };
        let session = TestSession::start(options).expect("start the private session bus");
        let mut desk = Desk {
            session,
            at_spi,
            launcher: 0,
            registry: 0,
            a11y_address: String::new(),
            generation: 0,
        };
        desk.start_a11y_bus();
        desk.start_registry();
        desk
    }

    fn session_bus(&self) -> BusClient {
        BusClient::connect(self.session.session_bus_address()).expect("connect to the session bus")
    }

    fn a11y(&self) -> BusClient {
        BusClient::connect(&self.a11y_address).expect("connect to the accessibility bus")
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.session.dir().join("logs").join(format!("{name}.err")))
            .unwrap_or_default()
    }

    /// Starts at-spi-bus-launcher (which starts the bus daemon) and reads the bus address.
    fn start_a11y_bus(&mut self) {
        self.generation += 1;
        let name = format!("at-spi-bus-launcher-{}", self.generation);
        let (launcher, address) = self
            .session
            .start_a11y_bus(&name, self.at_spi == AtSpi::Enabled)
            .expect("the launcher claims org.a11y.Bus and gives an address");
        self.launcher = launcher;
        self.a11y_address = address;
    }

    /// Starts at-spi2-registryd on the current bus and waits for its name. The owner may also
    /// be one the bus activated meanwhile (it has a service file); `registry` is whoever owns it.
    fn start_registry(&mut self) {
        let name = format!("at-spi2-registryd-{}", self.generation);
        self.session
            .start_registry(&name, &self.a11y_address.clone())
            .expect("the registry claims its name");
        self.registry = self.a11y().pid_of(REGISTRY).expect("the registry's pid");
        assert!(
            self.is_ours(self.registry),
            "the registry (pid {}) is not a process of this test session",
            self.registry
        );
    }

    /// True when `pid` carries this session's marker, i.e. this test started it (directly, or
    /// through a process it started).
    fn is_ours(&self, pid: u32) -> bool {
        let marker = format!("{SESSION_MARKER}={}", self.session.dir().display());
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|b| *b == 0)
                .any(|entry| entry == marker.as_bytes())
        })
    }

    /// Stops a process of this session by PID: through the harness when it is a tracked child
    /// (which reaps it), else by signal; waits until it is gone.
    fn kill_ours(&mut self, pid: u32, signal: Signal) {
        // A process may exit on its own meanwhile (the launcher takes its bus daemon along);
        // an exiting process already has no environment to read.
        if !self.is_ours(pid) {
            wait_until(
                &format!("pid {pid}, not ours, to finish exiting"),
                GRACE,
                || Ok(!alive(pid)),
            )
            .unwrap_or_else(|_| panic!("refusing to kill pid {pid}: not ours"));
            let _ = self.session.is_running(pid);
            return;
        }
        send_signal(pid, signal);
        // A tracked child must be reaped by the harness, else it stays a zombie.
        let _ = self.session.is_running(pid);
        wait_until(&format!("pid {pid} to exit"), WAIT, || {
            let _ = self.session.is_running(pid);
            Ok(!alive(pid))
        })
        .expect("the process exits");
    }

    /// Starts the bridge on `socket` (no AT_SPI_BUS_ADDRESS: it finds the bus as on a desktop,
    /// through org.a11y.Bus) and waits until it is connected to the bus and accepts senders.
    fn start_bridge(&mut self, name: &str, socket: &Path) -> u32 {
        self.start_bridge_with(name, socket, None)
    }

    fn start_bridge_with(&mut self, name: &str, socket: &Path, bus_env: Option<&str>) -> u32 {
        let mut cmd = self
            .session
            .command(bridge_binary().expect("bridge binary (cargo build -p newton-atspi-bridge)"));
        cmd.arg("serve")
            .arg("--socket")
            .arg(socket)
            .args(["--log-level", "info"])
            .env_remove("AT_SPI_BUS_ADDRESS");
        if let Some(address) = bus_env {
            cmd.env("AT_SPI_BUS_ADDRESS", address);
        }
        let pid = self.session.spawn(name, cmd).expect("start the bridge");
        wait_until("the bridge to be ready", WAIT, || {
            self.session.ensure_running(pid)?;
            Ok(self.log(name).contains("ready: waiting for senders"))
        })
        .unwrap_or_else(|e| panic!("{e}\n--- bridge log ---\n{}", self.log(name)));
        pid
    }

    /// Replays the bystander fixture with `--fast --stay`: an application that stays on the
    /// desktop until its replay process is stopped.
    fn start_bystander(&mut self, socket: &Path) -> u32 {
        let mut cmd = self
            .session
            .command(bridge_binary().expect("bridge binary"));
        cmd.arg("replay")
            .arg(fixture(BYSTANDER_FIXTURE))
            .arg("--socket")
            .arg(socket)
            .args(["--fast", "--stay"]);
        let pid = self
            .session
            .spawn("bystander", cmd)
            .expect("start the replay");
        let out = self.session.dir().join("logs/bystander.out");
        wait_until("the bystander replay to be acknowledged", WAIT, || {
            self.session.ensure_running(pid)?;
            Ok(std::fs::read_to_string(&out).is_ok_and(|o| o.contains("staying connected")))
        })
        .expect("the bystander replays");
        let summary = std::fs::read_to_string(&out).unwrap_or_default();
        assert!(
            summary.contains("; 0 rejected"),
            "bystander rejected: {summary}"
        );
        pid
    }

    /// The desktop's applications as (bus name, Accessible.Name), best effort: children that
    /// no longer answer are skipped.
    fn apps(&self) -> Vec<(String, String)> {
        apps_on(&self.a11y())
    }

    /// Waits until exactly one application called `name` is on the desktop; its bus name.
    fn wait_for_app(&self, name: &str) -> String {
        let a11y = self.a11y();
        let mut seen = Vec::new();
        let mut bus = String::new();
        wait_until(&format!("`{name}` on the desktop"), WAIT, || {
            seen = apps_on(&a11y);
            let matching: Vec<&(String, String)> = seen.iter().filter(|(_, n)| n == name).collect();
            if let [(found, _)] = matching.as_slice() {
                bus = found.clone();
                return Ok(true);
            }
            Ok(false)
        })
        .unwrap_or_else(|e| panic!("{e}; desktop children: {seen:?}"));
        bus
    }

    fn wait_app_gone(&self, name: &str) {
        let a11y = self.a11y();
        let mut seen = Vec::new();
        wait_until(&format!("`{name}` to leave the desktop"), WAIT, || {
            seen = apps_on(&a11y);
            Ok(seen.iter().all(|(_, n)| n != name))
        })
        .unwrap_or_else(|e| panic!("{e}; desktop children: {seen:?}"));
    }

    /// The application's tree as `newton-atspi-bridge dump --json` sees it on the current bus.
    fn dump(&mut self, app: &str, label: &str) -> Value {
        let mut cmd = self
            .session
            .command(bridge_binary().expect("bridge binary"));
        cmd.args(["dump", app, "--json", "--a11y-bus", &self.a11y_address]);
        let out = self
            .session
            .run_ok(&format!("dump-{label}"), cmd, WAIT)
            .expect("dump the application");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("dump printed no JSON ({e}): {out}"))
    }

    fn finish(self) {
        let report = self.session.shutdown();
        assert!(report.is_clean(), "processes survived teardown: {report:?}");
    }
}

fn apps_on(a11y: &BusClient) -> Vec<(String, String)> {
    let Ok(children) = a11y.desktop_children() else {
        return Vec::new();
    };
    children
        .into_iter()
        .filter_map(|(bus, path)| {
            let name = a11y.get(&accessible::NAME, &bus, path.as_str()).ok()?;
            Some((bus, name))
        })
        .collect()
}

fn send_signal(pid: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(pid, signal);
    }
}

/// `/proc/<pid>/stat` fields after the command name (state is the first).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

fn alive(pid: u32) -> bool {
    stat_fields(pid)
        .and_then(|f| f.first().cloned())
        .is_some_and(|state| state != "Z" && state != "X")
}

/// Live children of `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&child| {
            stat_fields(child).and_then(|f| f.get(1).and_then(|p| p.parse::<u32>().ok()))
                == Some(pid)
        })
        .filter(|&child| alive(child))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// What the senders push (newton_e2e's raw sender, so a test controls every byte).
// ---------------------------------------------------------------------------------------------

/// A window (node 1) with a button (2) and a status label (3), focus on the button.
fn window_tree(title: &str, button_label: &str) -> TreeUpdate {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2), NodeId(3)]);
    window.set_label(title);
    let mut status = Node::new(Role::Label);
    status.set_value("Ready");
    TreeUpdate {
        nodes: vec![
            (NodeId(1), window),
            (NodeId(2), button(button_label)),
            (NodeId(3), status),
        ],
        tree: Some(TreeInfo::new(NodeId(1))),
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    }
}

/// The button relabelled: the smallest update a toolkit sends.
fn relabel(label: &str) -> TreeUpdate {
    TreeUpdate {
        nodes: vec![(NodeId(2), button(label))],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    }
}

/// Creates a surface holding [`window_tree`] and waits until it landed cleanly; returns the
/// bridge messages meanwhile.
fn show_window(sender: &mut RawSender, surface: u32, title: &str) -> Vec<Value> {
    sender.show_tree(surface, title, window_tree(title, "OK"))
}

/// `message` as the JSON the bridge sends.
fn wanted(surface: u32) -> Value {
    as_received(&BridgeMessage::UpdatesWanted {
        surface: SurfaceId(surface),
    })
}

fn unwanted(surface: u32) -> Value {
    as_received(&BridgeMessage::UpdatesUnwanted {
        surface: SurfaceId(surface),
    })
}

fn as_json(update: &TreeUpdate) -> String {
    serde_json::to_string(update).expect("a tree update encodes")
}

fn socket_in(desk: &Desk) -> PathBuf {
    desk.session.dir().join("rt/newton-atspi/bridge.sock")
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/// at-spi2-registryd dies and a new one starts: the bridge embeds its application again, on the
/// same connection, with the same tree.
#[test]
fn registry_restart_reembeds_every_application() {
    let mut desk = Desk::start(AtSpi::Enabled);
    let socket = socket_in(&desk);
    let bridge = desk.start_bridge("bridge", &socket);
    desk.start_bystander(&socket);
    let bus_before = desk.wait_for_app(BYSTANDER_NAME);
    let tree_before = desk.dump(BYSTANDER_NAME, "before");

    let old_registry = desk.registry;
    desk.kill_ours(old_registry, Signal::KILL);
    // Only NameHasOwner until the new one runs: any call to the name would activate one.
    let a11y = desk.a11y();
    wait_until("the registry's name to be released", WAIT, || {
        Ok(!a11y.name_has_owner(REGISTRY)?)
    })
    .expect("the killed registry's name goes away");
    desk.generation += 1;
    desk.start_registry();
    assert_ne!(desk.registry, old_registry, "a new registry runs");

    let bus_after = desk.wait_for_app(BYSTANDER_NAME);
    assert_eq!(bus_after, bus_before, "re-embedded on the same connection");
    assert_eq!(
        desk.dump(BYSTANDER_NAME, "after"),
        tree_before,
        "tree intact"
    );
    desk.session
        .ensure_running(bridge)
        .expect("bridge still running");
    assert!(
        desk.log("bridge").contains("the AT-SPI registry restarted"),
        "the bridge noticed the restart:\n{}",
        desk.log("bridge")
    );
    desk.finish();
}

/// The launcher and its bus daemon stop and a new launcher starts (a new bus, possibly a new
/// address): the bridge finds it through org.a11y.Bus, reconnects and re-embeds the
/// application, whose tree is unchanged.
#[test]
fn a11y_bus_restart_reconnects_every_application_with_its_tree() {
    a11y_bus_restart(false);
}

/// The same with the address in AT_SPI_BUS_ADDRESS (as in sandboxes and some sessions): the
/// new bus listens on the same path with a new GUID, and the bridge must still find it.
#[test]
fn a11y_bus_restart_with_the_address_in_the_environment() {
    a11y_bus_restart(true);
}

/// Restarts the accessibility bus under a bridge that found it through org.a11y.Bus, or, with
/// `address_in_env`, was given it in AT_SPI_BUS_ADDRESS.
fn a11y_bus_restart(address_in_env: bool) {
    let mut desk = Desk::start(AtSpi::Enabled);
    let socket = socket_in(&desk);
    let address = desk.a11y_address.clone();
    let bridge = desk.start_bridge_with(
        "bridge",
        &socket,
        address_in_env.then_some(address.as_str()),
    );
    let bystander = desk.start_bystander(&socket);
    desk.wait_for_app(BYSTANDER_NAME);
    let tree_before = desk.dump(BYSTANDER_NAME, "before");

    let old_launcher = desk.launcher;
    let bus_daemons: Vec<u32> = children_of(old_launcher);
    assert!(
        !bus_daemons.is_empty(),
        "the launcher runs its bus daemon as a child"
    );
    let old_registry = desk.registry;
    let old_address = desk.a11y_address.clone();
    desk.kill_ours(old_launcher, Signal::TERM);
    for pid in bus_daemons.into_iter().filter(|&p| alive(p)) {
        desk.kill_ours(pid, Signal::TERM);
    }
    if alive(old_registry) {
        desk.kill_ours(old_registry, Signal::TERM);
    }

    desk.start_a11y_bus();
    desk.start_registry();
    println!(
        "accessibility bus moved from {old_address} to {}",
        desk.a11y_address
    );

    desk.wait_for_app(BYSTANDER_NAME);
    assert_eq!(
        desk.dump(BYSTANDER_NAME, "after"),
        tree_before,
        "tree intact"
    );
    desk.session
        .ensure_running(bridge)
        .expect("bridge still running");
    desk.session
        .ensure_running(bystander)
        .expect("sender still connected");
    assert!(
        desk.log("bridge").contains("accessibility bus is back"),
        "the bridge reconnected:\n{}",
        desk.log("bridge")
    );
    desk.finish();
}

/// Python sender: hello, a surface with its tree committed, sync; then one complete but
/// uncommitted update and half of the commit frame; prints a line and waits to be killed.
const DOOMED_SENDER_PY: &str = r#"
import json, socket, struct, sys, time
sock_path, name, tree, update = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
def frame(obj):
    p = json.dumps(obj).encode()
    return struct.pack('<I', len(p)) + p
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock_path)
hello = {"protocol": 1, "encoding": "json", "app": {"appId": "org.newton.lifecycle.doomed",
         "name": name, "pid": None, "toolkitName": "lifecycle-test", "toolkitVersion": "1"}}
s.sendall(frame(hello) + frame({"createSurface": {"surface": 1, "title": name}})
          + frame({"update": {"surface": 1, "update": tree}})
          + frame({"commit": {"surface": 1, "serial": 1}}) + frame({"sync": {"serial": 2}}))
buf = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        sys.exit("bridge closed the connection")
    buf += chunk
    while len(buf) >= 4:
        n = struct.unpack('<I', buf[:4])[0]
        if len(buf) < 4 + n:
            break
        msg, buf = json.loads(buf[4:4 + n]), buf[4 + n:]
        if isinstance(msg, dict) and ("rejected" in msg or "error" in msg):
            sys.exit("refused: %r" % msg)
        if isinstance(msg, dict) and msg.get("syncDone", {}).get("serial") == 2:
            commit = frame({"commit": {"surface": 1, "serial": 3}})
            s.sendall(frame({"update": {"surface": 1, "update": update}}) + commit[:len(commit) // 2])
            print("half-frame-sent", flush=True)
            time.sleep(3600)
"#;

/// A sender killed (and another closing its socket) in the middle of a frame: their
/// applications leave the desktop, the application beside them is untouched and the bridge
/// keeps serving and accepting.
#[test]
fn sender_dying_mid_frame_removes_only_its_application() {
    let mut desk = Desk::start(AtSpi::Enabled);
    let socket = socket_in(&desk);
    let bridge = desk.start_bridge("bridge", &socket);
    desk.start_bystander(&socket);
    desk.wait_for_app(BYSTANDER_NAME);
    let bystander_before = desk.dump(BYSTANDER_NAME, "before");

    // Killed mid-frame.
    let mut cmd = desk.session.command(python());
    cmd.arg("-c")
        .arg(DOOMED_SENDER_PY)
        .arg(&socket)
        .arg("Killed app")
        .arg(as_json(&window_tree("Killed app", "OK")))
        .arg(as_json(&relabel("Never shown")));
    let doomed = desk
        .session
        .spawn("killed-sender", cmd)
        .expect("start the Python sender");
    let out = desk.session.dir().join("logs/killed-sender.out");
    wait_until("the Python sender to send half a frame", WAIT, || {
        desk.session.ensure_running(doomed)?;
        Ok(std::fs::read_to_string(&out).is_ok_and(|o| o.contains("half-frame-sent")))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", desk.session.stderr_of("killed-sender")));
    desk.wait_for_app("Killed app");
    desk.kill_ours(doomed, Signal::KILL);

    // Closed mid-frame (length prefix promising more than follows).
    let mut closing = RawSender::connect(&socket, "Closed app");
    show_window(&mut closing, 1, "Closed app");
    desk.wait_for_app("Closed app");
    // Deliberately torn: the first 6 bytes of a commit frame, then the socket closes.
    let commit = serde_json::to_vec(&SenderMessage::Commit {
        surface: SurfaceId(1),
        serial: 99,
    })
    .expect("a commit encodes");
    closing.write_bytes(
        frame(&commit)
            .get(..6)
            .expect("a frame longer than 6 bytes"),
    );
    drop(closing);

    desk.wait_app_gone("Killed app");
    desk.wait_app_gone("Closed app");
    desk.session
        .ensure_running(bridge)
        .expect("bridge still running");
    assert_eq!(
        desk.dump(BYSTANDER_NAME, "after"),
        bystander_before,
        "the application beside them is unchanged"
    );
    let mut newcomer = RawSender::connect(&socket, "Newcomer");
    show_window(&mut newcomer, 1, "Newcomer");
    desk.wait_for_app("Newcomer");
    let log = desk.log("bridge");
    assert!(!log.contains("panic"), "no panic in the bridge:\n{log}");
    desk.finish();
}

/// SIGTERM (logout, systemd stop): the bridge tells its sender why, removes the application,
/// deletes its socket and exits 0.
#[test]
fn sigterm_tells_senders_removes_apps_and_exits_zero() {
    let mut desk = Desk::start(AtSpi::Enabled);
    let socket = socket_in(&desk);
    let bridge = desk.start_bridge("bridge", &socket);
    let mut sender = RawSender::connect(&socket, "Terminated app");
    show_window(&mut sender, 1, "Terminated app");
    desk.wait_for_app("Terminated app");

    let status: Option<ExitStatus> = desk.session.stop(bridge, GRACE);
    let status = status.expect("the bridge exits");
    assert_eq!(
        status.code(),
        Some(0),
        "exit status after SIGTERM ({status}); log:\n{}",
        desk.log("bridge")
    );
    let messages = sender.drain_until_closed();
    assert!(
        messages.iter().any(|m| m["error"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("shutting down"))),
        "the sender was told the bridge is shutting down; got {messages:?}"
    );
    desk.wait_app_gone("Terminated app");
    assert!(!socket.exists(), "socket file {} removed", socket.display());
    let log = desk.log("bridge");
    assert!(
        log.contains("application removed"),
        "removal announced:\n{log}"
    );
    desk.finish();
}

/// A second `serve` on the same socket refuses, naming the socket, and exits non-zero; the
/// first keeps serving.
#[test]
fn second_instance_refuses_and_first_keeps_serving() {
    let mut desk = Desk::start(AtSpi::Enabled);
    let socket = socket_in(&desk);
    let bridge = desk.start_bridge("bridge", &socket);

    let mut cmd = desk
        .session
        .command(bridge_binary().expect("bridge binary"));
    cmd.arg("serve").arg("--socket").arg(&socket);
    let (status, _) = desk
        .session
        .run("bridge-second", cmd, WAIT)
        .expect("the second instance finishes");
    let stderr = desk.session.stderr_of("bridge-second");
    assert!(
        !status.success(),
        "second instance must fail; stderr:\n{stderr}"
    );
    assert!(
        stderr.contains("another bridge already serves")
            && stderr.contains(&socket.display().to_string()),
        "the refusal names the socket:\n{stderr}"
    );

    desk.session
        .ensure_running(bridge)
        .expect("first bridge still running");
    let mut sender = RawSender::connect(&socket, "Still served");
    show_window(&mut sender, 1, "Still served");
    desk.wait_for_app("Still served");
    desk.finish();
}

/// A sender that disconnects and connects again is a new application (a new bus name); the old
/// one is gone from the desktop and from the bus.
#[test]
fn reconnecting_sender_gets_a_fresh_application() {
    let mut desk = Desk::start(AtSpi::Enabled);
    let socket = socket_in(&desk);
    desk.start_bridge("bridge", &socket);

    let mut first = RawSender::connect(&socket, "Returning app");
    show_window(&mut first, 1, "Returning app");
    let old_bus = desk.wait_for_app("Returning app");
    first.send_message(&SenderMessage::Goodbye);
    drop(first);
    desk.wait_app_gone("Returning app");

    let mut second = RawSender::connect(&socket, "Returning app");
    show_window(&mut second, 1, "Returning app");
    let new_bus = desk.wait_for_app("Returning app");
    assert_ne!(new_bus, old_bus, "a fresh application on a new connection");
    let names: Vec<String> = desk.apps().into_iter().map(|(bus, _)| bus).collect();
    assert!(!names.contains(&old_bus), "old application gone: {names:?}");
    desk.finish();
}

/// The bridge's connection for a departed sender closes: its bus name disappears. (Without
/// this, every sender that ever connected keeps a bus connection, a task and an empty replica
/// in the bridge.)
#[test]
fn departed_sender_leaves_no_bus_connection_behind() {
    const ROUNDS: usize = 3;
    let mut desk = Desk::start(AtSpi::Enabled);
    let socket = socket_in(&desk);
    let bridge = desk.start_bridge("bridge", &socket);
    let threads_before = thread_count(bridge);
    let a11y = desk.a11y();
    let mut left_behind = Vec::new();
    for round in 0..ROUNDS {
        let name = format!("Departing app {round}");
        let mut sender = RawSender::connect(&socket, &name);
        show_window(&mut sender, 1, &name);
        let bus = desk.wait_for_app(&name);
        drop(sender);
        desk.wait_app_gone(&name);
        let closed = wait_until(&format!("{bus} to leave the bus"), WAIT / 4, || {
            Ok(!a11y.name_has_owner(&bus)?)
        });
        if closed.is_err() {
            left_behind.push(bus);
        }
    }
    assert!(
        left_behind.is_empty(),
        "bus connections of departed senders still open: {left_behind:?}; bridge threads \
         {threads_before} before {ROUNDS} senders came and went, {} after",
        thread_count(bridge)
    );
    desk.finish();
}

fn thread_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |tasks| tasks.count())
}

/// No AT, no cost: with `--a11y=0` and no listener, surfaces are unwanted; IsEnabled or a
/// registered event listener makes them wanted; when both go, unwanted again. From at-spi2-core
/// 2.61 the launcher derives IsEnabled from the listeners itself: true once an AT registers one,
/// false only when that AT's connection goes (a listener deregistered by an AT still on the bus
/// leaves it true: the AT is still there), and the bridge follows it.
#[test]
fn updates_wanted_follows_at_presence() {
    let mut desk = Desk::start(AtSpi::Disabled);
    let derived = desk.session.launcher_options().expect("probe the launcher")
        == LauncherOptions::LaunchImmediatelyOnly;
    let socket = socket_in(&desk);
    desk.start_bridge("bridge", &socket);
    let mut sender = RawSender::connect(&socket, "Thrifty app");
    let messages = show_window(&mut sender, 1, "Thrifty app");
    assert!(
        messages.contains(&unwanted(1)),
        "no AT: unwanted; got {messages:?}"
    );
    assert!(!messages.contains(&wanted(1)), "{messages:?}");

    let session_bus = desk.session_bus();
    set_is_enabled(&session_bus, true);
    expect_message(&mut sender, &wanted(1), "IsEnabled=true");
    // A surface created while an AT is present is wanted at once.
    let messages = show_window(&mut sender, 2, "Second window");
    assert!(
        messages.contains(&wanted(2)),
        "new surface while enabled: {messages:?}"
    );
    set_is_enabled(&session_bus, false);
    expect_message(&mut sender, &unwanted(1), "IsEnabled=false");

    let listener = desk.a11y();
    let () = listener
        .call_fixed(
            &registry::REGISTER_EVENT,
            REGISTRY,
            &("object:children-changed".to_owned(),),
        )
        .expect("RegisterEvent");
    expect_message(&mut sender, &wanted(1), "listener registered");
    if derived {
        wait_for_is_enabled(&session_bus, true, "an AT registered a listener");
    }
    let () = listener
        .call_fixed(
            &registry::DEREGISTER_EVENT,
            REGISTRY,
            &("object:children-changed".to_owned(),),
        )
        .expect("DeregisterEvent");
    if derived {
        // The launcher keeps the AT until its connection goes: still wanted.
        assert!(
            is_enabled(&session_bus),
            "IsEnabled while the AT is on the bus"
        );
        drop(listener);
        wait_for_is_enabled(&session_bus, false, "the AT's connection closed");
        expect_message(&mut sender, &unwanted(1), "AT gone");
    } else {
        expect_message(&mut sender, &unwanted(1), "listener gone");
        drop(listener);
    }

    // An AT that goes away without deregistering (it crashed): its bus name vanishes.
    let crashing = desk.a11y();
    let () = crashing
        .call_fixed(
            &registry::REGISTER_EVENT,
            REGISTRY,
            &("object:state-changed:focused".to_owned(),),
        )
        .expect("RegisterEvent");
    expect_message(&mut sender, &wanted(1), "second listener registered");
    drop(crashing);
    expect_message(&mut sender, &unwanted(1), "listener's connection closed");
    if derived {
        wait_for_is_enabled(&session_bus, false, "the crashed AT's connection closed");
    }
    desk.finish();
}

fn is_enabled(session_bus: &BusClient) -> bool {
    newton_atspi_client::private_session::is_enabled(session_bus.address())
        .expect("read org.a11y.Status.IsEnabled")
}

/// Waits (bounded) until the launcher's IsEnabled is `expected`.
fn wait_for_is_enabled(session_bus: &BusClient, expected: bool, after: &str) {
    let deadline = Instant::now() + WAIT;
    while is_enabled(session_bus) != expected {
        assert!(
            Instant::now() < deadline,
            "after {after}: IsEnabled not {expected} within {WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn set_is_enabled(session_bus: &BusClient, enabled: bool) {
    newton_atspi_client::private_session::set_is_enabled(session_bus.address(), enabled)
        .expect("set org.a11y.Status.IsEnabled");
}

/// Waits (bounded) for `expected`, skipping other messages (e.g. the second surface's).
fn expect_message(sender: &mut RawSender, expected: &Value, after: &str) {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        match sender.recv_within(deadline.saturating_duration_since(Instant::now())) {
            Received::Message(m) if &m == expected => return,
            Received::Message(m) => seen.push(m),
            Received::Timeout => {
                panic!("after {after}: no {expected} within {WAIT:?}; got {seen:?}")
            }
            Received::Closed => panic!("after {after}: connection closed; got {seen:?}"),
        }
    }
}

/// `diff SNAPSHOT APP` (issue 18, toolkit CI): a `dump --json` snapshot saved
/// from the live application compares equal to it; the same snapshot with one
/// name changed is reported at that object with exit status 1.
#[test]
fn diff_compares_a_saved_snapshot_with_the_live_application() {
    let mut desk = Desk::start(AtSpi::Enabled);
    let socket = socket_in(&desk);
    desk.start_bridge("bridge", &socket);
    desk.start_bystander(&socket);
    desk.wait_for_app(BYSTANDER_NAME);
    // `dump --json APP` prints an array with the one application.
    let mut snapshot = desk.dump(BYSTANDER_NAME, "snapshot");
    let saved = desk.session.dir().join("saved.json");
    std::fs::write(&saved, snapshot.to_string()).expect("write the snapshot");
    let (status, out) = desk.diff(&saved, "same", &["--wait-for", BYSTANDER_NAME]);
    assert_eq!(
        status.code(),
        Some(0),
        "snapshot equals the live app:\n{out}"
    );
    let started = Instant::now();
    let waiting = ["--wait-for", "No such application", "--timeout", "1"];
    let (status, _) = desk.diff(&saved, "absent", &waiting);
    assert_eq!(
        status.code(),
        Some(2),
        "an application that never comes is an error"
    );
    assert!(started.elapsed() < WAIT, "--timeout bounds the wait");
    assert!(
        desk.log("diff-absent")
            .contains("No such application not on the desktop"),
        "{}",
        desk.log("diff-absent")
    );

    let first = &mut snapshot[0]["children"][0];
    let old_name = first["name"].as_str().unwrap_or_default().to_owned();
    first["name"] = Value::from("Renamed in the snapshot");
    std::fs::write(&saved, snapshot.to_string()).expect("write the snapshot");
    let (status, out) = desk.diff(&saved, "changed", &[]);
    assert_eq!(status.code(), Some(1), "the renamed object differs:\n{out}");
    assert!(
        out.contains("/0 ") && out.contains(": name") && out.contains("Renamed in the snapshot"),
        "reported at /0 with both names (live: {old_name:?}):\n{out}"
    );
    desk.finish();
}

impl Desk {
    /// `newton-atspi-bridge diff SNAPSHOT BYSTANDER` on this desk's bus.
    fn diff(&mut self, snapshot: &Path, label: &str, extra: &[&str]) -> (ExitStatus, String) {
        let mut cmd = self
            .session
            .command(bridge_binary().expect("bridge binary"));
        cmd.arg("diff")
            .arg(snapshot)
            .arg(BYSTANDER_NAME)
            .args(["--a11y-bus", &self.a11y_address])
            .args(extra);
        self.session
            .run(&format!("diff-{label}"), cmd, WAIT)
            .expect("run diff")
    }
}
