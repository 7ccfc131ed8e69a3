//! What one applied frame changed, in platform-neutral terms, with the old and
//! new value of everything that changed. Produced while both the old and the
//! new tree state are available, so consumers never need the old tree.
//!
//! # Semantics (what the AT-SPI layer can rely on)
//!
//! * **`added`**: new nodes, each after its parent (pre-order of the final
//!   tree restricted to added nodes). `Created`/`Replaced`: every node of the
//!   new tree in pre-order. A node in `added` never appears in `updated`.
//! * **`removed`**: nodes that left, each after its (removed) parent, with
//!   `parent` = (parent id, index) in the tree just before the update that
//!   removed it; `None` for an old root. `Replaced`/`Destroyed`: every old
//!   node. A node removed and re-added in one commit is in both lists.
//! * **`updated`**: one entry per node whose observable properties changed,
//!   each [`Change`] with old and new value (old = before the commit, new =
//!   after it, merged across the updates of a commit; no-op pairs dropped).
//!   Computed only for nodes the consumer reports as updated (data changed,
//!   parent or index changed, or focus moved onto/off them): a node whose
//!   *label source* (`labelledBy` target) or ancestor transform changed is not
//!   re-examined.
//! * **`Text`** is reported on the text-bearing node (one that
//!   `supports_text_ranges`), with the whole old and new text (password
//!   masked as the consumer does), when the node itself, one of its text runs,
//!   or a node whose children include a text run changed. **`TextSelection`**
//!   is in characters (Unicode scalar values) from the node's text start.
//! * **`LiveRegion`** is added to a node whose name or text changed while
//!   `NodeRef::live()` (its own or inherited `live`) is not `Off`, carrying
//!   the new name/text.
//! * **`focus`**: the consumer's effective focus (active descendant
//!   resolved) moved; only reported while the surface is host-focused
//!   (compositor focus), so `set_focused_surface` produces focus changes
//!   (`old: None` on gaining, `new: None` on losing). The old and new focus
//!   nodes also get `Flag { Focused }` changes.
//! * **`Actions`** is a bitmask with bit *n* = `accesskit::Action` variant
//!   *n* (Click = bit 0, Focus = bit 1, …).
//! * **`Bounds`**: `NodeRef::bounding_box()`, surface-relative tree units
//!   (apply the surface `Geometry` for screen coordinates).

use accesskit::{Live, NodeId, Rect, Role, Toggled};
use newton_push_protocol::SurfaceId;

/// Why this change set exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// The surface's first tree: every node is in `added`.
    Created,
    /// An incremental commit.
    Updated,
    /// A full tree replaced the surface's tree (resync); `removed` lists every
    /// old node and `added` every new one.
    Replaced,
    /// The surface (or its application) went away: every node is in `removed`.
    Destroyed,
}

/// A flag whose value changed on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlagName {
    /// `hidden` flag.
    Hidden,
    /// Disabled (`NodeRef::is_disabled`).
    Disabled,
    /// Read-only (`NodeRef::is_read_only`).
    ReadOnly,
    /// `required` flag.
    Required,
    /// `busy` flag.
    Busy,
    /// `modal` flag.
    Modal,
    /// `visited` flag.
    Visited,
    /// Multiselectable (`NodeRef::is_multiselectable`).
    Multiselectable,
    /// Supports the Focus action.
    Focusable,
    /// Is the effective focus (`NodeRef::is_focused`; only in a host-focused surface).
    Focused,
    /// A text input that is not read-only.
    Editable,
}

/// Anchor and focus of a text selection, in characters (Unicode scalar
/// values) from the start of the text-bearing node's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextSelectionOffsets {
    /// Anchor offset.
    pub anchor: usize,
    /// Focus offset.
    pub focus: usize,
}

