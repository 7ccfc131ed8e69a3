//! The validator in front of every apply.
//!
//! `accesskit_consumer` trusts its input: malformed updates panic, loop
//! forever or abort the process (hazards S1–S15, C1–C4, R1–R9, each defined
//! in docs/hazards.md with the rule below that prevents it). Every update is
//! therefore checked here, against the tree state it will be applied to,
//! before the consumer sees it. Checks cost time proportional to the update
//! plus the subtrees it removes or moves; the whole tree is never walked.
//!
//! # Model
//!
//! For every node `c` the post-update parent is
//! `parent'(c)` = the update node listing `c`, else the old parent if that
//! parent is not in the update, else *detached*. From that:
//!
//! | Rule (`Rule::as_str`) | Rejects | Hazards (docs/hazards.md) |
//! |---|---|---|
//! | `subtree-unsupported` | `tree_id != TreeId::ROOT`, or a node with a `tree_id` property. Newton has one tree per surface; grafts are refused. | S2, S8–S13 |
//! | `missing-tree-info` | the first update of a surface (or of a [`prepare_full_tree`](crate::app::prepare_full_tree)) without `tree` | S1 |
//! | `missing-root` | the root is neither in the update nor in the tree | S3 |
//! | `focus-not-in-tree` | focus unknown, or removed by this very update | S4 |
//! | `duplicate-node` | one id twice in `nodes` | — |
//! | `dangling-child` | a child id neither in the update nor in the tree | S5 |
//! | `duplicate-child` | a child listed twice (one parent or two) | S7 |
//! | `reparent-without-removal` | a node newly listed by P2 while its old parent P1 is not in the update and stays in the tree (moving a node out of a container that leaves the tree in the same update is accepted: egui does it, and the consumer skips re-listed children when removing) | S14 |
//! | `orphan-node` | a node in the update that ends detached: new and unlisted, or re-sent after its parent dropped it | S6, S15 |
//! | `cycle` | a node listing itself, the root listed as a child, or a node that is its own ancestor | C1, C2 |
//! | `too-deep` | any node deeper than `Limits::max_depth` (root = 1), incl. moved subtrees; a parent cycle longer than the limit is reported as too deep | C4 |
//! | `too-many-children` / `too-many-nodes` / `frame-too-large` | size limits (nodes: all surfaces of the application after the update) | V9 |
//! | `dangling-relation` | any relation (`labelledBy`, `controls`, `describedBy`, `details`, `flowTo`, `owns`, `radioGroup`, `errorMessage`, `inPageLinkTarget`, `popupFor`, `memberOf`, `activeDescendant`) naming a node that does not exist after the update — also when the update removes a node that an untouched node still names | R1, R2 |
//! | `bad-text-run` | a `textRun` without `value`, `characterLengths` not summing to the value's byte length or splitting a UTF-8 character, `wordStarts` unsorted or out of range, `characterPositions`/`characterWidths` longer than `characterLengths` | R3–R6 |
//! | `bad-line-link` | `nextOnLine`/`previousOnLine` naming a missing node or a non-`textRun`, or forming a cycle | R7, C3 |
//! | `bad-text-selection` | a `textSelection` endpoint that is missing, not a `textRun`, or not a descendant (through non-run nodes) of the selecting node after the update — also when the update moves, removes or re-roles a run some untouched node selects | R8, R9 |
//!
//! A `characterIndex` past the end of a run is accepted: the consumer clamps it.
//!
//! **H1 — not preventable here (found by fuzzing; docs/hazards.md).** In
//! `accesskit_consumer` 0.39.2, `Position::to_line_index` and the paragraph
//! walks built on `backward_to_line_start` (`backward_to_paragraph_start`)
//! never return when an *empty* `textRun` that starts a line is followed by
//! another run: biasing the line start forward lands on the position the
//! walk started from. Real egui trees contain such runs (empty lines), so
//! the validator cannot reject them. Code answering queries from the
//! replica must not call those functions (count lines itself, bounded).
//!
//! # Full replacement
//!
//! An update is a *full replacement* when it carries `tree: Some(info)` and
//! the surface has no tree yet, or `info.root` differs from the current root,
//! or the surface awaits a resync after a rejected commit (the first update
//! with `tree` in the next commits). A full replacement is validated as a
//! self-contained tree (every child must be in the update) and replaces the
//! old tree wholesale (`FrameKind::Replaced`); old nodes are never reused.
//!
//! # Commits
//!
//! A commit of several updates is validated update by update, each against
//! the state the previous ones leave (an overlay on the tree), so a
//! commit is applied entirely or not at all.

