//! Query latency over the bus: the bridge, the floor (Peer.Ping to the same connection) and the
//! legacy reference, interleaved per iteration; and the same queries while the producer is
//! SIGSTOPped.

use std::time::Duration;

use rustix::process::{kill_process, Pid, Signal};
use serde::Serialize;

use crate::dbus::{Client, Obj, Query, ISSUE_QUERIES};
use crate::stats::{ratio, Summary};
use crate::{fail, Result};

/// One query on one tree: the three targets side by side.
#[derive(Debug, Serialize)]
pub struct QueryRow {
    pub query: Query,
    pub bridge: Summary,
    pub floor: Summary,
    pub legacy: Option<Summary>,
    pub bridge_errors: usize,
    pub legacy_errors: usize,
    pub median_ratio: Option<f64>,
    pub p99_ratio: Option<f64>,
    pub legacy_median_ratio: Option<f64>,
    /// The first error each target answered, if any (why a cell is empty).
    pub bridge_error: Option<String>,
    pub legacy_error: Option<String>,
}

/// Every query on one tree size.
#[derive(Debug, Serialize)]
pub struct SizeQueries {
    pub fixture: String,
    pub nodes: usize,
    pub rows: Vec<QueryRow>,
}

impl SizeQueries {
    /// Median over queries of each target's median (for the plot and the size table).
    pub fn typical(&self) -> (f64, f64, Option<f64>) {
        let of = |f: &dyn Fn(&QueryRow) -> Option<f64>| {
            let values: Vec<f64> = self.rows.iter().filter_map(f).collect();
            (!values.is_empty()).then(|| crate::stats::median(&values))
        };
        (
            of(&|r| Some(r.bridge.median_us)).unwrap_or(0.0),
            of(&|r| Some(r.floor.median_us)).unwrap_or(0.0),
            of(&|r| r.legacy.filter(|s| s.samples > 0).map(|s| s.median_us)),
        )
    }
}

/// The objects queries go to on one target.
#[derive(Clone, Debug)]
pub struct QueryNodes {
    /// The node of every non-Text query.
    pub node: Obj,
    /// The node of Text queries.
    pub text: Obj,
}

impl QueryNodes {
    pub fn for_query(&self, query: Query) -> &Obj {
        match query {
            Query::GetTextAtOffset | Query::GetStringAtOffset => &self.text,
            _ => &self.node,
        }
    }
}

/// In a generated document: the paragraph (with a link child) in the middle, for most queries,
/// and the Document, for Text queries (accesskit gives text ranges only to documents, labels
/// and text inputs, so paragraphs have no Text). Navigated by index so bridge and legacy get
/// the same nodes.
pub fn doc_nodes(client: &Client, app_root: &Obj) -> Result<QueryNodes> {
    let window = client.child_at(app_root, 0)?;
    let document = client.child_at(&window, 0)?;
    let sections = client.child_count(&document)?;
    let section = client.child_at(&document, sections / 2)?;
    let paragraph = client.child_at(&section, 1)?;
    if paragraph.is_null() {
        return Err(fail(format!(
            "no paragraph under {} (document with {sections} sections)",
            section.path.as_str()
        )));
    }
    Ok(QueryNodes {
        node: paragraph,
        text: document,
    })
}

