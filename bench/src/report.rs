//! Results: the JSON document, the markdown tables (with each issue target met or not), and
//! the latency-vs-size plot.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use crate::idle::Idle;
use crate::memory::Memory;
use crate::orca::PhaseResult;
use crate::pywalk::{ListWalks, PyWalk};
use crate::queries::{FrozenRow, SizeQueries};
use crate::stats::Summary;
use crate::updates::Updates;
use crate::walks::Walk;
use crate::{fail, Config, Result};

/// accesskit_unix's cost per node as the issue states it, used when the legacy reference is
/// not built.
const LEGACY_BYTES_PER_NODE_STATED: f64 = 3072.0;

#[derive(Debug, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub load_average_at_start: String,
    pub kernel: String,
    pub git_commit: String,
}

#[derive(Debug, Serialize)]
pub struct Results {
    pub config: Config,
    pub machine: Machine,
    pub bridge_binary: String,
    pub legacy_built: bool,
    pub peer_to_peer: &'static str,
    pub queries: Vec<SizeQueries>,
    pub frozen_nodes: usize,
    pub frozen: Vec<FrozenRow>,
    pub walks: Vec<Walk>,
    pub atspi_walks: Vec<ListWalks>,
    pub updates: Vec<Updates>,
    pub memory: Vec<Memory>,
    pub idle: Option<Idle>,
    /// Bridge restart → application back on the desktop (restart.rs).
    pub restart: Vec<crate::restart::RestartRow>,
    pub orca: Vec<PhaseResult>,
    pub total_seconds: f64,
}

impl Results {
    pub fn new(config: &Config) -> Results {
        Results {
            config: config.clone(),
            machine: machine(),
            bridge_binary: String::new(),
            legacy_built: crate::world::legacy_binary().is_some(),
            peer_to_peer: "measured when the bridge answers GetApplicationBusAddress",
            queries: Vec::new(),
            frozen_nodes: 0,
            frozen: Vec::new(),
            walks: Vec::new(),
            atspi_walks: Vec::new(),
            updates: Vec::new(),
            memory: Vec::new(),
            idle: None,
            restart: Vec::new(),
            orca: Vec::new(),
            total_seconds: 0.0,
        }
    }
}

fn machine() -> Machine {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let git = std::process::Command::new("git")
        .args(["-C", &newton_e2e::workspace_root().display().to_string()])
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    Machine {
        nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model,
        load_average_at_start: read("/proc/loadavg").trim().to_owned(),
        kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
        git_commit: git,
    }
}

/// Writes results.json, results.md and latency-vs-size.svg into `out`; returns their paths.
pub fn write(results: &Results, out: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(out)
        .map_err(|e| fail(format!("cannot create {}: {e}", out.display())))?;
    let json = out.join("results.json");
    let md = out.join("results.md");
    let svg = out.join("latency-vs-size.svg");
    let text = serde_json::to_string_pretty(results).map_err(|e| fail(e.to_string()))?;
    std::fs::write(&json, text)
        .map_err(|e| fail(format!("cannot write {}: {e}", json.display())))?;
    std::fs::write(&md, markdown(results))
        .map_err(|e| fail(format!("cannot write {}: {e}", md.display())))?;
    plot(results, &svg)?;
    Ok([json, md, svg]
        .iter()
        .map(|p| p.display().to_string())
        .collect())
}

fn us(value: f64) -> String {
    format!("{value:.1}")
}

fn opt<T>(value: Option<T>, f: impl Fn(T) -> String, legacy_built: bool) -> String {
    match value {
        Some(v) => f(v),
        None if legacy_built => "n/a".into(),
        None => "n/a (not built)".into(),
    }
}

fn x(value: Option<f64>) -> String {
    value.map_or("n/a".into(), |v| format!("{v:.2}×"))
}

fn bytes(value: u64) -> String {
    format!("{:.1} MiB", value as f64 / 1_048_576.0)
}