use std::collections::{HashMap, HashSet};

use accesskit::{Node, NodeId, Role, TreeId, TreeUpdate};
use accesskit_consumer::TreeState;
use newton_push_protocol::SurfaceId;

use crate::refs::{all_refs, ref_to, relation_targets, RefIndex, RefKind};
use crate::{Limits, RejectError, Rule};

/// The state earlier updates of the same commit leave, layered over the
/// surface's tree. Empty for single-update commits.
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    /// The base tree is ignored (a full replacement happened in this commit).
    replaced: bool,
    root: Option<NodeId>,
    data: HashMap<NodeId, Node>,
    parent: HashMap<NodeId, Option<NodeId>>,
    removed: HashSet<NodeId>,
    extra_refs: HashMap<NodeId, Vec<NodeId>>,
    node_count: Option<usize>,
}

impl Overlay {
    /// An overlay that hides the base tree entirely (full replacement).
    pub(crate) fn replaced() -> Self {
        Self {
            replaced: true,
            node_count: Some(0),
            ..Self::default()
        }
    }

    /// Records the effect of `update` (already validated as `checked`).
    pub(crate) fn absorb(&mut self, update: &TreeUpdate, checked: &Checked) {
        for id in &checked.removed {
            self.data.remove(id);
            self.parent.remove(id);
            self.removed.insert(*id);
        }
        for (id, node) in &update.nodes {
            self.removed.remove(id);
            for child in node.children() {
                self.parent.insert(*child, Some(*id));
            }
            for (_, target) in all_refs(node) {
                self.extra_refs.entry(target).or_default().push(*id);
            }
            self.data.insert(*id, node.clone());
        }
        self.parent.insert(checked.root, None);
        self.root = Some(checked.root);
        self.node_count = Some(checked.node_count);
    }
}

/// Read access to the current state: base tree + overlay.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub(crate) base: Option<&'a TreeState>,
    pub(crate) base_refs: Option<&'a RefIndex>,
    pub(crate) base_count: usize,
    pub(crate) overlay: &'a Overlay,
}

impl<'a> View<'a> {
    /// A view of nothing (first tree, or a full replacement).
    pub(crate) fn empty(overlay: &'a Overlay) -> Self {
        Self {
            base: None,
            base_refs: None,
            base_count: 0,
            overlay,
        }
    }

    fn base(&self) -> Option<&'a TreeState> {
        if self.overlay.replaced {
            None
        } else {
            self.base
        }
    }

    fn node(&self, id: NodeId) -> Option<&'a Node> {
        if self.overlay.removed.contains(&id) {
            return None;
        }
        if let Some(node) = self.overlay.data.get(&id) {
            return Some(node);
        }
        self.base()?
            .node_by_tree_local_id(id, TreeId::ROOT)
            .map(|n| n.data())
    }

    fn parent(&self, id: NodeId) -> Option<NodeId> {
        if let Some(parent) = self.overlay.parent.get(&id) {
            return *parent;
        }
        let base = self.base()?;
        let parent = base.node_by_tree_local_id(id, TreeId::ROOT)?.parent_id()?;
        base.node_by_id(parent).map(|p| p.locate().0)
    }

    /// The current root, if the surface has a tree.
    pub(crate) fn root(&self) -> Option<NodeId> {
        if let Some(root) = self.overlay.root {
            return Some(root);
        }
        let base = self.base()?;
        base.node_by_id(base.root_id()).map(|n| n.locate().0)
    }

    fn node_count(&self) -> usize {
        self.overlay.node_count.unwrap_or(self.base_count)
    }

    fn sources(&self, target: NodeId) -> impl Iterator<Item = NodeId> + 'a {
        let base = match (self.overlay.replaced, self.base_refs) {
            (false, Some(refs)) => refs.sources(target),
            _ => &[],
        };
        let extra = self
            .overlay
            .extra_refs
            .get(&target)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        base.iter().chain(extra.iter()).copied()
    }
}

/// Who is validating, and the limits.
pub(crate) struct Context<'l> {
    pub(crate) surface: SurfaceId,
    pub(crate) limits: &'l Limits,
    /// Nodes the application has on its *other* surfaces.
    pub(crate) other_nodes: usize,
}

impl Context<'_> {
    fn reject(&self, node: Option<NodeId>, rule: Rule, detail: impl Into<String>) -> RejectError {
        RejectError::new(self.surface, node, rule, detail)
    }
}

