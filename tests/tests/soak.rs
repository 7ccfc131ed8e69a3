//! A bounded soak: several senders keep large trees changing steadily while two AT clients walk
//! and query every application. Zero errors on either side, and the bridge's memory stays
//! bounded once the trees are loaded. Figures (commits, calls, RSS over time) are printed.
//!
//! Defaults are short (5 senders × 2,000 nodes for 20 s). The documented full run:
//! `NEWTON_SOAK_SENDERS=20 NEWTON_SOAK_NODES=5000 NEWTON_SOAK_SECONDS=120 cargo test -p newton-e2e
//! --test soak -- --nocapture` (seconds are capped at 120). Needs `cargo build -p
//! newton-atspi-bridge` first. No Xvfb, no Orca.

// The raw sender and AT client helpers are the same as in isolation.rs (each test file is its
// own crate); not every helper is used here.
#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use newton_e2e::{bridge_binary, wait_until, SessionOptions, TestSession};
use serde_json::{json, Value};
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

/// Bound for every wait: generous, the machine is shared.
const WAIT: Duration = Duration::from_secs(120);
const ROOT: &str = "/org/a11y/atspi/accessible/root";
const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
const CALM_APP: &str = "Calm app";
const CALM_BUTTONS: u64 = 20;
const ROUNDS: usize = 10;
const TREE_ID: &str = "00000000-0000-0000-0000-000000000000";

type ObjRef = (String, OwnedObjectPath);

// ---------------------------------------------------------------------------------------------
// Session and bridge
// ---------------------------------------------------------------------------------------------

fn start_session() -> TestSession {
    let options = SessionOptions {
        xvfb: false,
        atspi: true,
        ready_timeout: WAIT,
    };
    TestSession::start(options).expect("start the test session")
}

/// `serve --socket <dir>/bridge.sock` plus `extra` arguments; waits until the socket accepts.
fn start_bridge(session: &mut TestSession, extra: &[&str]) -> (u32, PathBuf) {
    let socket = session.dir().join("bridge.sock");
    let mut cmd = session.command(bridge_binary().expect("cargo build -p newton-atspi-bridge"));
    cmd.arg("serve")
        .arg("--socket")
        .arg(&socket)
        .args(["--log-level", "debug"])
        .args(extra);
    let pid = session.spawn("bridge", cmd).expect("start the bridge");
    wait_until("the bridge socket to accept connections", WAIT, || {
        session.ensure_running(pid)?;
        Ok(UnixStream::connect(&socket).is_ok())
    })
    .expect("the bridge accepts senders");
    (pid, socket)
}

