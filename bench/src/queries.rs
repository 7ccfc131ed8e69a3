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
    /// The bridge over its peer-to-peer socket, and Ping over that socket.
    pub p2p: Option<Summary>,
    pub p2p_floor: Option<Summary>,
    pub p2p_median_ratio: Option<f64>,
    pub p2p_p99_ratio: Option<f64>,
    pub p2p_errors: usize,
    /// The first error each target answered, if any (why a cell is empty).
    pub bridge_error: Option<String>,
    pub legacy_error: Option<String>,
}

/// Every query on one tree size.
#[derive(Debug, Serialize)]
pub struct SizeQueries {
    pub fixture: String,
    pub nodes: usize,
    pub iterations: usize,
    pub rows: Vec<QueryRow>,
}

impl SizeQueries {
    /// Median over queries of each target's median (for the plot and the size table).
    pub fn typical(&self) -> Typical {
        let of = |f: &dyn Fn(&QueryRow) -> Option<Summary>| {
            let values: Vec<f64> = self
                .rows
                .iter()
                .filter_map(f)
                .filter(|s| s.samples > 0)
                .map(|s| s.median_us)
                .collect();
            (!values.is_empty()).then(|| crate::stats::median(&values))
        };
        Typical {
            bridge: of(&|r| Some(r.bridge)).unwrap_or(0.0),
            floor: of(&|r| Some(r.floor)).unwrap_or(0.0),
            legacy: of(&|r| r.legacy),
            p2p: of(&|r| r.p2p),
            p2p_floor: of(&|r| r.p2p_floor),
        }
    }
}

/// Typical latencies of one tree size, µs.
pub struct Typical {
    pub bridge: f64,
    pub floor: f64,
    pub legacy: Option<f64>,
    pub p2p: Option<f64>,
    pub p2p_floor: Option<f64>,
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

/// The peer-to-peer side of the bridge: a direct connection to the application's socket
/// (from `Application.GetApplicationBusAddress`) and the same nodes over it.
pub struct PeerToPeer<'a> {
    pub client: &'a Client,
    pub nodes: &'a QueryNodes,
    /// Any object for Ping over the same connection.
    pub floor: &'a Obj,
}

/// What one timed call goes to.
enum Probe<'a> {
    Query(&'a Client, &'a QueryNodes),
    Ping(&'a Client, &'a Obj),
}

impl Probe<'_> {
    fn time(&self, query: Query) -> Option<Duration> {
        match self {
            Probe::Query(client, nodes) => client.timed(nodes.for_query(query), query),
            Probe::Ping(client, obj) => client.timed(obj, Query::Ping),
        }
    }
}

const BRIDGE: usize = 0;
const FLOOR: usize = 1;
const LEGACY: usize = 2;
const P2P: usize = 3;
const P2P_FLOOR: usize = 4;

/// Times the nine queries on the bridge, the legacy reference and the bridge over
/// peer-to-peer, and Ping on the bus and peer-to-peer connections, `iterations` rounds (after
/// `warmup` untimed ones), rotating the order of the targets each time so machine noise hits
/// all of them alike.
pub fn measure(
    client: &Client,
    bridge: &QueryNodes,
    floor: &Obj,
    legacy: Option<&QueryNodes>,
    p2p: Option<&PeerToPeer>,
    iterations: usize,
    warmup: usize,
) -> Vec<QueryRow> {
    let probes: [Option<Probe>; 5] = [
        Some(Probe::Query(client, bridge)),
        Some(Probe::Ping(client, floor)),
        legacy.map(|nodes| Probe::Query(client, nodes)),
        p2p.map(|p| Probe::Query(p.client, p.nodes)),
        p2p.map(|p| Probe::Ping(p.client, p.floor)),
    ];
    let n = probes.len();
    let mut series: Vec<Vec<Vec<Duration>>> =
        ISSUE_QUERIES.iter().map(|_| vec![Vec::new(); n]).collect();
    let mut errors = vec![vec![0usize; n]; ISSUE_QUERIES.len()];
    for iteration in 0..warmup + iterations {
        for (qi, &query) in ISSUE_QUERIES.iter().enumerate() {
            for k in 0..n {
                let target = (iteration + qi + k) % n;
                let Some(Some(probe)) = probes.get(target) else {
                    continue;
                };
                let timed = probe.time(query);
                if iteration < warmup {
                    continue;
                }
                match (timed, series.get_mut(qi), errors.get_mut(qi)) {
                    (Some(d), Some(s), _) => s[target].push(d),
                    (None, _, Some(e)) => e[target] += 1,
                    _ => {}
                }
            }
        }
    }
    ISSUE_QUERIES
        .iter()
        .zip(series.iter().zip(errors.iter()))
        .map(|(&query, (s, e))| {
            let of = |i: usize| probes[i].as_ref().map(|_| Summary::of(&s[i]));
            let row = Row {
                bridge: of(BRIDGE).unwrap_or_default(),
                floor: of(FLOOR).unwrap_or_default(),
                legacy: of(LEGACY),
                p2p: of(P2P),
                p2p_floor: of(P2P_FLOOR),
            };
            QueryRow {
                query,
                median_ratio: ratio_of(row.bridge, row.floor, |s| s.median_us),
                p99_ratio: ratio_of(row.bridge, row.floor, |s| s.p99_us),
                legacy_median_ratio: row
                    .legacy
                    .and_then(|l| ratio_of(l, row.floor, |s| s.median_us)),
                p2p_median_ratio: row
                    .p2p
                    .zip(row.p2p_floor)
                    .and_then(|(b, f)| ratio_of(b, f, |s| s.median_us)),
                p2p_p99_ratio: row
                    .p2p
                    .zip(row.p2p_floor)
                    .and_then(|(b, f)| ratio_of(b, f, |s| s.p99_us)),
                bridge: row.bridge,
                floor: row.floor,
                legacy: row.legacy,
                p2p: row.p2p,
                p2p_floor: row.p2p_floor,
                bridge_errors: e[BRIDGE],
                legacy_errors: e[LEGACY],
                p2p_errors: e[P2P],
                bridge_error: first_error(client, bridge.for_query(query), query),
                legacy_error: legacy
                    .and_then(|nodes| first_error(client, nodes.for_query(query), query)),
            }
        })
        .collect()
}

/// The summaries of one query row before the ratios.
struct Row {
    bridge: Summary,
    floor: Summary,
    legacy: Option<Summary>,
    p2p: Option<Summary>,
    p2p_floor: Option<Summary>,
}

/// `f(a) / f(b)` when both series have samples.
fn ratio_of(a: Summary, b: Summary, f: impl Fn(Summary) -> f64) -> Option<f64> {
    (a.samples > 0 && b.samples > 0)
        .then(|| ratio(f(a), f(b)))
        .flatten()
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
