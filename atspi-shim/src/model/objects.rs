//! The exposed object tree: the AT-SPI objects' parents, children and
//! indices (`resolve.rs` finds the object a call's path names).
//!
//! Exposure rule (`exposure.rs`): a node is exposed unless it is a `TextRun`
//! (its text belongs to the text-bearing parent) or hidden (itself or an
//! ancestor). `GenericContainer` is exposed (as PANEL). Because exclusion always drops a
//! whole subtree, an exposed node's AT-SPI parent is its replica parent, and a
//! surface's tree root has the app root as parent.
//!
//! Cost: children are the replica children minus excluded ones, so
//! ChildCount / GetChildAtIndex / GetIndexInParent cost O(siblings) hash
//! look-ups (one flag and role check each), never a walk of the tree. A path
//! lookup costs O(depth) for the inherited hidden flag (depth is capped by
//! the validator).

use accesskit::{NodeId, TreeId};
use accesskit_consumer::NodeRef;
use newton_cache::SurfaceReplica;

use crate::model::context::{AppContext, NodeCtx, Target};
use crate::model::exposure::{exposed_children, is_exposed, is_exposed_child};
use crate::model::paths::local_id;

/// The exposed node `id` of `surface`, if there is one.
pub(crate) fn node_ctx<'a>(
    app: &'a AppContext<'a>,
    surface: &'a SurfaceReplica,
    id: NodeId,
) -> Option<NodeCtx<'a>> {
    let tree = surface.tree()?;
    let node = tree.state().node_by_tree_local_id(id, TreeId::ROOT)?;
    is_exposed(&node).then_some(NodeCtx { app, surface, node })
}

/// The surface's tree root, if the surface has a tree and its root is exposed.
pub(crate) fn surface_root(surface: &SurfaceReplica) -> Option<NodeRef<'_>> {
    let root = surface.tree()?.state().root();
    is_exposed_child(&root).then_some(root)
}

/// The app root's children: each exposed surface root, in surface order.
pub(crate) fn root_children<'a>(app: &'a AppContext<'a>) -> impl Iterator<Item = NodeCtx<'a>> + 'a {
    app.replica
        .surfaces()
        .filter_map(move |surface| surface_root(surface).map(|node| NodeCtx { app, surface, node }))
}

/// Number of exposed children: O(1) unless the node has children that are
/// not exposed (text runs, hidden nodes), which the replica counts per
/// commit; then O(children).
pub(crate) fn child_count(surface: &SurfaceReplica, node: &NodeRef) -> usize {
    if surface.non_structural_children(local_id(node)) == 0 {
        node.data().children().len()
    } else {
        node.children().filter(is_exposed_child).count()
    }
}

/// The exposed child at `index`, with the same costs as [`child_count`].
pub(crate) fn child_at<'a>(
    surface: &SurfaceReplica,
    node: &NodeRef<'a>,
    index: usize,
) -> Option<NodeRef<'a>> {
    if surface.non_structural_children(local_id(node)) == 0 {
        let id = *node.data().children().get(index)?;
        node.tree_state.node_by_tree_local_id(id, TreeId::ROOT)
    } else {
        exposed_children(node).nth(index)
    }
}

/// The AT-SPI parent of an exposed node.
pub(crate) enum Parent<'a> {
    AppRoot,
    Node(NodeRef<'a>),
}

pub(crate) fn parent<'a>(ctx: &NodeCtx<'a>) -> Parent<'a> {
    match ctx.node.parent() {
        Some(parent) if !ctx.node.is_root() => Parent::Node(parent),
        _ => Parent::AppRoot,
    }
}

/// Index among the parent's exposed children.
pub(crate) fn index_in_parent(ctx: &NodeCtx) -> usize {
    if ctx.node.is_root() {
        let me = ctx.surface.id();
        return ctx
            .app
            .replica
            .surfaces()
            .take_while(|s| s.id() != me)
            .filter(|s| surface_root(s).is_some())
            .count();
    }
    match ctx.node.parent_and_index() {
        Some((parent, raw_index))
            if ctx.surface.non_structural_children(local_id(&parent)) == 0 =>
        {
            raw_index
        }
        Some((parent, raw_index)) => {
            let excluded_before = parent
                .children()
                .take(raw_index)
                .filter(|c| !is_exposed_child(c))
                .count();
            raw_index.saturating_sub(excluded_before)
        }
        None => 0,
    }
}

/// Cost estimate (`heavy over`, `surface/mod.rs`) of a member listing the
/// object's children (`GetChildren`): how many there are, O(1).
pub(crate) fn width(target: Target) -> usize {
    match target {
        Target::App(app) => app.replica.surfaces().count(),
        Target::Node(ctx) => ctx.node.data().children().len(),
    }
}

/// Cost estimate of a member that finds one child by its exposed index or
/// counts them (`GetChildAtIndex`, `ChildCount`, Selection's child
/// indices): 1 while every child is exposed (a look-up), else the children
/// it may walk ([`child_count`]).
pub(crate) fn counted_width(target: Target) -> usize {
    match target {
        Target::App(app) => app.replica.surfaces().count(),
        Target::Node(ctx) if ctx.surface.non_structural_children(local_id(&ctx.node)) == 0 => 1,
        Target::Node(ctx) => ctx.node.data().children().len(),
    }
}

/// Cost estimate of `GetIndexInParent`: [`counted_width`] of the parent.
pub(crate) fn sibling_work(target: Target) -> usize {
    match target {
        Target::App(_) => 1,
        Target::Node(ctx) if ctx.node.is_root() => ctx.app.replica.surfaces().count(),
        Target::Node(ctx) => match ctx.node.parent() {
            Some(parent) if ctx.surface.non_structural_children(local_id(&parent)) > 0 => {
                parent.data().children().len()
            }
            _ => 1,
        },
    }
}

/// Cost estimate of a member that may walk the object's subtree (Selection's
/// items, hit testing): the nodes of its surface, an upper bound known in O(1).
pub(crate) fn tree_work(target: Target) -> usize {
    match target {
        Target::App(app) => app.replica.node_count(),
        Target::Node(ctx) => ctx.surface.node_count(),
    }
}