/// Every table, then the targets.
pub fn markdown(r: &Results) -> String {
    let mut s = String::new();
    let m = &r.machine;
    let _ = writeln!(
        s,
        "Machine: {} × {} (nproc {}), kernel {}, load at start {}; commit {}; {} run, {:.0} s.\n",
        m.nproc,
        m.cpu_model,
        m.nproc,
        m.kernel,
        m.load_average_at_start,
        m.git_commit,
        if r.config.smoke { "smoke" } else { "full" },
        r.total_seconds
    );
    query_tables(r, &mut s);
    frozen_table(r, &mut s);
    walk_table(r, &mut s);
    atspi_walk_table(r, &mut s);
    update_table(r, &mut s);
    memory_table(r, &mut s);
    idle_table(r, &mut s);
    restart_table(r, &mut s);
    orca_table(r, &mut s);
    targets_table(r, &mut s);
    s
}

fn summary_cells(s: Option<Summary>, built: bool) -> (String, String) {
    match s.filter(|s| s.samples > 0) {
        Some(s) => (us(s.median_us), us(s.p99_us)),
        None => (opt(None::<f64>, us, built), opt(None::<f64>, us, built)),
    }
}

fn query_tables(r: &Results, s: &mut String) {
    let built = r.legacy_built;
    for size in &r.queries {
        let _ = writeln!(
            s,
            "### Query latency, {} ({} nodes, {} iterations), µs\n\n\
             | Query | bridge median | bridge p99 | floor (Ping) median | floor p99 | bridge/floor median | bridge/floor p99 | legacy median | legacy p99 | legacy/floor median | P2P median | P2P p99 | P2P Ping median | P2P Ping p99 | P2P/P2P Ping median | P2P/P2P Ping p99 | errors bridge/legacy/P2P |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            size.fixture, size.nodes, size.iterations
        );
        for row in &size.rows {
            let (lm, lp) = summary_cells(row.legacy, built);
            let (p2m, p2p) = summary_cells(row.p2p, true);
            let (pfm, pfp) = summary_cells(row.p2p_floor, true);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{}/{} |",
                row.query.label(),
                us(row.bridge.median_us),
                us(row.bridge.p99_us),
                us(row.floor.median_us),
                us(row.floor.p99_us),
                x(row.median_ratio),
                x(row.p99_ratio),
                lm,
                lp,
                x(row.legacy_median_ratio),
                p2m,
                p2p,
                pfm,
                pfp,
                x(row.p2p_median_ratio),
                x(row.p2p_p99_ratio),
                row.bridge_errors,
                if row.legacy.is_some() {
                    row.legacy_errors.to_string()
                } else {
                    "–".into()
                },
                if row.p2p.is_some() {
                    row.p2p_errors.to_string()
                } else {
                    "–".into()
                },
            );
        }
        for row in &size.rows {
            for (who, error) in [("bridge", &row.bridge_error), ("legacy", &row.legacy_error)] {
                if let Some(error) = error {
                    let _ = writeln!(s, "- {} on {who}: {error}", row.query.label());
                }
            }
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "### Latency vs tree size (median of the nine query medians), µs\n\n\
         | Nodes | bridge | floor (Ping) | legacy | bridge P2P | P2P Ping |\n|---|---|---|---|---|---|"
    );
    for size in &r.queries {
        let t = size.typical();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            size.nodes,
            us(t.bridge),
            us(t.floor),
            opt(t.legacy, us, built),
            opt(t.p2p, us, true),
            opt(t.p2p_floor, us, true)
        );
    }
    s.push('\n');
}

