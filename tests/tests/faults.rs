//! Faulty senders and their cost: a sender stalled in the middle of a frame, a sender that never
//! reads while an AT asks it for actions, and thousands of short-lived connections. The bridge
//! must keep serving every other application, bound what it queues, and give back what a gone
//! sender held (memory, threads, desktop entries).
//!
//! Figures (RSS, threads, cycle counts, call times) are printed; the only numeric assertions are
//! generous resource bounds, never speed.
//!
//! Run with `cargo test -p newton-e2e --test faults -- --nocapture --test-threads 1` after
//! `cargo build -p newton-atspi-bridge`. `NEWTON_FAULT_CYCLE_SECONDS` bounds the connect/
//! disconnect cycles (default 60). No Xvfb, no Orca.

// The raw sender and AT client helpers are the same as in isolation.rs (each test file is its
// own crate); not every helper is used here.
#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use newton_e2e::{bridge_binary, wait_until, SessionOptions, TestSession};
use serde_json::{json, Value};
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

/// Bound for every wait: generous, the machine is shared.
const WAIT: Duration = Duration::from_secs(60);
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
// Bridge process figures (from /proc).
// ---------------------------------------------------------------------------------------------

/// A field of /proc/<pid>/status, as a number (VmRSS in kB, Threads).
fn proc_status(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn rss_kb(pid: u32) -> u64 {
    proc_status(pid, "VmRSS")
}

fn threads(pid: u32) -> u64 {
    proc_status(pid, "Threads")
}

fn bridge_log(session: &TestSession) -> String {
    std::fs::read_to_string(session.dir().join("logs").join("bridge.err")).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// (a) A sender stalled after half a frame.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_sender_stalled_mid_frame_keeps_its_tree_and_stalls_nobody() {
    let mut session = start_session();
    let (bridge, socket) = start_bridge(&mut session, &[]);
    let _calm = calm_app(&socket);
    let mut stalled = RawSender::connect(&socket, "Stalled app");
    stalled.show_window(1, "Stalled window", "Stalled", 5);
    let client = Client::connect(&a11y_address(&session));
    let calm = Target::find(&client, CALM_APP);
    let stalled_bus = client.app_bus("Stalled app");
    let (_, labels_before) = client.window_and_labels(&stalled_bus);
    let calm_before = run_mix(&client, &calm, ROUNDS);

    // Half of a relabel frame: the length prefix promises more than ever arrives.
    let payload = serde_json::to_vec(&json!({"update": {"surface": 1,
        "update": relabel(2, "Never arrives")}}))
    .expect("JSON encodes");
    let half = payload.len() / 2;
    let mut bytes = u32::try_from(payload.len())
        .expect("small")
        .to_le_bytes()
        .to_vec();
    bytes.extend_from_slice(payload.get(..half).unwrap_or_default());
    stalled
        .stream
        .write_all(&bytes)
        .expect("write half a frame");
    std::thread::sleep(Duration::from_secs(2));

    // Everyone else is served, and the stalled app's last committed tree is still answered.
    let mut other = RawSender::connect(&socket, "Newcomer app");
    other.show_window(1, "Newcomer window", "New", 2);
    let calm_stalled = run_mix(&client, &calm, ROUNDS);
    let (_, labels_stalled) = client.window_and_labels(&stalled_bus);
    assert_same(
        &calm_before,
        &calm_stalled,
        "calm app while a sender is stalled",
    );
    assert_eq!(labels_before, labels_stalled, "the stalled app's tree");
    client.app_bus("Newcomer app");

    // Closing the stalled sender takes its application off the desktop.
    drop(stalled);
    wait_until("the stalled app to leave the desktop", WAIT, || {
        Ok(!client.app_names().iter().any(|n| n == "Stalled app"))
    })
    .unwrap_or_else(|_| panic!("still on the desktop: {:?}", client.app_names()));
    session.ensure_running(bridge).expect("the bridge survived");
    let calm_after = run_mix(&client, &calm, ROUNDS);
    assert_same(
        &calm_before,
        &calm_after,
        "calm app after the stalled sender left",
    );
    eprintln!(
        "faults/stalled: half frame ({half} of {} bytes) held 2 s; calm median before {:?}, \
         while stalled {:?}; stalled app removed on close",
        payload.len(),
        median(&calm_before.latencies),
        median(&calm_stalled.latencies)
    );
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (b) A sender that never reads while an AT sends many DoAction calls.
// ---------------------------------------------------------------------------------------------

/// DoAction calls sent to the deaf sender: well beyond the bridge's queues (1024 frames per
/// queue) plus what the socket buffers hold.
const ACTIONS: usize = 6_000;
/// Only a hang trips it (libatspi's own call timeout is 800 ms).
const HANG_BOUND: Duration = Duration::from_secs(20);
/// Generous memory bound for all those queued or dropped actions.
const ACTION_RSS_BOUND_KB: u64 = 50 * 1024;

#[test]
fn actions_for_a_sender_that_never_reads_are_bounded_and_dropped() {
    let mut session = start_session();
    let (bridge, socket) = start_bridge(&mut session, &[]);
    let _calm = calm_app(&socket);
    // Shown, then never read again: its socket fills with action frames.
    let mut deaf = RawSender::connect(&socket, "Deaf app");
    deaf.show_window(1, "Deaf window", "Press", 3);
    let client = Client::connect(&a11y_address(&session));
    let deaf_target = Target::find(&client, "Deaf app");
    let calm = Target::find(&client, CALM_APP);
    let calm_before = run_mix(&client, &calm, ROUNDS);
    let rss_before = rss_kb(bridge);

    let mut took = Vec::with_capacity(ACTIONS);
    let mut failures = Vec::new();
    for _ in 0..ACTIONS {
        let start = Instant::now();
        let reply: zbus::Result<bool> = client.call(
            &deaf_target.bus,
            &deaf_target.button,
            "org.a11y.atspi.Action",
            "DoAction",
            &(0i32,),
        );
        let elapsed = start.elapsed();
        took.push(elapsed);
        assert!(elapsed < HANG_BOUND, "a DoAction call hung for {elapsed:?}");
        if reply.as_ref().ok() != Some(&true) {
            failures.push(format!("{reply:?}"));
        }
    }
    let rss_after = rss_kb(bridge);
    let calm_after = run_mix(&client, &calm, ROUNDS);
    let log = bridge_log(&session);
    let drops = log
        .lines()
        .filter(|l| {
            l.contains("actions not delivered to the sender") || l.contains("actions dropped")
        })
        .count();

    assert!(
        failures.is_empty(),
        "DoAction replies: {:?}",
        failures.first()
    );
    // Drops are logged at 1, 2, 4, 8, … so an AT cannot flood the log.
    assert!(
        drops > 0 && drops <= 64,
        "{drops} drop lines in the bridge log after {ACTIONS} actions (expected a few, rate-limited)"
    );
    assert!(
        rss_after.saturating_sub(rss_before) < ACTION_RSS_BOUND_KB,
        "bridge RSS grew from {rss_before} kB to {rss_after} kB"
    );
    assert_same(&calm_before, &calm_after, "calm app after the action flood");
    took.sort();
    eprintln!(
        "faults/deaf-sender: {ACTIONS} DoAction calls, median {:?}, max {:?}; {drops} drop lines \
         logged; bridge VmRSS {rss_before} kB → {rss_after} kB",
        median(&took),
        took.last().copied().unwrap_or_default()
    );
    drop(deaf);
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (c) Thousands of short-lived connections.
// ---------------------------------------------------------------------------------------------

const MAX_CYCLES: u64 = 10_000;
/// Cycles before the baseline is taken (allocator and zbus caches warm up).
const WARM_UP_CYCLES: u64 = 300;
const CYCLE_RSS_BOUND_KB: u64 = 20 * 1024;
const CYCLE_APP: &str = "Cycle app";

fn cycle_budget() -> Duration {
    let seconds = std::env::var("NEWTON_FAULT_CYCLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(seconds)
}

/// Connect, hello, one small commit, sync, disconnect.
fn one_cycle(socket: &Path) {
    let mut sender = RawSender::connect(socket, CYCLE_APP);
    sender.create_surface(1, "Cycle window");
    sender.commit(1, window("Cycle window", "Cycle", 2));
    let replies = sender.sync();
    assert!(
        replies.iter().all(|m| m.get("rejected").is_none()),
        "a cycle's commit was rejected: {replies:?}"
    );
}

/// Waits until no cycle app is left on the desktop and the bridge's threads settle at `limit`.
fn settle(client: &Client, bridge: u32, thread_limit: u64) -> Result<(), String> {
    wait_until(
        "the cycle apps to leave and threads to settle",
        WAIT,
        || {
            let leftover = client.app_names().iter().any(|n| n == CYCLE_APP);
            Ok(!leftover && threads(bridge) <= thread_limit)
        },
    )
    .map_err(|_| {
        format!(
            "after {WAIT:?}: desktop {:?}, bridge threads {} (limit {thread_limit})",
            client.app_names(),
            threads(bridge)
        )
    })
}

#[test]
fn connect_disconnect_cycles_give_back_memory_threads_and_desktop_entries() {
    let mut session = start_session();
    let (bridge, socket) = start_bridge(&mut session, &[]);
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let calm = Target::find(&client, CALM_APP);
    let calm_before = run_mix(&client, &calm, ROUNDS);
    let (start_rss, start_threads) = (rss_kb(bridge), threads(bridge));

    for _ in 0..WARM_UP_CYCLES {
        one_cycle(&socket);
    }
    settle(&client, bridge, start_threads).unwrap_or_else(|e| panic!("after warm-up: {e}"));
    let (base_rss, base_threads) = (rss_kb(bridge), threads(bridge));

    let budget = cycle_budget();
    let started = Instant::now();
    let mut cycles = WARM_UP_CYCLES;
    while cycles < MAX_CYCLES && started.elapsed() < budget {
        one_cycle(&socket);
        cycles += 1;
    }
    let elapsed = started.elapsed();
    settle(&client, bridge, base_threads).unwrap_or_else(|e| panic!("after the cycles: {e}"));
    let (end_rss, end_threads) = (rss_kb(bridge), threads(bridge));
    let calm_after = run_mix(&client, &calm, ROUNDS);

    eprintln!(
        "faults/cycles: {cycles} connect/hello/commit/sync/disconnect cycles ({} after warm-up \
         in {elapsed:.1?}); bridge VmRSS start {start_rss} kB, after {WARM_UP_CYCLES} \
         {base_rss} kB, end {end_rss} kB (growth {} kB); threads start {start_threads}, \
         baseline {base_threads}, end {end_threads}",
        cycles - WARM_UP_CYCLES,
        end_rss as i64 - base_rss as i64
    );
    assert!(
        end_rss.saturating_sub(base_rss) < CYCLE_RSS_BOUND_KB,
        "bridge RSS grew {base_rss} kB → {end_rss} kB over {cycles} cycles"
    );
    assert!(
        end_threads <= base_threads,
        "threads {base_threads} → {end_threads}"
    );
    assert_same(&calm_before, &calm_after, "calm app after the cycles");
    shutdown(session);
}
