//! Memory after applications leave: rounds of many applications attaching
//! a list each, then all leaving; the bridge's RSS once they are gone, next
//! to its RSS before the first round. Run twice side by side: the bridge as
//! shipped (it calls `malloc_trim` after departures, bridge/src/memory.rs)
//! and with `NEWTON_ATSPI_NO_MALLOC_TRIM=1`, so the ratio shows what the
//! trim gives back and what glibc's arenas would hold otherwise.
//!
//! `newton-bench --memory-rounds [ROUNDS APPS NODES]` (default 10 100 5000).
//!
//! `newton-bench --memory-check [ROUNDS APPS NODES]` (default 3 10 5000, CI runs it): the
//! shipped configuration alone, no gdb; fails when the RSS after the last round is over
//! [`CHECK_RATIO`] × the RSS at start (a ratio measured in one run, never an absolute size).

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use newton_producer::replay::{replay_into, ReplayOptions, Timing};
use newton_producer::Sender;
use newton_push_protocol::Encoding;
use serde::Serialize;

use crate::procfs::{memory_parts, rss_bytes, MemoryParts};
use crate::world::World;
use crate::{fail, fixtures, Result};

/// What one configuration measured.
#[derive(Debug, Serialize)]
pub struct Rounds {
    pub trim: bool,
    /// The bridge's extra environment.
    pub env: Vec<String>,
    pub rounds: usize,
    pub apps: usize,
    pub nodes_per_app: usize,
    pub rss_start: u64,
    /// RSS with every application of the round attached.
    pub rss_loaded: Vec<u64>,
    /// RSS after the round's applications left and the bridge settled.
    pub rss_after: Vec<u64>,
    /// Where the RSS is, at start and after each round (see [`MemoryParts`]).
    pub parts_start: MemoryParts,
    pub parts_after: Vec<MemoryParts>,
    /// glibc's own count (`malloc_stats`, called in the bridge through gdb) at start and after
    /// the first and the last round: `None` when gdb is missing or cannot attach.
    pub malloc_start: Option<MallocTotals>,
    pub malloc_first: Option<MallocTotals>,
    pub malloc_last: Option<MallocTotals>,
    pub seconds: f64,
}

/// `malloc_stats()`'s totals: what glibc took from the system and what is allocated.
#[derive(Debug, Clone, Serialize)]
pub struct MallocTotals {
    pub arenas: usize,
    /// "system bytes" of every arena plus mmapped blocks.
    pub system: u64,
    /// "in use bytes": live allocations.
    pub in_use: u64,
}

