//! `org.a11y.atspi.Cache` at `/org/a11y/atspi/cache`: `GetItems` lists every
//! exposed object, app root first, then each surface in pre-order (parents
//! before children), in one pass with no per-node work beyond the item.

use accesskit::NodeId;
use accesskit_consumer::NodeRef;
use atspi_common::StateSet;
use newton_cache::SurfaceReplica;
use newton_push_protocol::SurfaceId;
use zbus::message::Message;
use zvariant::ObjectPath;

use crate::accessible::{self, no_args};
use crate::context::{local_id, AppContext, NodeCtx};
use crate::objects::{self, is_exposed_child, to_i32, Parent};
use crate::paths::{self, NULL_PATH, ROOT_PATH};
use crate::reply::method_return;
use crate::{dispatch, roles, states, CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Cache";
/// Cache signals use the same interface name.
pub(crate) const CACHE_SIGNAL_INTERFACE: &str = INTERFACE;

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

pub(crate) fn call(app: &AppContext, member: &str, call: &Message) -> Result<Handled, CallError> {
    match member {
        "GetItems" => {
            no_args(call)?;
            let items = all_items(app);
            Ok(Handled::reply(method_return(call, &(items,))?))
        }
        _ => Err(CallError::UnknownMethod {
            interface: INTERFACE.to_owned(),
            member: member.to_owned(),
        }),
    }
}

fn root_path() -> ObjectPath<'static> {
    ObjectPath::from_static_str_unchecked(ROOT_PATH)
}

fn node_object_path(surface: SurfaceId, node: NodeId) -> ObjectPath<'static> {
    ObjectPath::from(paths::node_path(surface, node))
}

/// Every exposed object of the application.
pub(crate) fn all_items<'a>(app: &'a AppContext<'a>) -> Vec<CacheItem<'a>> {
    let mut items = Vec::with_capacity(app.replica.node_count().saturating_add(1));
    items.push(root_item(app));
    for (index, surface) in app
        .replica
        .surfaces()
        .filter(|s| objects::surface_root(s).is_some())
        .enumerate()
    {
        push_surface_items(app, surface, index, &mut items);
    }
    items
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
        dispatch::ROOT_INTERFACES.to_vec(),
        app.info.name.clone(),
        atspi_common::Role::Application as u32,
        String::new(),
        accessible::root_states(),
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

fn push_surface_items<'a>(
    app: &'a AppContext<'a>,
    surface: &'a SurfaceReplica,
    index: usize,
    items: &mut Vec<CacheItem<'a>>,
) {
    let Some(root) = objects::surface_root(surface) else {
        return;
    };
    // (node, parent id or None for the surface root, index in parent)
    let mut stack: Vec<(NodeRef<'a>, Option<NodeId>, usize)> = vec![(root, None, index)];
    let mut children_buffer: Vec<NodeRef<'a>> = Vec::new();
    while let Some((node, parent, index)) = stack.pop() {
        children_buffer.clear();
        children_buffer.extend(node.children().filter(is_exposed_child));
        let ctx = NodeCtx { app, surface, node };
        let parent_ref = match parent {
            Some(parent) => (app.unique_name, node_object_path(surface.id(), parent)),
            None => (app.unique_name, root_path()),
        };
        items.push(item(&ctx, parent_ref, index, children_buffer.len()));
        let id = local_id(&node);
        // Reverse so the first child is popped (and listed) first.
        for (child_index, child) in children_buffer.iter().enumerate().rev() {
            stack.push((*child, Some(id), child_index));
        }
    }
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
        dispatch::node_interface_names(ctx),
        accessible::name(ctx),
        roles::atspi_role(&ctx.node) as u32,
        accessible::description(&ctx.node),
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
