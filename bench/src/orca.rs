//! The Orca scenario: per-phase call counts observed with Orca 43.1 (atspi-surface notes §12)
//! replayed as queries on the egui form, against the bridge and the legacy reference.

use std::collections::VecDeque;
use std::time::Instant;

use serde::Serialize;

use crate::dbus::{Client, Obj, Query};
use crate::stats::median;
use crate::Result;

/// A phase: its name, its observed total, and its top members (the rest of the total is made of
/// the cheap per-object calls Orca 51 shows most: GetState, GetRole, GetIndexInParent, ChildCount).
struct Phase {
    name: &'static str,
    total: usize,
    top: &'static [(Query, usize)],
}

const FILLER: [Query; 4] = [
    Query::GetState,
    Query::GetRole,
    Query::GetIndexInParent,
    Query::ChildCount,
];

use Query as Q;
const PHASES: &[Phase] = &[
    Phase {
        name: "Orca start (app discovery)",
        total: 19,
        top: &[
            (Q::GetRole, 6),
            (Q::Name, 5),
            (Q::GetApplicationBusAddress, 1),
            (Q::GetItems, 1),
        ],
    },
    Phase {
        name: "Window focus",
        total: 218,
        top: &[
            (Q::Name, 119),
            (Q::GetAttributes, 19),
            (Q::GetRelationSet, 15),
            (Q::CaretOffset, 14),
        ],
    },
    Phase {
        name: "Focus change (3 × Tab)",
        total: 348,
        top: &[
            (Q::Name, 207),
            (Q::GetAttributes, 32),
            (Q::GetRelationSet, 26),
            (Q::Description, 16),
        ],
    },
    Phase {
        name: "Typing (\"ab\")",
        total: 217,
        top: &[
            (Q::Name, 77),
            (Q::CaretOffset, 30),
            (Q::GetAttributes, 16),
            (Q::GetText, 16),
            (Q::GetTextAtOffset, 14),
        ],
    },
    Phase {
        name: "Caret move (Left)",
        total: 40,
        top: &[
            (Q::Name, 20),
            (Q::CaretOffset, 5),
            (Q::GetTextAtOffset, 4),
            (Q::GetAttributes, 3),
        ],
    },
    Phase {
        name: "Line move (Up)",
        total: 93,
        top: &[
            (Q::Name, 37),
            (Q::CaretOffset, 17),
            (Q::GetRelationSet, 8),
            (Q::GetTextAtOffset, 8),
        ],
    },
    Phase {
        name: "Where Am I",
        total: 74,
        top: &[
            (Q::Name, 28),
            (Q::CaretOffset, 12),
            (Q::GetRelationSet, 7),
            (Q::CharacterCount, 7),
        ],
    },
    Phase {
        name: "Flat review (current line)",
        total: 153,
        top: &[
            (Q::GetRangeExtents, 53),
            (Q::Name, 40),
            (Q::GetExtents, 20),
            (Q::GetText, 15),
            (Q::CharacterCount, 14),
        ],
    },
    Phase {
        name: "Flat review (previous line)",
        total: 7,
        top: &[(Q::Name, 7)],
    },
    Phase {
        name: "Leave flat review",
        total: 52,
        top: &[(Q::Name, 21), (Q::CaretOffset, 11), (Q::GetTextAtOffset, 6)],
    },
    Phase {
        name: "Say All",
        total: 26,
        top: &[
            (Q::Name, 11),
            (Q::CharacterCount, 5),
            (Q::GetExtents, 4),
            (Q::ScrollSubstringTo, 2),
        ],
    },
];

/// One phase's total time on each target (median over rounds).
#[derive(Debug, Serialize)]
pub struct PhaseResult {
    pub phase: &'static str,
    pub calls: usize,
    pub bridge_ms: f64,
    pub legacy_ms: Option<f64>,
    pub bridge_errors: usize,
    pub legacy_errors: usize,
    /// Members that failed, with the first error, per target.
    pub failing: Vec<String>,
}

/// The objects one target's calls go to.
pub struct Targets {
    root: Obj,
    nodes: Vec<Obj>,
    text: Obj,
}

impl Targets {
    /// Walks the application once: every node, and the editable text (else any text) node.
    pub fn discover(client: &Client, root: &Obj) -> Result<Targets> {
        let mut nodes = Vec::new();
        let mut queue = VecDeque::from([root.clone()]);
        while let Some(obj) = queue.pop_front() {
            queue.extend(client.children(&obj)?.into_iter().filter(|c| !c.is_null()));
            nodes.push(obj);
        }
        let with_iface = |iface: &str| {
            nodes.iter().find(|n| {
                client
                    .interfaces(n)
                    .is_ok_and(|list| list.iter().any(|i| i == iface))
            })
        };
        let text = with_iface("org.a11y.atspi.EditableText")
            .or_else(|| with_iface("org.a11y.atspi.Text"))
            .unwrap_or(root)
            .clone();
        Ok(Targets {
            root: root.clone(),
            nodes,
            text,
        })
    }

