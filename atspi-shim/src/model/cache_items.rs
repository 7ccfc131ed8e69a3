//! Cache items: the `((so)(so)(so)iiassusau)` description of an object that
//! `Cache.GetItems` lists and `Cache.AddAccessible` sends. `GetItems` lists
//! the exposed objects breadth first (app root, surface roots, then level by
//! level; parents before children) within a byte budget, in one pass with no
//! per-node work beyond the item.

use std::collections::VecDeque;

use accesskit::NodeId;
use accesskit_consumer::NodeRef;
use atspi_common::StateSet;
use newton_cache::SurfaceReplica;
use newton_push_protocol::SurfaceId;
use zvariant::ObjectPath;

use crate::model::budgets::GET_ITEMS_BUDGET_BYTES;
use crate::model::context::{AppContext, NodeCtx};
use crate::model::describe;
use crate::model::exposure::is_exposed_child;
use crate::model::implements::{node_interface_names, root_interface_names};
use crate::model::index::to_i32;
use crate::model::objects::{self, Parent};
use crate::model::paths::local_id;
use crate::model::paths::{self, NULL_PATH, ROOT_PATH};
use crate::model::{roles, states};

/// An object reference borrowing the bus name.
pub type ItemRef<'a> = (&'a str, ObjectPath<'static>);

/// One cache item `((so)(so)(so)iiassusau)`: object, app root, parent,
/// index in parent, child count, interfaces, name, role, description, states.
pub type CacheItem<'a> = (
    ItemRef<'a>,
    ItemRef<'a>,
    ItemRef<'a>,
    i32,
    i32,
    Vec<&'static str>,
    String,
    u32,
    String,
    StateSet,
);

fn root_path() -> ObjectPath<'static> {
    ObjectPath::from_static_str_unchecked(ROOT_PATH)
}

fn node_object_path(surface: SurfaceId, node: NodeId) -> ObjectPath<'static> {
    ObjectPath::from(paths::node_path(surface, node))
}

/// The exposed objects of the application, breadth first (the app root,
/// every surface root, then level by level), until the reply would pass
/// [`GET_ITEMS_BUDGET_BYTES`]. libatspi keeps what it gets: an item's child
/// count sizes its children array, and a slot no item filled is asked for
/// with `GetChildAtIndex` when first used, after which the object's own
/// properties are asked for as for an application without a cache. Breadth
/// first keeps the windows and the top of each tree in the cache, where a
/// screen reader starts.
pub(crate) fn all_items<'a>(app: &'a AppContext<'a>) -> Vec<CacheItem<'a>> {
    items_within(app, GET_ITEMS_BUDGET_BYTES)
}

/// [`all_items`] with an explicit budget (serialized bytes of the items).
pub(crate) fn items_within<'a>(app: &'a AppContext<'a>, budget: usize) -> Vec<CacheItem<'a>> {
    let root = root_item(app);
    let mut used = serialized_size(&root);
    let mut items = vec![root];
    // (surface, node, parent id or None for a surface root, index in parent)
    let mut queue: VecDeque<(&'a SurfaceReplica, NodeRef<'a>, Option<NodeId>, usize)> = app
        .replica
        .surfaces()
        .filter_map(|s| objects::surface_root(s).map(|root| (s, root)))
        .enumerate()
        .map(|(index, (surface, root))| (surface, root, None, index))
        .collect();
    let mut children: Vec<NodeRef<'a>> = Vec::new();
    while let Some((surface, node, parent, index)) = queue.pop_front() {
        children.clear();
        children.extend(node.children().filter(is_exposed_child));
        let ctx = NodeCtx { app, surface, node };
        let parent_ref = match parent {
            Some(parent) => (app.unique_name, node_object_path(surface.id(), parent)),
            None => (app.unique_name, root_path()),
        };
        let item = item(&ctx, parent_ref, index, children.len());
        used = used.saturating_add(serialized_size(&item));
        if used > budget {
            tracing::debug!(
                app = %app.info.name,
                listed = items.len(),
                "Cache.GetItems: the rest is left for libatspi to ask for (budget {budget} bytes)"
            );
            break;
        }
        items.push(item);
        let id = local_id(&node);
        queue.extend(
            children
                .iter()
                .enumerate()
                .map(|(child_index, child)| (surface, *child, Some(id), child_index)),
        );
    }
    items
}