/// One property change on one node: old and new value.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// The role.
    Role {
        /// Before the frame.
        old: Role,
        /// After the frame.
        new: Role,
    },
    /// The computed name (label, labelled_by, or value-derived).
    Name {
        /// Before the frame.
        old: Option<String>,
        /// After the frame.
        new: Option<String>,
    },
    /// The description.
    Description {
        /// Before the frame.
        old: Option<String>,
        /// After the frame.
        new: Option<String>,
    },
    /// The string value (`NodeRef::value`).
    Value {
        /// Before the frame.
        old: Option<String>,
        /// After the frame.
        new: Option<String>,
    },
    /// The numeric value.
    NumericValue {
        /// Before the frame.
        old: Option<f64>,
        /// After the frame.
        new: Option<f64>,
    },
    /// Toggle state (check boxes, switches).
    Toggled {
        /// Before the frame.
        old: Option<Toggled>,
        /// After the frame.
        new: Option<Toggled>,
    },
    /// Selection state of an item.
    Selected {
        /// Before the frame.
        old: Option<bool>,
        /// After the frame.
        new: Option<bool>,
    },
    /// Expanded/collapsed state.
    Expanded {
        /// Before the frame.
        old: Option<bool>,
        /// After the frame.
        new: Option<bool>,
    },
    /// A boolean state.
    Flag {
        /// Which flag.
        flag: FlagName,
        /// Before the frame.
        old: bool,
        /// After the frame.
        new: bool,
    },
    /// Surface-relative bounding box.
    Bounds {
        /// Before the frame.
        old: Option<Rect>,
        /// After the frame.
        new: Option<Rect>,
    },
    /// Direct children (unfiltered), in order.
    Children {
        /// Before the frame.
        old: Vec<NodeId>,
        /// After the frame.
        new: Vec<NodeId>,
    },
    /// The whole text of a text-bearing node (one that supports text ranges),
    /// reported on that node even when only its text runs changed.
    Text {
        /// Before the frame.
        old: String,
        /// After the frame.
        new: String,
    },
    /// Selection / caret of a text-bearing node; `None` = no selection.
    TextSelection {
        /// Before the frame.
        old: Option<TextSelectionOffsets>,
        /// After the frame.
        new: Option<TextSelectionOffsets>,
    },
    /// The `activeDescendant` relation.
    ActiveDescendant {
        /// Before the frame.
        old: Option<NodeId>,
        /// After the frame.
        new: Option<NodeId>,
    },
    /// A live region's text changed; carries what to announce.
    LiveRegion {
        /// The region's politeness (`NodeRef::live`).
        politeness: Live,
        /// The new name or text to announce.
        text: String,
    },
    /// Supported actions bitmask changed.
    Actions {
        /// Before the frame.
        old: u32,
        /// After the frame.
        new: u32,
    },
}

/// Every change of one node in one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeUpdate {
    /// The node.
    pub id: NodeId,
    /// Its changes, one per property.
    pub changes: Vec<Change>,
}

/// A node that left the tree, with where it was.
#[derive(Clone, Debug, PartialEq)]
pub struct RemovedNode {
    /// The node.
    pub id: NodeId,
    /// Its role before removal.
    pub role: Role,
    /// Parent and index before removal; `None` for the old root.
    pub parent: Option<(NodeId, usize)>,
}

/// Keyboard focus inside the surface's tree moved (only reported while the
/// surface holds compositor focus, as `accesskit_consumer` does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FocusChange {
    /// Before the frame.
    pub old: Option<NodeId>,
    /// After the frame.
    pub new: Option<NodeId>,
}

/// Everything one applied frame (commit) changed on one surface.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeSet {
    /// The surface the frame belongs to.
    pub surface: SurfaceId,
    /// Why the change set exists.
    pub kind: FrameKind,
    /// New nodes, parents before children.
    pub added: Vec<NodeId>,
    /// Nodes that left, parents before children.
    pub removed: Vec<RemovedNode>,
    /// Property changes of surviving nodes.
    pub updated: Vec<NodeUpdate>,
    /// The focus move, if the effective focus changed.
    pub focus: Option<FocusChange>,
}

impl ChangeSet {
    /// An empty change set.
    pub fn new(surface: SurfaceId, kind: FrameKind) -> Self {
        Self {
            surface,
            kind,
            added: Vec::new(),
            removed: Vec::new(),
            updated: Vec::new(),
            focus: None,
        }
    }

    /// True when the frame changed nothing observable.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.updated.is_empty()
            && self.focus.is_none()
    }
}

// ---------------------------------------------------------------------------
// Building change sets (crate-private).

use std::collections::{HashMap, HashSet};

use accesskit::{Action, TreeId};
use accesskit_consumer::{NodeRef, TreeChangeHandler as ChangeHandler, TreeState};

