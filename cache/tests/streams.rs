//! Property tests over random update streams:
//! (a) valid streams give the same tree as a plain `accesskit_consumer::Tree`;
//! (b) mutated streams never panic, and a rejected commit changes nothing.

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use common::*;
use newton_cache::accesskit::{
    Node, NodeId, Role, TextPosition, TextSelection, TreeId, TreeInfo, TreeUpdate,
};
use newton_cache::accesskit_consumer::{NodeRef, Tree, TreeChangeHandler, TreeState};
use newton_cache::{AppReplica, Limits};
use proptest::prelude::*;

/// The producer's own model of its tree, used to emit valid updates.
#[derive(Clone, Default)]
struct Model {
    nodes: BTreeMap<u64, (Role, String, Vec<u64>)>,
    next_id: u64,
    focus: u64,
}

impl Model {
    fn node(&self, id: u64) -> Node {
        let (role, label, children) =
            self.nodes
                .get(&id)
                .cloned()
                .unwrap_or((Role::Unknown, String::new(), vec![]));
        if role == Role::TextRun {
            return run(&label);
        }
        let mut node = kids(role, &children);
        if !label.is_empty() {
            node.set_label(label);
        }
        node
    }

    fn ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    fn parent_of(&self, id: u64) -> Option<u64> {
        self.nodes
            .iter()
            .find(|(_, (_, _, c))| c.contains(&id))
            .map(|(p, _)| *p)
    }

    fn subtree(&self, id: u64) -> Vec<u64> {
        let mut out = vec![];
        let mut stack = vec![id];
        while let Some(x) = stack.pop() {
            out.push(x);
            if let Some((_, _, c)) = self.nodes.get(&x) {
                stack.extend(c);
            }
        }
        out
    }

    fn update(&self, ids: &[u64], full_tree: bool) -> TreeUpdate {
        TreeUpdate {
            nodes: ids.iter().map(|id| (NodeId(*id), self.node(*id))).collect(),
            tree: full_tree.then(|| TreeInfo::new(NodeId(0))),
            tree_id: TreeId::ROOT,
            focus: NodeId(self.focus),
        }
    }

    fn first(&mut self) -> TreeUpdate {
        self.nodes.insert(0, (Role::Window, "root".into(), vec![]));
        self.next_id = 1;
        self.update(&[0], true)
    }

    fn containers(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, (r, _, _))| *r != Role::TextRun)
            .map(|(id, _)| *id)
            .collect()
    }

    /// One valid edit chosen by `op`, `a`, `b`.
    fn edit(&mut self, op: u8, a: u32, b: u32, text: &str) -> TreeUpdate {
        let containers = self.containers();
        let ids = self.ids();
        let pick = |list: &[u64], x: u32| list[x as usize % list.len()];
        match op % 6 {
            0 | 1 => {
                let parent = pick(&containers, a);
                let id = self.next_id;
                self.next_id += 1;
                let role = if b.is_multiple_of(3) {
                    Role::TextRun
                } else if b % 3 == 1 {
                    Role::Group
                } else {
                    Role::Button
                };
                self.nodes.insert(id, (role, text.to_string(), vec![]));
                if let Some(p) = self.nodes.get_mut(&parent) {
                    let at = b as usize % (p.2.len() + 1);
                    p.2.insert(at, id);
                }
                self.update(&[parent, id], false)
            }
            2 => {
                let victim = pick(&ids, a);
                let Some(parent) = self.parent_of(victim) else {
                    return self.update(&[0], false);
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
                self.update(&[parent], false)
            }
            3 => {
                let mover = pick(&ids, a);
                let Some(old_parent) = self.parent_of(mover) else {
                    return self.update(&[0], false);
                };
                let inside = self.subtree(mover);
                let targets: Vec<u64> = containers
                    .iter()
                    .copied()
                    .filter(|c| !inside.contains(c))
                    .collect();
                let new_parent = pick(&targets, b);
                if let Some(p) = self.nodes.get_mut(&old_parent) {
                    p.2.retain(|c| *c != mover);
                }
                if let Some(p) = self.nodes.get_mut(&new_parent) {
                    let at = b as usize % (p.2.len() + 1);
                    p.2.insert(at, mover);
                }
                if old_parent == new_parent {
                    self.update(&[old_parent], false)
                } else {
                    self.update(&[old_parent, new_parent], false)
                }
            }
            4 => {
                let id = pick(&ids, a);
                if let Some(n) = self.nodes.get_mut(&id) {
                    n.1 = text.to_string();
                }
                self.update(&[id], false)
            }
            _ => {
                self.focus = pick(&ids, a);
                self.update(&[self.focus], false)
            }
        }
    }
}

