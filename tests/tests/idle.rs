//! No AT, no cost — measured. With the launcher in `--a11y=0` mode and no event listener, a
//! sender that ignores `updatesUnwanted` pushes one relabel every 100 ms for about 5 s, then
//! stays connected and silent for about 5 s. The bridge's CPU time (utime+stime of
//! /proc/PID/stat) and its context switches (voluntary+nonvoluntary, summed over every thread in
//! /proc/PID/task) are read around each window and printed per second.
//!
//! The only assertion on the figures: while no sender sends anything the bridge must not wake
//! up (≤ 2 wakeups per second averaged over the window, i.e. no periodic work). CPU time is
//! printed, never asserted (speed belongs in docs/benchmarks.md).
//!
//! Run with `cargo test -p newton-e2e --test idle -- --include-ignored --nocapture` after
//! `cargo build -p newton-atspi-bridge`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use newton_e2e::raw_sender::as_received;
use newton_e2e::{bridge_binary, wait_until, BusClient, SessionOptions, TestSession};
use newton_push_protocol::{BridgeMessage, SurfaceId};

const WAIT: Duration = Duration::from_secs(60);
/// Unused here; the shared support module's query mix wants it.
const ROUNDS: usize = 1;

mod support;
use support::{relabel, RawSender};
const PUSH_INTERVAL: Duration = Duration::from_millis(100);
const PUSHES: u32 = 50;
const IDLE_WINDOW: Duration = Duration::from_secs(5);
/// Let the last push's work (events, replies) finish before the idle window starts.
const SETTLE: Duration = Duration::from_secs(1);
const MAX_IDLE_WAKEUPS_PER_SECOND: f64 = 2.0;
/// /proc reports process times in USER_HZ, 100 on every Linux architecture Debian ships.
const USER_HZ: f64 = 100.0;

/// The bridge's counters at one instant.
#[derive(Clone, Debug)]
struct Sample {
    at: Instant,
    cpu_ticks: u64,
    switches: u64,
    threads: usize,
    /// Context switches per live thread: tid → (thread name, count).
    per_thread: BTreeMap<String, (String, u64)>,
}

/// utime+stime (all threads) and context switches summed over the live threads.
fn sample(pid: u32) -> Sample {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("bridge /proc stat");
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // Fields after the command name start at field 3 (state); utime is 14, stime 15.
    let field = |n: usize| -> u64 {
        fields
            .get(n - 3)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("/proc/{pid}/stat field {n} in {stat}"))
    };
    let mut per_thread = BTreeMap::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("bridge /proc task");
    for task in tasks.filter_map(|t| t.ok()) {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue; // the thread ended meanwhile
        };
        let name = status
            .lines()
            .find_map(|l| l.strip_prefix("Name:"))
            .unwrap_or_default()
            .trim()
            .to_owned();
        let count = status
            .lines()
            .filter(|l| {
                l.starts_with("voluntary_ctxt_switches")
                    || l.starts_with("nonvoluntary_ctxt_switches")
            })
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
        per_thread.insert(
            task.file_name().to_string_lossy().into_owned(),
            (name, count),
        );
    }
    Sample {
        at: Instant::now(),
        cpu_ticks: field(14) + field(15),
        switches: per_thread.values().map(|(_, n)| n).sum(),
        threads: per_thread.len(),
        per_thread,
    }
}

/// Which threads woke up between two samples (threads born meanwhile count from zero), most
/// first: "name (tid): count".
fn wakers(before: &Sample, after: &Sample) -> Vec<String> {
    let mut woke: Vec<(u64, String)> = after
        .per_thread
        .iter()
        .map(|(tid, (name, count))| {
            let earlier = before.per_thread.get(tid).map_or(0, |(_, n)| *n);
            (count.saturating_sub(earlier), format!("{name} ({tid})"))
        })
        .filter(|(n, _)| *n > 0)
        .collect();
    woke.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    woke.into_iter()
        .map(|(n, who)| format!("{who}: {n}"))
        .collect()
}

/// Rates over one window.
#[derive(Debug)]
struct Window {
    seconds: f64,
    wakeups: u64,
    cpu_ms: f64,
}

impl Window {
    fn between(before: &Sample, after: &Sample) -> Window {
        Window {
            seconds: after.at.duration_since(before.at).as_secs_f64(),
            wakeups: after.switches.saturating_sub(before.switches),
            cpu_ms: after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 * 1000.0 / USER_HZ,
        }
    }

    fn wakeups_per_second(&self) -> f64 {
        self.wakeups as f64 / self.seconds
    }

    fn cpu_ms_per_second(&self) -> f64 {
        self.cpu_ms / self.seconds
    }