/// One item's serialized size, exactly: D-Bus aligns a struct to 8 and an
/// integer, a string's length or an array's length to 4, and every item of
/// the array starts 8-aligned, so its size depends on its content only.
fn serialized_size(item: &CacheItem) -> usize {
    fn align(offset: usize, to: usize) -> usize {
        offset.div_ceil(to) * to
    }
    fn string(offset: usize, text: &str) -> usize {
        align(offset, 4) + 4 + text.len() + 1
    }
    fn reference(offset: usize, r: &ItemRef) -> usize {
        string(string(align(offset, 8), r.0), r.1.as_str())
    }
    let mut offset = reference(reference(reference(0, &item.0), &item.1), &item.2);
    offset = align(offset, 4) + 8; // index, child count
    offset = align(offset, 4) + 4; // interfaces: length
    for interface in &item.5 {
        offset = string(offset, interface);
    }
    offset = string(offset, &item.6);
    offset = align(offset, 4) + 4; // role
    offset = string(offset, &item.8);
    offset = align(offset, 4) + 4 + 8; // states: length, two words
    align(offset, 8)
}

/// The app root's item; its parent is the desktop (null before Embed).
pub(crate) fn root_item<'a>(app: &'a AppContext<'a>) -> CacheItem<'a> {
    let me = (app.unique_name, root_path());
    (
        me.clone(),
        me,
        desktop_item_ref(app),
        -1,
        to_i32(objects::root_children(app).count()),
        root_interface_names(),
        crate::model::budgets::bounded_name(app.info.name.clone()),
        atspi_common::Role::Application as u32,
        String::new(),
        states::root_states(),
    )
}

/// The desktop from `Socket.Embed`, or the null reference.
fn desktop_item_ref<'a>(app: &AppContext<'a>) -> ItemRef<'a> {
    app.desktop
        .and_then(|(name, path)| {
            ObjectPath::try_from(path)
                .ok()
                .map(|path| (name, path.into_owned()))
        })
        .unwrap_or(("", ObjectPath::from_static_str_unchecked(NULL_PATH)))
}

fn item<'a>(
    ctx: &NodeCtx<'a>,
    parent: ItemRef<'a>,
    index: usize,
    child_count: usize,
) -> CacheItem<'a> {
    let app = ctx.app;
    (
        (
            app.unique_name,
            node_object_path(ctx.surface.id(), ctx.id()),
        ),
        (app.unique_name, root_path()),
        parent,
        to_i32(index),
        to_i32(child_count),
        node_interface_names(ctx),
        describe::name(ctx),
        roles::atspi_role(&ctx.node) as u32,
        describe::description(&ctx.node),
        states::state_set(ctx),
    )
}

/// The item of one node, for `Cache.AddAccessible`.
pub(crate) fn node_item<'a>(ctx: &NodeCtx<'a>) -> CacheItem<'a> {
    let app = ctx.app;
    let parent = match objects::parent(ctx) {
        Parent::AppRoot => (app.unique_name, root_path()),
        Parent::Node(parent) => (
            app.unique_name,
            node_object_path(ctx.surface.id(), local_id(&parent)),
        ),
    };
    item(
        ctx,
        parent,
        objects::index_in_parent(ctx),
        objects::child_count(ctx.surface, &ctx.node),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_of_an_item_is_what_zvariant_writes() {
        let items: Vec<CacheItem> = (0..7)
            .map(|n| {
                let name = "x".repeat(n);
                let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
                let path =
                    ObjectPath::try_from(leak(format!("/p{}", "q".repeat(n)))).expect("a path");
                let r: ItemRef = (leak("a".repeat(n + 1)), path);
                (
                    r.clone(),
                    r.clone(),
                    r,
                    n as i32,
                    1,
                    vec!["org.a11y.atspi.Accessible", "x"][..n % 3].to_vec(),
                    name.clone(),
                    7,
                    name,
                    StateSet::empty(),
                )
            })
            .collect();
        let ctxt = zvariant::serialized::Context::new_dbus(zvariant::LE, 0);
        let whole = zvariant::to_bytes(ctxt, &items).expect("serialized").len();
        // The array's length word, padded to the first struct's alignment.
        let expected: usize = 8 + items.iter().map(serialized_size).sum::<usize>();
        // The last item's trailing padding is not written.
        assert!(
            whole <= expected && expected - whole < 8,
            "{whole} vs {expected}"
        );
    }
}
