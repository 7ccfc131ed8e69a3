//! Fuzz harnesses. Three targets, each a function of arbitrary bytes that
//! must never panic or hang:
//!
//! * [`decode_validate_apply`] (this file): decode arbitrary bytes into tree
//!   updates, commit them to an `AppReplica`, and after every accepted commit
//!   run the consumer queries that malformed input would break (names,
//!   relations, text, selections, line navigation, parent walks);
//! * [`protocol::protocol_session`]: sender byte streams through the push
//!   protocol's framing and `ReceiverSession`, in arbitrary chunks;
//! * [`shim::atspi_calls`]: AT-SPI method calls through the shim's
//!   `handle_call` on fixture and fuzzed replicas.
//!
//! Input formats of `decode_validate_apply` (chosen by the first byte):
//! * `{` — JSONL of `RecordedLine`s (the malformed corpus format): every
//!   sender message is replayed;
//! * `[` — a JSON array of `TreeUpdate`s, one commit each on surface 1;
//! * anything else — postcard: byte 0 selects how many updates go in each
//!   commit (1 + byte % 3), the rest is decoded as consecutive postcard
//!   `TreeUpdate`s.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;

pub mod input;
pub mod protocol;
pub mod shim;
pub mod trees;

use accesskit::TreeUpdate;
use newton_cache::accesskit_consumer::TreeState;
use newton_cache::{AppReplica, Limits, SurfaceId};
use newton_push_protocol::{RecordedLine, SenderMessage};

/// What one input did, for statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    pub applied: u64,
    pub rejected: u64,
}

/// Small limits so that size checks are reachable by the fuzzer.
pub fn fuzz_limits() -> Limits {
    Limits {
        max_nodes: 5_000,
        max_depth: 64,
        max_children: 500,
        max_frame_bytes: 1 << 20,
        max_surfaces: 8,
        max_app_bytes: newton_cache::limits::DEFAULT_MAX_APP_BYTES,
    }
}

/// The fuzz entry point.
pub fn decode_validate_apply(data: &[u8]) -> Outcome {
    let mut app = AppReplica::new(fuzz_limits());
    let mut outcome = Outcome::default();
    match data.first() {
        Some(b'{') => replay_jsonl(&mut app, data, &mut outcome),
        Some(b'[') => {
            let updates: Vec<TreeUpdate> = serde_json::from_slice(data).unwrap_or_default();
            commit_each(&mut app, updates.into_iter().map(|u| vec![u]), &mut outcome);
        }
        Some(mode) => {
            let per_commit = 1 + usize::from(*mode % 3);
            let updates = decode_postcard(data.get(1..).unwrap_or_default());
            let commits: Vec<Vec<TreeUpdate>> = updates
                .chunks(per_commit)
                .map(<[TreeUpdate]>::to_vec)
                .collect();
            commit_each(&mut app, commits.into_iter(), &mut outcome);
        }
        None => {}
    }
    outcome
}

/// Consecutive postcard `TreeUpdate`s until the bytes run out or fail.
pub fn decode_postcard(mut bytes: &[u8]) -> Vec<TreeUpdate> {
    let mut out = Vec::new();
    while !bytes.is_empty() && out.len() < 64 {
        match postcard::take_from_bytes::<TreeUpdate>(bytes) {
            Ok((update, rest)) => {
                out.push(update);
                bytes = rest;
            }
            Err(_) => break,
        }
    }
    out
}

fn commit_each(
    app: &mut AppReplica,
    commits: impl Iterator<Item = Vec<TreeUpdate>>,
    outcome: &mut Outcome,
) {
    let surface = SurfaceId(1);
    let _ = app.create_surface(surface, None);
    for updates in commits {
        commit_checked(app, surface, updates, 0, outcome);
    }
}

/// Commits and checks the invariants: a rejection changes nothing, an
/// acceptance leaves a tree every query can walk.
pub fn commit_checked(
    app: &mut AppReplica,
    surface: SurfaceId,
    updates: Vec<TreeUpdate>,
    bytes: usize,
    outcome: &mut Outcome,
) {
    let before = app.dump();
    match app.commit(surface, updates, bytes) {
        Ok(_) => {
            outcome.applied += 1;
            if let Some(tree) = app.surface(surface).and_then(|s| s.tree()) {
                query_everything(tree.state());
            }
        }
        Err(_) => {
            outcome.rejected += 1;
            assert_eq!(app.dump(), before, "a rejected commit changed the replica");
        }
    }
}