/// Every action, in bit order, to turn `supports_action` into a bitmask.
const ALL_ACTIONS: [Action; 22] = [
    Action::Click,
    Action::Focus,
    Action::Blur,
    Action::Collapse,
    Action::Expand,
    Action::CustomAction,
    Action::Decrement,
    Action::Increment,
    Action::HideTooltip,
    Action::ShowTooltip,
    Action::ReplaceSelectedText,
    Action::ScrollDown,
    Action::ScrollLeft,
    Action::ScrollRight,
    Action::ScrollUp,
    Action::ScrollIntoView,
    Action::ScrollToPoint,
    Action::SetScrollOffset,
    Action::SetTextSelection,
    Action::SetSequentialFocusNavigationStartingPoint,
    Action::SetValue,
    Action::ShowContextMenu,
];

/// The node's supported actions as a bitmask (bit = `Action` index).
pub(crate) fn action_mask(node: &NodeRef<'_>) -> u32 {
    ALL_ACTIONS
        .iter()
        .enumerate()
        .filter(|(_, action)| node.data().supports_action(**action))
        .fold(0, |mask, (bit, _)| mask | (1 << bit))
}

fn local_id(node: &NodeRef<'_>) -> NodeId {
    node.locate().0
}

fn flags(node: &NodeRef<'_>) -> [(FlagName, bool); 11] {
    let data = node.data();
    [
        (FlagName::Hidden, data.is_hidden()),
        (FlagName::Disabled, node.is_disabled()),
        (FlagName::ReadOnly, node.is_read_only()),
        (FlagName::Required, node.is_required()),
        (FlagName::Busy, node.is_busy()),
        (FlagName::Modal, node.is_modal()),
        (FlagName::Visited, data.is_visited()),
        (FlagName::Multiselectable, node.is_multiselectable()),
        (FlagName::Focusable, data.supports_action(Action::Focus)),
        (FlagName::Focused, node.is_focused()),
        (
            FlagName::Editable,
            node.is_text_input() && !node.is_read_only(),
        ),
    ]
}

/// Property changes between two versions of one node (not text: see
/// [`ChangeCollector::text_changes`]).
fn property_changes(old: &NodeRef<'_>, new: &NodeRef<'_>) -> Vec<Change> {
    let mut out = Vec::new();
    let mut push_if = |changed: bool, change: Change| {
        if changed {
            out.push(change);
        }
    };
    push_if(
        old.role() != new.role(),
        Change::Role {
            old: old.role(),
            new: new.role(),
        },
    );
    let (on, nn) = (old.label(), new.label());
    push_if(on != nn, Change::Name { old: on, new: nn });
    let (od, nd) = (old.description(), new.description());
    push_if(od != nd, Change::Description { old: od, new: nd });
    let (ov, nv) = (old.value(), new.value());
    push_if(ov != nv, Change::Value { old: ov, new: nv });
    let (onv, nnv) = (old.numeric_value(), new.numeric_value());
    push_if(onv != nnv, Change::NumericValue { old: onv, new: nnv });
    push_if(
        old.toggled() != new.toggled(),
        Change::Toggled {
            old: old.toggled(),
            new: new.toggled(),
        },
    );
    push_if(
        old.is_selected() != new.is_selected(),
        Change::Selected {
            old: old.is_selected(),
            new: new.is_selected(),
        },
    );
    let (oe, ne) = (old.data().is_expanded(), new.data().is_expanded());
    push_if(oe != ne, Change::Expanded { old: oe, new: ne });
    for ((flag, o), (_, n)) in flags(old).into_iter().zip(flags(new)) {
        push_if(
            o != n,
            Change::Flag {
                flag,
                old: o,
                new: n,
            },
        );
    }
    let (ob, nb) = (old.bounding_box(), new.bounding_box());
    push_if(ob != nb, Change::Bounds { old: ob, new: nb });
    let (oc, nc) = (old.data().children(), new.data().children());
    push_if(
        oc != nc,
        Change::Children {
            old: oc.to_vec(),
            new: nc.to_vec(),
        },
    );
    let (oa, na) = (
        old.data().active_descendant(),
        new.data().active_descendant(),
    );
    push_if(oa != na, Change::ActiveDescendant { old: oa, new: na });
    let (om, nm) = (action_mask(old), action_mask(new));
    push_if(om != nm, Change::Actions { old: om, new: nm });
    out
}

