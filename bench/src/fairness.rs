//! Fairness between applications (issue 14, item 7): a quiet application's query latency
//! while another application floods the bridge with commits, next to the same latency with
//! no flood, and next to the flooding application's own query latency during its flood. All
//! three are measured in one run, in alternating phases, so machine load hits them alike: the
//! figures are ratios, never absolute targets.
//!
//! `newton-bench --fairness-only [--smoke]`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::dbus::Query;
use crate::fixtures::{list_item, relabel, Stream};
use crate::stats::Summary;
use crate::world::{AttachedApp, World};
use crate::{fixtures, Result};

/// What one run measured.
#[derive(Debug, Serialize)]
pub struct Fairness {
    pub nodes_per_app: usize,
    pub phases: usize,
    pub queries_per_phase: usize,
    /// The quiet application's `Name` with no flood.
    pub quiet_alone: Summary,
    /// The quiet application's `Name` while the other application floods.
    pub quiet_during_flood: Summary,
    /// The flooding application's own `Name` during its flood.
    pub flooder_during_flood: Summary,
    /// Commits the flooding application pushed per second during its phases.
    pub flood_commits_per_s: f64,
    pub errors: usize,
}

pub fn measure(world: &World, items: usize, phases: usize, queries: usize) -> Result<Fairness> {
    let quiet_stream = fixtures::list(items).renamed("fairness quiet");
    let flood_stream = fixtures::list(items).renamed("fairness flooder");
    let quiet = world.attach(&quiet_stream)?;
    let flooder = world.attach(&flood_stream)?;
    let client = &world.client;
    let mut alone = Vec::new();
    let mut during = Vec::new();
    let mut own = Vec::new();
    let mut errors = 0;
    let mut pushed = 0usize;
    let mut flood_time = Duration::ZERO;
    let mut sample =
        |app: &AttachedApp, into: &mut Vec<Duration>| match client.timed(&app.root, Query::Name) {
            Some(d) => into.push(d),
            None => errors += 1,
        };
    for _ in 0..phases {
        for _ in 0..queries {
            sample(&quiet, &mut alone);
        }
        let stop = AtomicBool::new(false);
        let count = AtomicUsize::new(0);
        let started = std::time::Instant::now();
        std::thread::scope(|scope| {
            scope.spawn(|| flood(&flooder, &flood_stream, items, &stop, &count));
            // Let the flood reach its rate before sampling.
            std::thread::sleep(Duration::from_millis(100));
            for i in 0..queries {
                if i % 2 == 0 {
                    sample(&quiet, &mut during);
                } else {
                    sample(&flooder, &mut own);
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        flood_time += started.elapsed();
        pushed += count.load(Ordering::Relaxed);
    }
    Ok(Fairness {
        nodes_per_app: quiet_stream.nodes,
        phases,
        queries_per_phase: queries,
        quiet_alone: Summary::of(&alone),
        quiet_during_flood: Summary::of(&during),
        flooder_during_flood: Summary::of(&own),
        flood_commits_per_s: pushed as f64 / flood_time.as_secs_f64().max(1e-9),
        errors,
    })
}

/// Relabels the flooding application's middle item back to back until `stop`.
fn flood(app: &AttachedApp, stream: &Stream, items: usize, stop: &AtomicBool, count: &AtomicUsize) {
    let id = list_item(items / 2);
    let Some(node) = stream.initial_node(id) else {
        return;
    };
    let focus = stream.last_focus();
    while !stop.load(Ordering::Relaxed) {
        let n = count.fetch_add(1, Ordering::Relaxed);
        let update = relabel(id, &node, &format!("Flood {n}"), focus);
        let sent = app
            .sender
            .update(newton_fixtures::SURFACE, update)
            .and_then(|()| app.sender.commit(newton_fixtures::SURFACE).map(|_| ()));
        if sent.is_err() {
            return;
        }
    }
}

/// The Markdown table for docs/benchmarks.md.
pub fn markdown(f: &Fairness) -> String {
    let ms = |s: &Summary| format!("{:.0} / {:.0} µs", s.median_us, s.p99_us);
    let ratio = |a: &Summary, b: &Summary| {
        format!(
            "{:.2} / {:.2}",
            a.median_us / b.median_us.max(1e-9),
            a.p99_us / b.p99_us.max(1e-9)
        )
    };
    format!(
        "| Measurement | median / p99 | ÷ quiet app alone (median / p99) |\n|---|---|---|\n\
         | quiet app `Name`, no flood | {} | 1.00 / 1.00 |\n\
         | quiet app `Name`, other app flooding | {} | {} |\n\
         | flooding app's own `Name`, during its flood | {} | {} |\n\n\
         {} nodes per app, {} phases × {} queries, flood {:.0} commits/s, {} errors\n",
        ms(&f.quiet_alone),
        ms(&f.quiet_during_flood),
        ratio(&f.quiet_during_flood, &f.quiet_alone),
        ms(&f.flooder_during_flood),
        ratio(&f.flooder_during_flood, &f.quiet_alone),
        f.nodes_per_app,
        f.phases,
        f.queries_per_phase,
        f.flood_commits_per_s,
        f.errors
    )
}