/// What a validated update will do.
#[derive(Debug)]
pub(crate) struct Checked {
    /// Existing nodes the update removes, parents before children.
    pub(crate) removed: Vec<NodeId>,
    /// The surface's node count after the update.
    pub(crate) node_count: usize,
    pub(crate) root: NodeId,
}

/// Whether `update` replaces the surface's tree instead of editing it (see
/// the module docs).
pub(crate) fn is_full_replacement(
    view: &View<'_>,
    update: &TreeUpdate,
    awaiting_resync: bool,
) -> bool {
    match &update.tree {
        None => false,
        Some(info) => awaiting_resync || view.root() != Some(info.root),
    }
}

/// Checks one update against `view`. For a full replacement pass
/// [`View::empty`].
pub(crate) fn check_update(
    cx: &Context<'_>,
    view: &View<'_>,
    update: &TreeUpdate,
) -> Result<Checked, RejectError> {
    if update.tree_id != TreeId::ROOT {
        return Err(cx.reject(
            None,
            Rule::SubtreeUnsupported,
            "treeId must be the root tree (the nil UUID): a Newton surface carries exactly one tree, subtrees are not supported",
        ));
    }
    let root = match (&update.tree, view.root()) {
        (Some(info), _) => info.root,
        (None, Some(root)) => root,
        (None, None) => {
            return Err(cx.reject(
                None,
                Rule::MissingTreeInfo,
                "the first update of a surface must carry `tree` (TreeInfo with the root id); send a full tree",
            ))
        }
    };
    let mut post = Post::index(cx, *view, update, root)?;
    post.resolve_places(update)?;
    post.check_parents(update)?;
    let moved_runs = post.check_moved_subtrees(update)?;
    post.collect_removed(update);
    let node_count = post.check_counts(update)?;
    post.check_focus(update.focus)?;
    post.check_node_contents(update)?;
    post.check_removed_references()?;
    post.check_rerolled_targets(update)?;
    post.recheck_selections(moved_runs)?;
    let removed = post.removed_order;
    Ok(Checked {
        removed,
        node_count,
        root,
    })
}

/// Where a node ends up after the update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Attached { depth: usize },
    Detached,
}

/// One step up the post-update parent function.
enum Up {
    Root,
    To(NodeId),
    Detached,
}

/// The post-update state, computed lazily from the view and the update.
struct Post<'a, 'u, 'c> {
    cx: &'c Context<'c>,
    view: View<'a>,
    root: NodeId,
    nodes: UpdateIndex<'u>,
    /// The tree's version of each update node (same order), looked up once.
    old_nodes: Vec<Option<&'a Node>>,
    new_parent: HashMap<NodeId, NodeId>,
    places: HashMap<NodeId, Place>,
    removed: HashSet<NodeId>,
    removed_order: Vec<NodeId>,
    walk_path: Vec<NodeId>,
    walk_set: HashSet<NodeId>,
}

impl<'a, 'u, 'c> Post<'a, 'u, 'c> {
    /// Indexes the update's nodes and children; rejects per-node size and
    /// subtree violations, duplicates, self-listing and dangling children.
    fn index(
        cx: &'c Context<'c>,
        view: View<'a>,
        update: &'u TreeUpdate,
        root: NodeId,
    ) -> Result<Self, RejectError> {
        let mut nodes = UpdateIndex::new(&update.nodes);
        for (id, node) in &update.nodes {
            if !nodes.insert(*id, node) {
                return Err(cx.reject(
                    Some(*id),
                    Rule::DuplicateNode,
                    "this node id appears twice in `nodes`; send each node once per update",
                ));
            }
            if node.tree_id().is_some() {
                return Err(cx.reject(Some(*id), Rule::SubtreeUnsupported, "graft nodes (a `treeId` property) are not supported: Newton has one tree per surface; inline the subtree"));
            }
            if node.children().len() > cx.limits.max_children {
                return Err(cx.reject(
                    Some(*id),
                    Rule::TooManyChildren,
                    format!(
                        "{} children exceed the limit of {}; group them",
                        node.children().len(),
                        cx.limits.max_children
                    ),
                ));
            }
        }
        let mut new_parent = HashMap::new();
        for (id, node) in &update.nodes {
            for child in node.children() {
                if child == id {
                    return Err(cx.reject(
                        Some(*id),
                        Rule::Cycle,
                        "the node lists itself as a child",
                    ));
                }
                if *child == root {
                    return Err(cx.reject(
                        Some(*id),
                        Rule::Cycle,
                        format!(
                            "lists the root {} as a child; the root cannot have a parent",
                            child.0
                        ),
                    ));
                }
                if new_parent.insert(*child, *id).is_some() {
                    return Err(cx.reject(
                        Some(*child),
                        Rule::DuplicateChild,
                        "this child is listed twice in the update; a node has exactly one parent",
                    ));
                }
                if !nodes.contains_key(child) && view.node(*child).is_none() {
                    return Err(cx.reject(
                        Some(*child),
                        Rule::DanglingChild,
                        format!("listed as a child of {} but neither in the update nor in the tree; send the child node too", id.0),
                    ));
                }
            }
        }
        if !nodes.contains_key(&root) && view.node(root).is_none() {
            return Err(cx.reject(Some(root), Rule::MissingRoot, "the root named by `tree.root` is neither in the update nor in the tree; include the root node"));
        }
        Ok(Self {
            cx,
            view,
            root,
            old_nodes: update.nodes.iter().map(|(id, _)| view.node(*id)).collect(),
            nodes,
            new_parent,
            places: HashMap::new(),
            removed: HashSet::new(),
            removed_order: Vec::new(),
            walk_path: Vec::new(),
            walk_set: HashSet::new(),
        })
    }