/// Whether two changes describe the same property (so a later one
/// supersedes an earlier one within a commit).
fn same_property(a: &Change, b: &Change) -> bool {
    match (a, b) {
        (Change::Flag { flag: fa, .. }, Change::Flag { flag: fb, .. }) => fa == fb,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// Keeps `earlier`'s old value and takes `later`'s new value.
fn chain(earlier: &Change, later: Change) -> Change {
    use Change::*;
    match (earlier, later) {
        (Role { old, .. }, Role { new, .. }) => Role { old: *old, new },
        (Name { old, .. }, Name { new, .. }) => Name {
            old: old.clone(),
            new,
        },
        (Description { old, .. }, Description { new, .. }) => Description {
            old: old.clone(),
            new,
        },
        (Value { old, .. }, Value { new, .. }) => Value {
            old: old.clone(),
            new,
        },
        (NumericValue { old, .. }, NumericValue { new, .. }) => NumericValue { old: *old, new },
        (Toggled { old, .. }, Toggled { new, .. }) => Toggled { old: *old, new },
        (Selected { old, .. }, Selected { new, .. }) => Selected { old: *old, new },
        (Expanded { old, .. }, Expanded { new, .. }) => Expanded { old: *old, new },
        (Flag { flag, old, .. }, Flag { new, .. }) => Flag {
            flag: *flag,
            old: *old,
            new,
        },
        (Bounds { old, .. }, Bounds { new, .. }) => Bounds { old: *old, new },
        (Children { old, .. }, Children { new, .. }) => Children {
            old: old.clone(),
            new,
        },
        (Text { old, .. }, Text { new, .. }) => Text {
            old: old.clone(),
            new,
        },
        (TextSelection { old, .. }, TextSelection { new, .. }) => TextSelection { old: *old, new },
        (ActiveDescendant { old, .. }, ActiveDescendant { new, .. }) => {
            ActiveDescendant { old: *old, new }
        }
        (Actions { old, .. }, Actions { new, .. }) => Actions { old: *old, new },
        (_, later) => later,
    }
}

/// A change whose old and new value ended up equal across a commit.
fn is_noop(change: &Change) -> bool {
    use Change::*;
    match change {
        Role { old, new } => old == new,
        Name { old, new } | Description { old, new } | Value { old, new } => old == new,
        NumericValue { old, new } => old == new,
        Toggled { old, new } => old == new,
        Selected { old, new } | Expanded { old, new } => old == new,
        Flag { old, new, .. } => old == new,
        Bounds { old, new } => old == new,
        Children { old, new } => old == new,
        Text { old, new } => old == new,
        TextSelection { old, new } => old == new,
        ActiveDescendant { old, new } => old == new,
        Actions { old, new } => old == new,
        LiveRegion { .. } => false,
    }
}

/// The node's selection in characters, if it has one.
fn selection_offsets(node: &NodeRef<'_>) -> Option<TextSelectionOffsets> {
    let anchor = node.text_selection_anchor()?.to_global_usv_index();
    let focus = node.text_selection_focus()?.to_global_usv_index();
    Some(TextSelectionOffsets { anchor, focus })
}

/// The nearest node, `node` itself or an ancestor, that supports text
/// ranges (bounded by `max_steps`).
fn text_holder<'a>(node: NodeRef<'a>, max_steps: usize) -> Option<NodeRef<'a>> {
    let mut current = Some(node);
    for _ in 0..=max_steps {
        let candidate = current?;
        if candidate.supports_text_ranges() {
            return Some(candidate);
        }
        current = candidate.parent();
    }
    None
}

/// Accumulates consumer callbacks of one commit (one or more updates, or a
/// host-focus change) into a [`ChangeSet`].
pub(crate) struct ChangeCollector {
    surface: SurfaceId,
    max_depth: usize,
    added: Vec<NodeId>,
    added_set: HashSet<NodeId>,
    removed: Vec<RemovedNode>,
    updated: Vec<NodeUpdate>,
    updated_index: HashMap<NodeId, usize>,
    focus: Option<FocusChange>,
    /// Text holders already diffed in the current update.
    text_done: HashSet<NodeId>,
}

impl ChangeCollector {
    pub(crate) fn new(surface: SurfaceId, max_depth: usize) -> Self {
        Self {
            surface,
            max_depth,
            added: Vec::new(),
            added_set: HashSet::new(),
            removed: Vec::new(),
            updated: Vec::new(),
            updated_index: HashMap::new(),
            focus: None,
            text_done: HashSet::new(),
        }
    }

    /// Call between two updates of one commit.
    pub(crate) fn next_update(&mut self) {
        self.text_done.clear();
    }

