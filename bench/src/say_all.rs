//! Say All per block (issue 17, item 3): the calls Orca 43.1's web script makes for each piece
//! it reads, over the first blocks of doc-100k sent as a web engine sends it (per-block text),
//! against the same content read through accesskit_unix's one document Text, in one run.
//!
//! Both sides are read in alternating passes after one untimed pass each, so machine load hits
//! them alike: the ratio is the figure, not the absolute times. The bridge must answer every
//! call while it reads in under [`SLOW_CALL`]; calls over it are listed, never judged here.
//!
//! `newton-bench --say-all [--smoke]`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use accesskit::{Node, NodeId, Role, TreeUpdate};
use serde::Serialize;

use crate::dbus::{Call, Client, Obj};
use crate::fixtures::{self, Stream};
use crate::stats::{ratio, Summary};
use crate::world::World;
use crate::{fail, Result};

/// The toolkit the bridge's producer names: a web engine, so its document gets per-block text
/// and Orca runs its web script on it.
const TOOLKIT: &str = "Chromium";
/// AT-SPI `TEXT_BOUNDARY_SENTENCE_START`: Orca 43.1's Say All reads by sentence.
const SENTENCE_START: u32 = 3;
/// AT-SPI `TEXT_GRANULARITY_LINE`. accesskit_unix 0.24.1 has no GetTextAtOffset and no sentence
/// granularity, so its side asks GetStringAtOffset for the line (every block is one line).
const LINE: u32 = 3;
/// The longest any one bridge answer may take while Say All reads (issue 17, item 3).
const SLOW_CALL: Duration = Duration::from_millis(50);

/// How much to read.
pub struct Size {
    /// Sections of the document (25 nodes each).
    pub sections: usize,
    /// Text blocks read per pass.
    pub blocks: usize,
    /// Timed passes per side (after one untimed pass each).
    pub passes: usize,
}

impl Size {
    pub fn new(smoke: bool) -> Size {
        if smoke {
            Size {
                sections: 20,
                blocks: 10,
                passes: 3,
            }
        } else {
            Size {
                sections: 4_000,
                blocks: 200,
                passes: 3,
            }
        }
    }
}

/// What one run measured.
#[derive(Debug, Serialize)]
pub struct SayAll {
    pub fixture: String,
    pub nodes: usize,
    pub toolkit: &'static str,
    pub blocks: usize,
    pub passes: usize,
    pub bridge: Side,
    /// `None` when the legacy reference is not built.
    pub legacy: Option<Side>,
    /// Bridge ÷ legacy, time per block.
    pub median_ratio: Option<f64>,
    pub p99_ratio: Option<f64>,
    /// Every timed bridge call over [`SLOW_CALL`].
    pub bridge_calls_over_50ms: Vec<TimedCall>,
}

/// One side's figures.
#[derive(Debug, Serialize)]
pub struct Side {
    pub calls_per_block: usize,
    /// The time of one block's group of calls.
    pub per_block: Summary,
    pub members: Vec<MemberRow>,
    pub slowest: Option<TimedCall>,
    pub errors: usize,
    pub first_error: Option<String>,
}

/// One member's calls on one side.
#[derive(Debug, Serialize)]
pub struct MemberRow {
    pub member: &'static str,
    pub summary: Summary,
    pub max_ms: f64,
}

/// One timed call.
#[derive(Clone, Debug, Serialize)]
pub struct TimedCall {
    pub member: &'static str,
    /// The block (0-based, in reading order) and timed pass (0-based) it was made for.
    pub block: usize,
    pub pass: usize,
    pub ms: f64,
}

/// Each block's calls, in reading order.
type Plan = Vec<Vec<(Obj, Call)>>;