    fn reject(&self, node: NodeId, rule: Rule, detail: impl Into<String>) -> RejectError {
        self.cx.reject(Some(node), rule, detail)
    }

    /// The node's data after the update.
    fn data(&self, id: NodeId) -> Option<&Node> {
        if let Some(node) = self.nodes.get(&id) {
            return Some(node);
        }
        if self.removed.contains(&id) {
            return None;
        }
        self.view.node(id)
    }

    fn exists(&self, id: NodeId) -> bool {
        self.data(id).is_some()
    }

    fn role(&self, id: NodeId) -> Option<Role> {
        self.data(id).map(Node::role)
    }

    /// The tree's version of the `index`-th update node.
    fn old(&self, index: usize) -> Option<&'a Node> {
        self.old_nodes.get(index).copied().flatten()
    }

    /// `parent'` of the module docs.
    fn up(&self, id: NodeId) -> Up {
        if id == self.root {
            return Up::Root;
        }
        if let Some(parent) = self.new_parent.get(&id) {
            return Up::To(*parent);
        }
        if self.view.node(id).is_none() {
            return Up::Detached;
        }
        match self.view.parent(id) {
            Some(old) if !self.nodes.contains_key(&old) => Up::To(old),
            _ => Up::Detached,
        }
    }

    /// The parent after the update of a node that exists after it.
    fn parent_after(&self, id: NodeId) -> Option<NodeId> {
        match self.up(id) {
            Up::To(parent) => Some(parent),
            Up::Root | Up::Detached => None,
        }
    }

    fn children_after(&self, id: NodeId) -> &[NodeId] {
        self.data(id).map(Node::children).unwrap_or(&[])
    }

    /// S14: a node newly listed by P2 must be dropped by its old parent P1 in
    /// the same update: P1 is in the update and no longer lists it (a P1
    /// still listing it was already rejected as a duplicate child), or P1
    /// itself leaves the tree in this update (toolkits such as egui move a
    /// widget out of a container they drop; the consumer skips re-listed
    /// children when it removes the old container). Runs after
    /// [`Post::resolve_places`] so that "P1 leaves" is known.
    fn check_parents(&mut self, update: &TreeUpdate) -> Result<(), RejectError> {
        let mut moves = Vec::new();
        for (id, node) in &update.nodes {
            for child in node.children() {
                if self.view.node(*child).is_none() {
                    continue;
                }
                if let Some(old) = self.view.parent(*child) {
                    if old != *id && !self.nodes.contains_key(&old) {
                        moves.push((*child, old, *id));
                    }
                }
            }
        }
        for (child, old, new) in moves {
            if self.place_of(old)? == Place::Detached {
                continue;
            }
            return Err(self.reject(
                child,
                Rule::ReparentWithoutRemoval,
                format!("moved under {} while its old parent {} still lists it; send {} without this child in the same update", new.0, old.0, old.0),
            ));
        }
        Ok(())
    }

    /// Walks `parent'` up from `start` (memoised, bounded by the depth
    /// limit) and records where every node on the way ends up.
    fn place_of(&mut self, start: NodeId) -> Result<Place, RejectError> {
        let max_depth = self.cx.limits.max_depth;
        // Reused buffers: this runs once per node of a (possibly huge) update.
        let mut path = std::mem::take(&mut self.walk_path);
        let mut on_path = std::mem::take(&mut self.walk_set);
        path.clear();
        on_path.clear();
        let result = self.walk_up(start, max_depth, &mut path, &mut on_path);
        self.walk_path = path;
        self.walk_set = on_path;
        result
    }

    fn walk_up(
        &mut self,
        start: NodeId,
        max_depth: usize,
        path: &mut Vec<NodeId>,
        on_path: &mut HashSet<NodeId>,
    ) -> Result<Place, RejectError> {
        let mut current = start;
        let base = loop {
            if let Some(place) = self.places.get(&current) {
                break *place;
            }
            if !on_path.insert(current) {
                return Err(self.reject(
                    current,
                    Rule::Cycle,
                    "this node becomes its own ancestor; fix the children lists",
                ));
            }
            if path.len() >= max_depth {
                return Err(self.reject(start, Rule::TooDeep, format!("deeper than the limit of {max_depth} levels (or inside a parent cycle longer than that)")));
            }
            path.push(current);
            match self.up(current) {
                Up::Root => break Place::Attached { depth: 0 },
                Up::Detached => break Place::Detached,
                Up::To(parent) => current = parent,
            }
        };
        for (i, id) in path.iter().rev().enumerate() {
            let place = match base {
                Place::Detached => Place::Detached,
                Place::Attached { depth } => {
                    let depth = depth + i + 1;
                    if depth > max_depth {
                        return Err(self.reject(
                            start,
                            Rule::TooDeep,
                            format!("at depth {depth}, beyond the limit of {max_depth}"),
                        ));
                    }
                    Place::Attached { depth }
                }
            };
            self.places.insert(*id, place);
        }
        Ok(self.places.get(&start).copied().unwrap_or(Place::Detached))
    }

    /// Every node of the update and every child it lists must end attached
    /// to the root, without cycles, within the depth limit.
    fn resolve_places(&mut self, update: &TreeUpdate) -> Result<(), RejectError> {
        // Fast path: when the update drops no child, an existing node that
        // keeps its parent stays where it was (attached, same depth): only
        // new and re-parented nodes need the walk up.
        let drops_any = self.drops_any(update);
        let unchanged = |this: &Self, id: NodeId, parent: Option<NodeId>| {
            !drops_any
                && this.view.node(id).is_some()
                && parent.is_some()
                && this.view.parent(id) == parent
        };
        for (i, (id, _)) in update.nodes.iter().enumerate() {
            let existed = self.old(i).is_some();
            let listed_by = self.new_parent.get(id).copied();
            let keeps_parent = match listed_by {
                Some(_) => unchanged(self, *id, listed_by),
                None => !drops_any && existed,
            };
            if keeps_parent {
                continue;
            }
            if self.place_of(*id)? == Place::Detached {
                let detail = if existed {
                    "re-sent although no node lists it after the update (its parent dropped it, or it sits under a dropped node); send it only while it is in the tree"
                } else {
                    "a new node that is not the root and that no attached node lists as a child; add it to its parent's children"
                };
                return Err(self.reject(*id, Rule::OrphanNode, detail));
            }
        }
        for (id, node) in &update.nodes {
            for child in node.children() {
                if !unchanged(self, *child, Some(*id)) {
                    self.place_of(*child)?;
                }
            }
        }
        Ok(())
    }

    /// Whether some node of the update no longer lists one of its old
    /// children (which then leaves the tree or moves).
    fn drops_any(&self, update: &TreeUpdate) -> bool {
        update.nodes.iter().enumerate().any(|(i, (id, _))| {
            self.old(i).is_some_and(|old| {
                old.children()
                    .iter()
                    .any(|c| self.new_parent.get(c) != Some(id))
            })
        })
    }

    /// Existing nodes that the update moves to a new parent.
    fn moved_nodes(&self, update: &TreeUpdate) -> Vec<NodeId> {
        let mut moved = Vec::new();
        for (id, node) in &update.nodes {
            for child in node.children() {
                if self.view.node(*child).is_some() && self.view.parent(*child) != Some(*id) {
                    moved.push(*child);
                }
            }
        }
        moved
    }

    /// Walks moved subtrees (and subtrees of nodes that became text runs):
    /// their depth may grow, and runs inside may leave the node selecting
    /// them. Returns the text runs found, for [`Self::recheck_selections`].
    fn check_moved_subtrees(&mut self, update: &TreeUpdate) -> Result<Vec<NodeId>, RejectError> {
        let mut tops: Vec<NodeId> = self.moved_nodes(update);
        for (i, (id, node)) in update.nodes.iter().enumerate() {
            let old_role = self.old(i).map(Node::role);
            if node.role() == Role::TextRun && old_role.is_some() && old_role != Some(Role::TextRun)
            {
                tops.push(*id);
            }
        }
        let max_depth = self.cx.limits.max_depth;
        let budget = self.view.node_count() + self.nodes.len() + 1;
        let mut runs = Vec::new();
        let mut steps = 0usize;
        for top in tops {
            // Nodes skipped by the fast path in `resolve_places` are placed here.
            let Place::Attached { depth } = self.place_of(top)? else {
                continue;
            };
            let mut stack = vec![(top, depth)];
            while let Some((id, depth)) = stack.pop() {
                steps += 1;
                if depth > max_depth {
                    return Err(self.reject(id, Rule::TooDeep, format!("moving this subtree puts node {} at depth {depth}, beyond the limit of {max_depth}", id.0)));
                }
                if steps > budget {
                    return Err(self.reject(
                        top,
                        Rule::Cycle,
                        "the moved subtree does not end; fix the children lists",
                    ));
                }
                if self.role(id) == Some(Role::TextRun) {
                    runs.push(id);
                }
                for child in self.children_after(id) {
                    stack.push((*child, depth + 1));
                }
            }
        }
        Ok(runs)
    }

    /// Existing subtrees the update detaches, parents first.
    fn collect_removed(&mut self, update: &TreeUpdate) {
        let mut stack = Vec::new();
        for i in (0..update.nodes.len()).rev() {
            let Some(old) = self.old(i) else {
                continue;
            };
            for child in old.children().iter().rev() {
                if !self.new_parent.contains_key(child) {
                    stack.push(*child);
                }
            }
        }
        while let Some(id) = stack.pop() {
            if self.nodes.contains_key(&id)
                || self.new_parent.contains_key(&id)
                || self.removed.contains(&id)
            {
                continue;
            }
            let Some(old) = self.view.node(id) else {
                continue;
            };
            self.removed.insert(id);
            self.removed_order.push(id);
            stack.extend(old.children().iter().rev().copied());
        }
    }

    /// Node limit for the whole application after the update.
    fn check_counts(&self, update: &TreeUpdate) -> Result<usize, RejectError> {
        let added = update
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| self.old(*i).is_none())
            .count();
        let count = (self.view.node_count() + added).saturating_sub(self.removed.len());
        let total = count.saturating_add(self.cx.other_nodes);
        if total > self.cx.limits.max_nodes {
            return Err(self.cx.reject(
                None,
                Rule::TooManyNodes,
                format!("the application would have {total} nodes, over the limit of {}; send a smaller tree", self.cx.limits.max_nodes),
            ));
        }
        Ok(count)
    }

    fn check_focus(&self, focus: NodeId) -> Result<(), RejectError> {
        if self.exists(focus) {
            return Ok(());
        }
        let detail = if self.removed.contains(&focus) {
            "the focus names a node this same update removes; move the focus (e.g. to the root) in the same update"
        } else {
            "the focus names a node that is not in the tree; focus an existing node, or the root when nothing is focused"
        };
        Err(self.reject(focus, Rule::FocusNotInTree, detail))
    }

    /// Relations, text runs, line links and selections of the update's nodes.
    fn check_node_contents(&self, update: &TreeUpdate) -> Result<(), RejectError> {
        let mut line_ok: [HashSet<NodeId>; 2] = [HashSet::new(), HashSet::new()];
        for (id, node) in &update.nodes {
            for (name, target) in relation_targets(node) {
                if !self.exists(target) {
                    return Err(self.reject(*id, Rule::DanglingRelation, format!("`{name}` names node {}, which is not in the tree after this update; drop it or send that node", target.0)));
                }
            }
            if node.role() == Role::TextRun {
                check_text_run(node)
                    .map_err(|detail| self.reject(*id, Rule::BadTextRun, detail))?;
            }
            self.check_line_links(*id, node, &mut line_ok)?;
            if let Some(selection) = node.text_selection() {
                for endpoint in [selection.anchor.node, selection.focus.node] {
                    self.check_selection_endpoint(*id, endpoint)?;
                }
            }
        }
        Ok(())
    }

    fn check_line_links(
        &self,
        id: NodeId,
        node: &Node,
        known_ok: &mut [HashSet<NodeId>; 2],
    ) -> Result<(), RejectError> {
        let links: [(&str, LineLink); 2] = [
            ("nextOnLine", Node::next_on_line),
            ("previousOnLine", Node::previous_on_line),
        ];
        for (dir, (name, link)) in links.into_iter().enumerate() {
            let Some(target) = link(node) else { continue };
            if self.role(target) != Some(Role::TextRun) {
                let what = if self.exists(target) {
                    "is not a textRun"
                } else {
                    "is not in the tree after this update"
                };
                return Err(self.reject(
                    id,
                    Rule::BadLineLink,
                    format!("`{name}` names node {}, which {what}", target.0),
                ));
            }
            // Follow the chain: it must end. Nodes already proven to reach
            // the end are remembered, so a line costs its length once.
            let mut path = HashSet::new();
            let mut current = id;
            loop {
                if known_ok[dir].contains(&current) {
                    break;
                }
                if !path.insert(current) {
                    return Err(self.reject(id, Rule::BadLineLink, format!("`{name}` links form a cycle through node {}; a line must have a first and a last run", current.0)));
                }
                let Some(data) = self.data(current) else {
                    return Err(self.reject(
                        id,
                        Rule::BadLineLink,
                        format!(
                            "the `{name}` chain reaches node {}, which is not in the tree",
                            current.0
                        ),
                    ));
                };
                match link(data) {
                    Some(next) => current = next,
                    None => break,
                }
            }
            known_ok[dir].extend(path);
        }
        Ok(())
    }

    /// R8/R9: `endpoint` must be a text run strictly inside `owner`, reached
    /// through non-run nodes (the consumer's `text_runs` filter).
    fn check_selection_endpoint(&self, owner: NodeId, endpoint: NodeId) -> Result<(), RejectError> {
        let bad = |detail: String| self.reject(owner, Rule::BadTextSelection, detail);
        match self.role(endpoint) {
            None => {
                return Err(bad(format!(
                    "the selection endpoint {} is not in the tree after this update",
                    endpoint.0
                )))
            }
            Some(Role::TextRun) => {}
            Some(_) => {
                return Err(bad(format!(
                    "the selection endpoint {} is not a textRun",
                    endpoint.0
                )))
            }
        }
        let mut current = self.parent_after(endpoint);
        for _ in 0..=self.cx.limits.max_depth {
            match current {
                Some(id) if id == owner => return Ok(()),
                Some(id) if self.role(id) == Some(Role::TextRun) => {
                    return Err(bad(format!(
                        "the selection endpoint {} sits inside another textRun {}",
                        endpoint.0, id.0
                    )))
                }
                Some(id) => current = self.parent_after(id),
                None => break,
            }
        }
        Err(bad(format!(
            "the selection endpoint {} is not a descendant of the selecting node {}",
            endpoint.0, owner.0
        )))
    }

    /// Untouched nodes that still point at a node this update removes.
    fn check_removed_references(&self) -> Result<(), RejectError> {
        for removed in &self.removed_order {
            for source in self.view.sources(*removed) {
                if self.removed.contains(&source) || self.nodes.contains_key(&source) {
                    continue;
                }
                let Some(data) = self.view.node(source) else {
                    continue;
                };
                if let Some(kind) = ref_to(data, *removed) {
                    return Err(self.broken_ref(
                        source,
                        *removed,
                        kind,
                        "which this update removes",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Untouched nodes whose line link or selection names a node that stops
    /// being a text run in this update.
    fn check_rerolled_targets(&self, update: &TreeUpdate) -> Result<(), RejectError> {
        for (i, (id, node)) in update.nodes.iter().enumerate() {
            if node.role() == Role::TextRun || self.old(i).map(Node::role) != Some(Role::TextRun) {
                continue;
            }
            for source in self.view.sources(*id) {
                if self.removed.contains(&source) || self.nodes.contains_key(&source) {
                    continue;
                }
                let Some(data) = self.view.node(source) else {
                    continue;
                };
                let text_ref = all_refs(data)
                    .find(|(kind, target)| *target == *id && !matches!(kind, RefKind::Relation(_)))
                    .map(|(kind, _)| kind);
                if let Some(kind) = text_ref {
                    return Err(self.broken_ref(
                        source,
                        *id,
                        kind,
                        "which this update turns into a non-textRun",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Runs that moved (or now sit under a new run) must stay inside every
    /// untouched node that selects them.
    fn recheck_selections(&self, runs: Vec<NodeId>) -> Result<(), RejectError> {
        for run in runs {
            for source in self.view.sources(run) {
                if self.removed.contains(&source) || self.nodes.contains_key(&source) {
                    continue;
                }
                let Some(data) = self.view.node(source) else {
                    continue;
                };
                if data
                    .text_selection()
                    .is_some_and(|s| s.anchor.node == run || s.focus.node == run)
                {
                    self.check_selection_endpoint(source, run)?;
                }
            }
        }
        Ok(())
    }

    fn broken_ref(&self, source: NodeId, target: NodeId, kind: RefKind, why: &str) -> RejectError {
        let (rule, name) = match kind {
            RefKind::Relation(name) => (Rule::DanglingRelation, name),
            RefKind::LineLink(name) => (Rule::BadLineLink, name),
            RefKind::SelectionEndpoint => (Rule::BadTextSelection, "textSelection"),
        };
        self.reject(source, rule, format!("`{name}` of node {} names node {}, {why}; re-send node {} without that reference in the same update", source.0, target.0, source.0))
    }
}

/// The update's nodes by id. Small updates (the common one-node edit) are
/// scanned linearly: no allocation, no hashing.
enum UpdateIndex<'u> {
    Small {
        all: &'u [(NodeId, Node)],
        seen: usize,
    },
    Large(HashMap<NodeId, &'u Node>),
}

impl<'u> UpdateIndex<'u> {
    const SMALL: usize = 16;

    fn new(all: &'u [(NodeId, Node)]) -> Self {
        if all.len() <= Self::SMALL {
            UpdateIndex::Small { all, seen: 0 }
        } else {
            UpdateIndex::Large(HashMap::with_capacity(all.len()))
        }
    }

    /// Adds the next node of the update, in order; false for a duplicate id.
    fn insert(&mut self, id: NodeId, node: &'u Node) -> bool {
        match self {
            UpdateIndex::Small { all, seen } => {
                let earlier = all.get(..*seen).unwrap_or_default();
                *seen += 1;
                !earlier.iter().any(|(other, _)| *other == id)
            }
            UpdateIndex::Large(map) => map.insert(id, node).is_none(),
        }
    }

    fn get(&self, id: &NodeId) -> Option<&'u Node> {
        match self {
            UpdateIndex::Small { all, seen } => all
                .get(..*seen)
                .unwrap_or_default()
                .iter()
                .find(|(other, _)| other == id)
                .map(|(_, node)| node),
            UpdateIndex::Large(map) => map.get(id).copied(),
        }
    }

    fn contains_key(&self, id: &NodeId) -> bool {
        self.get(id).is_some()
    }

    fn len(&self) -> usize {
        match self {
            UpdateIndex::Small { seen, .. } => *seen,
            UpdateIndex::Large(map) => map.len(),
        }
    }
}

/// Reads one line link of a node.
type LineLink = fn(&Node) -> Option<NodeId>;

/// R3–R6 and the other per-run invariants. Returns what is wrong.
fn check_text_run(node: &Node) -> Result<(), String> {
    let Some(value) = node.value() else {
        return Err("a textRun must have a `value`".into());
    };
    let lengths = node.character_lengths();
    if !value.is_empty() && lengths.is_empty() {
        return Err(
            "a textRun with a non-empty value needs `characterLengths` (UTF-8 bytes per character)"
                .into(),
        );
    }
    let mut end = 0usize;
    for length in lengths {
        end += usize::from(*length);
        if end > value.len() {
            return Err(format!(
                "`characterLengths` add up to more than the value's {} bytes",
                value.len()
            ));
        }
        if !value.is_char_boundary(end) {
            return Err(format!(
                "`characterLengths` split a UTF-8 character at byte {end}"
            ));
        }
    }
    if end != value.len() {
        return Err(format!(
            "`characterLengths` add up to {end} bytes, the value has {}",
            value.len()
        ));
    }
    let starts = node.word_starts();
    if starts.windows(2).any(|w| w[0] > w[1]) {
        return Err("`wordStarts` must be sorted".into());
    }
    if starts.iter().any(|s| usize::from(*s) >= lengths.len()) {
        return Err(format!(
            "`wordStarts` must be character indices below {}",
            lengths.len()
        ));
    }
    for (name, list) in [
        ("characterPositions", node.character_positions()),
        ("characterWidths", node.character_widths()),
    ] {
        if list.is_some_and(|list| list.len() > lengths.len()) {
            return Err(format!("`{name}` has more entries than `characterLengths`"));
        }
    }
    Ok(())
}