    fn record(&mut self, id: NodeId, change: Change) {
        let index = *self.updated_index.entry(id).or_insert_with(|| {
            self.updated.push(NodeUpdate {
                id,
                changes: Vec::new(),
            });
            self.updated.len() - 1
        });
        let Some(entry) = self.updated.get_mut(index) else {
            return;
        };
        if let Some(existing) = entry.changes.iter_mut().find(|c| same_property(c, &change)) {
            *existing = chain(existing, change);
        } else {
            entry.changes.push(change);
        }
    }

    /// Whether `node`'s change may change a text holder's text: a run, a
    /// holder itself, or a node whose children (which include runs) changed.
    fn touches_text(old: &NodeRef<'_>, new: &NodeRef<'_>) -> bool {
        let has_run = |n: &NodeRef<'_>| n.children().any(|c| c.role() == Role::TextRun);
        old.role() == Role::TextRun
            || new.role() == Role::TextRun
            || new.supports_text_ranges()
            || old.supports_text_ranges()
            || (old.data().children() != new.data().children() && (has_run(old) || has_run(new)))
    }

    fn text_changes(&mut self, old: &NodeRef<'_>, new: &NodeRef<'_>) {
        let holders = [
            text_holder(*old, self.max_depth).map(|h| local_id(&h)),
            text_holder(*new, self.max_depth).map(|h| local_id(&h)),
        ];
        for holder in holders.into_iter().flatten() {
            if self.text_done.insert(holder) {
                self.diff_text(old.tree_state, new.tree_state, holder);
            }
        }
    }

    fn diff_text(&mut self, old_state: &TreeState, new_state: &TreeState, id: NodeId) {
        if self.added_set.contains(&id) {
            return;
        }
        let text_node = |state| {
            let state: &TreeState = state;
            state
                .node_by_tree_local_id(id, TreeId::ROOT)
                .filter(|n| n.supports_text_ranges())
        };
        let Some(new) = new_state.node_by_tree_local_id(id, TreeId::ROOT) else {
            return;
        };
        let old = text_node(old_state);
        let new_holder = new.supports_text_ranges().then_some(new);
        let text =
            |n: Option<NodeRef<'_>>| n.map(|n| n.document_range().text()).unwrap_or_default();
        let (old_text, new_text) = (text(old), text(new_holder));
        let (old_sel, new_sel) = (
            old.and_then(|n| selection_offsets(&n)),
            new_holder.and_then(|n| selection_offsets(&n)),
        );
        if old_text != new_text {
            self.record(
                id,
                Change::Text {
                    old: old_text,
                    new: new_text.clone(),
                },
            );
            self.live_announce(&new, new_text);
        }
        if old_sel != new_sel {
            self.record(
                id,
                Change::TextSelection {
                    old: old_sel,
                    new: new_sel,
                },
            );
        }
    }

    fn live_announce(&mut self, node: &NodeRef<'_>, text: String) {
        let politeness = node.live();
        if politeness != Live::Off {
            self.record(local_id(node), Change::LiveRegion { politeness, text });
        }
    }

    /// The finished change set: `added` parents before children (in the
    /// final tree), `removed` parents before children.
    pub(crate) fn finish(self, kind: FrameKind, state: Option<&TreeState>) -> ChangeSet {
        let added = order_added(&self.added, &self.added_set, state);
        let removed = order_removed(self.removed);
        let updated = self
            .updated
            .into_iter()
            .filter(|u| !self.added_set.contains(&u.id))
            .map(|mut u| {
                u.changes.retain(|c| !is_noop(c));
                u
            })
            .filter(|u| !u.changes.is_empty())
            .collect();
        let focus = self.focus.filter(|f| f.old != f.new);
        ChangeSet {
            surface: self.surface,
            kind,
            added,
            removed,
            updated,
            focus,
        }
    }
}

impl ChangeHandler for ChangeCollector {
    fn node_added(&mut self, node: &NodeRef) {
        let id = local_id(node);
        if self.added_set.insert(id) {
            self.added.push(id);
        }
    }

    fn node_updated(&mut self, old: &NodeRef, new: &NodeRef) {
        let id = local_id(new);
        if !self.added_set.contains(&id) {
            let changes = property_changes(old, new);
            let renamed = changes.iter().find_map(|c| match c {
                Change::Name {
                    new: Some(name), ..
                } => Some(name.clone()),
                _ => None,
            });
            for change in changes {
                self.record(id, change);
            }
            if let Some(name) = renamed {
                self.live_announce(new, name);
            }
        }
        if Self::touches_text(old, new) {
            self.text_changes(old, new);
        }
    }