type Ops = Vec<(u8, u32, u32, String)>;

fn stream(ops: &Ops) -> Vec<TreeUpdate> {
    let mut model = Model::default();
    let mut out = vec![model.first()];
    for (op, a, b, text) in ops {
        out.push(model.edit(*op, *a, *b, text));
    }
    out
}

struct Ignore;
impl TreeChangeHandler for Ignore {
    fn node_added(&mut self, _: &NodeRef) {}
    fn node_updated(&mut self, _: &NodeRef, _: &NodeRef) {}
    fn focus_moved(&mut self, _: Option<&NodeRef>, _: Option<&NodeRef>) {}
    fn node_removed(&mut self, _: &NodeRef) {}
}

/// Every node in tree order: id, parent, children, role, label.
fn shape(state: &TreeState) -> Vec<String> {
    let mut out = vec![];
    let Some(root) = state.node_by_id(state.root_id()) else {
        return out;
    };
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let parent = node.parent().map(|p| p.locate().0);
        let kids: Vec<NodeId> = node.data().children().to_vec();
        out.push(format!(
            "{:?} {:?} {:?} {:?} {:?}",
            node.locate().0,
            parent,
            kids,
            node.role(),
            node.label()
        ));
        stack.extend(node.children().rev());
    }
    out
}

fn node_ids(state: &TreeState) -> std::collections::BTreeSet<u64> {
    shape(state)
        .iter()
        .filter_map(|line| line.split(' ').next()?.trim_start_matches('#').parse().ok())
        .collect()
}

fn limits() -> Limits {
    Limits {
        max_nodes: 10_000,
        max_depth: 64,
        max_children: 1000,
        max_frame_bytes: 1 << 20,
        max_surfaces: 4,
        max_app_bytes: newton_cache::limits::DEFAULT_MAX_APP_BYTES,
    }
}

/// Exercises the consumer queries that malformed input would break.
fn query_everything(state: &TreeState) {
    let Some(root) = state.node_by_id(state.root_id()) else {
        return;
    };
    let mut stack = vec![root];
    let mut seen = 0usize;
    while let Some(node) = stack.pop() {
        seen += 1;
        assert!(seen < 100_000, "tree walk does not end");
        let _ = node.label();
        let _ = node.value();
        let _ = node.controls().count();
        let _ = node.bounding_box();
        if node.supports_text_ranges() {
            let _ = node.document_range().text();
            if let Some(anchor) = node.text_selection_anchor() {
                let _ = anchor.to_global_usv_index();
                let _ = anchor.forward_to_line_end();
                let _ = anchor.backward_to_line_start();
            }
        }
        let mut up = node.parent();
        let mut steps = 0;
        while let Some(p) = up {
            steps += 1;
            assert!(steps < 10_000, "parent walk does not end");
            up = p.parent();
        }
        stack.extend(node.children().rev());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn valid_streams_match_the_plain_consumer(ops in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u32>(), "[a-zé]{0,5}"), 1..60)) {
        let updates = stream(&ops);
        let mut app = AppReplica::new(limits());
        app.create_surface(S, None).unwrap();
        let mut plain: Option<Tree> = None;
        // The node set rebuilt from change sets alone must match the tree.
        let mut shadow = std::collections::BTreeSet::new();
        for update in updates {
            match plain.as_mut() {
                None => plain = Some(Tree::new(update.clone(), false)),
                Some(tree) => tree.update_and_process_changes(update.clone(), &mut Ignore),
            }
            let result = app.commit(S, vec![update], 0);
            prop_assert!(result.is_ok(), "valid update rejected: {:?}", result);
            if let Ok(changes) = &result {
                for removed in &changes.removed {
                    prop_assert!(shadow.remove(&removed.id.0), "removed unknown node {:?}", removed.id);
                }
                for added in &changes.added {
                    prop_assert!(shadow.insert(added.0), "added known node {:?}", added);
                }
            }
            let tree_ids: std::collections::BTreeSet<u64> = app
                .surface(S)
                .and_then(|s| s.tree())
                .map(|t| node_ids(t.state()))
                .unwrap_or_default();
            prop_assert_eq!(&shadow, &tree_ids);
            let ours = app.surface(S).and_then(|s| s.tree()).map(|t| shape(t.state()));
            let theirs = plain.as_ref().map(|t| shape(t.state()));
            prop_assert_eq!(ours, theirs);
        }
        let count = app.surface(S).map(|s| s.node_count()).unwrap_or(0);
        let expected = plain.as_ref().map(|t| shape(t.state()).len()).unwrap_or(0);
        prop_assert_eq!(count, expected);
        prop_assert_eq!(app.node_count(), expected);
    }

    #[test]
    fn multi_update_commits_match_the_plain_consumer(
        ops in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u32>(), "[a-z]{0,3}"), 1..40),
        group in 1usize..5,
    ) {
        let updates = stream(&ops);
        let mut plain: Option<Tree> = None;
        for update in &updates {
            match plain.as_mut() {
                None => plain = Some(Tree::new(update.clone(), false)),
                Some(tree) => tree.update_and_process_changes(update.clone(), &mut Ignore),
            }
        }
        let mut app = AppReplica::new(limits());
        app.create_surface(S, None).unwrap();
        for chunk in updates.chunks(group) {
            let result = app.commit(S, chunk.to_vec(), 0);
            prop_assert!(result.is_ok(), "valid commit rejected: {:?}", result);
        }
        let ours = app.surface(S).and_then(|s| s.tree()).map(|t| shape(t.state()));
        prop_assert_eq!(ours, plain.as_ref().map(|t| shape(t.state())));
    }

    #[test]
    fn mutated_streams_never_panic_and_rejections_change_nothing(
        ops in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u32>(), "[a-z]{0,4}"), 1..30),
        mutations in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u32>(), any::<u32>()), 1..6),
    ) {
        let mut updates = stream(&ops);
        let known: Vec<u64> = (0..=ops.len() as u64 + 2).collect();
        for (kind, at, x, y) in &mutations {
            let last = updates.len() - 1;
            let index = (1 + *at as usize % last.max(1)).min(last);
            if let Some(update) = updates.get_mut(index) {
                mutate(update, *kind, *x, *y, &known);
            }
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut app = AppReplica::new(limits());
            app.create_surface(S, None).unwrap();
            for update in updates {
                let before = app.dump();
                match app.commit(S, vec![update], 0) {
                    Ok(_) => {
                        if let Some(tree) = app.surface(S).and_then(|s| s.tree()) {
                            query_everything(tree.state());
                        }
                    }
                    Err(_) => assert_eq!(app.dump(), before, "rejected commit changed the replica"),
                }
            }
        }));
        prop_assert!(outcome.is_ok(), "panicked");
    }
}

