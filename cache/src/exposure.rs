//! Per-parent count of children that are not part of the structural tree
//! (text runs, whose text belongs to their parent, and hidden nodes), kept
//! up to date per commit so that child counts and child indices of the
//! usual parent (none such children) are answered in O(1), whatever the
//! number of siblings.

use std::collections::{HashMap, HashSet};

use accesskit::{NodeId, Role, TreeId};
use accesskit_consumer::{NodeRef, TreeState};

use crate::{Change, ChangeSet, FrameKind};

/// Whether a node is left out of the structural tree.
pub fn is_non_structural(node: &NodeRef) -> bool {
    node.role() == Role::TextRun || node.data().is_hidden()
}

/// Parents with at least one non-structural child, and how many.
#[derive(Clone, Debug, Default)]
pub(crate) struct NonStructuralChildren {
    counts: HashMap<NodeId, u32>,
}

impl NonStructuralChildren {
    /// The count for `parent` (0 for most parents).
    pub(crate) fn get(&self, parent: NodeId) -> usize {
        self.counts.get(&parent).map_or(0, |n| *n as usize)
    }

    /// Brings the counts up to date after `changes` was applied to `state`.
    /// A fresh tree is counted in full (O(nodes)); an incremental commit
    /// recounts only the parents whose set of children, or whose children's
    /// role or hidden flag, changed.
    pub(crate) fn refresh(&mut self, state: Option<&TreeState>, changes: &ChangeSet) {
        let Some(state) = state else {
            self.counts.clear();
            return;
        };
        if matches!(changes.kind, FrameKind::Created | FrameKind::Replaced) {
            *self = Self::count_all(state, &changes.added);
            return;
        }
        for parent in touched_parents(state, changes) {
            self.recount(state, parent);
        }
    }

    /// Counts every parent among `nodes` (a whole tree: O(nodes)).
    pub(crate) fn count_all(state: &TreeState, nodes: &[NodeId]) -> Self {
        let mut counts = Self::default();
        for id in nodes {
            counts.recount(state, *id);
        }
        counts
    }

    fn recount(&mut self, state: &TreeState, parent: NodeId) {
        let count = state
            .node_by_tree_local_id(parent, TreeId::ROOT)
            .map(|node| node.children().filter(is_non_structural).count())
            .unwrap_or(0);
        if count == 0 {
            self.counts.remove(&parent);
        } else {
            self.counts
                .insert(parent, u32::try_from(count).unwrap_or(u32::MAX));
        }
    }
}

fn touched_parents(state: &TreeState, changes: &ChangeSet) -> HashSet<NodeId> {
    let mut parents = HashSet::new();
    let parent_of = |id: NodeId| {
        state
            .node_by_tree_local_id(id, TreeId::ROOT)
            .and_then(|node| node.parent())
            .map(|parent| parent.locate().0)
    };
    for id in &changes.added {
        parents.extend(parent_of(*id));
    }
    for removed in &changes.removed {
        if let Some((parent, _)) = removed.parent {
            parents.insert(parent);
        }
    }
    for update in &changes.updated {
        for change in &update.changes {
            match change {
                Change::Children { .. } => {
                    parents.insert(update.id);
                }
                Change::Role { .. }
                | Change::Flag {
                    flag: crate::FlagName::Hidden,
                    ..
                } => {
                    parents.extend(parent_of(update.id));
                }
                _ => {}
            }
        }
    }
    parents
}