    fn print(&self, name: &str, threads: usize) {
        println!(
            "{name}: {:.2} s, {} context switches = {:.1} wakeups/s, {:.0} ms CPU = {:.1} ms CPU/s ({threads} threads)",
            self.seconds,
            self.wakeups,
            self.wakeups_per_second(),
            self.cpu_ms,
            self.cpu_ms_per_second()
        );
    }
}

#[test]
fn no_at_no_cost_bridge_sleeps_while_senders_are_silent() {
    let options = SessionOptions {
        xvfb: false,
        atspi: false,
        ready_timeout: WAIT,
    };
    let mut session = TestSession::start(options).expect("start the private session bus");
    let a11y_address = start_a11y_without_at(&mut session);
    let socket = session.dir().join("rt/newton-atspi/bridge.sock");
    let bridge = start_bridge(&mut session, &socket);
    assert_no_at(&a11y_address, &session);

    let mut sender = RawSender::connect(&socket, "Chatty app");
    let messages = sender.show_window(1, "Chatty", "Count", 1);
    assert!(
        messages.contains(&as_received(&BridgeMessage::UpdatesUnwanted {
            surface: SurfaceId(1)
        })),
        "precondition: no AT, so the surface is unwanted; got {messages:?}"
    );

    let busy_start = sample(bridge);
    for n in 0..PUSHES {
        let tick = Instant::now();
        sender.commit(1, relabel(2, &format!("Count {n}")));
        std::thread::sleep(PUSH_INTERVAL.saturating_sub(tick.elapsed()));
    }
    let replies = sender.sync();
    assert!(
        replies.iter().all(|m| m.get("rejected").is_none()),
        "rejected: {replies:?}"
    );
    let busy_end = sample(bridge);

    std::thread::sleep(SETTLE);
    let idle_start = sample(bridge);
    std::thread::sleep(IDLE_WINDOW);
    let idle_end = sample(bridge);

    let busy = Window::between(&busy_start, &busy_end);
    let idle = Window::between(&idle_start, &idle_end);
    let idle_wakers = wakers(&idle_start, &idle_end);
    println!("no AT (--a11y=0, no listeners), bridge pid {bridge}:");
    busy.print(
        &format!(
            "  pushing ({PUSHES} relabels, one per {} ms)",
            PUSH_INTERVAL.as_millis()
        ),
        busy_end.threads,
    );
    idle.print("  silent sender", idle_end.threads);
    println!("  threads that woke while the sender was silent: {idle_wakers:?}");

    session
        .ensure_running(bridge)
        .expect("bridge still running");
    assert!(
        idle.wakeups_per_second() <= MAX_IDLE_WAKEUPS_PER_SECOND,
        "the bridge woke up {} times in {:.1} s with no sender traffic and no AT: periodic work \
         in {idle_wakers:?}",
        idle.wakeups,
        idle.seconds
    );
    drop(sender);
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}

/// at-spi-bus-launcher `--a11y=0` (IsEnabled false) and a registry; returns the bus address.
fn start_a11y_without_at(session: &mut TestSession) -> String {
    let (_, address) = session
        .start_a11y_bus("at-spi-bus-launcher", false)
        .expect("the launcher claims org.a11y.Bus");
    session
        .start_registry("at-spi2-registryd", &address)
        .expect("registry up");
    address
}

/// The measured state really has no AT: IsEnabled false and no registered listener.
fn assert_no_at(a11y_address: &str, session: &TestSession) {
    let enabled =
        newton_atspi_client::private_session::is_enabled(session.session_bus_address()).ok();
    assert_eq!(enabled, Some(false), "IsEnabled");
    let a11y = BusClient::connect(a11y_address).expect("a11y bus");
    let listeners = a11y.registered_events().expect("GetRegisteredEvents");
    assert!(listeners.is_empty(), "no event listeners: {listeners:?}");
}

/// The bridge as a desktop runs it (info logging, bus found through org.a11y.Bus).
fn start_bridge(session: &mut TestSession, socket: &Path) -> u32 {
    let mut cmd = session.command(bridge_binary().expect("bridge binary"));
    cmd.arg("serve")
        .arg("--socket")
        .arg(socket)
        .args(["--log-level", "info"])
        .env_remove("AT_SPI_BUS_ADDRESS");
    let pid = session.spawn("bridge", cmd).expect("start the bridge");
    let log = session.dir().join("logs/bridge.err");
    wait_until("the bridge to be ready", WAIT, || {
        session.ensure_running(pid)?;
        Ok(std::fs::read_to_string(&log).is_ok_and(|l| l.contains("ready: waiting for senders")))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", session.stderr_of("bridge")));
    pid
}
