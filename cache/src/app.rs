//! One application's replica: its surfaces, each with a validated
//! `accesskit_consumer::Tree`.
//!
//! Every mutation validates first and applies only when everything passed,
//! so a rejected commit leaves the replica exactly as it was (apart from the
//! rejection counter and the surface's "awaiting resync" mark).
//!
//! Large first trees can be built off the lock: [`prepare_full_tree`]
//! validates and builds a tree without touching the [`AppReplica`] (run it on
//! another thread while the replica keeps answering), then
//! [`AppReplica::install`] swaps it in cheaply.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use accesskit::{NodeId, TreeId, TreeUpdate};
use accesskit_consumer::{Tree, TreeState};
use newton_push_protocol::{Geometry, SurfaceId};

use crate::budget::{node_cost, tree_bytes, ByteBudget};
use crate::changes::{all_removed, preorder, ChangeCollector, IgnoreChanges};
use crate::exposure::NonStructuralChildren;
use crate::refs::RefIndex;
use crate::validate::{check_update, is_full_replacement, Checked, Context, Overlay, View};
use crate::{ChangeSet, FocusChange, FrameKind, Limits, RejectError, Rule};

/// One surface (window) of an application.
pub struct SurfaceReplica {
    pub(crate) id: SurfaceId,
    pub(crate) title: Option<String>,
    /// `None` until the first good commit.
    pub(crate) tree: Option<Tree>,
    pub(crate) geometry: Geometry,
    /// Whether the compositor says this surface has keyboard focus.
    pub(crate) focused: bool,
    pub(crate) node_count: usize,
    /// Bytes of its tree (`budget.rs`): its nodes' and the tree's own
    /// (`tree_bytes(peak_nodes)`).
    pub(crate) bytes: usize,
    /// The most nodes the tree has held since it was built, counting those
    /// an update adds before the consumer drops those it removes: the
    /// consumer's maps grow to it and never shrink.
    pub(crate) peak_nodes: usize,
    pub(crate) refs: RefIndex,
    pub(crate) awaiting_resync: bool,
    pub(crate) non_structural: NonStructuralChildren,
    pub(crate) generation: u64,
}