fn frozen_table(r: &Results, s: &mut String) {
    let _ = writeln!(
        s,
        "### Frozen producer (replay child SIGSTOPped), document of {} nodes, µs\n\n\
         | Query | unfrozen median | unfrozen p99 | frozen median | frozen p99 | frozen/unfrozen | errors (frozen) |\n\
         |---|---|---|---|---|---|---|",
        r.frozen_nodes
    );
    for row in &r.frozen {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.query.label(),
            us(row.unfrozen.median_us),
            us(row.unfrozen.p99_us),
            us(row.frozen.median_us),
            us(row.frozen.p99_us),
            x(row.ratio),
            row.frozen_errors + row.unfrozen_errors
        );
    }
    s.push('\n');
}

fn walk_table(r: &Results, s: &mut String) {
    let _ = writeln!(
        s,
        "### Walks (list fixtures; GetChildren + Name + GetRole + GetState per node)\n\n\
         | Nodes | walk (s) | µs per node | µs per call: GetChildren / Name / GetRole / GetState | walk errors | Cache.GetItems (s) | items |\n|---|---|---|---|---|---|---|"
    );
    for (walk, mem) in r.walks.iter().zip(&r.memory) {
        let _ = writeln!(
            s,
            "| {} | {:.2} | {:.1} | {} | {} | {} | {} |",
            mem.nodes,
            walk.walk_s,
            walk.walk_us_per_node,
            walk.mean_us_by_member
                .iter()
                .map(|(_, us)| format!("{us:.0}"))
                .collect::<Vec<_>>()
                .join(" / "),
            walk.walk_errors,
            walk.get_items_s.map_or("n/a".into(), |t| format!("{t:.3}")),
            walk.get_items_count
        );
    }
    s.push('\n');
}

fn atspi_walk_table(r: &Results, s: &mut String) {
    let _ = writeln!(
        s,
        "### Walks through libatspi (python3 gi Atspi, cache off: name, role, states, children per node)\n\n\
         | Nodes | bridge (s) | bridge µs/node | legacy (s) | legacy µs/node | legacy ÷ bridge | nodes visited bridge / legacy | errors bridge / legacy |\n|---|---|---|---|---|---|---|---|"
    );
    let secs = |w: &Option<PyWalk>| {
        w.as_ref()
            .map_or("n/a".into(), |w| format!("{:.2}", w.seconds))
    };
    let per_node = |w: &Option<PyWalk>| {
        w.as_ref()
            .map_or("n/a".into(), |w| format!("{:.0}", w.us_per_node()))
    };
    let count = |w: &Option<PyWalk>, f: fn(&PyWalk) -> usize| {
        w.as_ref().map_or("n/a".into(), |w| f(w).to_string())
    };
    for w in &r.atspi_walks {
        let ratio = match (&w.bridge, &w.legacy) {
            (Some(b), Some(l)) if b.seconds > 0.0 => x(Some(l.seconds / b.seconds)),
            _ => "n/a".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} / {} | {} / {} |",
            w.nodes,
            secs(&w.bridge),
            per_node(&w.bridge),
            secs(&w.legacy),
            per_node(&w.legacy),
            ratio,
            count(&w.bridge, |w| w.nodes),
            count(&w.legacy, |w| w.nodes),
            count(&w.bridge, |w| w.errors),
            count(&w.legacy, |w| w.errors),
        );
    }
    let _ = writeln!(
        s,
        "\nPer node is the comparable figure: accesskit_unix leaves out the children of a \
         clipping parent that fall outside it (docs/compat.md, difference 28), so its walk of a \
         list visits only the items on screen.\n"
    );
    for (who, walk) in r
        .atspi_walks
        .iter()
        .flat_map(|w| [("bridge", &w.bridge), ("legacy", &w.legacy)])
    {
        if let Some(error) = walk.as_ref().and_then(|w| w.first_error.as_ref()) {
            let _ = writeln!(s, "- first error of a {who} walk: {error}");
        }
    }
    s.push('\n');
}

