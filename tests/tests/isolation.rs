//! One application cannot hurt another: a sender flooding commits, a sender sending malformed or
//! oversized frames, a sender naming surfaces it does not own, and an AT client flooding calls
//! must all leave a normal application's answers (and its AT clients) untouched.
//!
//! Senders are raw socket clients (JSON frames, docs/protocol.md) so a test can send anything.
//! Latency under each flood is measured against the same run's quiet baseline and printed as a
//! ratio, never asserted (the machine is shared).
//!
//! Also the per-application limits a sender meets (docs/robustness.md): the frame-rate limit
//! (commits coalesced, nothing lost), the queued-bytes limit (rejected with resync), the
//! executable allow-list, and the reset of one application after a panic in its handling (a
//! debug-build test hook, `NEWTON_ATSPI_TEST_PANIC_ON_LABEL`).
//!
//! Run with `cargo test -p newton-e2e --test isolation -- --nocapture --test-threads 1` after
//! `cargo build -p newton-atspi-bridge` (a debug build: the panic test needs its test hook).
//! No Xvfb, no Orca.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use newton_e2e::{bridge_binary, wait_until, TestSession};
use serde_json::Value;

/// Bound for every wait: generous, the machine is shared.
const WAIT: Duration = Duration::from_secs(60);
/// Repetitions of the query mix per pass.
const ROUNDS: usize = 40;

mod support;
use support::*;
// ---------------------------------------------------------------------------------------------
// (a) A flooding sender beside a normal application.
// ---------------------------------------------------------------------------------------------

/// Nodes in the flooding sender's big tree.
const FLOOD_NODES: u64 = 20_000;
/// Small relabels between two big-tree replacements.
const FLOOD_SMALL_COMMITS: u64 = 200;
/// Flood rounds (after the first) the flooded measurement lasts at least.
const FLOOD_ROUNDS_MEASURED: u64 = 2;
/// Shortest measurement under a flood (longer while the flood has done fewer than 3 rounds).
const FLOODED_AT_LEAST: Duration = Duration::from_secs(5);

/// What the flooding sender saw: rejections (must be none) and each round's time to its sync.
struct FloodOutcome {
    rejections: Vec<Value>,
    rounds: Vec<Duration>,
}

/// Pushes (a 20k-node tree replaced, then many small commits) until `stop`; counts commits.
fn flood(socket: PathBuf, stop: Arc<AtomicBool>, commits: Arc<AtomicU64>) -> FloodOutcome {
    let mut flooder = RawSender::connect(&socket, "Flood app");
    flooder.create_surface(1, "Flood window");
    let mut outcome = FloodOutcome {
        rejections: Vec::new(),
        rounds: Vec::new(),
    };
    let mut generation = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        generation += 1;
        let label = format!("Flood {generation}");
        // Another root each round: the whole tree is replaced, as on a page load.
        let root = if generation.is_multiple_of(2) {
            1
        } else {
            1_000_000
        };
        flooder.commit(
            1,
            window_rooted_at(root, "Flood window", &label, FLOOD_NODES - 1),
        );
        for n in 0..FLOOD_SMALL_COMMITS {
            flooder.commit(
                1,
                relabel_under(root, root + 1 + n % 100, &format!("{label}.{n}")),
            );
        }
        // Reading keeps its socket drained; what came back must not be a rejection.
        let replies = flooder.sync();
        outcome
            .rejections
            .extend(replies.into_iter().filter(|m| m.get("rejected").is_some()));
        outcome.rounds.push(started.elapsed());
        commits.fetch_add(1 + FLOOD_SMALL_COMMITS, Ordering::Relaxed);
    }
    outcome
}