/// Attaches the document through the bridge as a web engine, starts the legacy reference on
/// the same file, and reads `size.blocks` blocks on both, side by side.
pub fn measure(world: &mut World, size: &Size) -> Result<SayAll> {
    // The first frame only: the legacy reference reports "ready" after it, so both copies
    // are known to show the same tree when reading starts.
    let stream = fixtures::doc(size.sections)
        .first_frame()
        .with_toolkit(TOOLKIT);
    let stream = stream.renamed(&format!("bench say-all {}", stream.nodes));
    let texts = block_texts(&stream, size.blocks)?;
    let app = world.attach(&stream)?;
    let blocks = bridge_blocks(&world.client, &app.root, size.blocks)?;
    check_blocks(&world.client, &blocks, &texts)?;
    let bridge = bridge_plan(blocks);
    let legacy = crate::spawn_legacy_for(world, &stream)?;
    let outcome = legacy
        .as_ref()
        .map(|l| legacy_plan(&world.client, &l.root, &texts))
        .transpose()
        .map(|legacy_plan| read_both(&world.client, &bridge, legacy_plan.as_ref(), size.passes));
    if let Some(l) = legacy {
        world.stop(l.pid);
    }
    drop(app);
    let (bridge_samples, legacy_samples) = outcome?;
    Ok(summarize(
        &stream,
        size,
        &bridge_samples,
        legacy_samples.as_ref(),
    ))
}

/// One block the bridge reads: the block, its parent and its index there (its link in the
/// parent's Hypertext, as Orca asks for it).
struct Block {
    obj: Obj,
    parent: Obj,
    index: i32,
}

/// The first `count` text blocks through the bridge, in document order: the document's
/// sections' children that have text, list items in place of their list.
fn bridge_blocks(client: &Client, app_root: &Obj, count: usize) -> Result<Vec<Block>> {
    let window = client.child_at(app_root, 0)?;
    let document = client.child_at(&window, 0)?;
    let mut blocks = Vec::with_capacity(count);
    for section in client.children(&document)? {
        collect_blocks(client, &section, count, &mut blocks)?;
        if blocks.len() >= count {
            return Ok(blocks);
        }
    }
    Err(fail(format!(
        "the bridge's document has {} text blocks, {count} wanted",
        blocks.len()
    )))
}

/// Adds `parent`'s children that have text to `blocks`, a list's items in place of the list,
/// until there are `count`.
fn collect_blocks(
    client: &Client,
    parent: &Obj,
    count: usize,
    blocks: &mut Vec<Block>,
) -> Result<()> {
    for (index, child) in client.children(parent)?.into_iter().enumerate() {
        if blocks.len() >= count {
            break;
        }
        if client.role_name(&child)? == "list" {
            collect_blocks(client, &child, count, blocks)?;
        } else if client.character_count(&child).is_ok_and(|n| n > 0) {
            let index = i32::try_from(index).map_err(|e| fail(format!("child index: {e}")))?;
            blocks.push(Block {
                obj: child,
                parent: parent.clone(),
                index,
            });
        }
    }
    Ok(())
}

/// The calls Orca 43.1's web script makes per piece of Say All (its debug log): the block's
/// Text, its role and states, and the block as its parent's child object.
fn bridge_plan(blocks: Vec<Block>) -> Plan {
    blocks
        .into_iter()
        .map(|b| {
            let own = [
                Call::CharacterCount,
                Call::GetText(0, -1),
                Call::GetTextAtOffset(0, SENTENCE_START),
                Call::GetAttributeRun(0, false),
                Call::GetRole,
                Call::GetState,
                Call::StartIndex,
                Call::EndIndex,
            ];
            let mut calls: Vec<(Obj, Call)> =
                own.into_iter().map(|call| (b.obj.clone(), call)).collect();
            calls.push((b.parent, Call::GetLink(b.index)));
            calls
        })
        .collect()
}