/// Source of [`SurfaceReplica::generation`] values, shared by every surface
/// so that no two states of any surfaces ever share one.
static NEXT_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_generation() -> u64 {
    NEXT_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl SurfaceReplica {
    fn new(id: SurfaceId, title: Option<String>) -> Self {
        Self {
            id,
            title,
            tree: None,
            geometry: Geometry::default(),
            focused: false,
            node_count: 0,
            bytes: 0,
            peak_nodes: 0,
            refs: RefIndex::default(),
            awaiting_resync: false,
            non_structural: NonStructuralChildren::default(),
            generation: next_generation(),
        }
    }

    /// Changes with every applied commit; unique across all surfaces of all
    /// applications, so (generation, node) names one node state: answers
    /// derived from the tree may be cached under it.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Nodes whose relations (`labelled_by`, `controls`, …) or text links
    /// name `target`, from the replica's reverse index: O(referrers). May
    /// list a node twice when it names `target` twice.
    pub fn referrers(&self, target: NodeId) -> &[NodeId] {
        self.refs.sources(target)
    }

    /// How many children of `parent` are text runs or hidden (see
    /// [`crate::exposure`]); 0 for most parents. O(1).
    pub fn non_structural_children(&self, parent: NodeId) -> usize {
        self.non_structural.get(parent)
    }

    /// The surface id the sender chose.
    pub fn id(&self) -> SurfaceId {
        self.id
    }
    /// The window title given at creation.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }
    /// The tree, once the first commit was applied.
    pub fn tree(&self) -> Option<&Tree> {
        self.tree.as_ref()
    }
    /// Where the compositor says the surface is.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }
    /// Whether the compositor says this surface has keyboard focus.
    pub fn is_focused(&self) -> bool {
        self.focused
    }
    /// Nodes in this surface's tree.
    pub fn node_count(&self) -> usize {
        self.node_count
    }
    /// True after a rejected commit until a commit carrying `tree` applies:
    /// the next update with `tree` is a full replacement (the bridge should
    /// answer the rejection with `resync: true`).
    pub fn awaiting_resync(&self) -> bool {
        self.awaiting_resync
    }

    fn state(&self) -> Option<&TreeState> {
        self.tree.as_ref().map(Tree::state)
    }

    fn view<'a>(&'a self, overlay: &'a Overlay) -> View<'a> {
        View {
            base: self.state(),
            base_refs: Some(&self.refs),
            base_count: self.node_count,
            overlay,
        }
    }
}

/// A validated, fully built tree for one surface, made without the
/// [`AppReplica`] (see [`prepare_full_tree`]); install it with
/// [`AppReplica::install`].
#[derive(Debug)]
pub struct PreparedTree {
    surface: SurfaceId,
    tree: Tree,
    refs: RefIndex,
    node_count: usize,
    /// The most nodes the tree held while it was built (`SurfaceReplica::peak_nodes`).
    peak_nodes: usize,
    /// Bytes of the tree (`budget.rs`).
    bytes: usize,
    /// Every node, parents first.
    order: Vec<NodeId>,
    /// Counted here, off the replica's lock.
    non_structural: NonStructuralChildren,
}

impl PreparedTree {
    /// The surface it was built for.
    pub fn surface(&self) -> SurfaceId {
        self.surface
    }
    /// Nodes in the tree.
    pub fn node_count(&self) -> usize {
        self.node_count
    }
    /// Estimated bytes of the tree.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Validates `updates` (one commit) as a fresh tree for `surface` and builds
/// it, without touching any replica: the first update must carry `tree` and
/// is a full replacement; later ones apply on top. `limits.max_nodes` is
/// checked for this tree alone; [`AppReplica::install`] re-checks the
/// application-wide count. Costs O(nodes); meant to run off the replica's
/// lock for big first trees.
pub fn prepare_full_tree(
    limits: &Limits,
    surface: SurfaceId,
    updates: Vec<TreeUpdate>,
    frame_bytes: usize,
) -> Result<PreparedTree, RejectError> {
    check_frame_bytes(limits, surface, frame_bytes)?;
    let mut updates = updates;
    crate::strings::clean_updates(&mut updates);
    match updates.first() {
        Some(first) if first.tree.is_some() => {}
        _ => {
            return Err(RejectError::new(
                surface,
                None,
                Rule::MissingTreeInfo,
                "a full tree must start with an update carrying `tree` (TreeInfo with the root)",
            ));
        }
    }
    // The tree cannot hold more nodes than the commit carries.
    let carried = updates.iter().map(|u| u.nodes.len()).sum::<usize>();
    let incoming = incoming_bytes(&updates).saturating_add(tree_bytes(carried));
    if incoming > limits.max_app_bytes {
        return Err(app_bytes_error(surface, incoming, limits.max_app_bytes));
    }
    let cx = Context {
        surface,
        limits,
        other_nodes: 0,
    };
    let plan = plan_commit(&cx, None, &updates)?;
    Ok(build_tree(surface, updates, plan))
}

/// Bytes of every node a commit carries (`budget::node_cost`).
fn incoming_bytes(updates: &[TreeUpdate]) -> usize {
    updates
        .iter()
        .flat_map(|u| &u.nodes)
        .map(|(_, node)| node_cost(node))
        .fold(0usize, usize::saturating_add)
}

fn app_bytes_error(surface: SurfaceId, total: usize, max: usize) -> RejectError {
    RejectError::new(
        surface,
        None,
        Rule::AppBytes,
        format!(
            "the application's replica would take about {total} bytes, over its budget of {max} \
             (--max-app-bytes); send less text or fewer nodes"
        ),
    )
}

fn total_bytes_error(surface: SurfaceId, growth: usize, budget: &ByteBudget) -> RejectError {
    RejectError::new(
        surface,
        None,
        Rule::TotalBytes,
        format!(
            "the bridge's replicas hold about {} of {} bytes (--max-total-bytes) and this commit \
             needs {growth} more; try again after other applications shrink or leave",
            budget.used(),
            budget.max()
        ),
    )
}

/// What validation decided for a commit.
struct CommitPlan {
    checks: Vec<Checked>,
    /// Index of the last update that replaces the whole tree.
    replace_from: Option<usize>,
}

fn check_frame_bytes(
    limits: &Limits,
    surface: SurfaceId,
    frame_bytes: usize,
) -> Result<(), RejectError> {
    if frame_bytes > limits.max_frame_bytes {
        return Err(RejectError::new(
            surface,
            None,
            Rule::FrameTooLarge,
            format!(
                "the commit is {frame_bytes} bytes, over the limit of {}; send smaller updates",
                limits.max_frame_bytes
            ),
        ));
    }
    Ok(())
}

/// Validates every update against the state the previous ones leave.
fn plan_commit(
    cx: &Context<'_>,
    surface: Option<&SurfaceReplica>,
    updates: &[TreeUpdate],
) -> Result<CommitPlan, RejectError> {
    let mut overlay = Overlay::default();
    let mut awaiting_resync = surface.is_some_and(|s| s.awaiting_resync);
    let mut checks = Vec::with_capacity(updates.len());
    let mut replace_from = None;
    for (i, update) in updates.iter().enumerate() {
        let empty = Overlay::replaced();
        let view = match surface {
            Some(s) => s.view(&overlay),
            None => View::empty(&overlay),
        };
        let replacing = is_full_replacement(&view, update, awaiting_resync);
        let checked = if replacing {
            check_update(cx, &View::empty(&empty), update)?
        } else {
            check_update(cx, &view, update)?
        };
        if update.tree.is_some() {
            awaiting_resync = false;
        }
        if replacing {
            replace_from = Some(i);
            overlay = empty;
        }
        if i + 1 < updates.len() {
            overlay.absorb(update, &checked);
        }
        checks.push(checked);
    }
    Ok(CommitPlan {
        checks,
        replace_from,
    })
}

/// Builds the tree from the last full replacement of a validated commit.
fn build_tree(surface: SurfaceId, mut updates: Vec<TreeUpdate>, plan: CommitPlan) -> PreparedTree {
    let start = plan.replace_from.unwrap_or(0);
    let mut checks = plan.checks.into_iter().skip(start);
    let mut rest = updates.split_off(start).into_iter();
    let mut refs = RefIndex::default();
    let mut node_count = 0;
    let mut peak_nodes = 0;
    let mut tree = None;
    if let (Some(first), Some(checked)) = (rest.next(), checks.next()) {
        for (id, node) in &first.nodes {
            refs.add_node(*id, node);
        }
        node_count = checked.node_count;
        peak_nodes = node_count;
        tree = Some(Tree::new(first, false));
    }
    let Some(mut tree) = tree else {
        // Unreachable for a validated full tree; keep an empty, valid one.
        return PreparedTree {
            surface,
            tree: Tree::new(placeholder_update(), false),
            refs,
            node_count: 1,
            peak_nodes: 1,
            bytes: 0,
            order: vec![NodeId(0)],
            non_structural: NonStructuralChildren::default(),
        };
    };
    for (update, checked) in rest.zip(checks) {
        node_count = checked.node_count;
        peak_nodes = peak_nodes.max(node_count.saturating_add(checked.removed.len()));
        apply_one(&mut tree, &mut refs, update, &checked, &mut IgnoreChanges);
    }
    let order = preorder(tree.state());
    let non_structural = NonStructuralChildren::count_all(tree.state(), &order);
    let bytes = order
        .iter()
        .filter_map(|id| tree.state().node_by_tree_local_id(*id, TreeId::ROOT))
        .map(|node| node_cost(node.data()))
        .fold(tree_bytes(peak_nodes), usize::saturating_add);
    PreparedTree {
        surface,
        tree,
        refs,
        node_count,
        peak_nodes,
        bytes,
        order,
        non_structural,
    }
}

/// A one-node tree; only used if a caller bypasses validation.
fn placeholder_update() -> TreeUpdate {
    TreeUpdate {
        nodes: vec![(NodeId(0), accesskit::Node::new(accesskit::Role::Window))],
        tree: Some(accesskit::TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(0),
    }
}

/// Applies one validated incremental update, keeping the reference index.
fn apply_one(
    tree: &mut Tree,
    refs: &mut RefIndex,
    update: TreeUpdate,
    checked: &Checked,
    handler: &mut impl accesskit_consumer::TreeChangeHandler,
) {
    let state = tree.state();
    for removed in &checked.removed {
        if let Some(node) = state.node_by_tree_local_id(*removed, TreeId::ROOT) {
            refs.remove_node(*removed, node.data());
        }
    }
    for (id, _) in &update.nodes {
        if let Some(node) = state.node_by_tree_local_id(*id, TreeId::ROOT) {
            refs.remove_node(*id, node.data());
        }
    }
    for (id, node) in &update.nodes {
        refs.add_node(*id, node);
    }
    tree.update_and_process_changes(update, handler);
}

/// All surfaces of one application plus its limits and counters.
pub struct AppReplica {
    pub(crate) limits: Limits,
    pub(crate) surfaces: BTreeMap<SurfaceId, SurfaceReplica>,
    pub(crate) node_count: usize,
    /// Estimated bytes of every surface's tree, all taken from `shared`.
    pub(crate) bytes: usize,
    pub(crate) shared: Arc<ByteBudget>,
    pub(crate) commits_applied: u64,
    pub(crate) commits_rejected: u64,
}

impl Drop for AppReplica {
    fn drop(&mut self) {
        self.shared.release(self.bytes);
    }
}

impl AppReplica {
    /// An application with no surfaces, with a budget of its own only.
    pub fn new(limits: Limits) -> Self {
        Self::with_shared_budget(limits, Arc::new(ByteBudget::default()))
    }

    /// An application whose replica also draws from `shared`, the budget of
    /// every application together.
    pub fn with_shared_budget(limits: Limits, shared: Arc<ByteBudget>) -> Self {
        Self {
            limits,
            surfaces: BTreeMap::new(),
            node_count: 0,
            bytes: 0,
            shared,
            commits_applied: 0,
            commits_rejected: 0,
        }
    }

    /// Estimated bytes of the replica (`budget.rs`).
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// The limits every commit is checked against.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
    /// Surfaces in id order.
    pub fn surfaces(&self) -> impl Iterator<Item = &SurfaceReplica> {
        self.surfaces.values()
    }
    /// One surface.
    pub fn surface(&self, id: SurfaceId) -> Option<&SurfaceReplica> {
        self.surfaces.get(&id)
    }
    /// Nodes across every surface.
    pub fn node_count(&self) -> usize {
        self.node_count
    }
    /// Commits (and installs) applied.
    pub fn commits_applied(&self) -> u64 {
        self.commits_applied
    }
    /// Commits (and installs) rejected.
    pub fn commits_rejected(&self) -> u64 {
        self.commits_rejected
    }

    fn unknown_surface(id: SurfaceId) -> RejectError {
        RejectError::new(
            id,
            None,
            Rule::UnknownSurface,
            "no such surface: create it first (createSurface), or it was destroyed",
        )
    }

    /// Registers a new, still empty surface.
    pub fn create_surface(
        &mut self,
        id: SurfaceId,
        title: Option<String>,
    ) -> Result<(), RejectError> {
        if self.surfaces.contains_key(&id) {
            return Err(RejectError::new(
                id,
                None,
                Rule::DuplicateSurface,
                "this surface id already exists; destroy it first or pick a new id",
            ));
        }
        if self.surfaces.len() >= self.limits.max_surfaces {
            return Err(RejectError::new(
                id,
                None,
                Rule::TooManySurfaces,
                format!(
                    "the application already has {} surfaces, the limit; destroy unused ones",
                    self.limits.max_surfaces
                ),
            ));
        }
        let title = title.map(|t| crate::strings::without_nul(&t).unwrap_or(t));
        self.surfaces.insert(id, SurfaceReplica::new(id, title));
        Ok(())
    }

    /// Removes a surface; the change set lists every node it had (parents
    /// first, `FrameKind::Destroyed`).
    pub fn destroy_surface(&mut self, id: SurfaceId) -> Result<ChangeSet, RejectError> {
        let surface = self
            .surfaces
            .remove(&id)
            .ok_or_else(|| Self::unknown_surface(id))?;
        self.node_count = self.node_count.saturating_sub(surface.node_count);
        self.bytes = self.bytes.saturating_sub(surface.bytes);
        self.shared.release(surface.bytes);
        let mut changes = ChangeSet::new(id, FrameKind::Destroyed);
        if let Some(state) = surface.state() {
            changes.removed = all_removed(state);
        }
        Ok(changes)
    }

    /// Validates then applies `updates` (one commit, in order) atomically.
    /// `frame_bytes` is their encoded size, checked against the limit. On
    /// error nothing changed except that the surface now awaits a resync. A
    /// full tree (see [`crate::validate`], "Full replacement") replaces the
    /// surface's tree (`FrameKind::Replaced`, or `Created` for the first).
    pub fn commit(
        &mut self,
        surface: SurfaceId,
        updates: Vec<TreeUpdate>,
        frame_bytes: usize,
    ) -> Result<ChangeSet, RejectError> {
        let mut updates = updates;
        crate::strings::clean_updates(&mut updates);
        let plan = match self.plan(surface, &updates, frame_bytes) {
            Ok(plan) => plan,
            Err(error) => {
                self.note_rejection(surface);
                return Err(error);
            }
        };
        if plan.replace_from.is_some() {
            let prepared = build_tree(surface, updates, plan);
            return self.install(prepared);
        }
        let old_peak = self.surfaces.get(&surface).map_or(0, |s| s.peak_nodes);
        // The consumer inserts an update's new nodes before it drops the
        // ones it removes, so its maps briefly hold both.
        let peak = plan
            .checks
            .iter()
            .map(|c| c.node_count.saturating_add(c.removed.len()))
            .fold(old_peak, usize::max);
        // The consumer's maps grow to the new peak (and never shrink).
        let tree_growth = tree_bytes(peak).saturating_sub(tree_bytes(old_peak));
        let reserved = match self.admit_incremental(surface, &updates, tree_growth) {
            Ok(reserved) => reserved,
            Err(error) => {
                self.note_rejection(surface);
                return Err(error);
            }
        };
        let incoming = incoming_bytes(&updates);
        let Some(s) = self.surfaces.get_mut(&surface) else {
            self.shared.release(reserved);
            return Err(Self::unknown_surface(surface));
        };
        let mut collector = ChangeCollector::new(surface, self.limits.max_depth);
        let old_count = s.node_count;
        let old_bytes = s.bytes;
        let mut released = 0usize;
        if let Some(tree) = s.tree.as_mut() {
            for (update, checked) in updates.into_iter().zip(&plan.checks) {
                released = released.saturating_add(replaced_bytes(tree.state(), &update, checked));
                collector.next_update();
                apply_one(tree, &mut s.refs, update, checked, &mut collector);
                s.node_count = checked.node_count;
            }
        }
        s.bytes = old_bytes
            .saturating_add(incoming)
            .saturating_add(tree_growth)
            .saturating_sub(released);
        s.peak_nodes = peak;
        self.node_count = (self.node_count + s.node_count).saturating_sub(old_count);
        self.bytes = (self.bytes + s.bytes).saturating_sub(old_bytes);
        // The reservation covered the growth at most; give back the rest.
        let growth = s.bytes.saturating_sub(old_bytes);
        let shrink = old_bytes.saturating_sub(s.bytes);
        self.shared
            .release(reserved.saturating_sub(growth).saturating_add(shrink));
        self.commits_applied += 1;
        let changes = collector.finish(FrameKind::Updated, s.state());
        s.non_structural
            .refresh(s.tree.as_ref().map(Tree::state), &changes);
        s.generation = next_generation();
        Ok(changes)
    }

    /// Whether `commit(surface, updates, ..)` would start by replacing the
    /// surface's whole tree (see [`crate::validate`], "Full replacement"):
    /// the first update carries `tree` and the surface has no tree yet,
    /// awaits a resync, or has a different root. Such commits can be built
    /// off the lock with [`prepare_full_tree`] + [`AppReplica::install`].
    pub fn is_full_replacement(&self, surface: SurfaceId, updates: &[TreeUpdate]) -> bool {
        let (Some(s), Some(first)) = (self.surfaces.get(&surface), updates.first()) else {
            return false;
        };
        let overlay = Overlay::default();
        is_full_replacement(&s.view(&overlay), first, s.awaiting_resync)
    }

    /// Validates a commit without applying it (what [`AppReplica::commit`]
    /// checks first). Changes nothing, not even the rejection counter.
    pub fn check(
        &self,
        surface: SurfaceId,
        updates: &[TreeUpdate],
        frame_bytes: usize,
    ) -> Result<(), RejectError> {
        self.plan(surface, updates, frame_bytes).map(|_| ())
    }

    fn plan(
        &self,
        surface: SurfaceId,
        updates: &[TreeUpdate],
        frame_bytes: usize,
    ) -> Result<CommitPlan, RejectError> {
        let s = self
            .surfaces
            .get(&surface)
            .ok_or_else(|| Self::unknown_surface(surface))?;
        check_frame_bytes(&self.limits, surface, frame_bytes)?;
        let cx = Context {
            surface,
            limits: &self.limits,
            other_nodes: self.node_count.saturating_sub(s.node_count),
        };
        plan_commit(&cx, Some(s), updates)
    }

    /// Records a commit rejected outside [`AppReplica::commit`] (a
    /// [`prepare_full_tree`] that failed): counts it and marks the surface
    /// as awaiting a resync.
    pub fn note_rejected(&mut self, surface: SurfaceId) {
        self.note_rejection(surface);
    }

    fn note_rejection(&mut self, surface: SurfaceId) {
        self.commits_rejected += 1;
        if let Some(s) = self.surfaces.get_mut(&surface) {
            s.awaiting_resync = true;
        }
    }

    /// Swaps in a tree built by [`prepare_full_tree`]: cheap (O(old tree) for
    /// the change set's `removed`). Re-checks that the surface exists and the
    /// application-wide node limit. Returns a `Created` or `Replaced` change
    /// set.
    pub fn install(&mut self, prepared: PreparedTree) -> Result<ChangeSet, RejectError> {
        let surface = prepared.surface;
        let Some(s) = self.surfaces.get(&surface) else {
            self.commits_rejected += 1;
            return Err(Self::unknown_surface(surface));
        };
        let total = self
            .node_count
            .saturating_sub(s.node_count)
            .saturating_add(prepared.node_count);
        if total > self.limits.max_nodes {
            self.note_rejection(surface);
            return Err(RejectError::new(
                surface,
                None,
                Rule::TooManyNodes,
                format!("the application would have {total} nodes, over the limit of {}; send a smaller tree", self.limits.max_nodes),
            ));
        }
        let old_bytes = s.bytes;
        let total_bytes = self
            .bytes
            .saturating_sub(old_bytes)
            .saturating_add(prepared.bytes);
        if total_bytes > self.limits.max_app_bytes {
            self.note_rejection(surface);
            return Err(app_bytes_error(
                surface,
                total_bytes,
                self.limits.max_app_bytes,
            ));
        }
        let growth = prepared.bytes.saturating_sub(old_bytes);
        if !self.shared.try_reserve(growth) {
            self.note_rejection(surface);
            return Err(total_bytes_error(surface, growth, &self.shared));
        }
        self.shared
            .release(old_bytes.saturating_sub(prepared.bytes));
        self.install_unchecked(prepared)
    }

    /// Checks an incremental commit against the byte budgets before it is
    /// applied: the replica plus the commit's nodes, less the nodes they
    /// replace, plus `tree_growth` (the tree's own growth), must fit.
    /// Returns the bytes reserved from the shared budget.
    fn admit_incremental(
        &mut self,
        surface: SurfaceId,
        updates: &[TreeUpdate],
        tree_growth: usize,
    ) -> Result<usize, RejectError> {
        let incoming = incoming_bytes(updates).saturating_add(tree_growth);
        let state = self.surfaces.get(&surface).and_then(|s| s.state());
        let mut seen = HashSet::new();
        let replaced: usize = updates
            .iter()
            .flat_map(|u| &u.nodes)
            .filter(|(id, _)| seen.insert(*id))
            .filter_map(|(id, _)| state?.node_by_tree_local_id(*id, TreeId::ROOT))
            .map(|node| node_cost(node.data()))
            .fold(0usize, usize::saturating_add);
        let total = self.bytes.saturating_sub(replaced).saturating_add(incoming);
        if total > self.limits.max_app_bytes {
            return Err(app_bytes_error(surface, total, self.limits.max_app_bytes));
        }
        let growth = incoming.saturating_sub(replaced);
        if !self.shared.try_reserve(growth) {
            return Err(total_bytes_error(surface, growth, &self.shared));
        }
        Ok(growth)
    }

    fn install_unchecked(&mut self, prepared: PreparedTree) -> Result<ChangeSet, RejectError> {
        let PreparedTree {
            surface,
            mut tree,
            refs,
            node_count,
            peak_nodes,
            bytes,
            order,
            non_structural,
        } = prepared;
        let Some(s) = self.surfaces.get_mut(&surface) else {
            return Err(Self::unknown_surface(surface));
        };
        let old_focus = s
            .state()
            .and_then(|state| state.focus_id())
            .and_then(|id| s.state()?.node_by_id(id))
            .map(|n| n.locate().0);
        if s.focused {
            tree.update_host_focus_state_and_process_changes(true, &mut IgnoreChanges);
        }
        let new_focus = tree.state().focus().map(|n| n.locate().0);
        let kind = if s.tree.is_some() {
            FrameKind::Replaced
        } else {
            FrameKind::Created
        };
        let mut changes = ChangeSet::new(surface, kind);
        if let Some(old) = s.state() {
            changes.removed = all_removed(old);
        }
        changes.added = order;
        if old_focus != new_focus {
            changes.focus = Some(FocusChange {
                old: old_focus,
                new: new_focus,
            });
        }
        self.node_count = (self.node_count + node_count).saturating_sub(s.node_count);
        self.bytes = (self.bytes + bytes).saturating_sub(s.bytes);
        s.bytes = bytes;
        s.peak_nodes = peak_nodes;
        s.tree = Some(tree);
        s.refs = refs;
        s.node_count = node_count;
        s.awaiting_resync = false;
        s.non_structural = non_structural;
        s.generation = next_generation();
        self.commits_applied += 1;
        Ok(changes)
    }

    /// Compositor focus fact: which surface (if any) is focused. Returns the
    /// change sets of surfaces whose effective focus changed (the one losing
    /// focus first). Only the focused surface's tree is host-focused, so only
    /// it reports a focused node.
    pub fn set_focused_surface(
        &mut self,
        surface: Option<SurfaceId>,
    ) -> Result<Vec<ChangeSet>, RejectError> {
        if let Some(id) = surface {
            if !self.surfaces.contains_key(&id) {
                return Err(Self::unknown_surface(id));
            }
        }
        let max_depth = self.limits.max_depth;
        let mut out = Vec::new();
        for gaining in [false, true] {
            for s in self.surfaces.values_mut() {
                let focused = Some(s.id) == surface;
                if focused != gaining || s.focused == focused {
                    continue;
                }
                s.focused = focused;
                let Some(tree) = s.tree.as_mut() else {
                    continue;
                };
                let mut collector = ChangeCollector::new(s.id, max_depth);
                tree.update_host_focus_state_and_process_changes(focused, &mut collector);
                out.push(collector.finish(FrameKind::Updated, Some(tree.state())));
            }
        }
        Ok(out)
    }

    /// Compositor fact: where the surface is on screen.
    pub fn set_geometry(
        &mut self,
        surface: SurfaceId,
        geometry: Geometry,
    ) -> Result<(), RejectError> {
        let s = self
            .surfaces
            .get_mut(&surface)
            .ok_or_else(|| Self::unknown_surface(surface))?;
        s.geometry = geometry;
        Ok(())
    }

    /// Removes every surface (the sender left); one `Destroyed` change set
    /// per surface.
    pub fn clear(&mut self) -> Vec<ChangeSet> {
        let ids: Vec<SurfaceId> = self.surfaces.keys().copied().collect();
        ids.into_iter()
            .filter_map(|id| self.destroy_surface(id).ok())
            .collect()
    }

    /// Drops every surface's tree but keeps the surfaces themselves (id,
    /// title, geometry, compositor focus): the bridge's reset of one
    /// application after an internal error. The replacement happens before
    /// the old trees are walked, so even if that walk failed the replica is
    /// already empty and consistent. Returns one `Destroyed` change set per
    /// surface that had a tree (what an AT must forget). Each surface then
    /// expects a full tree, as after its creation.
    pub fn reset(&mut self) -> Vec<ChangeSet> {
        let fresh: BTreeMap<SurfaceId, SurfaceReplica> = self
            .surfaces
            .values()
            .map(|old| {
                let mut surface = SurfaceReplica::new(old.id, old.title.clone());
                surface.geometry = old.geometry;
                surface.focused = old.focused;
                (old.id, surface)
            })
            .collect();
        let old = std::mem::replace(&mut self.surfaces, fresh);
        self.node_count = 0;
        self.shared.release(self.bytes);
        self.bytes = 0;
        old.into_values()
            .filter_map(|surface| {
                let state = surface.state()?;
                let mut changes = ChangeSet::new(surface.id, FrameKind::Destroyed);
                changes.removed = all_removed(state);
                Some(changes)
            })
            .collect()
    }

    /// A canonical text dump of every surface (facts, root, focus, and every
    /// node with parent, index and data, in tree order). Equal dumps mean
    /// equal replicas; used by tests to prove a rejected commit changed
    /// nothing. O(nodes).
    pub fn dump(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for s in self.surfaces.values() {
            let _ = writeln!(
                out,
                "surface {} title={:?} geometry={:?} focused={} nodes={}",
                s.id.0, s.title, s.geometry, s.focused, s.node_count
            );
            let Some(state) = s.state() else { continue };
            let _ = writeln!(
                out,
                " focus_in_tree={:?} host_focused={}",
                state.focus_in_tree().locate().0,
                state.is_host_focused()
            );
            for id in preorder(state) {
                let Some(node) = state.node_by_tree_local_id(id, TreeId::ROOT) else {
                    continue;
                };
                let parent = node.parent_and_index().map(|(p, i)| (p.locate().0 .0, i));
                let _ = writeln!(out, " {} parent={:?} {:?}", id.0, parent, node.data());
            }
        }
        out
    }
}

/// Compile-time proof that replicas and prepared trees can cross threads.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<AppReplica>();
    assert_send::<PreparedTree>();
};

/// Estimated bytes an update gives up: the current version of every node it
/// carries and every node it removes.
fn replaced_bytes(state: &TreeState, update: &TreeUpdate, checked: &Checked) -> usize {
    update
        .nodes
        .iter()
        .map(|(id, _)| *id)
        .chain(checked.removed.iter().copied())
        .filter_map(|id| state.node_by_tree_local_id(id, TreeId::ROOT))
        .map(|node| node_cost(node.data()))
        .fold(0usize, usize::saturating_add)
}