#[test]
fn a_flooding_sender_leaves_a_normal_application_untouched() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge(&mut session, &[]);
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let target = Target::find(&client, CALM_APP);

    let quiet = run_mix(&client, &target, ROUNDS);
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let flooder = {
        let (socket, stop, commits) = (socket.clone(), stop.clone(), commits.clone());
        std::thread::spawn(move || flood(socket, stop, commits))
    };
    // Measure only once the flood is under way (its first big tree has landed).
    wait_until("the flood's first round", WAIT, || {
        Ok(commits.load(Ordering::Relaxed) > 0)
    })
    .expect("the flooding sender gets going");
    let before = commits.load(Ordering::Relaxed);
    let flooded = run_mix_while(&client, &target, FLOODED_AT_LEAST, || {
        commits.load(Ordering::Relaxed)
            >= before + FLOOD_ROUNDS_MEASURED * (1 + FLOOD_SMALL_COMMITS)
    });
    let during = commits.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    let outcome = flooder.join().expect("the flood thread ends");
    let after = run_mix(&client, &target, ROUNDS);

    assert!(
        outcome.rejections.is_empty(),
        "the flood's own commits were rejected: {:?}",
        outcome.rejections
    );
    assert_same(&quiet, &flooded, "during the flood");
    assert_same(&quiet, &after, "after the flood");
    let (q, f) = (median(&quiet.latencies), median(&flooded.latencies));
    eprintln!(
        "isolation/flood: {} quiet queries, {} under the flood; median quiet {q:?}, flooded \
         {f:?}, after {:?}; ratio flooded/quiet = {:.2}; flood commits acknowledged meanwhile: \
         {during} ({FLOOD_NODES}-node tree + {FLOOD_SMALL_COMMITS} relabels per round); flood \
         rounds took {:?}",
        quiet.latencies.len(),
        flooded.latencies.len(),
        median(&after.latencies),
        ratio(f, q),
        outcome.rounds
    );
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (b) Malformed and oversized frames.
// ---------------------------------------------------------------------------------------------

/// Node limit given to the bridge for the oversized-update case.
const MAX_NODES: u64 = 500;

/// Reads until the bridge sends an `error` and closes; returns the reason.
fn expect_fatal_error(sender: &mut RawSender, what: &str) -> String {
    let mut reason = None;
    while let Some(message) = sender.recv() {
        if let Some(r) = message["error"]["reason"].as_str() {
            reason = Some(r.to_string());
        }
    }
    reason.unwrap_or_else(|| panic!("{what}: the bridge closed without an error message"))
}