/// Calls `malloc_stats()` inside the bridge (gdb, batch mode: it stops the process for the
/// call) and parses what it prints on the bridge's stderr.
fn malloc_totals(world: &World) -> Option<MallocTotals> {
    let log = world.session.dir().join("logs/bridge.err");
    let before = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) as usize;
    let status = std::process::Command::new("gdb")
        .args(["-p", &world.bridge_pid.to_string(), "-batch", "-nx", "-q"])
        .args(["-ex", "call (void)malloc_stats()"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let text = std::fs::read_to_string(&log).ok()?;
    let printed = text.get(before..)?;
    let number = |line: &str| line.rsplit('=').next()?.trim().parse::<u64>().ok();
    let arenas = printed.lines().filter(|l| l.starts_with("Arena ")).count();
    let total = printed.split("Total (incl. mmap):").nth(1)?;
    let mut lines = total.lines().filter(|l| l.contains('='));
    let system = number(lines.next()?)?;
    let in_use = number(lines.next()?)?;
    Some(MallocTotals {
        arenas,
        system,
        in_use,
    })
}

impl Rounds {
    pub fn final_ratio(&self) -> f64 {
        self.rss_after.last().copied().unwrap_or(0) as f64 / self.rss_start.max(1) as f64
    }
}

/// Time after the last departure ended (no application listed, no sender connection open) for
/// the bridge's trim, which waits 1 s after a departure ends.
const SETTLE: Duration = Duration::from_secs(3);

pub fn run(files: PathBuf, rounds: usize, apps: usize, nodes: usize) -> Result<Vec<Rounds>> {
    let mut out = Vec::new();
    // Shipped (trim, and glibc held to two arenas: bridge/src/memory.rs); the trim with glibc's
    // default arena cap on 2 cores (8 × cores: one arena per thread that ever allocated); no
    // trim.
    let configs: [(bool, &[(&str, &str)]); 3] = [
        (true, &[]),
        (true, &[("MALLOC_ARENA_MAX", "16")]),
        (false, &[("NEWTON_ATSPI_NO_MALLOC_TRIM", "1")]),
    ];
    for (trim, env) in configs {
        let world = World::start_with_env(files.clone(), env)?;
        let mut result = measure(&world, trim, rounds, apps, nodes, true)?;
        result.env = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push(result);
    }
    Ok(out)
}

/// The bound `--memory-check` holds the bridge to: RSS after the applications left, over RSS at
/// start (issue 14: "back within 2× of start").
pub const CHECK_RATIO: f64 = 2.0;

/// `--memory-check`: the bridge as shipped (no environment: its own `M_ARENA_MAX` and trim),
/// `rounds` rounds; an error naming the figures when the final ratio is over [`CHECK_RATIO`].
pub fn check(files: PathBuf, rounds: usize, apps: usize, nodes: usize) -> Result<Rounds> {
    let world = World::start_with_env(files, &[])?;
    let result = measure(&world, true, rounds, apps, nodes, false)?;
    let ratio = result.final_ratio();
    if ratio > CHECK_RATIO {
        return Err(fail(format!(
            "memory not returned: RSS {:.1} MB after {rounds} rounds of {apps} applications × \
             {nodes} nodes left, {ratio:.2}× the {:.1} MB at start (bound {CHECK_RATIO}×); \
             see docs/benchmarks.md \"Memory after applications leave\"",
            result.rss_after.last().copied().unwrap_or(0) as f64 / 1e6,
            result.rss_start as f64 / 1e6
        )));
    }
    Ok(result)
}

/// One line for the test summary.
pub fn check_line(r: &Rounds) -> String {
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1e6);
    format!(
        "bridge RSS start {}, loaded {} (last round), after {} rounds of {} apps × {} nodes left {}: \
         {:.2}× start (bound {CHECK_RATIO}×), {:.0} s",
        mb(r.rss_start),
        r.rss_loaded.last().map_or("n/a".into(), |b| mb(*b)),
        r.rounds,
        r.apps,
        r.nodes_per_app,
        r.rss_after.last().map_or("n/a".into(), |b| mb(*b)),
        r.final_ratio(),
        r.seconds
    )
}