/// The bridge's first and last block must hold the text of the fixture's, or the two sides
/// would read different content: the block's text up to its first child object (its own first
/// run, without the hard break the per-block layout drops) starts the fixture block's text.
fn check_blocks(client: &Client, blocks: &[Block], texts: &[String]) -> Result<()> {
    for i in [0, blocks.len().saturating_sub(1)] {
        let (Some(block), Some(text)) = (blocks.get(i), texts.get(i)) else {
            continue;
        };
        let found = client.text(&block.obj, 0, -1)?;
        let head = found.split('\u{FFFC}').next().unwrap_or_default();
        let head = head.trim_end_matches('\n');
        if head.is_empty() || !text.starts_with(head) {
            return Err(fail(format!(
                "the bridge's block {i} ({}) reads {found:?}, the fixture's {text:?}",
                block.obj.path.as_str()
            )));
        }
    }
    Ok(())
}

/// The same blocks through accesskit_unix, whose document has one Text with every run inline:
/// per block, its line and attribute run at the offset where the block starts, and the role
/// and states of the document (the object Orca reads there).
fn legacy_plan(client: &Client, app_root: &Obj, texts: &[String]) -> Result<Plan> {
    let window = client.child_at(app_root, 0)?;
    let document = client.child_at(&window, 0)?;
    let offsets = block_offsets(texts)?;
    check_offsets(client, &document, texts, &offsets)?;
    Ok(offsets
        .iter()
        .map(|&offset| {
            [
                Call::GetStringAtOffset(offset, LINE),
                Call::GetAttributeRun(offset, false),
                Call::GetRole,
                Call::GetState,
            ]
            .into_iter()
            .map(|call| (document.clone(), call))
            .collect()
        })
        .collect())
}

/// Where each block starts in the document's inline text: the characters of the blocks before
/// it (the document's text is its runs, all inside blocks, in order).
fn block_offsets(texts: &[String]) -> Result<Vec<i32>> {
    let mut offsets = Vec::with_capacity(texts.len());
    let mut offset = 0usize;
    for text in texts {
        offsets.push(i32::try_from(offset).map_err(|e| fail(format!("offset {offset}: {e}")))?);
        offset += text.chars().count();
    }
    Ok(offsets)
}

/// The legacy document's text at the first and last block's offsets must be those blocks' text,
/// or the legacy side would time reads of other content.
fn check_offsets(client: &Client, document: &Obj, texts: &[String], offsets: &[i32]) -> Result<()> {
    for i in [0, texts.len().saturating_sub(1)] {
        let (Some(text), Some(&start)) = (texts.get(i), offsets.get(i)) else {
            continue;
        };
        let end = start.saturating_add(i32::try_from(text.chars().count()).unwrap_or(i32::MAX));
        let found = client.text(document, start, end)?;
        if &found != text {
            return Err(fail(format!(
                "the legacy document's text at block {i} ({start}..{end}) is {found:?}, not {text:?}"
            )));
        }
    }
    Ok(())
}

/// The inline text of the first `count` text blocks of the stream's first tree, in the order
/// [`bridge_blocks`] finds them.
fn block_texts(stream: &Stream, count: usize) -> Result<Vec<String>> {
    let tree = stream
        .first_tree()
        .ok_or_else(|| fail(format!("stream {} has no tree", stream.name)))?;
    let nodes: HashMap<NodeId, &Node> = tree.nodes.iter().map(|(id, n)| (*id, n)).collect();
    let document = document_of(tree, &nodes)
        .ok_or_else(|| fail(format!("stream {} has no document", stream.name)))?;
    let mut texts = Vec::with_capacity(count);
    for section in document.children() {
        for child in children_of(&nodes, *section) {
            let blocks = if child.1.role() == Role::List {
                children_of(&nodes, child.0)
            } else {
                vec![child]
            };
            texts.extend(blocks.into_iter().map(|(id, _)| runs_text(&nodes, id)));
        }
    }
    texts.retain(|text| !text.is_empty());
    texts.truncate(count);
    if texts.len() < count {
        return Err(fail(format!(
            "stream {} has {} text blocks, {count} wanted",
            stream.name,
            texts.len()
        )));
    }
    Ok(texts)
}

