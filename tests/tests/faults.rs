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

use std::path::Path;
use std::time::{Duration, Instant};

use newton_e2e::{wait_until, TestSession};

/// Bound for every wait: generous, the machine is shared.
const WAIT: Duration = Duration::from_secs(60);
/// Repetitions of the query mix per pass.
const ROUNDS: usize = 10;

mod support;
use support::*;

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
    let payload = serde_json::to_vec(&newton_push_protocol::SenderMessage::Update {
        surface: newton_push_protocol::SurfaceId(1),
        update: relabel(2, "Never arrives"),
    })
    .expect("JSON encodes");
    let half = payload.len() / 2;
    let frame = newton_e2e::raw_sender::frame(&payload);
    let torn = frame.get(..4 + half).expect("a whole frame");
    stalled.write_bytes(torn);
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
        let reply = client.call(
            &calls::action::DO_ACTION,
            &deaf_target.bus,
            &deaf_target.button,
            &(0,),
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