fn measure(
    world: &World,
    trim: bool,
    rounds: usize,
    apps: usize,
    nodes: usize,
    with_gdb: bool,
) -> Result<Rounds> {
    let malloc_totals = |world: &World| with_gdb.then(|| malloc_totals(world)).flatten();
    let started = Instant::now();
    std::thread::sleep(SETTLE);
    let mut result = Rounds {
        trim,
        env: Vec::new(),
        rounds,
        apps,
        nodes_per_app: nodes,
        rss_start: rss_bytes(world.bridge_pid)?,
        rss_loaded: Vec::new(),
        rss_after: Vec::new(),
        parts_start: memory_parts(world.bridge_pid)?,
        parts_after: Vec::new(),
        malloc_start: malloc_totals(world),
        malloc_first: None,
        malloc_last: None,
        seconds: 0.0,
    };
    let stream = fixtures::list(nodes.saturating_sub(2).max(1));
    for round in 0..rounds {
        let mut senders = Vec::with_capacity(apps);
        for index in 0..apps {
            let named = stream.renamed(&format!("rounds {round}.{index}"));
            senders.push(attach(&world.socket, &named)?);
        }
        result.rss_loaded.push(rss_bytes(world.bridge_pid)?);
        drop(senders);
        wait_for_departures(&world.socket)?;
        std::thread::sleep(SETTLE);
        let after = rss_bytes(world.bridge_pid)?;
        eprintln!(
            "  trim {trim}: round {} loaded {} MB, after {} MB (start {} MB)",
            round + 1,
            result.rss_loaded[round] / 1_000_000,
            after / 1_000_000,
            result.rss_start / 1_000_000
        );
        result.rss_after.push(after);
        result.parts_after.push(memory_parts(world.bridge_pid)?);
        if round == 0 {
            result.malloc_first = malloc_totals(world);
        }
    }
    result.malloc_last = malloc_totals(world);
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

fn attach(socket: &Path, stream: &fixtures::Stream) -> Result<Sender> {
    let mut hello = stream.hello()?;
    hello.encoding = Encoding::Postcard;
    let sender = Sender::connect(socket, hello)
        .map_err(|e| fail(format!("cannot connect a sender: {e}")))?;
    let options = ReplayOptions {
        timing: Timing::AsFastAsPossible,
        wait_for_acks: Some(Duration::from_secs(60)),
        encoding: None,
        skip_goodbye: true,
    };
    let summary = replay_into(&sender, &stream.lines, options)
        .map_err(|e| fail(format!("attaching {} failed: {e}", stream.name)))?;
    if !summary.rejections.is_empty() {
        return Err(fail(format!("rejected: {:?}", summary.rejections.first())));
    }
    Ok(sender)
}

/// Waits until the status lists no application *and* no sender connection is still open. The
/// bridge takes an application off the list first and then shuts it down (clears the replica,
/// leaves the registry, closes its bus connection); its trim follows the end of that shutdown,
/// so the list alone can read empty a while before the memory is freed and trimmed.
fn wait_for_departures(socket: &Path) -> Result<()> {
    let mut status = socket.as_os_str().to_owned();
    status.push(".status");
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let mut text = String::new();
        if let Ok(mut stream) = UnixStream::connect(&status) {
            let _ = stream.read_to_string(&mut text);
        }
        let document = serde_json::from_str::<serde_json::Value>(&text).ok();
        let count = |value: Option<&serde_json::Value>| value.and_then(|v| v.as_u64());
        let apps = count(document.as_ref().map(|v| &v["totals"]["apps"]));
        let senders = count(document.as_ref().map(|v| &v["senders"]));
        if apps == Some(0) && senders == Some(0) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(fail(
        "the applications did not leave within 120 s (status still lists applications or open sender connections)",
    ))
}

/// The Markdown table for docs/benchmarks.md.
pub fn markdown(results: &[Rounds]) -> String {
    let mut out = String::from(
        "| malloc_trim | start | after round 1 | after round 5 | after last round | loaded (last round) | last / start |\n|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        let mb = |b: u64| format!("{:.1} MB", b as f64 / 1e6);
        let at = |i: usize| r.rss_after.get(i).map_or("n/a".into(), |b| mb(*b));
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:.2}× |\n",
            label(r),
            mb(r.rss_start),
            at(0),
            at(4),
            at(r.rss_after.len().saturating_sub(1)),
            r.rss_loaded.last().map_or("n/a".into(), |b| mb(*b)),
            r.final_ratio()
        ));
    }
    out.push_str(
        "\n| malloc_trim | when | RSS anon | RSS file | main heap | other anon | threads | glibc arenas | glibc system bytes | glibc in use |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1e6);
    for r in results {
        let trim = label(r);
        let last = r.parts_after.len().saturating_sub(1);
        let rows = [
            ("start", Some(&r.parts_start), r.malloc_start.as_ref()),
            (
                "after round 1",
                r.parts_after.first(),
                r.malloc_first.as_ref(),
            ),
            (
                "after last round",
                r.parts_after.get(last),
                r.malloc_last.as_ref(),
            ),
        ];
        for (when, parts, malloc) in rows {
            let Some(p) = parts else { continue };
            let (arenas, system, in_use) = malloc.map_or(
                ("n/a".to_owned(), "n/a".to_owned(), "n/a".to_owned()),
                |m| (m.arenas.to_string(), mb(m.system), mb(m.in_use)),
            );
            out.push_str(&format!(
                "| {trim} | {when} | {} | {} | {} | {} | {} | {arenas} | {system} | {in_use} |\n",
                mb(p.anon),
                mb(p.file),
                mb(p.main_heap),
                mb(p.other_anon),
                p.threads
            ));
        }
    }
    out
}

/// The configuration's name in the tables.
fn label(r: &Rounds) -> String {
    match (r.trim, r.env.is_empty()) {
        (true, true) => "on (shipped)".to_owned(),
        (true, false) => format!("on, {}", r.env.join(" ")),
        (false, _) => "off".to_owned(),
    }
}