    fn object_for(&self, query: Query, turn: usize) -> Result<Obj> {
        Ok(match query {
            Q::CaretOffset
            | Q::GetText
            | Q::GetTextAtOffset
            | Q::CharacterCount
            | Q::GetRangeExtents
            | Q::ScrollSubstringTo
            | Q::GetStringAtOffset => self.text.clone(),
            Q::GetApplicationBusAddress => self.root.clone(),
            Q::GetItems => self.root.cache()?,
            _ => self
                .nodes
                .get(turn % self.nodes.len().max(1))
                .unwrap_or(&self.root)
                .clone(),
        })
    }
}

/// The phase's calls, members interleaved round-robin, each with its object.
fn plan(phase: &Phase, targets: &Targets) -> Result<Vec<(Obj, Query)>> {
    let listed: usize = phase.top.iter().map(|(_, n)| n).sum();
    let mut remaining: Vec<(Query, usize)> = phase.top.to_vec();
    let filler = phase.total.saturating_sub(listed);
    for (i, query) in FILLER.iter().enumerate() {
        let share = filler / FILLER.len() + usize::from(i < filler % FILLER.len());
        remaining.push((*query, share));
    }
    let mut calls = Vec::with_capacity(phase.total);
    let mut turn = 0;
    while remaining.iter().any(|(_, n)| *n > 0) {
        for (query, left) in remaining.iter_mut().filter(|(_, n)| *n > 0) {
            calls.push((targets.object_for(*query, turn)?, *query));
            *left -= 1;
            turn += 1;
        }
    }
    Ok(calls)
}

fn run_phase(client: &Client, calls: &[(Obj, Query)]) -> (f64, usize) {
    let start = Instant::now();
    let errors = calls
        .iter()
        .filter(|(obj, query)| client.query(obj, *query).is_err())
        .count();
    (start.elapsed().as_secs_f64() * 1e3, errors)
}

/// Every phase `rounds` times on each target, alternating targets phase by phase.
pub fn measure(
    client: &Client,
    bridge: &Targets,
    legacy: Option<&Targets>,
    rounds: usize,
) -> Result<Vec<PhaseResult>> {
    let mut results = Vec::new();
    for phase in PHASES {
        let bridge_calls = plan(phase, bridge)?;
        let legacy_calls = legacy.map(|t| plan(phase, t)).transpose()?;
        let (mut b_times, mut l_times) = (Vec::new(), Vec::new());
        let (mut b_errors, mut l_errors) = (0, 0);
        for round in 0..rounds.max(1) {
            let legacy_first = round % 2 == 1;
            for side in 0..2 {
                let on_legacy = (side == 0) == legacy_first;
                match (&legacy_calls, on_legacy) {
                    (Some(calls), true) => {
                        let (ms, e) = run_phase(client, calls);
                        l_times.push(ms);
                        l_errors = l_errors.max(e);
                    }
                    (_, false) => {
                        let (ms, e) = run_phase(client, &bridge_calls);
                        b_times.push(ms);
                        b_errors = b_errors.max(e);
                    }
                    (None, true) => {}
                }
            }
        }
        let mut failing = failures(client, "bridge", &bridge_calls);
        if let Some(calls) = &legacy_calls {
            failing.extend(failures(client, "legacy", calls));
        }
        results.push(PhaseResult {
            failing,
            phase: phase.name,
            calls: bridge_calls.len(),
            bridge_ms: median(&b_times),
            legacy_ms: legacy_calls.as_ref().map(|_| median(&l_times)),
            bridge_errors: b_errors,
            legacy_errors: l_errors,
        });
    }
    Ok(results)
}

/// `target Member: error` for each member that fails in `calls` (first error only).
fn failures(client: &Client, target: &str, calls: &[(Obj, Query)]) -> Vec<String> {
    let mut seen: Vec<Query> = Vec::new();
    let mut out = Vec::new();
    for (obj, query) in calls {
        if seen.contains(query) {
            continue;
        }
        if let Err(e) = client.query(obj, *query) {
            seen.push(*query);
            out.push(format!("{target} {query:?} on {}: {e}", obj.path.as_str()));
        }
    }
    out
}