/// One malformation of `update`; ids drawn from `known` or out of range.
fn mutate(update: &mut TreeUpdate, kind: u8, x: u32, y: u32, known: &[u64]) {
    let id = |v: u32| {
        if v.is_multiple_of(5) {
            NodeId(1_000 + u64::from(v % 7))
        } else {
            NodeId(known[v as usize % known.len()])
        }
    };
    let len = update.nodes.len();
    let target = x as usize % len.max(1);
    match kind % 12 {
        0 if len > 1 => {
            update.nodes.remove(target);
        }
        1 => {
            if let Some((_, node)) = update.nodes.get_mut(target) {
                if let Some(c) = node.children().first().copied() {
                    node.push_child(c);
                }
            }
        }
        2 => {
            if let Some((own, node)) = update.nodes.get_mut(target) {
                let own = *own;
                node.push_child(if y.is_multiple_of(2) { own } else { NodeId(0) });
            }
        }
        3 => {
            if let Some((_, node)) = update.nodes.get_mut(target) {
                node.push_child(id(y));
            }
        }
        4 => {
            if let Some((_, node)) = update.nodes.get_mut(target) {
                node.set_labelled_by(vec![id(y)]);
                node.set_controls(vec![id(y / 3)]);
            }
        }
        5 => {
            if let Some((_, node)) = update.nodes.get_mut(target) {
                node.set_role(Role::TextRun);
                node.set_value("ab€");
                node.set_character_lengths(vec![(y % 4) as u8, 1]);
            }
        }
        6 => {
            if let Some((_, node)) = update.nodes.get_mut(target) {
                node.set_next_on_line(id(y));
                node.set_previous_on_line(id(x));
            }
        }
        7 => {
            if let Some((_, node)) = update.nodes.get_mut(target) {
                node.set_text_selection(TextSelection {
                    anchor: TextPosition {
                        node: id(y),
                        character_index: (x % 9) as usize,
                    },
                    focus: TextPosition {
                        node: id(x),
                        character_index: 0,
                    },
                });
            }
        }
        8 => update.focus = id(y),
        9 => {
            if let Some(entry) = update.nodes.get(target).cloned() {
                update.nodes.push(entry);
            }
        }
        10 => update.tree = Some(TreeInfo::new(id(y))),
        _ => {
            if let Some((_, node)) = update.nodes.get_mut(target) {
                node.set_role(Role::TextInput);
                node.set_text_selection(TextSelection {
                    anchor: TextPosition {
                        node: id(y),
                        character_index: 1,
                    },
                    focus: TextPosition {
                        node: id(y),
                        character_index: 3,
                    },
                });
            }
        }
    }
}