fn replay_jsonl(app: &mut AppReplica, data: &[u8], outcome: &mut Outcome) {
    let mut pending: BTreeMap<SurfaceId, Vec<TreeUpdate>> = BTreeMap::new();
    for raw in data.split(|b| *b == b'\n') {
        let Ok(line) = serde_json::from_slice::<RecordedLine>(raw) else {
            continue;
        };
        let Some(message) = line.message else {
            continue;
        };
        match message {
            SenderMessage::CreateSurface { surface, title } => {
                let _ = app.create_surface(surface, title);
            }
            SenderMessage::Update { surface, update } => {
                pending.entry(surface).or_default().push(update)
            }
            SenderMessage::Commit { surface, .. } => {
                let updates = pending.remove(&surface).unwrap_or_default();
                commit_checked(app, surface, updates, raw.len(), outcome);
            }
            SenderMessage::DestroySurface { surface } => {
                let _ = app.destroy_surface(surface);
            }
            SenderMessage::Focus { surface } => {
                let _ = app.set_focused_surface(surface);
                for s in app.surfaces() {
                    if let Some(tree) = s.tree() {
                        query_everything(tree.state());
                    }
                }
            }
            SenderMessage::Geometry { surface, geometry } => {
                let _ = app.set_geometry(surface, geometry);
            }
            SenderMessage::Goodbye => {
                app.clear();
            }
            _ => {}
        }
    }
}

/// Walks the whole tree through the consumer queries that malformed input
/// makes panic or loop. Bounded: a walk longer than the node count is a
/// finding (cycle).
pub fn query_everything(state: &TreeState) {
    let Some(root) = state.node_by_id(state.root_id()) else {
        return;
    };
    let _ = state.focus();
    let mut stack = vec![root];
    let mut seen = 0usize;
    let trace = std::env::var_os("NEWTON_FUZZ_TRACE_QUERIES").is_some();
    let say = |what: &str| {
        if trace {
            eprintln!("    {what}");
        }
    };
    while let Some(node) = stack.pop() {
        seen += 1;
        assert!(seen <= 1_000_000, "tree walk does not end");
        say(&format!("node {:?} {:?}", node.locate().0, node.role()));
        let _ = node.label();
        let _ = node.value();
        let _ = node.description();
        let _ = node.controls().count();
        let _ = node.labelled_by().count();
        let _ = node.active_descendant();
        let _ = node.bounding_box();
        let _ = node.live();
        let _ = node.is_focused();
        if node.supports_text_ranges() {
            let range = node.document_range();
            say("text");
            let _ = range.text();
            let start = range.start();
            say("line end");
            let _ = start.forward_to_line_end();
            say("word end");
            let _ = start.forward_to_word_end();
            say("line start");
            let _ = node.document_end().backward_to_line_start();
            say("selection");
            if let Some(selection) = node.text_selection() {
                let _ = selection.text();
            }
            if let Some(anchor) = node.text_selection_anchor() {
                let _ = anchor.to_global_usv_index();
                let _ = anchor.to_global_utf16_index();
                // Not `to_line_index`: it never returns when an empty run is
                // followed by another run (hazard H1, docs/hazards.md),
                // which the validator accepts.
            }
        }
        let mut up = node.parent();
        let mut steps = 0;
        while let Some(parent) = up {
            steps += 1;
            assert!(steps <= 100_000, "parent walk does not end");
            up = parent.parent();
        }
        stack.extend(node.children().rev());
    }
}

// ---------------------------------------------------------------------------
// Structured random inputs for the bounded loop (no libFuzzer needed).

use accesskit::{Node, NodeId, Role, TextPosition, TextSelection, TreeId, TreeInfo};

/// xorshift64*: deterministic, dependency-free randomness.
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (0 is remapped).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    fn pick<T: Copy>(&mut self, list: &[T], fallback: T) -> T {
        list.get(self.below(list.len()))
            .copied()
            .unwrap_or(fallback)
    }
}

