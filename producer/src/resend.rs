//! [`ResendState`]: what a sender must send again on a new connection
//! (sans-IO: it only watches the messages it is given).
//!
//! A new bridge knows nothing of the application, so after reconnecting a
//! sender sends the hello and then, in this order (docs/protocol.md §2.3):
//! every live surface (`createSurface`, its last `geometry`), each surface's
//! **full tree** as one committed update, the updates it had buffered but not
//! committed yet (so the application's next `commit` applies them as it
//! would have), and last the focused surface (`focus`), so the AT's
//! `window:activate` names a window that already has its content.
//!
//! The full tree is the merge of every committed update, as the bridge's
//! replica holds it: each listed node replaces the node with its id, and
//! only nodes reachable from the root are kept. The state therefore holds a
//! copy of every live node (about what the bridge's replica holds per node);
//! detached nodes are dropped once they outnumber the live ones.

use std::collections::{HashMap, HashSet};

use accesskit::{Node, NodeId, TreeId, TreeInfo, TreeUpdate};
use newton_push_protocol::{Geometry, SenderMessage, SurfaceId};

/// The sender-side view of every surface, kept up to date by
/// [`ResendState::observe`], replayed by [`ResendState::resend`].
#[derive(Clone, Debug, Default)]
pub struct ResendState {
    /// Live surfaces in creation order.
    surfaces: Vec<SurfaceState>,
    focus: Option<SurfaceId>,
}

#[derive(Clone, Debug)]
struct SurfaceState {
    id: SurfaceId,
    title: Option<String>,
    geometry: Option<Geometry>,
    tree: Option<MergedTree>,
    /// Updates sent since the surface's last commit.
    pending: Vec<TreeUpdate>,
}

/// Every committed node of one surface.
#[derive(Clone, Debug)]
struct MergedTree {
    info: TreeInfo,
    tree_id: TreeId,
    focus: NodeId,
    nodes: HashMap<NodeId, Node>,
    /// Nodes reachable from the root at the last collection.
    live: usize,
}

impl ResendState {
    /// An empty state (no surfaces, no focus).
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one message the sender sent (or is about to send; call it
    /// for every message, in stream order, whether or not a connection is
    /// up). A message the bridge would refuse (an unknown surface, a first
    /// tree without `tree`) changes nothing, as on the bridge.
    pub fn observe(&mut self, message: SenderMessage) {
        match message {
            SenderMessage::CreateSurface { surface, title } => {
                if self.surface_mut(surface).is_none() {
                    self.surfaces.push(SurfaceState::new(surface, title));
                }
            }
            SenderMessage::Update { surface, update } => {
                if let Some(state) = self.surface_mut(surface) {
                    state.pending.push(update);
                }
            }
            SenderMessage::Commit { surface, .. } => {
                if let Some(state) = self.surface_mut(surface) {
                    state.commit();
                }
            }
            SenderMessage::Focus { surface } => {
                self.focus = surface.filter(|id| self.has_surface(*id));
            }
            SenderMessage::Geometry { surface, geometry } => {
                if let Some(state) = self.surface_mut(surface) {
                    state.geometry = Some(geometry);
                }
            }
            SenderMessage::DestroySurface { surface } => {
                self.surfaces.retain(|state| state.id != surface);
                if self.focus == Some(surface) {
                    self.focus = None;
                }
            }
            SenderMessage::Goodbye => *self = Self::default(),
            // Syncs and keys are moments, not state: nothing to send again.
            SenderMessage::Sync { .. } | SenderMessage::Key { .. } => {}
        }
    }

    /// The messages that bring a new bridge to this state, in order.
    /// `next_serial` numbers the commits of the full trees (serials must keep
    /// increasing across connections, so the caller owns the counter).
    pub fn resend(&self, next_serial: &mut dyn FnMut() -> u64) -> Vec<SenderMessage> {
        let mut messages = Vec::new();
        for state in &self.surfaces {
            messages.push(SenderMessage::CreateSurface {
                surface: state.id,
                title: state.title.clone(),
            });
            if let Some(geometry) = state.geometry {
                messages.push(SenderMessage::Geometry {
                    surface: state.id,
                    geometry,
                });
            }
            if let Some(update) = state.tree.as_ref().map(MergedTree::full_update) {
                messages.push(SenderMessage::Update {
                    surface: state.id,
                    update,
                });
                messages.push(SenderMessage::Commit {
                    surface: state.id,
                    serial: next_serial(),
                });
            }
            for update in &state.pending {
                messages.push(SenderMessage::Update {
                    surface: state.id,
                    update: update.clone(),
                });
            }
        }
        if let Some(surface) = self.focus {
            messages.push(SenderMessage::Focus {
                surface: Some(surface),
            });
        }
        messages
    }

    /// The surface's current full tree (every node reachable from its root),
    /// or `None` before its first committed tree. A sender answering a
    /// `rejected` with `resync` can send this.
    pub fn full_tree(&self, surface: SurfaceId) -> Option<TreeUpdate> {
        self.surface(surface)?
            .tree
            .as_ref()
            .map(MergedTree::full_update)
    }

    /// Live surfaces, in creation order.
    pub fn surfaces(&self) -> Vec<SurfaceId> {
        self.surfaces.iter().map(|state| state.id).collect()
    }

    /// The focused surface, as last told.
    pub fn focus(&self) -> Option<SurfaceId> {
        self.focus
    }

    /// Whether the surface has a committed tree to resend.
    pub fn has_tree(&self, surface: SurfaceId) -> bool {
        self.surface(surface).is_some_and(|s| s.tree.is_some())
    }

    fn has_surface(&self, surface: SurfaceId) -> bool {
        self.surface(surface).is_some()
    }

    fn surface(&self, surface: SurfaceId) -> Option<&SurfaceState> {
        self.surfaces.iter().find(|state| state.id == surface)
    }

    fn surface_mut(&mut self, surface: SurfaceId) -> Option<&mut SurfaceState> {
        self.surfaces.iter_mut().find(|state| state.id == surface)
    }
}

impl SurfaceState {
    fn new(id: SurfaceId, title: Option<String>) -> Self {
        Self {
            id,
            title,
            geometry: None,
            tree: None,
            pending: Vec::new(),
        }
    }

