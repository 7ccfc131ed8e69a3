//! The surface's current tree as one full `TreeUpdate`.
//!
//! accesskit_unix asks the application for a full tree whenever it activates
//! (an AT appeared, or the accessibility bus came back). A real toolkit
//! builds it from its widgets; here it is folded from the updates applied
//! so far, so a late activation shows the current frame, not the first.

use std::collections::{HashMap, HashSet};

use accesskit::{Node, NodeId, TreeInfo, TreeUpdate};

/// Every node last sent, the tree info and the focus.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    nodes: HashMap<NodeId, Node>,
    tree: Option<TreeInfo>,
    focus: Option<NodeId>,
    tree_id: Option<accesskit::TreeId>,
}

impl Snapshot {
    /// Folds one update in (only ever called with updates the validator
    /// accepted).
    pub fn apply(&mut self, update: &TreeUpdate) {
        if update.tree.is_some() {
            self.tree.clone_from(&update.tree);
        }
        for (id, node) in &update.nodes {
            self.nodes.insert(*id, node.clone());
        }
        self.focus = Some(update.focus);
        self.tree_id = Some(update.tree_id);
    }

    /// The reachable nodes as one full tree, or `None` before the first
    /// tree. Unreachable nodes are dropped here (and from the snapshot) so
    /// it never grows with removed nodes.
    pub fn full_tree(&mut self) -> Option<TreeUpdate> {
        let tree = self.tree.clone()?;
        let focus = self.focus?;
        let tree_id = self.tree_id?;
        let mut seen = HashSet::new();
        let mut order = Vec::new();
        let mut stack = vec![tree.root];
        while let Some(id) = stack.pop() {
            let Some(node) = self.nodes.get(&id) else {
                continue;
            };
            if !seen.insert(id) {
                continue;
            }
            order.push(id);
            stack.extend(node.children().iter().rev());
        }
        self.nodes.retain(|id, _| seen.contains(id));
        let nodes = order
            .into_iter()
            .filter_map(|id| self.nodes.get(&id).map(|node| (id, node.clone())))
            .collect();
        Some(TreeUpdate {
            nodes,
            tree: Some(tree),
            tree_id,
            focus,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accesskit::Role;

    fn node(role: Role, children: &[u64]) -> Node {
        let mut node = Node::new(role);
        node.set_children(children.iter().map(|&c| NodeId(c)).collect::<Vec<_>>());
        node
    }

    #[test]
    fn partial_updates_fold_into_the_current_full_tree() {
        let mut snapshot = Snapshot::default();
        assert!(snapshot.full_tree().is_none());
        snapshot.apply(&TreeUpdate {
            nodes: vec![
                (NodeId(1), node(Role::Window, &[2, 3])),
                (NodeId(2), node(Role::Button, &[])),
                (NodeId(3), node(Role::Label, &[])),
            ],
            tree: Some(TreeInfo::new(NodeId(1))),
            tree_id: accesskit::TreeId::ROOT,
            focus: NodeId(2),
        });
        snapshot.apply(&TreeUpdate {
            nodes: vec![(NodeId(1), node(Role::Window, &[3]))],
            tree: None,
            tree_id: accesskit::TreeId::ROOT,
            focus: NodeId(3),
        });
        let full = snapshot.full_tree().expect("a tree");
        let ids: Vec<_> = full.nodes.iter().map(|(id, _)| id.0).collect();
        assert_eq!(ids, [1, 3]);
        assert_eq!(full.focus, NodeId(3));
        assert!(full.tree.is_some());
    }
}