/// Times the nine queries on `bridge` and `legacy` and Ping on `floor`, `iterations` rounds
/// (after `warmup` untimed ones), rotating the order of the three targets each time so machine
/// noise hits all of them alike.
pub fn measure(
    client: &Client,
    bridge: &QueryNodes,
    floor: &Obj,
    legacy: Option<&QueryNodes>,
    iterations: usize,
    warmup: usize,
) -> Vec<QueryRow> {
    let mut series: Vec<[Vec<Duration>; 3]> =
        ISSUE_QUERIES.iter().map(|_| Default::default()).collect();
    let mut errors = vec![[0usize; 3]; ISSUE_QUERIES.len()];
    for iteration in 0..warmup + iterations {
        for (qi, &query) in ISSUE_QUERIES.iter().enumerate() {
            for k in 0..3 {
                let target = (iteration + qi + k) % 3;
                let timed = match target {
                    0 => client.timed(bridge.for_query(query), query),
                    1 => client.timed(floor, Query::Ping),
                    _ => match legacy {
                        Some(nodes) => client.timed(nodes.for_query(query), query),
                        None => continue,
                    },
                };
                if iteration < warmup {
                    continue;
                }
                let (Some(slot), Some(err)) = (
                    series.get_mut(qi).and_then(|s| s.get_mut(target)),
                    errors.get_mut(qi).and_then(|e| e.get_mut(target)),
                ) else {
                    continue;
                };
                match timed {
                    Some(d) => slot.push(d),
                    None => *err += 1,
                }
            }
        }
    }
    let bridge_obj = bridge;
    let legacy_obj = legacy;
    ISSUE_QUERIES
        .iter()
        .zip(series.iter().zip(errors.iter()))
        .map(|(&query, (s, e))| {
            let bridge = Summary::of(&s[0]);
            let floor = Summary::of(&s[1]);
            let legacy = legacy.map(|_| Summary::of(&s[2]));
            QueryRow {
                query,
                median_ratio: (bridge.samples > 0)
                    .then(|| ratio(bridge.median_us, floor.median_us))
                    .flatten(),
                p99_ratio: (bridge.samples > 0)
                    .then(|| ratio(bridge.p99_us, floor.p99_us))
                    .flatten(),
                legacy_median_ratio: legacy
                    .filter(|l| l.samples > 0)
                    .and_then(|l| ratio(l.median_us, floor.median_us)),
                bridge,
                floor,
                legacy,
                bridge_errors: e[0],
                legacy_errors: e[2],
                bridge_error: first_error(client, bridge_obj.for_query(query), query),
                legacy_error: legacy_obj
                    .and_then(|nodes| first_error(client, nodes.for_query(query), query)),
            }
        })
        .collect()
}

/// One query, producer running vs SIGSTOPped.
#[derive(Debug, Serialize)]
pub struct FrozenRow {
    pub query: Query,
    pub unfrozen: Summary,
    pub frozen: Summary,
    pub ratio: Option<f64>,
    pub unfrozen_errors: usize,
    pub frozen_errors: usize,
}

/// Alternates rounds of `per_round` iterations with the producer `producer_pid` running and
/// stopped (SIGSTOP/SIGCONT), `rounds` times each. The producer is always continued again.
pub fn measure_frozen(
    client: &Client,
    nodes: &QueryNodes,
    producer_pid: u32,
    rounds: usize,
    per_round: usize,
) -> Result<Vec<FrozenRow>> {
    let pid = i32::try_from(producer_pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| fail(format!("bad producer pid {producer_pid}")))?;
    let mut series: Vec<[Vec<Duration>; 2]> =
        ISSUE_QUERIES.iter().map(|_| Default::default()).collect();
    let mut errors = vec![[0usize; 2]; ISSUE_QUERIES.len()];
    let mut outcome = Ok(());
    for round in 0..rounds * 2 {
        let frozen = round % 2 == 1;
        if frozen {
            kill_process(pid, Signal::STOP)
                .map_err(|e| fail(format!("cannot SIGSTOP the producer {producer_pid}: {e}")))?;
        }
        for _ in 0..per_round {
            for (qi, &query) in ISSUE_QUERIES.iter().enumerate() {
                let slot = usize::from(frozen);
                let timed = client.timed(nodes.for_query(query), query);
                match (timed, series.get_mut(qi), errors.get_mut(qi)) {
                    (Some(d), Some(s), _) => s[slot].push(d),
                    (None, _, Some(e)) => e[slot] += 1,
                    _ => {}
                }
            }
        }
        if frozen {
            if let Err(e) = kill_process(pid, Signal::CONT) {
                outcome = Err(fail(format!("cannot SIGCONT the producer: {e}")));
            }
        }
    }
    outcome?;
    Ok(ISSUE_QUERIES
        .iter()
        .zip(series.iter().zip(errors.iter()))
        .map(|(&query, (s, e))| {
            let unfrozen = Summary::of(&s[0]);
            let frozen = Summary::of(&s[1]);
            FrozenRow {
                query,
                ratio: (frozen.samples > 0 && unfrozen.samples > 0)
                    .then(|| ratio(frozen.median_us, unfrozen.median_us))
                    .flatten(),
                unfrozen,
                frozen,
                unfrozen_errors: e[0],
                frozen_errors: e[1],
            }
        })
        .collect())
}

/// The error a target answers to `query`, if it does not answer it.
pub fn first_error(client: &Client, obj: &Obj, query: Query) -> Option<String> {
    client.query(obj, query).err().map(|e| e.to_string())
}