    /// Applies the pending updates in order, as the bridge does at commit.
    fn commit(&mut self) {
        for update in std::mem::take(&mut self.pending) {
            match (&mut self.tree, update.tree.clone()) {
                (Some(tree), _) => tree.apply(update),
                (None, Some(info)) => {
                    let mut tree = MergedTree::new(info, &update);
                    tree.apply(update);
                    self.tree = Some(tree);
                }
                // A first update without `tree` is refused by the bridge.
                (None, None) => {}
            }
        }
        if let Some(tree) = &mut self.tree {
            tree.collect_if_bloated();
        }
    }
}

impl MergedTree {
    fn new(info: TreeInfo, update: &TreeUpdate) -> Self {
        Self {
            info,
            tree_id: update.tree_id,
            focus: update.focus,
            nodes: HashMap::new(),
            live: 0,
        }
    }

    fn apply(&mut self, update: TreeUpdate) {
        if let Some(info) = update.tree {
            self.info = info;
        }
        self.tree_id = update.tree_id;
        self.focus = update.focus;
        self.nodes.extend(update.nodes);
    }

    /// Drops nodes no longer reachable from the root once the map holds more
    /// than twice the live nodes: amortized O(1) per node updated.
    fn collect_if_bloated(&mut self) {
        if self.nodes.len() <= self.live.saturating_mul(2) + 64 {
            return;
        }
        let reachable: HashSet<NodeId> = self.walk().into_iter().collect();
        self.nodes.retain(|id, _| reachable.contains(id));
        self.live = self.nodes.len();
    }

    /// Ids reachable from the root, depth first, each once (a cycle or a
    /// dangling child, which the bridge would refuse, cannot loop or fail).
    fn walk(&self) -> Vec<NodeId> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![self.info.root];
        while let Some(id) = stack.pop() {
            let Some(node) = self.nodes.get(&id) else {
                continue;
            };
            if !seen.insert(id) {
                continue;
            }
            order.push(id);
            stack.extend(node.children().iter().rev().copied());
        }
        order
    }