fn update_table(r: &Results, s: &mut String) {
    let _ = writeln!(
        s,
        "### Updates: one-node relabel pushed → PropertyChange (accessible-name) seen by a client\n\n\
         | Nodes | median (ms) | p99 (ms) | lost | sustained (updates/s, client listening) | received/sent |\n|---|---|---|---|---|---|"
    );
    for u in &r.updates {
        let _ = writeln!(
            s,
            "| {} | {:.3} | {:.3} | {} | {:.0} | {}/{} |",
            u.nodes,
            u.latency.median_us / 1e3,
            u.latency.p99_us / 1e3,
            u.lost,
            u.sustained_per_s,
            u.sustained_received,
            u.sustained_sent
        );
    }
    s.push('\n');
}

fn memory_table(r: &Results, s: &mut String) {
    let built = r.legacy_built;
    let _ = writeln!(
        s,
        "### Memory (VmRSS)\n\n\
         | Nodes | bridge before | bridge after | bridge bytes/node | legacy RSS | legacy RSS (1-node tree) | legacy bytes/node |\n|---|---|---|---|---|---|---|"
    );
    for m in &r.memory {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} | {} | {} | {} |",
            m.nodes,
            bytes(m.bridge_rss_before),
            bytes(m.bridge_rss_after),
            m.bridge_bytes_per_node,
            opt(m.legacy_rss, bytes, built),
            opt(m.legacy_rss_one_node, bytes, built),
            opt(m.legacy_bytes_per_node, |b| format!("{b:.0}"), built),
        );
    }
    s.push('\n');
}

fn idle_table(r: &Results, s: &mut String) {
    if let Some(i) = &r.idle {
        let _ = writeln!(
            s,
            "### Idle (sender attached with {} nodes, launcher --a11y=0, no AT)\n\n\
             | Seconds | CPU (s) | CPU % | wakeups (context switches) | wakeups/s |\n|---|---|---|---|---|\n\
             | {:.1} | {:.3} | {:.3} | {} | {:.2} |\n",
            i.nodes, i.seconds, i.cpu_s, i.cpu_percent, i.wakeups, i.wakeups_per_s
        );
        if !i.by_thread.is_empty() {
            let threads: Vec<String> = i
                .by_thread
                .iter()
                .map(|(n, w)| format!("{n}: {w}"))
                .collect();
            let _ = writeln!(s, "Wakeups by thread: {}.\n", threads.join(", "));
        }
    }
}

/// The restart table alone (`newton-bench --restart-only`).
pub fn restart_markdown(r: &Results) -> String {
    let mut s = String::new();
    restart_table(r, &mut s);
    s
}

fn restart_table(r: &Results, s: &mut String) {
    let Some(first) = r.restart.first() else {
        return;
    };
    let _ = writeln!(
        s,
        "### Bridge restart → application back on the desktop ({} restarts per setup, SIGTERM then a \
         new bridge; {} nodes)\n\n\
         | Setup | back: median | back: p99 | bridge up / sender reconnected: median |\n|---|---|---|---|",
        first.rounds, first.nodes
    );
    for row in &r.restart {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            row.setup,
            ms(row.back.median_us),
            ms(row.back.p99_us),
            row.bridge_up
                .map_or_else(|| "n/a".into(), |up| ms(up.median_us))
        );
    }
    s.push('\n');
    for row in &r.restart {
        if let Some(again) = &row.in_process_again {
            let _ = writeln!(
                s,
                "{}: bridge stopped (SIGTERM) → back on the desktop through its in-process bridge: \
                 median {}, p99 {}.\n",
                row.setup,
                ms(again.median_us),
                ms(again.p99_us)
            );
        }
    }
}

fn ms(micros: f64) -> String {
    format!("{:.0} ms", micros / 1000.0)
}

/// The Orca call-profile table alone (`--orca-only`).
pub fn orca_markdown(r: &Results) -> String {
    let mut s = String::new();
    orca_table(r, &mut s);
    s
}