    fn focus_moved(&mut self, old: Option<&NodeRef>, new: Option<&NodeRef>) {
        let new = new.map(local_id);
        match &mut self.focus {
            Some(existing) => existing.new = new,
            None => {
                self.focus = Some(FocusChange {
                    old: old.map(local_id),
                    new,
                })
            }
        }
    }

    fn node_removed(&mut self, node: &NodeRef) {
        let id = local_id(node);
        if let Some(index) = self.updated_index.remove(&id) {
            if let Some(entry) = self.updated.get_mut(index) {
                entry.changes.clear();
            }
        }
        if self.added_set.remove(&id) {
            self.added.retain(|a| *a != id);
            return;
        }
        let parent = node
            .parent_and_index()
            .map(|(parent, index)| (local_id(&parent), index));
        self.removed.push(RemovedNode {
            id,
            role: node.role(),
            parent,
        });
    }
}

/// Added nodes, each after its parent: DFS from the added nodes whose parent
/// is not added, through added children only.
fn order_added(
    added: &[NodeId],
    added_set: &HashSet<NodeId>,
    state: Option<&TreeState>,
) -> Vec<NodeId> {
    let Some(state) = state else {
        return added.to_vec();
    };
    let node = |id: NodeId| state.node_by_tree_local_id(id, TreeId::ROOT);
    let mut out = Vec::with_capacity(added.len());
    let mut stack = Vec::new();
    for id in added {
        let Some(n) = node(*id) else { continue };
        let parent_added = n
            .parent()
            .is_some_and(|p| added_set.contains(&local_id(&p)));
        if parent_added {
            continue;
        }
        stack.push(*id);
        while let Some(current) = stack.pop() {
            out.push(current);
            if let Some(n) = node(current) {
                stack.extend(
                    n.data()
                        .children()
                        .iter()
                        .rev()
                        .filter(|c| added_set.contains(c)),
                );
            }
        }
    }
    out
}

/// Removed nodes, each after its (removed) parent, siblings in old order.
fn order_removed(removed: Vec<RemovedNode>) -> Vec<RemovedNode> {
    let ids: HashSet<NodeId> = removed.iter().map(|r| r.id).collect();
    let mut children: HashMap<NodeId, Vec<usize>> = HashMap::new();
    let mut tops = Vec::new();
    for (i, r) in removed.iter().enumerate() {
        match r.parent {
            Some((parent, _)) if ids.contains(&parent) => {
                children.entry(parent).or_default().push(i)
            }
            _ => tops.push(i),
        }
    }
    let index_in_parent = |i: &usize| {
        removed
            .get(*i)
            .and_then(|r| r.parent)
            .map(|(_, idx)| idx)
            .unwrap_or(0)
    };
    for list in children.values_mut() {
        list.sort_by_key(index_in_parent);
    }
    tops.sort_by_key(index_in_parent);
    let mut order = Vec::with_capacity(removed.len());
    let mut stack: Vec<usize> = tops.into_iter().rev().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        if let Some(r) = removed.get(i) {
            if let Some(kids) = children.get(&r.id) {
                stack.extend(kids.iter().rev());
            }
        }
    }
    let mut slots: Vec<Option<RemovedNode>> = removed.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// Every node of `state`, parents before children (iterative preorder).
pub(crate) fn preorder(state: &TreeState) -> Vec<NodeId> {
    let mut out = Vec::new();
    let Some(root) = state.node_by_id(state.root_id()) else {
        return out;
    };
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        out.push(local_id(&node));
        stack.extend(node.children().rev());
    }
    out
}

/// Every node of `state` as removed nodes, parents first.
pub(crate) fn all_removed(state: &TreeState) -> Vec<RemovedNode> {
    let mut out = Vec::new();
    let Some(root) = state.node_by_id(state.root_id()) else {
        return out;
    };
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let parent = node.parent_and_index().map(|(p, i)| (local_id(&p), i));
        out.push(RemovedNode {
            id: local_id(&node),
            role: node.role(),
            parent,
        });
        stack.extend(node.children().rev());
    }
    out
}

/// A no-op handler for applies whose change set is computed wholesale.
pub(crate) struct IgnoreChanges;

impl ChangeHandler for IgnoreChanges {
    fn node_added(&mut self, _: &NodeRef) {}
    fn node_updated(&mut self, _: &NodeRef, _: &NodeRef) {}
    fn focus_moved(&mut self, _: Option<&NodeRef>, _: Option<&NodeRef>) {}
    fn node_removed(&mut self, _: &NodeRef) {}
}