    fn full_update(&self) -> TreeUpdate {
        let nodes = self
            .walk()
            .into_iter()
            .filter_map(|id| Some((id, self.nodes.get(&id)?.clone())))
            .collect();
        TreeUpdate {
            nodes,
            tree: Some(self.info.clone()),
            tree_id: self.tree_id,
            focus: self.focus,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accesskit::Role;

    fn node(role: Role, label: &str, children: &[u64]) -> Node {
        let mut node = Node::new(role);
        node.set_label(label);
        node.set_children(children.iter().copied().map(NodeId).collect::<Vec<_>>());
        node
    }

    fn full(labels: &[&str]) -> TreeUpdate {
        let ids: Vec<u64> = (2..2 + labels.len() as u64).collect();
        let mut nodes = vec![(NodeId(1), node(Role::Window, "Main", &ids))];
        for (id, label) in ids.iter().zip(labels) {
            nodes.push((NodeId(*id), node(Role::Button, label, &[])));
        }
        TreeUpdate {
            nodes,
            tree: Some(TreeInfo::new(NodeId(1))),
            tree_id: TreeId::ROOT,
            focus: NodeId(2),
        }
    }

    fn change(nodes: Vec<(NodeId, Node)>, focus: u64) -> TreeUpdate {
        TreeUpdate {
            nodes,
            tree: None,
            tree_id: TreeId::ROOT,
            focus: NodeId(focus),
        }
    }

    fn label_of(update: &TreeUpdate, id: u64) -> Option<String> {
        update
            .nodes
            .iter()
            .find(|(node_id, _)| *node_id == NodeId(id))
            .and_then(|(_, node)| node.label().map(str::to_owned))
    }

    fn serials() -> impl FnMut() -> u64 {
        let mut next = 100;
        move || {
            next += 1;
            next
        }
    }

    const ONE: SurfaceId = SurfaceId(1);

    fn created_with(update: TreeUpdate) -> ResendState {
        let mut state = ResendState::new();
        state.observe(SenderMessage::CreateSurface {
            surface: ONE,
            title: Some("Main".into()),
        });
        state.observe(SenderMessage::Update {
            surface: ONE,
            update,
        });
        state.observe(SenderMessage::Commit {
            surface: ONE,
            serial: 1,
        });
        state
    }

    #[test]
    fn resend_lists_surface_geometry_full_tree_pending_then_focus() {
        let mut state = created_with(full(&["OK", "Cancel"]));
        let geometry = Geometry {
            x: 5,
            y: 6,
            width: 7,
            height: 8,
            scale: 1.0,
        };
        state.observe(SenderMessage::Geometry {
            surface: ONE,
            geometry,
        });
        state.observe(SenderMessage::Focus { surface: Some(ONE) });
        let relabel = change(vec![(NodeId(2), node(Role::Button, "Yes", &[]))], 2);
        state.observe(SenderMessage::Update {
            surface: ONE,
            update: relabel.clone(),
        });
        let messages = state.resend(&mut serials());
        assert_eq!(messages.len(), 6, "{messages:#?}");
        assert_eq!(
            messages[0],
            SenderMessage::CreateSurface {
                surface: ONE,
                title: Some("Main".into())
            }
        );
        assert_eq!(
            messages[1],
            SenderMessage::Geometry {
                surface: ONE,
                geometry
            }
        );
        assert_eq!(
            messages[2],
            SenderMessage::Update {
                surface: ONE,
                update: full(&["OK", "Cancel"])
            }
        );
        assert_eq!(
            messages[3],
            SenderMessage::Commit {
                surface: ONE,
                serial: 101
            }
        );
        assert_eq!(
            messages[4],
            SenderMessage::Update {
                surface: ONE,
                update: relabel
            }
        );
        assert_eq!(messages[5], SenderMessage::Focus { surface: Some(ONE) });
    }

    #[test]
    fn committed_updates_merge_into_the_full_tree() {
        let mut state = created_with(full(&["OK", "Cancel"]));
        let relabel = change(vec![(NodeId(3), node(Role::Button, "Stop", &[]))], 3);
        state.observe(SenderMessage::Update {
            surface: ONE,
            update: relabel,
        });
        state.observe(SenderMessage::Commit {
            surface: ONE,
            serial: 2,
        });
        let tree = state.full_tree(ONE).expect("a tree");
        assert_eq!(label_of(&tree, 2).as_deref(), Some("OK"));
        assert_eq!(label_of(&tree, 3).as_deref(), Some("Stop"));
        assert_eq!(tree.focus, NodeId(3));
        assert_eq!(tree.tree, Some(TreeInfo::new(NodeId(1))));
        assert_eq!(tree.nodes[0].0, NodeId(1), "the root comes first");
    }

    #[test]
    fn removed_children_leave_the_full_tree() {
        let mut state = created_with(full(&["OK", "Cancel"]));
        let drop_cancel = change(vec![(NodeId(1), node(Role::Window, "Main", &[2]))], 2);
        state.observe(SenderMessage::Update {
            surface: ONE,
            update: drop_cancel,
        });
        state.observe(SenderMessage::Commit {
            surface: ONE,
            serial: 2,
        });
        let tree = state.full_tree(ONE).expect("a tree");
        let ids: Vec<NodeId> = tree.nodes.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, vec![NodeId(1), NodeId(2)]);
    }

    #[test]
    fn detached_nodes_are_collected_once_they_pile_up() {
        let mut state = created_with(full(&["OK"]));
        // Replace the only button 1,000 times with a fresh id each time.
        for id in 10..1010u64 {
            let swap = change(
                vec![
                    (NodeId(1), node(Role::Window, "Main", &[id])),
                    (NodeId(id), node(Role::Button, "Next", &[])),
                ],
                id,
            );
            state.observe(SenderMessage::Update {
                surface: ONE,
                update: swap,
            });
            state.observe(SenderMessage::Commit {
                surface: ONE,
                serial: id,
            });
        }
        let held = state.surfaces[0].tree.as_ref().map_or(0, |t| t.nodes.len());
        assert!(held <= 2 * 2 + 64 + 1, "{held} nodes held for 2 live");
        assert_eq!(state.full_tree(ONE).map(|t| t.nodes.len()), Some(2));
    }

    #[test]
    fn uncommitted_updates_do_not_reach_the_tree() {
        let mut state = created_with(full(&["OK"]));
        state.observe(SenderMessage::Update {
            surface: ONE,
            update: change(vec![(NodeId(2), node(Role::Button, "Later", &[]))], 2),
        });
        let tree = state.full_tree(ONE).expect("a tree");
        assert_eq!(label_of(&tree, 2).as_deref(), Some("OK"));
    }

    #[test]
    fn a_cycle_or_dangling_child_neither_loops_nor_fails() {
        let mut bad = full(&["OK"]);
        bad.nodes
            .push((NodeId(2), node(Role::Button, "OK", &[1, 99])));
        let state = created_with(bad);
        let tree = state.full_tree(ONE).expect("a tree");
        assert_eq!(tree.nodes.len(), 2);
    }

    #[test]
    fn a_first_update_without_tree_is_ignored_as_the_bridge_would() {
        let state = created_with(change(vec![(NodeId(1), node(Role::Window, "W", &[]))], 1));
        assert!(!state.has_tree(ONE));
        let messages = state.resend(&mut serials());
        assert_eq!(messages.len(), 1, "only the surface: {messages:?}");
    }

    #[test]
    fn destroy_goodbye_and_unknown_surfaces() {
        let mut state = created_with(full(&["OK"]));
        state.observe(SenderMessage::Focus { surface: Some(ONE) });
        state.observe(SenderMessage::Focus {
            surface: Some(SurfaceId(9)),
        });
        assert_eq!(state.focus(), None, "focus on an unknown surface");
        state.observe(SenderMessage::Focus { surface: Some(ONE) });
        state.observe(SenderMessage::DestroySurface { surface: ONE });
        assert!(state.surfaces().is_empty());
        assert_eq!(state.focus(), None);
        let mut state = created_with(full(&["OK"]));
        state.observe(SenderMessage::Goodbye);
        assert!(state.resend(&mut serials()).is_empty());
    }

    #[test]
    fn surfaces_resend_in_creation_order() {
        let mut state = ResendState::new();
        for id in [3, 1, 2] {
            state.observe(SenderMessage::CreateSurface {
                surface: SurfaceId(id),
                title: None,
            });
        }
        assert_eq!(
            state.surfaces(),
            vec![SurfaceId(3), SurfaceId(1), SurfaceId(2)]
        );
    }
}