/// The producer's view of its tree: id → (role, text, children).
#[derive(Default)]
struct Model {
    nodes: BTreeMap<u64, (Role, String, Vec<u64>)>,
    next: u64,
    focus: u64,
}

impl Model {
    fn node(&self, id: u64, rng: &mut Rng) -> Node {
        let (role, text, children) =
            self.nodes
                .get(&id)
                .cloned()
                .unwrap_or((Role::Unknown, String::new(), vec![]));
        let mut node = Node::new(role);
        if role == Role::TextRun {
            node.set_character_lengths(
                text.chars().map(|c| c.len_utf8() as u8).collect::<Vec<_>>(),
            );
            node.set_value(text);
            return node;
        }
        node.set_children(children.iter().map(|c| NodeId(*c)).collect::<Vec<_>>());
        if !text.is_empty() {
            node.set_label(text);
        }
        let runs: Vec<u64> = children
            .iter()
            .copied()
            .filter(|c| self.nodes.get(c).is_some_and(|n| n.0 == Role::TextRun))
            .collect();
        if role == Role::TextInput && !runs.is_empty() {
            let a = rng.pick(&runs, 0);
            node.set_text_selection(TextSelection {
                anchor: TextPosition {
                    node: NodeId(a),
                    character_index: rng.below(4),
                },
                focus: TextPosition {
                    node: NodeId(rng.pick(&runs, a)),
                    character_index: rng.below(4),
                },
            });
        }
        if rng.below(4) == 0 {
            let others: Vec<u64> = self.nodes.keys().copied().collect();
            node.set_labelled_by(vec![NodeId(rng.pick(&others, 0))]);
        }
        node
    }

    fn update(&self, ids: &[u64], rng: &mut Rng, tree: bool) -> TreeUpdate {
        TreeUpdate {
            nodes: ids
                .iter()
                .map(|id| (NodeId(*id), self.node(*id, rng)))
                .collect(),
            tree: tree.then(|| TreeInfo::new(NodeId(0))),
            tree_id: TreeId::ROOT,
            focus: NodeId(self.focus),
        }
    }

    fn parent_of(&self, id: u64) -> Option<u64> {
        self.nodes
            .iter()
            .find(|(_, n)| n.2.contains(&id))
            .map(|(p, _)| *p)
    }

    fn subtree(&self, id: u64) -> Vec<u64> {
        let mut out = vec![];
        let mut stack = vec![id];
        while let Some(x) = stack.pop() {
            out.push(x);
            stack.extend(self.nodes.get(&x).map(|n| n.2.clone()).unwrap_or_default());
        }
        out
    }

    fn edit(&mut self, rng: &mut Rng) -> TreeUpdate {
        let containers: Vec<u64> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.0 != Role::TextRun)
            .map(|(id, _)| *id)
            .collect();
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        let texts = ["", "a", "hé", "€x", "line\n", "ok"];
        let text = texts[rng.below(texts.len())].to_string();
        match rng.below(6) {
            0 | 1 => {
                let parent = rng.pick(&containers, 0);
                let id = self.next;
                self.next += 1;
                let roles = [
                    Role::TextRun,
                    Role::Group,
                    Role::Button,
                    Role::TextInput,
                    Role::Label,
                ];
                let role = roles[rng.below(roles.len())];
                self.nodes.insert(id, (role, text, vec![]));
                if let Some(p) = self.nodes.get_mut(&parent) {
                    let at = rng.below(p.2.len() + 1);
                    p.2.insert(at, id);
                }
                self.update(&[parent, id], rng, false)
            }
            2 => {
                let victim = rng.pick(&ids, 0);
                let Some(parent) = self.parent_of(victim) else {
                    return self.update(&[0], rng, false);
                };
                let gone = self.subtree(victim);
                if gone.contains(&self.focus) {
                    self.focus = 0;
                }
                for g in &gone {
                    self.nodes.remove(g);
                }
                if let Some(p) = self.nodes.get_mut(&parent) {
                    p.2.retain(|c| *c != victim);
                }
                // Relations may still name removed nodes: re-send everything
                // that could (cheap at fuzz sizes) so the update stays valid.
                let all: Vec<u64> = self.nodes.keys().copied().collect();
                self.update(&all, rng, false)
            }
            3 => {
                let mover = rng.pick(&ids, 0);
                let Some(old) = self.parent_of(mover) else {
                    return self.update(&[0], rng, false);
                };
                let inside = self.subtree(mover);
                let targets: Vec<u64> = containers
                    .iter()
                    .copied()
                    .filter(|c| !inside.contains(c))
                    .collect();
                let new = rng.pick(&targets, old);
                if let Some(p) = self.nodes.get_mut(&old) {
                    p.2.retain(|c| *c != mover);
                }
                if let Some(p) = self.nodes.get_mut(&new) {
                    let at = rng.below(p.2.len() + 1);
                    p.2.insert(at, mover);
                }
                let all: Vec<u64> = self.nodes.keys().copied().collect();
                self.update(&all, rng, false)
            }
            4 => {
                let id = rng.pick(&ids, 0);
                if let Some(n) = self.nodes.get_mut(&id) {
                    n.1 = text;
                }
                self.update(&[id], rng, false)
            }
            _ => {
                self.focus = rng.pick(&ids, 0);
                self.update(&[self.focus], rng, false)
            }
        }
    }
}