fn a11y_address(session: &TestSession) -> String {
    session
        .a11y_bus_address()
        .expect("the session has an a11y bus")
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// A raw sender: JSON frames, anything may be sent.
// ---------------------------------------------------------------------------------------------

struct RawSender {
    stream: UnixStream,
    pending: Vec<u8>,
    serial: u64,
}

impl RawSender {
    fn connect(socket: &Path, name: &str) -> RawSender {
        let stream = UnixStream::connect(socket).expect("connect to the bridge");
        let mut sender = RawSender {
            stream,
            pending: Vec::new(),
            serial: 0,
        };
        let app_id = format!("org.newton.isolation.{}", name.replace(' ', "-"));
        sender.send(&json!({"protocol": 1, "encoding": "json", "app": {
            "appId": app_id, "name": name, "pid": null,
            "toolkitName": "isolation-test", "toolkitVersion": "1"}}));
        let welcome = sender.recv().expect("a welcome");
        assert!(
            welcome.get("welcome").is_some(),
            "expected the welcome: {welcome}"
        );
        sender
    }

    fn send(&mut self, message: &Value) {
        let payload = serde_json::to_vec(message).expect("JSON encodes");
        self.send_raw(&payload);
    }

    /// Writes one frame (length prefix + payload) without looking at the payload.
    fn send_raw(&mut self, payload: &[u8]) {
        let length = u32::try_from(payload.len()).expect("frame under 4 GiB");
        let mut bytes = length.to_le_bytes().to_vec();
        bytes.extend_from_slice(payload);
        self.stream.write_all(&bytes).expect("write to the bridge");
    }

    fn next_serial(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }

    /// The next bridge message (bounded by WAIT); None when the bridge closed.
    fn recv(&mut self) -> Option<Value> {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(prefix) = self.pending.get(..4) {
                let end = 4 + u32::from_le_bytes(prefix.try_into().ok()?) as usize;
                if let Some(payload) = self.pending.get(4..end) {
                    let message = serde_json::from_slice(payload).expect("bridge frame is JSON");
                    self.pending.drain(..end);
                    return Some(message);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no bridge message within {WAIT:?}");
            let _ = self.stream.set_read_timeout(Some(left));
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self
                    .pending
                    .extend_from_slice(chunk.get(..n).unwrap_or_default()),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(_) => return None,
            }
        }
    }

    /// Waits until everything sent was processed; returns the messages that came before.
    fn sync(&mut self) -> Vec<Value> {
        let serial = self.next_serial();
        self.send(&json!({"sync": {"serial": serial}}));
        let mut before = Vec::new();
        loop {
            let message = self.recv().expect("the bridge answers the sync");
            if message["syncDone"]["serial"] == serial {
                return before;
            }
            before.push(message);
        }
    }

    fn create_surface(&mut self, surface: u32, title: &str) {
        self.send(&json!({"createSurface": {"surface": surface, "title": title}}));
    }

    /// Buffers `update` for `surface` and commits it (no wait).
    fn commit(&mut self, surface: u32, update: Value) -> u64 {
        self.send(&json!({"update": {"surface": surface, "update": update}}));
        let serial = self.next_serial();
        self.send(&json!({"commit": {"surface": surface, "serial": serial}}));
        serial
    }

    /// Creates `surface` holding `window(title, buttons)` and waits until it landed cleanly.
    fn show_window(&mut self, surface: u32, title: &str, label: &str, buttons: u64) {
        self.create_surface(surface, title);
        self.commit(surface, window(title, label, buttons));
        self.send(&json!({"focus": {"surface": surface}}));
        let replies = self.sync();
        assert!(
            replies.iter().all(|m| m.get("rejected").is_none()),
            "the window was rejected: {replies:?}"
        );
    }
}

/// A full tree: a window (id 1) whose children are `buttons` buttons (ids 2..) labelled
/// "`label` <n>".
fn window(title: &str, label: &str, buttons: u64) -> Value {
    let children: Vec<u64> = (2..buttons + 2).collect();
    let mut nodes = vec![
        json!([1, {"role": "window", "actions": 0, "childActions": 0,
        "flags": 0, "properties": {"children": children, "label": title}}]),
    ];
    nodes.extend((2..buttons + 2).map(|id| json!([id, button(&format!("{label} {id}"))])));
    json!({"nodes": nodes,
           "tree": {"root": 1, "toolkitName": null, "toolkitVersion": null},
           "treeId": TREE_ID, "focus": 1})
}

/// An incremental update relabelling button `id`.
fn relabel(id: u64, label: &str) -> Value {
    json!({"nodes": [[id, button(label)]], "tree": null, "treeId": TREE_ID, "focus": 1})
}

fn button(label: &str) -> Value {
    json!({"role": "button", "actions": 1, "childActions": 0, "flags": 0,
           "properties": {"label": label}})
}

// ---------------------------------------------------------------------------------------------
// An AT client: raw zbus calls on the a11y bus.
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Client {
    conn: zbus::Connection,
}

impl Client {
    fn connect(address: &str) -> Client {
        let conn = async_io::block_on(async {
            zbus::connection::Builder::address(address)?.build().await
        })
        .expect("connect to the a11y bus");
        Client { conn }
    }

    fn call<B, R>(
        &self,
        dest: &str,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> zbus::Result<R>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
    {
        async_io::block_on(async {
            let reply = self
                .conn
                .call_method(Some(dest), path, Some(iface), method, body)
                .await?;
            reply.body().deserialize::<R>()
        })
    }

    fn name(&self, dest: &str, path: &str) -> zbus::Result<String> {
        let value: OwnedValue = self.call(
            dest,
            path,
            "org.freedesktop.DBus.Properties",
            "Get",
            &(ACCESSIBLE, "Name"),
        )?;
        String::try_from(value).map_err(zbus::Error::from)
    }

    fn children(&self, dest: &str, path: &str) -> zbus::Result<Vec<ObjRef>> {
        self.call(dest, path, ACCESSIBLE, "GetChildren", &())
    }

    /// Names of the applications on the desktop.
    fn app_names(&self) -> Vec<String> {
        let apps = self
            .children("org.a11y.atspi.Registry", ROOT)
            .unwrap_or_default();
        apps.iter()
            .filter_map(|(bus, _)| self.name(bus, ROOT).ok())
            .collect()
    }

    /// Bus name of the desktop application named `app`, waiting (bounded) for it.
    fn app_bus(&self, app: &str) -> String {
        let mut found = None;
        wait_until(&format!("application `{app}` on the desktop"), WAIT, || {
            let apps = self
                .children("org.a11y.atspi.Registry", ROOT)
                .unwrap_or_default();
            found = apps
                .into_iter()
                .map(|(bus, _)| bus)
                .find(|bus| self.name(bus, ROOT).is_ok_and(|n| n == app));
            Ok(found.is_some())
        })
        .unwrap_or_else(|_| panic!("`{app}` never appeared; desktop: {:?}", self.app_names()));
        found.unwrap_or_default()
    }

    /// The window (first child of the application root) and its children's names.
    fn window_and_labels(&self, bus: &str) -> (String, Vec<String>) {
        let window = self
            .children(bus, ROOT)
            .expect("application children")
            .into_iter()
            .next()
            .map(|(_, p)| p.to_string())
            .expect("the application has a window");
        let labels = self
            .children(bus, &window)
            .expect("window children")
            .iter()
            .map(|(_, p)| self.name(bus, p).expect("a button's name"))
            .collect();
        (window, labels)
    }
}

// ---------------------------------------------------------------------------------------------
// The fixed query mix and its measurement.
// ---------------------------------------------------------------------------------------------

/// The objects the mix asks about, in one application.
struct Target {
    bus: String,
    window: String,
    button: String,
}

impl Target {
    fn find(client: &Client, app: &str) -> Target {
        let bus = client.app_bus(app);
        let (window, _) = client.window_and_labels(&bus);
        let button = client
            .children(&bus, &window)
            .expect("window children")
            .into_iter()
            .next()
            .map(|(_, p)| p.to_string())
            .expect("the window has a button");
        Target {
            bus,
            window,
            button,
        }
    }
}

/// One pass's answers (as Debug text, first round), errors and latencies.
#[derive(Default)]
struct Pass {
    answers: Vec<String>,
    errors: Vec<String>,
    latencies: Vec<Duration>,
}

/// Name / GetRole / GetState / GetChildAtIndex, `rounds` times; answers must not change.
fn run_mix(client: &Client, target: &Target, rounds: usize) -> Pass {
    let mut pass = Pass::default();
    for round in 0..rounds {
        let answers = [
            timed(&mut pass, || client.name(&target.bus, &target.button)),
            timed(&mut pass, || {
                client.call::<_, u32>(&target.bus, &target.button, ACCESSIBLE, "GetRole", &())
            }),
            timed(&mut pass, || {
                client.call::<_, Vec<u32>>(&target.bus, &target.button, ACCESSIBLE, "GetState", &())
            }),
            timed(&mut pass, || {
                client.call::<_, ObjRef>(
                    &target.bus,
                    &target.window,
                    ACCESSIBLE,
                    "GetChildAtIndex",
                    &(0i32,),
                )
            }),
        ];
        for (index, answer) in answers.into_iter().enumerate() {
            match answer {
                Err(e) => pass.errors.push(e),
                Ok(text) if round == 0 => pass.answers.push(text),
                Ok(text) if pass.answers.get(index) != Some(&text) => pass
                    .errors
                    .push(format!("query {index} changed its answer to {text}")),
                Ok(_) => {}
            }
        }
    }
    pass
}

fn timed<R: std::fmt::Debug>(
    pass: &mut Pass,
    query: impl FnOnce() -> zbus::Result<R>,
) -> Result<String, String> {
    let start = Instant::now();
    let answer = query();
    pass.latencies.push(start.elapsed());
    answer.map(|r| format!("{r:?}")).map_err(|e| e.to_string())
}

fn median(latencies: &[Duration]) -> Duration {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn ratio(loaded: Duration, quiet: Duration) -> f64 {
    loaded.as_secs_f64() / quiet.as_secs_f64().max(f64::MIN_POSITIVE)
}

/// Asserts both passes are clean and answered the same.
fn assert_same(quiet: &Pass, loaded: &Pass, label: &str) {
    assert!(quiet.errors.is_empty(), "quiet pass: {:#?}", quiet.errors);
    assert!(loaded.errors.is_empty(), "{label}: {:#?}", loaded.errors);
    assert_eq!(quiet.answers, loaded.answers, "{label}: answers changed");
}

/// The calm application: one window of buttons "Calm <n>", shown and checked.
fn calm_app(socket: &Path) -> RawSender {
    let mut calm = RawSender::connect(socket, CALM_APP);
    calm.show_window(1, "Calm window", "Calm", CALM_BUTTONS);
    calm
}

fn shutdown(session: TestSession) {
    let report = session.shutdown();
    assert!(report.is_clean(), "teardown left processes: {report:?}");
}

// ---------------------------------------------------------------------------------------------
// The soak.
// ---------------------------------------------------------------------------------------------

const MAX_SECONDS: u64 = 120;
/// Between two commits of one sender (a busy but plausible application).
const COMMIT_INTERVAL: Duration = Duration::from_millis(50);
/// Buttons relabelled per commit.
const RELABELS_PER_COMMIT: u64 = 5;
/// Generous bound on the bridge's RSS growth after every tree is loaded.
const SOAK_RSS_GROWTH_BOUND_KB: u64 = 64 * 1024;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn soak_app(index: u64) -> String {
    format!("Soak app {index}")
}

/// One sender: its tree, then steady relabels until `stop`. Returns (commits, rejections).
fn steady_sender(
    socket: PathBuf,
    index: u64,
    nodes: u64,
    stop: Arc<AtomicBool>,
    shown: Arc<AtomicU64>,
) -> (u64, Vec<Value>) {
    let name = soak_app(index);
    let mut sender = RawSender::connect(&socket, &name);
    sender.show_window(1, &format!("{name} window"), "Row", nodes - 1);
    shown.fetch_add(1, Ordering::Relaxed);
    let (mut commits, mut rejected) = (1u64, Vec::new());
    while !stop.load(Ordering::Relaxed) {
        let nodes_in_update: Vec<Value> = (0..RELABELS_PER_COMMIT)
            .map(|k| {
                let id = 2 + (commits * RELABELS_PER_COMMIT + k) % (nodes - 1);
                json!([id, button(&format!("Row {id} v{commits}"))])
            })
            .collect();
        sender.commit(
            1,
            json!({"nodes": nodes_in_update, "tree": null, "treeId": TREE_ID, "focus": 1}),
        );
        commits += 1;
        if commits % 20 == 0 {
            rejected.extend(
                sender
                    .sync()
                    .into_iter()
                    .filter(|m| m.get("rejected").is_some()),
            );
        }
        std::thread::sleep(COMMIT_INTERVAL);
    }
    rejected.extend(
        sender
            .sync()
            .into_iter()
            .filter(|m| m.get("rejected").is_some()),
    );
    (commits, rejected)
}

/// One AT client: walks every soak app (GetChildren of its window, Name and GetRole of a
/// sample of rows) until `stop`. Returns (calls, errors).
fn walker(address: String, apps: Vec<String>, stop: Arc<AtomicBool>) -> (u64, Vec<String>) {
    let client = Client::connect(&address);
    let buses: Vec<String> = apps.iter().map(|app| client.app_bus(app)).collect();
    let (mut calls, mut errors) = (0u64, Vec::new());
    let mut record = |result: Result<(), String>, calls: &mut u64| {
        *calls += 1;
        if let Err(e) = result {
            errors.push(e);
        }
    };
    while !stop.load(Ordering::Relaxed) {
        for bus in &buses {
            let windows = client.children(bus, ROOT);
            record(
                windows.as_ref().map(|_| ()).map_err(|e| e.to_string()),
                &mut calls,
            );
            let Some((_, window)) = windows.ok().and_then(|w| w.into_iter().next()) else {
                continue;
            };
            let rows = client.children(bus, window.as_str());
            record(
                rows.as_ref().map(|_| ()).map_err(|e| e.to_string()),
                &mut calls,
            );
            for (_, row) in rows.unwrap_or_default().iter().step_by(97) {
                let name = client.name(bus, row);
                record(name.map(|_| ()).map_err(|e| e.to_string()), &mut calls);
                let role: zbus::Result<u32> = client.call(bus, row, ACCESSIBLE, "GetRole", &());
                record(role.map(|_| ()).map_err(|e| e.to_string()), &mut calls);
            }
        }
    }
    (calls, errors)
}

#[test]
fn senders_and_at_clients_soak_without_errors_or_growth() {
    let senders = env_number("NEWTON_SOAK_SENDERS", 5);
    let nodes = env_number("NEWTON_SOAK_NODES", 2_000).max(2);
    let seconds = env_number("NEWTON_SOAK_SECONDS", 20).min(MAX_SECONDS);
    let mut session = start_session();
    let (bridge, socket) = start_bridge(&mut session, &[]);
    let address = a11y_address(&session);
    let rss_start = rss_kb(bridge);

    // Walkers stop first: an app leaving while a walk is under way would fail its calls.
    let stop = Arc::new(AtomicBool::new(false));
    let stop_walkers = Arc::new(AtomicBool::new(false));
    let shown = Arc::new(AtomicU64::new(0));
    let sender_threads: Vec<_> = (0..senders)
        .map(|index| {
            let (socket, stop, shown) = (socket.clone(), stop.clone(), shown.clone());
            std::thread::spawn(move || steady_sender(socket, index, nodes, stop, shown))
        })
        .collect();
    let apps: Vec<String> = (0..senders).map(soak_app).collect();
    let client = Client::connect(&address);
    for app in &apps {
        client.app_bus(app);
    }
    // Every first tree acknowledged: the baseline for growth.
    wait_until("every sender's first tree", WAIT, || {
        Ok(shown.load(Ordering::Relaxed) == senders)
    })
    .expect("every sender shows its window");
    let rss_loaded = rss_kb(bridge);
    let walkers: Vec<_> = (0..2)
        .map(|_| {
            let (address, apps, stop) = (address.clone(), apps.clone(), stop_walkers.clone());
            std::thread::spawn(move || walker(address, apps, stop))
        })
        .collect();

    let started = Instant::now();
    let mut samples = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(1));
        session
            .ensure_running(bridge)
            .expect("the bridge keeps running");
        samples.push(rss_kb(bridge));
    }
    stop_walkers.store(true, Ordering::Relaxed);
    let mut calls = 0;
    for thread in walkers {
        let (made, errors) = thread.join().expect("a walker thread");
        assert!(errors.is_empty(), "AT client errors: {:?}", errors.first());
        calls += made;
    }
    stop.store(true, Ordering::Relaxed);
    let mut commits = 0;
    for thread in sender_threads {
        let (sent, rejected) = thread.join().expect("a sender thread");
        assert!(rejected.is_empty(), "rejections: {rejected:?}");
        commits += sent;
    }
    let rss_end = rss_kb(bridge);
    let peak = samples.iter().copied().max().unwrap_or(rss_end);
    eprintln!(
        "soak: {senders} senders × {nodes} nodes for {seconds} s: {commits} commits, {calls} AT \
         calls by 2 walkers, 0 errors; bridge VmRSS start {rss_start} kB, loaded {rss_loaded} \
         kB, peak {peak} kB, end {rss_end} kB"
    );
    assert!(
        peak.saturating_sub(rss_loaded) < SOAK_RSS_GROWTH_BOUND_KB,
        "bridge RSS grew from {rss_loaded} kB (trees loaded) to a peak of {peak} kB"
    );
    shutdown(session);
}