fn orca_table(r: &Results, s: &mut String) {
    let built = r.legacy_built;
    let _ = writeln!(
        s,
        "### Orca 43.1 call profile replayed on egui-form-focus (total per phase, median of {} rounds)\n\n\
         | Phase | calls | bridge (ms) | legacy (ms) | legacy/bridge | errors bridge/legacy |\n|---|---|---|---|---|---|",
        r.config.orca_rounds
    );
    let (mut calls, mut b, mut l) = (0, 0.0, 0.0);
    for p in &r.orca {
        calls += p.calls;
        b += p.bridge_ms;
        l += p.legacy_ms.unwrap_or(0.0);
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} | {} | {} | {}/{} |",
            p.phase,
            p.calls,
            p.bridge_ms,
            opt(p.legacy_ms, |v| format!("{v:.2}"), built),
            x(p.legacy_ms
                .and_then(|v| crate::stats::ratio(v, p.bridge_ms))),
            p.bridge_errors,
            if p.legacy_ms.is_some() {
                p.legacy_errors.to_string()
            } else {
                "–".into()
            },
        );
    }
    let legacy_total = r.orca.iter().any(|p| p.legacy_ms.is_some()).then_some(l);
    let _ = writeln!(
        s,
        "| **Total** | {calls} | {b:.2} | {} | {} | |\n",
        opt(legacy_total, |v| format!("{v:.2}"), built),
        x(legacy_total.and_then(|v| crate::stats::ratio(v, b)))
    );
    let mut failing: Vec<&String> = r.orca.iter().flat_map(|p| &p.failing).collect();
    failing.sort();
    failing.dedup();
    for f in failing {
        let _ = writeln!(s, "- {f}");
    }
    if !r.orca.is_empty() {
        s.push('\n');
    }
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**not met**",
        None => "n/a",
    }
}

fn max_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    values.fold(None, |m, v| Some(m.map_or(v, |m: f64| m.max(v))))
}

fn targets_table(r: &Results, s: &mut String) {
    let _ = writeln!(
        s,
        "### Targets\n\n| Target | Measured | Verdict |\n|---|---|---|"
    );
    let rows = r.queries.iter().flat_map(|q| q.rows.iter());
    let worst_median = max_of(rows.clone().filter_map(|row| row.median_ratio));
    let worst_p99 = max_of(rows.clone().filter_map(|row| row.p99_ratio));
    let worst_p2p_median = max_of(rows.clone().filter_map(|row| row.p2p_median_ratio));
    let worst_p2p_p99 = max_of(rows.filter_map(|row| row.p2p_p99_ratio));
    let mut line = |target: &str, measured: String, met: Option<bool>| {
        let _ = writeln!(s, "| {target} | {measured} | {} |", verdict(met));
    };
    line(
        "median query ≤ 1.05× Ping floor (bus)",
        format!("worst {} over all queries and sizes", x(worst_median)),
        worst_median.map(|w| w <= 1.05),
    );
    line(
        "p99 query ≤ 2× floor p99 (bus)",
        format!("worst {}", x(worst_p99)),
        worst_p99.map(|w| w <= 2.0),
    );
    line(
        "median query ≤ 1.05× Ping floor (peer-to-peer)",
        format!("worst {} over all queries and sizes", x(worst_p2p_median)),
        worst_p2p_median.map(|w| w <= 1.05),
    );
    line(
        "p99 query ≤ 2× floor p99 (peer-to-peer)",
        format!("worst {}", x(worst_p2p_p99)),
        worst_p2p_p99.map(|w| w <= 2.0),
    );
    let big = r
        .walks
        .iter()
        .zip(&r.memory)
        .filter(|(_, m)| m.nodes >= 100_000)
        .find_map(|(w, _)| w.get_items_s);
    line(
        "Cache.GetItems of 100k nodes ≤ 0.5 s",
        big.map_or("not measured (smoke run)".into(), |t| format!("{t:.3} s")),
        big.map(|t| t <= 0.5),
    );
    let frozen_worst = max_of(r.frozen.iter().filter_map(|f| f.ratio));
    let frozen_errors: usize = r.frozen.iter().map(|f| f.frozen_errors).sum();
    line(
        "frozen/unfrozen ≤ 1.1 with zero errors",
        format!("worst {}, {frozen_errors} errors", x(frozen_worst)),
        frozen_worst.map(|w| w <= 1.1 && frozen_errors == 0),
    );
    let update_worst = max_of(r.updates.iter().map(|u| u.latency.median_us / 1e3));
    line(
        "update → signal ≤ 0.3 ms median",
        update_worst.map_or("n/a".into(), |w| format!("worst median {w:.3} ms")),
        update_worst.map(|w| w <= 0.3),
    );
    let largest = r.memory.iter().max_by_key(|m| m.nodes);
    let mem = largest.map(|m| {
        let legacy = m
            .legacy_bytes_per_node
            .unwrap_or(LEGACY_BYTES_PER_NODE_STATED);
        (
            m.bridge_bytes_per_node,
            legacy,
            m.legacy_bytes_per_node.is_some(),
        )
    });
    line(
        "memory per node ≤ half of accesskit_unix's",
        mem.map_or("n/a".into(), |(b, l, measured)| {
            format!(
                "bridge {b:.0} B/node vs legacy {l:.0} B/node ({})",
                if measured {
                    "measured"
                } else {
                    "as stated, ~3 KB; legacy not built"
                }
            )
        }),
        mem.map(|(b, l, _)| b <= l / 2.0),
    );
    let idle = r.idle.as_ref();
    line(
        "zero periodic wakeups when idle",
        idle.map_or("n/a".into(), |i| {
            format!(
                "{} wakeups in {:.1} s, CPU {:.3} s",
                i.wakeups, i.seconds, i.cpu_s
            )
        }),
        idle.map(|i| i.wakeups == 0),
    );
    s.push('\n');
}