fn document_of<'a>(tree: &TreeUpdate, nodes: &HashMap<NodeId, &'a Node>) -> Option<&'a Node> {
    let root = tree.tree.as_ref()?.root;
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        let node = nodes.get(&id)?;
        if node.role() == Role::Document {
            return Some(node);
        }
        stack.extend(node.children().iter().rev());
    }
    None
}

fn children_of<'a>(nodes: &HashMap<NodeId, &'a Node>, id: NodeId) -> Vec<(NodeId, &'a Node)> {
    nodes.get(&id).map_or_else(Vec::new, |node| {
        node.children()
            .iter()
            .filter_map(|child| nodes.get(child).map(|n| (*child, *n)))
            .collect()
    })
}

/// Every run's text under `id`, in order: what accesskit inlines for it.
fn runs_text(nodes: &HashMap<NodeId, &Node>, id: NodeId) -> String {
    let Some(node) = nodes.get(&id) else {
        return String::new();
    };
    if node.role() == Role::TextRun {
        return node.value().unwrap_or_default().to_owned();
    }
    node.children()
        .iter()
        .map(|child| runs_text(nodes, *child))
        .collect()
}

/// Every call of one side, timed, over the timed passes.
#[derive(Default)]
struct Samples {
    blocks: Vec<Duration>,
    calls: Vec<TimedCall>,
    durations: HashMap<&'static str, Vec<Duration>>,
    errors: usize,
    first_error: Option<String>,
}

impl Samples {
    fn record(&mut self, call: Call, block: usize, pass: usize, took: Duration) {
        self.calls.push(TimedCall {
            member: call.member(),
            block,
            pass,
            ms: took.as_secs_f64() * 1e3,
        });
        self.durations.entry(call.member()).or_default().push(took);
    }
}

/// One untimed pass of each side, then `passes` timed ones, the side that goes first
/// alternating.
fn read_both(
    client: &Client,
    bridge: &Plan,
    legacy: Option<&Plan>,
    passes: usize,
) -> (Samples, Option<Samples>) {
    let mut bridge_samples = Samples::default();
    let mut legacy_samples = legacy.map(|_| Samples::default());
    read_pass(client, bridge, None, &mut Samples::default());
    if let Some(plan) = legacy {
        read_pass(client, plan, None, &mut Samples::default());
    }
    for pass in 0..passes {
        let legacy_first = pass % 2 == 1;
        for on_legacy in [legacy_first, !legacy_first] {
            match (on_legacy, legacy, legacy_samples.as_mut()) {
                (true, Some(plan), Some(samples)) => read_pass(client, plan, Some(pass), samples),
                (false, _, _) => read_pass(client, bridge, Some(pass), &mut bridge_samples),
                _ => {}
            }
        }
    }
    (bridge_samples, legacy_samples)
}

/// Reads every block of `plan` once; `pass` is `None` for the untimed warm-up.
fn read_pass(client: &Client, plan: &Plan, pass: Option<usize>, samples: &mut Samples) {
    for (block, calls) in plan.iter().enumerate() {
        let started = Instant::now();
        for (obj, call) in calls {
            let call_started = Instant::now();
            let outcome = client.send_call(obj, *call);
            let took = call_started.elapsed();
            if let Err(e) = outcome {
                samples.errors += 1;
                samples.first_error.get_or_insert_with(|| {
                    format!("{} on {}: {e}", call.member(), obj.path.as_str())
                });
            }
            if let Some(pass) = pass {
                samples.record(*call, block, pass, took);
            }
        }
        if pass.is_some() {
            samples.blocks.push(started.elapsed());
        }
    }
}