#[test]
fn malformed_and_oversized_frames_are_refused_with_their_rule() {
    let mut session = start_session();
    let max_nodes = MAX_NODES.to_string();
    let (bridge, socket) = start_bridge(&mut session, &["--max-nodes", &max_nodes]);
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let target = Target::find(&client, CALM_APP);
    let before = run_mix(&client, &target, 3);

    // A length prefix far over the bridge's frame limit, then nothing.
    let mut huge = RawSender::connect(&socket, "Huge frame app");
    huge.stream
        .write_all(&u32::MAX.to_le_bytes())
        .expect("write a length prefix");
    let huge_reason = expect_fatal_error(&mut huge, "oversized length prefix");

    // A frame of the right length whose payload is not a message.
    let mut garbage = RawSender::connect(&socket, "Garbage app");
    garbage.send_raw(b"\xff{not json at all");
    let garbage_reason = expect_fatal_error(&mut garbage, "undecodable payload");
    // Each fatal error names the rule the sender broke (protocol/src/frame.rs, receiver.rs).
    assert!(
        huge_reason.contains("(rule `max-frame-bytes`)"),
        "oversized length prefix: {huge_reason:?}"
    );
    assert!(
        garbage_reason.contains("(rule `decode`)"),
        "undecodable payload: {garbage_reason:?}"
    );

    // A well-formed update with more nodes than --max-nodes: rejected, connection stays.
    let mut big = RawSender::connect(&socket, "Too big app");
    big.create_surface(1, "Too big window");
    let serial = big.commit(1, window("Too big window", "Big", MAX_NODES + 10));
    let replies = big.sync();
    let rejected = replies
        .iter()
        .find(|m| m["rejected"]["serial"] == serial)
        .unwrap_or_else(|| panic!("no rejection of the oversized commit: {replies:?}"));
    assert_eq!(rejected["rejected"]["rule"], "too-many-nodes", "{rejected}");
    // Still usable after the rejection: a small tree is accepted.
    big.commit(1, window("Too big window", "Small", 3));
    let replies = big.sync();
    assert!(
        replies.iter().all(|m| m.get("rejected").is_none()),
        "a small tree after the rejection: {replies:?}"
    );

    session.ensure_running(bridge).expect("the bridge survived");
    let after = run_mix(&client, &target, 3);
    assert_same(&before, &after, "after the malformed senders");
    let apps = client.app_names();
    assert!(
        !apps
            .iter()
            .any(|a| a == "Huge frame app" || a == "Garbage app"),
        "a refused connection left its app on the desktop: {apps:?}"
    );
    eprintln!(
        "isolation/malformed: length prefix {} → error {huge_reason:?}; garbage payload → \
         error {garbage_reason:?}; {} nodes with --max-nodes {MAX_NODES} → rejected {:?}",
        u32::MAX,
        MAX_NODES + 11,
        rejected["rejected"]["reason"]
    );
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (c) A sender addresses only its own surfaces.
// ---------------------------------------------------------------------------------------------

#[test]
fn senders_reach_only_their_own_surfaces() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge(&mut session, &[]);
    let mut alpha = RawSender::connect(&socket, "Alpha app");
    alpha.show_window(1, "Alpha window", "Alpha", 3);
    let mut beta = RawSender::connect(&socket, "Beta app");
    beta.show_window(1, "Beta window", "Beta", 4);

    // A surface beta never created (it is alpha's id 2 space, or nobody's).
    alpha.show_window(2, "Alpha second", "Alpha two", 2);
    let serial = beta.commit(2, window("Stolen", "Stolen", 2));
    let replies = beta.sync();
    let rejected = replies
        .iter()
        .find(|m| m["rejected"]["serial"] == serial)
        .unwrap_or_else(|| panic!("no rejection of a commit to surface 2: {replies:?}"));
    assert_eq!(
        rejected["rejected"]["rule"], "unknown-surface",
        "{rejected}"
    );

    // Beta replaces its surface 1 (same id as alpha's): alpha's tree must not move.
    beta.commit(1, relabel(2, "Beta changed"));
    assert!(beta.sync().iter().all(|m| m.get("rejected").is_none()));

    let client = Client::connect(&a11y_address(&session));
    let alpha_bus = client.app_bus("Alpha app");
    let beta_bus = client.app_bus("Beta app");
    assert_ne!(alpha_bus, beta_bus, "each sender is its own application");
    let alpha_windows = client.children(&alpha_bus, ROOT).expect("alpha's windows");
    assert_eq!(alpha_windows.len(), 2, "alpha has its two surfaces");
    let (_, alpha_labels) = client.window_and_labels(&alpha_bus);
    let (_, beta_labels) = client.window_and_labels(&beta_bus);
    assert_eq!(alpha_labels, ["Alpha 2", "Alpha 3", "Alpha 4"]);
    assert_eq!(beta_labels, ["Beta changed", "Beta 3", "Beta 4", "Beta 5"]);
    let names: Vec<String> = client
        .children(&beta_bus, ROOT)
        .expect("beta's windows")
        .iter()
        .map(|(_, p)| client.name(&beta_bus, p).unwrap_or_default())
        .collect();
    assert!(
        !names.iter().any(|n| n == "Stolen"),
        "beta's windows: {names:?}"
    );
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (d) An AT client flooding calls does not starve another client.
// ---------------------------------------------------------------------------------------------

const BIG_APP_NODES: u64 = 10_000;

/// GetItems on `bus` in a tight loop from its own connection until `stop`; counts calls, errors.
fn flood_get_items(address: String, bus: String, stop: Arc<AtomicBool>) -> (u64, Vec<String>) {
    let client = Client::connect(&address);
    let (mut calls, mut errors) = (0u64, Vec::new());
    while !stop.load(Ordering::Relaxed) {
        let items = client.call(&calls::cache::GET_ITEMS, &bus, calls::CACHE_PATH, &());
        match items {
            Ok(items) if items.len() as u64 >= BIG_APP_NODES => calls += 1,
            Ok(items) => errors.push(format!("GetItems returned {} items", items.len())),
            Err(e) => errors.push(e.to_string()),
        }
    }
    (calls, errors)
}

#[test]
fn an_at_client_flooding_calls_does_not_starve_another() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge(&mut session, &[]);
    let _calm = calm_app(&socket);
    let mut big = RawSender::connect(&socket, "Big app");
    big.show_window(1, "Big window", "Item", BIG_APP_NODES - 1);
    let address = a11y_address(&session);
    let client = Client::connect(&address);
    let target = Target::find(&client, CALM_APP);
    let big_bus = client.app_bus("Big app");

    let quiet = run_mix(&client, &target, ROUNDS);
    let stop = Arc::new(AtomicBool::new(false));
    let flooder = {
        let (address, bus, stop) = (address.clone(), big_bus.clone(), stop.clone());
        std::thread::spawn(move || flood_get_items(address, bus, stop))
    };
    std::thread::sleep(Duration::from_millis(500));
    let flooded = run_mix_while(&client, &target, FLOODED_AT_LEAST, || true);
    // The flooded application itself still answers simple queries too.
    let big_target = Target::find(&client, "Big app");
    let big_flooded = run_mix(&client, &big_target, 5);
    stop.store(true, Ordering::Relaxed);
    let (calls, errors) = flooder.join().expect("the GetItems flood ends");
    let big_quiet = run_mix(&client, &big_target, 5);

    assert!(
        errors.is_empty(),
        "the flooding client's own calls failed: {errors:?}"
    );
    assert_same(&quiet, &flooded, "calm app during the GetItems flood");
    assert_same(
        &big_quiet,
        &big_flooded,
        "big app during its GetItems flood",
    );
    let (q, f) = (median(&quiet.latencies), median(&flooded.latencies));
    eprintln!(
        "isolation/at-flood: {calls} GetItems of {BIG_APP_NODES} nodes by the flooding client; \
         other client's median quiet {q:?}, flooded {f:?}, ratio {:.2}; big app's own median \
         quiet {:?}, flooded {:?}",
        ratio(f, q),
        median(&big_quiet.latencies),
        median(&big_flooded.latencies)
    );
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// Renaming every child of a wide node in one commit (regression test).
// ---------------------------------------------------------------------------------------------

/// One commit that renames every button of a 20k-node window (same root, so not a
/// replacement) is acknowledged within the usual bound and a calm app stays served. Before
/// 5a26df7 each name change walked every sibling (`relations::neighbourhood`), O(N²): 4,000
/// nodes took 10 s and 20,000 did not finish within 60 s.
#[test]
fn renaming_every_child_of_a_wide_window_is_acknowledged() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge(&mut session, &[]);
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let target = Target::find(&client, CALM_APP);
    let quiet = run_mix(&client, &target, ROUNDS);
    let mut wide = RawSender::connect(&socket, "Wide app");
    wide.show_window(1, "Wide window", "First", FLOOD_NODES - 1);
    let started = Instant::now();
    wide.commit(1, window("Wide window", "Second", FLOOD_NODES - 1));
    // RawSender::recv fails after WAIT without an answer.
    let replies = wide.sync();
    let took = started.elapsed();
    assert!(
        replies.iter().all(|m| m.get("rejected").is_none()),
        "{replies:?}"
    );
    let after = run_mix(&client, &target, ROUNDS);
    assert_same(&quiet, &after, "calm app after the wide rename");
    eprintln!("isolation/wide-rename: {FLOOD_NODES} children renamed in one commit in {took:?}");
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (f) Per-application limits: frame rate, queued bytes, allow-list, panic containment.
// ---------------------------------------------------------------------------------------------

/// The bridge's whole stderr so far (the harness's tail is too short to count lines in),
/// without terminal colour sequences.
fn bridge_log(session: &TestSession) -> String {
    let raw =
        std::fs::read_to_string(session.dir().join("logs").join("bridge.err")).unwrap_or_default();
    let mut plain = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters… final letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

/// The running bridge's `status --json` document.
fn bridge_status(session: &mut TestSession, socket: &Path) -> Value {
    let mut cmd = session.command(bridge_binary().expect("the bridge binary"));
    cmd.args(["status", "--json", "--socket"]).arg(socket);
    let out = session.run_ok("status", cmd, WAIT).expect("status answers");
    serde_json::from_str(&out).expect("status prints JSON")
}

/// Buttons in the windows of the limit tests' second application.
const BUTTONS: u64 = 10;
/// Commits the frame-rate flood sends as fast as the socket takes them.
const RATE_FLOOD_COMMITS: u64 = 3_000;

#[test]
fn commits_over_the_frame_rate_are_coalesced_and_nothing_is_lost() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge(&mut session, &["--max-fps", "10", "--fps-burst", "2"]);
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let target = Target::find(&client, CALM_APP);
    let quiet = run_mix(&client, &target, ROUNDS);

    let mut flooder = RawSender::connect(&socket, "Rate app");
    flooder.show_window(1, "Rate window", "Rate", BUTTONS);
    let started = Instant::now();
    let flood = std::thread::spawn(move || {
        for n in 0..RATE_FLOOD_COMMITS {
            let id = 2 + n % BUTTONS;
            flooder.commit(1, relabel(id, &format!("Rate {id} v{n}")));
        }
        let replies = flooder.sync();
        (flooder, replies, started.elapsed())
    });
    let flooded = run_mix_while(&client, &target, Duration::from_secs(2), || {
        flood.is_finished()
    });
    let (_flooder, replies, took) = flood.join().expect("the flooding thread ends");
    let after = run_mix(&client, &target, ROUNDS);

    // Nothing rejected, and the latest state of every button is what the AT reads.
    assert!(
        replies.iter().all(|m| m.get("rejected").is_none()),
        "commits over the frame rate were rejected: {replies:?}"
    );
    let bus = client.app_bus("Rate app");
    let (_, labels) = client.window_and_labels(&bus);
    let expected: Vec<String> = (0..BUTTONS)
        .map(|k| {
            let id = 2 + k;
            let last = (0..RATE_FLOOD_COMMITS)
                .rfind(|n| 2 + n % BUTTONS == id)
                .unwrap_or_default();
            format!("Rate {id} v{last}")
        })
        .collect();
    assert_eq!(
        labels, expected,
        "the coalesced state is not the latest one"
    );
    assert_same(&quiet, &flooded, "during the frame-rate flood");
    assert_same(&quiet, &after, "after the frame-rate flood");

    // One log line when the limit first holds commits back, then at most one per 10 s.
    let log = bridge_log(&session);
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("rule max-fps")).collect();
    assert!(!lines.is_empty(), "no max-fps log line:\n{log}");
    let bound = 1 + took.as_secs() / 10 + 1;
    assert!(
        lines.len() as u64 <= bound,
        "{} max-fps lines for {took:?} of flood:\n{}",
        lines.len(),
        lines.join("\n")
    );
    let held_back = lines
        .iter()
        .filter_map(|l| {
            l.split("held_back=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0u64);
    assert!(held_back > 0, "{lines:?}");
    let status = bridge_status(&mut session, &socket);
    let counted = status["commitsHeldBack"].as_u64().unwrap_or_default();
    assert!(counted >= held_back, "status: {status}");
    eprintln!(
        "limits/max-fps: {RATE_FLOOD_COMMITS} commits at --max-fps 10 --fps-burst 2 acknowledged \
         in {took:?}; {} max-fps log line(s), the first counting {held_back} held back; calm app \
         median quiet {:?}, flooded {:?} ({} queries), ratio {:.2}",
        lines.len(),
        median(&quiet.latencies),
        median(&flooded.latencies),
        flooded.latencies.len(),
        ratio(median(&flooded.latencies), median(&quiet.latencies))
    );
    shutdown(session);
}

#[test]
fn queued_bytes_over_the_limit_are_rejected_with_a_resync() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge(
        &mut session,
        &[
            "--max-fps",
            "1",
            "--fps-burst",
            "1",
            "--max-queued-bytes",
            "20000",
        ],
    );
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let target = Target::find(&client, CALM_APP);
    let before = run_mix(&client, &target, 3);

    let mut heavy = RawSender::connect(&socket, "Queue app");
    heavy.show_window(1, "Queue window", "Queue", BUTTONS);
    // Each relabel carries a 6,000-byte label and waits for the next frame's
    // token (one a second); three fit in 20,000 queued bytes, the fourth
    // waiting one overflows. Whether the first of the five still finds a
    // token decides whether the fourth or the fifth commit overflows.
    let long = "x".repeat(6_000);
    let mut serials = Vec::new();
    for _ in 0..5 {
        serials.push(heavy.commit(1, relabel(2, &long)));
    }
    // The sender resyncs as told, with a full tree.
    let replies = heavy.sync();
    let rejected: Vec<&Value> = replies.iter().filter_map(|m| m.get("rejected")).collect();
    assert_eq!(rejected.len(), 1, "{replies:?}");
    let rejection = rejected[0];
    assert_eq!(rejection["rule"], "queued-bytes", "{rejection}");
    assert_eq!(rejection["resync"], true, "{rejection}");
    assert!(
        rejection["serial"] == serials[3] || rejection["serial"] == serials[4],
        "{rejection}"
    );
    let reason = rejection["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("20000 bytes"), "{reason}");
    heavy.commit(1, window("Queue window", "Resynced", BUTTONS));
    let replies = heavy.sync();
    assert!(
        replies.iter().all(|m| m.get("rejected").is_none()),
        "the resync was rejected: {replies:?}"
    );
    let bus = client.app_bus("Queue app");
    let (_, labels) = client.window_and_labels(&bus);
    assert_eq!(labels.first().map(String::as_str), Some("Resynced 2"));
    assert!(bridge_log(&session).contains("queued-bytes"));
    let after = run_mix(&client, &target, 3);
    assert_same(&before, &after, "after the queued-bytes rejection");
    eprintln!("limits/queued-bytes: {rejection}");
    shutdown(session);
}

/// A sender written in Python (another executable than the test's): connects, sends a hello,
/// prints the bridge's first reply (or `closed`).
const PYTHON_SENDER: &str = r#"
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
hello = json.dumps({"protocol": 1, "encoding": "json",
                    "app": {"appId": "org.newton.isolation.python", "name": "Python app"}}).encode()
s.sendall(struct.pack("<I", len(hello)) + hello)
data = b""
while len(data) < 4 or len(data) < 4 + struct.unpack("<I", data[:4])[0]:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data[4:].decode() if len(data) >= 4 else "closed")
"#;

#[test]
fn only_allowed_executables_may_push_trees() {
    let mut session = start_session();
    let me = std::env::current_exe().expect("the test's executable");
    let me = me.to_str().expect("a UTF-8 path");
    let (bridge, socket) = start_bridge(&mut session, &["--allow-exe", me]);
    // This test executable is allowed: its app appears.
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let target = Target::find(&client, CALM_APP);
    let before = run_mix(&client, &target, 3);

    let mut python = session.command(newton_e2e::python());
    python.arg("-c").arg(PYTHON_SENDER).arg(&socket);
    let reply = session
        .run_ok("python-sender", python, WAIT)
        .expect("the python sender runs");
    let reply: Value = serde_json::from_str(reply.trim()).expect("the bridge replied in JSON");
    let reason = reply["error"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("rule allow-exe") && reason.contains("python"),
        "{reply}"
    );
    session.ensure_running(bridge).expect("the bridge runs on");
    assert!(
        !client.app_names().iter().any(|n| n == "Python app"),
        "a refused sender reached the desktop"
    );
    let log = bridge_log(&session);
    assert!(
        log.lines()
            .any(|l| l.contains("refused a sender") && l.contains("allow-exe")),
        "no refusal log line"
    );
    let status = bridge_status(&mut session, &socket);
    assert_eq!(status["sendersRefused"], 1, "status: {status}");
    let after = run_mix(&client, &target, 3);
    assert_same(&before, &after, "after the refusal");
    eprintln!("limits/allow-exe: refused with: {reason}");
    shutdown(session);
}

/// The label the bridge's debug-build test hook panics on (set in the bridge's environment).
const PANIC_LABEL: &str = "isolation-test-panic";

#[test]
fn a_panic_in_one_application_resets_only_that_application() {
    let mut session = start_session();
    let (bridge, socket) = start_bridge_with_env(
        &mut session,
        &[],
        &[("NEWTON_ATSPI_TEST_PANIC_ON_LABEL", PANIC_LABEL)],
    );
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let target = Target::find(&client, CALM_APP);
    let before = run_mix(&client, &target, ROUNDS);

    let mut victim = RawSender::connect(&socket, "Victim app");
    victim.show_window(1, "Victim window", "Victim", BUTTONS);
    victim.create_surface(2, "Victim dialog");
    victim.commit(2, window("Victim dialog", "Dialog", 2));
    assert!(victim.sync().iter().all(|m| m.get("rejected").is_none()));
    let victim_bus = client.app_bus("Victim app");
    assert_eq!(
        client.children(&victim_bus, ROOT).map(|c| c.len()).ok(),
        Some(2)
    );

    // The hook panics while applying this commit, under the application's lock.
    let serial = victim.commit(1, relabel(2, PANIC_LABEL));
    let replies = victim.sync();
    let rejected: Vec<&Value> = replies.iter().filter_map(|m| m.get("rejected")).collect();
    assert_eq!(
        rejected.len(),
        2,
        "one resync request per surface: {replies:?}"
    );
    for rejection in &rejected {
        assert_eq!(rejection["rule"], "internal-error", "{rejection}");
        assert_eq!(rejection["resync"], true, "{rejection}");
    }
    let failed = rejected
        .iter()
        .find(|r| r["surface"] == 1)
        .expect("surface 1 rejected");
    assert_eq!(failed["serial"], serial);

    // The bridge and the other application go on untouched.
    session.ensure_running(bridge).expect("the bridge survived");
    let during = run_mix(&client, &target, ROUNDS);
    assert_same(&before, &during, "after the other application's panic");
    // The victim stays on the desktop under the same name, with no window until it resyncs.
    assert_eq!(client.app_bus("Victim app"), victim_bus);
    wait_until("the reset windows to leave", WAIT, || {
        Ok(client
            .children(&victim_bus, ROOT)
            .map(|c| c.is_empty())
            .unwrap_or(false))
    })
    .expect("the reset application has no windows");
    // An incremental update is refused now: a full tree is needed.
    victim.commit(1, relabel(2, "Too early"));
    let replies = victim.sync();
    assert!(
        replies.iter().any(|m| m["rejected"]["resync"] == true),
        "{replies:?}"
    );
    // The resync brings it back; its lock works (it was poisoned by the panic).
    victim.commit(1, window("Victim window", "Again", BUTTONS));
    victim.commit(2, window("Victim dialog", "Dialog again", 2));
    let replies = victim.sync();
    assert!(
        replies.iter().all(|m| m.get("rejected").is_none()),
        "the resync was rejected: {replies:?}"
    );
    let (_, labels) = client.window_and_labels(&victim_bus);
    assert_eq!(labels.first().map(String::as_str), Some("Again 2"));

    // A full tree with another root is built off the lock, on a blocking thread: a panic there
    // is contained the same way.
    let serial = victim.commit(1, window_rooted_at(500, PANIC_LABEL, "Victim", 2));
    let replies = victim.sync();
    let rejected: Vec<&Value> = replies.iter().filter_map(|m| m.get("rejected")).collect();
    assert_eq!(rejected.len(), 2, "{replies:?}");
    assert!(
        rejected
            .iter()
            .all(|r| r["rule"] == "internal-error" && r["resync"] == true),
        "{replies:?}"
    );
    assert!(rejected
        .iter()
        .any(|r| r["surface"] == 1 && r["serial"] == serial));
    session.ensure_running(bridge).expect("the bridge survived");
    victim.commit(1, window("Victim window", "Third", BUTTONS));
    let replies = victim.sync();
    assert!(
        replies.iter().all(|m| m.get("rejected").is_none()),
        "the second resync was rejected: {replies:?}"
    );
    let (_, labels) = client.window_and_labels(&victim_bus);
    assert_eq!(labels.first().map(String::as_str), Some("Third 2"));
    let after = run_mix(&client, &target, ROUNDS);
    assert_same(&before, &after, "after the reset");
    let log = bridge_log(&session);
    assert!(log.contains("internal error (panic)"), "no error line");
    assert!(log.contains("application reset"), "no reset line");
    eprintln!(
        "limits/panic: victim reset with {} resync requests; calm app answered {} queries \
         unchanged",
        rejected.len(),
        during.latencies.len()
    );
    shutdown(session);
}