/// One plotted line: label, colour, points.
type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// Latency vs tree size: bridge, floor and legacy (median of the nine query medians).
fn plot(r: &Results, path: &Path) -> Result<()> {
    let points: Vec<(f64, crate::queries::Typical)> = r
        .queries
        .iter()
        .map(|q| (q.nodes as f64, q.typical()))
        .collect();
    let x_min = points
        .iter()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min)
        .min(1e9);
    let x_max = points
        .iter()
        .map(|p| p.0)
        .fold(0.0, f64::max)
        .max(x_min * 10.0);
    let y_max = points
        .iter()
        .flat_map(|(_, t)| {
            [
                t.bridge,
                t.floor,
                t.legacy.unwrap_or(0.0),
                t.p2p.unwrap_or(0.0),
            ]
        })
        .fold(1.0, f64::max)
        * 1.25;
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Query latency vs tree size (median of 9 query medians)",
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d((x_min * 0.8..x_max * 1.25).log_scale(), 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("nodes in the tree")
            .y_desc("µs per call")
            .draw()?;
        let line = |f: &dyn Fn(&crate::queries::Typical) -> Option<f64>| -> Vec<(f64, f64)> {
            points
                .iter()
                .filter_map(|(n, t)| f(t).map(|v| (*n, v)))
                .collect()
        };
        let series: [Series; 5] = [
            ("bridge (bus)", BLUE, line(&|t| Some(t.bridge))),
            ("floor: Peer.Ping (bus)", BLACK, line(&|t| Some(t.floor))),
            ("legacy accesskit_unix (bus)", RED, line(&|t| t.legacy)),
            ("bridge (peer-to-peer)", CYAN, line(&|t| t.p2p)),
            (
                "floor: Peer.Ping (peer-to-peer)",
                RGBColor(128, 128, 128),
                line(&|t| t.p2p_floor),
            ),
        ];
        for (label, color, data) in series {
            if data.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(data.clone(), color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(data.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| fail(format!("cannot draw {}: {e}", path.display())))
}
