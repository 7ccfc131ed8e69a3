//! A bounded soak: several senders keep large trees changing steadily while two AT clients walk
//! and query every application. Zero errors on either side, and the bridge's memory stays
//! bounded once the trees are loaded. Figures (commits, calls, RSS over time) are printed.
//!
//! Defaults are short (5 senders × 2,000 nodes for 20 s). The documented full run:
//! `NEWTON_SOAK_SENDERS=20 NEWTON_SOAK_NODES=5000 NEWTON_SOAK_SECONDS=120 cargo test -p newton-e2e
//! --test soak -- --nocapture` (seconds are capped at 120). Needs `cargo build -p
//! newton-atspi-bridge` first. No Xvfb, no Orca.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use newton_e2e::wait_until;
use serde_json::Value;

/// Bound for every wait: generous, the machine is shared.
const WAIT: Duration = Duration::from_secs(120);
/// Repetitions of the query mix per pass.
const ROUNDS: usize = 10;

mod support;
use support::*;

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
    let mut sender = RawSender::connect_within(&socket, &name, WAIT);
    sender.show_window(1, &format!("{name} window"), "Row", nodes - 1);
    shown.fetch_add(1, Ordering::Relaxed);
    let (mut commits, mut rejected) = (1u64, Vec::new());
    while !stop.load(Ordering::Relaxed) {
        let nodes_in_update = (0..RELABELS_PER_COMMIT)
            .map(|k| {
                let id = 2 + (commits * RELABELS_PER_COMMIT + k) % (nodes - 1);
                (
                    accesskit::NodeId(id),
                    button(&format!("Row {id} v{commits}")),
                )
            })
            .collect();
        sender.commit(1, tree_update(1, nodes_in_update, false));
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
                let role: zbus::Result<u32> = client.call(&accessible::GET_ROLE, bus, row, &());
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
        // At least one whole pass over every app (its windows and rows): a walker that never
        // got going would make the soak vacuous.
        assert!(
            made >= 2 * senders,
            "an AT walker made only {made} call(s) in {seconds} s"
        );
        calls += made;
    }
    stop.store(true, Ordering::Relaxed);
    let mut commits = 0;
    for thread in sender_threads {
        let (sent, rejected) = thread.join().expect("a sender thread");
        assert!(rejected.is_empty(), "rejections: {rejected:?}");
        // The first tree plus steady relabels: at least one relabel commit per sender.
        assert!(
            sent >= 2,
            "a sender made only {sent} commit(s) in {seconds} s"
        );
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