fn summarize(stream: &Stream, size: &Size, bridge: &Samples, legacy: Option<&Samples>) -> SayAll {
    let bridge_side = side(bridge);
    let legacy_side = legacy.map(side);
    let of = |f: fn(&Summary) -> f64| {
        legacy_side
            .as_ref()
            .and_then(|l| ratio(f(&bridge_side.per_block), f(&l.per_block)))
    };
    SayAll {
        fixture: stream.name.clone(),
        nodes: stream.nodes,
        toolkit: TOOLKIT,
        blocks: size.blocks,
        passes: size.passes,
        median_ratio: of(|s| s.median_us),
        p99_ratio: of(|s| s.p99_us),
        bridge_calls_over_50ms: bridge
            .calls
            .iter()
            .filter(|c| c.ms > SLOW_CALL.as_secs_f64() * 1e3)
            .cloned()
            .collect(),
        bridge: bridge_side,
        legacy: legacy_side,
    }
}

fn side(samples: &Samples) -> Side {
    let mut members: Vec<MemberRow> = samples
        .durations
        .iter()
        .map(|(member, durations)| MemberRow {
            member,
            summary: Summary::of(durations),
            max_ms: durations
                .iter()
                .max()
                .map_or(0.0, |d| d.as_secs_f64() * 1e3),
        })
        .collect();
    members.sort_by(|a, b| b.summary.median_us.total_cmp(&a.summary.median_us));
    Side {
        calls_per_block: samples.calls.len() / samples.blocks.len().max(1),
        per_block: Summary::of(&samples.blocks),
        members,
        slowest: samples
            .calls
            .iter()
            .max_by(|a, b| a.ms.total_cmp(&b.ms))
            .cloned(),
        errors: samples.errors,
        first_error: samples.first_error.clone(),
    }
}

/// The table for docs/benchmarks.md, with the per-member breakdown.
pub fn markdown(r: &SayAll) -> String {
    let mut out = format!(
        "Say All over the first {} text blocks of {} ({} nodes, bridge producer \"{}\"), \
         {} timed passes per side\n\n\
         | Side | calls per block | per block median / p99 (µs) | slowest call | errors |\n\
         |---|---|---|---|---|\n",
        r.blocks, r.fixture, r.nodes, r.toolkit, r.passes
    );
    row(&mut out, "bridge (per-block Text)", &r.bridge);
    match &r.legacy {
        Some(legacy) => row(&mut out, "accesskit_unix (one document Text)", legacy),
        None => out.push_str("| accesskit_unix | legacy reference not built | | | |\n"),
    }
    let fmt = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}"));
    let _ = writeln!(
        out,
        "\nbridge ÷ accesskit_unix per block: median {}, p99 {}",
        fmt(r.median_ratio),
        fmt(r.p99_ratio)
    );
    slow_calls(&mut out, r);
    out.push_str("\n| bridge member | median / p99 (µs) | max (ms) |\n|---|---|---|\n");
    for m in &r.bridge.members {
        let _ = writeln!(
            out,
            "| {} | {:.0} / {:.0} | {:.2} |",
            m.member, m.summary.median_us, m.summary.p99_us, m.max_ms
        );
    }
    out
}

fn row(out: &mut String, name: &str, side: &Side) {
    let slowest = side
        .slowest
        .as_ref()
        .map_or_else(String::new, |s| format!("{} {:.2} ms", s.member, s.ms));
    let _ = writeln!(
        out,
        "| {name} | {} | {:.0} / {:.0} | {slowest} | {} |",
        side.calls_per_block, side.per_block.median_us, side.per_block.p99_us, side.errors
    );
    if let Some(error) = &side.first_error {
        let _ = writeln!(out, "| | first error: {error} | | | |");
    }
}

fn slow_calls(out: &mut String, r: &SayAll) {
    let over = &r.bridge_calls_over_50ms;
    if over.is_empty() {
        let _ = writeln!(out, "no bridge call over 50 ms");
        return;
    }
    let _ = writeln!(out, "**{} bridge call(s) over 50 ms**:", over.len());
    for c in over.iter().take(10) {
        let _ = writeln!(
            out,
            "- {} {:.1} ms (block {}, pass {})",
            c.member, c.ms, c.block, c.pass
        );
    }
}