/// One malformation of `update`.
fn corrupt(update: &mut TreeUpdate, rng: &mut Rng) {
    let id = |rng: &mut Rng| {
        if rng.below(4) == 0 {
            NodeId(900 + rng.below(5) as u64)
        } else {
            NodeId(rng.below(12) as u64)
        }
    };
    let len = update.nodes.len();
    let at = rng.below(len);
    let kind = rng.below(13);
    if kind == 0 && len > 1 {
        update.nodes.remove(at);
        return;
    }
    if kind == 1 {
        update.focus = id(rng);
        return;
    }
    if kind == 2 {
        update.tree = Some(TreeInfo::new(id(rng)));
        return;
    }
    if kind == 3 {
        if let Some(entry) = update.nodes.get(at).cloned() {
            update.nodes.push(entry);
        }
        return;
    }
    let target = id(rng);
    let other = id(rng);
    let Some((own, node)) = update.nodes.get_mut(at) else {
        return;
    };
    match kind {
        4 => {
            if let Some(c) = node.children().first().copied() {
                node.push_child(c);
            }
        }
        5 => node.push_child(*own),
        6 => node.push_child(target),
        7 => node.set_controls(vec![target]),
        8 => {
            node.set_role(Role::TextRun);
            node.set_value("ab€");
            node.set_character_lengths(vec![rng.below(5) as u8, 1]);
        }
        9 => {
            node.set_next_on_line(target);
            node.set_previous_on_line(other);
        }
        10 => node.set_text_selection(TextSelection {
            anchor: TextPosition {
                node: target,
                character_index: rng.below(9),
            },
            focus: TextPosition {
                node: other,
                character_index: 0,
            },
        }),
        11 => node.set_tree_id(TreeId(accesskit::Uuid::from_u128(rng.next_u64().into()))),
        _ => node.set_word_starts(vec![rng.below(6) as u8, 0]),
    }
}

/// A random input: a valid stream of edits (some updates corrupted), encoded
/// as a JSON array or as postcard, in the formats [`decode_validate_apply`]
/// reads.
pub fn random_input(rng: &mut Rng) -> Vec<u8> {
    let mut model = Model {
        next: 1,
        ..Model::default()
    };
    model.nodes.insert(0, (Role::Window, "root".into(), vec![]));
    let mut updates = vec![model.update(&[0], rng, true)];
    for _ in 0..1 + rng.below(25) {
        let mut update = model.edit(rng);
        if rng.below(5) == 0 {
            corrupt(&mut update, rng);
        }
        updates.push(update);
    }
    if rng.below(2) == 0 {
        serde_json::to_vec(&updates).unwrap_or_default()
    } else {
        let mut out = vec![0u8];
        for update in &updates {
            out.extend(postcard::to_allocvec(update).unwrap_or_default());
        }
        out
    }
}

/// Flips, inserts or deletes a few random bytes.
pub fn mutate_bytes(data: &mut Vec<u8>, rng: &mut Rng) {
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(3) {
            0 if at < data.len() => data[at] = rng.next_u64() as u8,
            1 => data.insert(at, rng.pick(b"0123456789[]{},:\"", b'0')),
            _ if at < data.len() => {
                data.remove(at);
            }
            _ => {}
        }
    }
}
