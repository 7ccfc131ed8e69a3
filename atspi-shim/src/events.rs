//! Change sets → AT-SPI event signals, from the application's point of view.
//!
//! Every signal is built with `Message::signal(path, interface, member)` and
//! the body `siiva{sv}` (detail, detail1, detail2, any_data, empty a{sv});
//! Cache signals carry the cache item / `(so)`. The bridge sends them on the
//! application's connection, filtered by [`EventListeners::is_needed`].
//!
//! Order within one change set: structure (window:destroy,
//! children-changed remove/add, defunct, Cache remove/add,
//! document:load-complete for new documents, window:create for a new
//! surface, moved children), then per-node property and state changes, then
//! selection-changed on containers, then active-descendant-changed, then
//! focus (an in-window dialog's active state, then focused=0 on the old node
//! before focused=1 on the new; a node off screen gets showing=1 before its
//! focused=1 and showing=0 after its focused=0), then text (delete before insert, then
//! caret, then text selection: GTK's order), then announcements.
//!
//! Limits (documented): a child removed from a parent gets the index it had
//! among *all* its old siblings (the old tree is gone, so excluded siblings
//! cannot be discounted); pure reorders emit nothing; Cache.AddAccessible /
//! RemoveAccessible and `defunct` are sent per node only up to
//! [`PER_NODE_SIGNAL_LIMIT`] nodes per change set, beyond which only the
//! subtree roots get them (clients fetch the rest lazily).

use std::collections::{HashMap, HashSet};

use accesskit::{Live, NodeId, TreeId};
use accesskit_consumer::NodeRef;
use atspi_common::State;
use newton_cache::{
    Change, ChangeSet, FlagName, FrameKind, NodeUpdate, SurfaceReplica, TextSelectionOffsets,
};
use newton_push_protocol::SurfaceId;
use serde::Serialize;
use zbus::message::Message;
use zvariant::{DynamicType, Structure, Value};

use crate::model::cache_items;
use crate::model::context::{AppContext, NodeCtx};
use crate::model::coords::to_xywh;
use crate::model::describe;
use crate::model::exposure::{exposure_filter, is_exposed};
use crate::model::geometry::extents;
use crate::model::index::to_i32;
use crate::model::names;
use crate::model::objects;
use crate::model::paths::{self, ObjectRef, CACHE_PATH, ROOT_PATH};
use crate::model::wire::CoordType;
use crate::{model::relations, model::roles, model::states};

/// Beyond this many added/removed nodes in one change set, per-node Cache
/// and defunct signals go to subtree roots only.
pub const PER_NODE_SIGNAL_LIMIT: usize = 1000;

const OBJECT: &str = "org.a11y.atspi.Event.Object";
const WINDOW: &str = "org.a11y.atspi.Event.Window";
const DOCUMENT: &str = "org.a11y.atspi.Event.Document";

/// Accumulates signals; a signal that cannot be built is logged and dropped.
struct Out<'l> {
    messages: Vec<Message>,
    /// When set, events nobody listens for are not even built.
    listeners: Option<&'l EventListeners>,
}

impl Out<'_> {
    /// `fields` = (detail, detail1, detail2, any_data).
    fn event(
        &mut self,
        path: &str,
        interface: &str,
        member: &str,
        fields: (&str, i32, i32, Value),
    ) {
        let (detail, detail1, detail2, any) = fields;
        if let Some(listeners) = self.listeners {
            let class = interface
                .strip_prefix("org.a11y.atspi.Event.")
                .unwrap_or(interface);
            if !listeners.is_needed(class, member, detail) {
                return;
            }
        }
        let properties: HashMap<&str, Value> = HashMap::new();
        self.push(
            path,
            interface,
            member,
            &(detail, detail1, detail2, any, properties),
        );
    }

    fn object(&mut self, path: &str, member: &str, detail: &str, detail1: i32, any: Value) {
        self.event(path, OBJECT, member, (detail, detail1, 0, any));
    }

    /// focused=1 or 0 on `node`. A node off screen is showing only while it
    /// has focus (`states::is_on_screen`), so its showing=1 comes just before
    /// focused=1 and its showing=0 just after focused=0: Orca finds the newly
    /// focused object showing when it reads it.
    fn focus_state(&mut self, path: &str, node: &NodeRef, on: bool) {
        let off_screen = !states::is_on_screen(node);
        if on && off_screen {
            self.state(path, State::Showing, true);
        }
        self.state(path, State::Focused, on);
        if !on && off_screen {
            self.state(path, State::Showing, false);
        }
    }

    fn state(&mut self, path: &str, state: State, on: bool) {
        self.object(
            path,
            "StateChanged",
            state.to_static_str(),
            i32::from(on),
            Value::I32(0),
        );
    }

    fn push<B: Serialize + DynamicType>(
        &mut self,
        path: &str,
        interface: &str,
        member: &str,
        body: &B,
    ) {
        match Message::signal(path, interface, member).and_then(|builder| builder.build(body)) {
            Ok(message) if message.data().len() > crate::model::budgets::MAX_MESSAGE_BYTES => {
                tracing::warn!(%path, %interface, %member, bytes = message.data().len(),
                    "AT-SPI event not sent: over the message budget (rule max-message-bytes)")
            }
            Ok(message) => self.messages.push(message),
            Err(error) => {
                tracing::warn!(%path, %interface, %member, %error, "could not build an AT-SPI event")
            }
        }
    }
}

fn ref_value(reference: ObjectRef) -> Value<'static> {
    let (name, path) = reference;
    Value::from(Structure::from((name, path)))
}

/// The signals for one applied change set of `app`'s surface
/// `changes.surface`. `app` must already reflect the change set.
pub fn events_for(app: &AppContext, changes: &ChangeSet) -> Vec<Message> {
    build_events(app, changes, None)
}

/// [`events_for`], building only the events `listeners` needs (a scrolled
/// list of 10k items changes 10k bounds; nobody may want bounds-changed).
pub fn events_for_listeners(
    app: &AppContext,
    changes: &ChangeSet,
    listeners: &EventListeners,
) -> Vec<Message> {
    build_events(app, changes, Some(listeners))
}

fn build_events(
    app: &AppContext,
    changes: &ChangeSet,
    listeners: Option<&EventListeners>,
) -> Vec<Message> {
    let mut out = Out {
        messages: Vec::new(),
        listeners,
    };
    let surface = app.replica.surface(changes.surface);
    removals(app, surface, changes, &mut out);
    if let Some(surface) = surface {
        additions(app, surface, changes, &mut out);
        moved_children(app, surface, changes, &mut out);
        for update in &changes.updated {
            node_changes(app, surface, update, &mut out);
        }
        selection_containers(app, surface, changes, &mut out);
        for update in &changes.updated {
            active_descendant_changes(app, surface, update, changes.focus.is_none(), &mut out);
        }
        if let Some(focus) = changes.focus {
            focus_moved(app, surface, focus.old, focus.new, &mut out);
        }
        for update in &changes.updated {
            text_changes(app, surface, update, &mut out);
        }
        for update in &changes.updated {
            announcements(app, surface, update, &mut out);
        }
    }
    out.messages
}

/// The index a surface root has (or had) among the app root's children:
/// surfaces are ordered by id.
fn surface_index(app: &AppContext, surface: SurfaceId) -> i32 {
    let before = app
        .replica
        .surfaces()
        .filter(|s| s.id() < surface && objects::surface_root(s).is_some())
        .count();
    to_i32(before)
}

fn removals(
    app: &AppContext,
    surface: Option<&SurfaceReplica>,
    changes: &ChangeSet,
    out: &mut Out,
) {
    if changes.removed.is_empty() {
        return;
    }
    let removed: HashSet<NodeId> = changes.removed.iter().map(|r| r.id).collect();
    let re_added: HashSet<NodeId> = changes.added.iter().copied().collect();
    let per_node = changes.removed.len() <= PER_NODE_SIGNAL_LIMIT;
    for gone in &changes.removed {
        if gone.role == accesskit::Role::TextRun {
            continue;
        }
        let is_subtree_root = gone
            .parent
            .is_none_or(|(parent, _)| !removed.contains(&parent));
        let path = paths::node_path(changes.surface, gone.id);
        let child = ref_value(paths::local_ref(app.unique_name, path.clone()));
        if is_subtree_root {
            match gone.parent {
                Some((parent, index)) => {
                    let parent_path = paths::node_path(changes.surface, parent);
                    if still_exposed(surface, parent) {
                        out.object(
                            parent_path.as_str(),
                            "ChildrenChanged",
                            "remove",
                            to_i32(index),
                            child,
                        );
                    }
                }
                None => {
                    if changes.kind == FrameKind::Destroyed {
                        // The window's name went with its tree.
                        out.event(
                            path.as_str(),
                            WINDOW,
                            "Destroy",
                            ("", 0, 0, Value::from("")),
                        );
                    }
                    let index = surface_index(app, changes.surface);
                    out.object(ROOT_PATH, "ChildrenChanged", "remove", index, child);
                }
            }
        }
        if (per_node || is_subtree_root) && !re_added.contains(&gone.id) {
            out.state(path.as_str(), State::Defunct, true);
            out.push(
                CACHE_PATH,
                names::CACHE,
                "RemoveAccessible",
                &(paths::local_ref(app.unique_name, path),),
            );
        }
    }
}

fn still_exposed(surface: Option<&SurfaceReplica>, id: NodeId) -> bool {
    surface
        .and_then(|s| s.tree())
        .and_then(|tree| tree.state().node_by_tree_local_id(id, TreeId::ROOT))
        .is_some_and(|node| is_exposed(&node))
}

fn lookup<'a>(
    app: &'a AppContext<'a>,
    surface: &'a SurfaceReplica,
    id: NodeId,
) -> Option<NodeCtx<'a>> {
    objects::node_ctx(app, surface, id)
}

fn additions<'a>(
    app: &'a AppContext<'a>,
    surface: &'a SurfaceReplica,
    changes: &ChangeSet,
    out: &mut Out,
) {
    if changes.added.is_empty() {
        return;
    }
    let added: HashSet<NodeId> = changes.added.iter().copied().collect();
    let per_node = changes.added.len() <= PER_NODE_SIGNAL_LIMIT;
    for id in &changes.added {
        let Some(ctx) = lookup(app, surface, *id) else {
            continue;
        };
        let parent_added = ctx
            .node
            .parent()
            .is_some_and(|p| !ctx.node.is_root() && added.contains(&paths::local_id(&p)));
        let is_subtree_root = !parent_added;
        if per_node || is_subtree_root {
            out.push(
                CACHE_PATH,
                names::CACHE,
                "AddAccessible",
                &(cache_items::node_item(&ctx),),
            );
        }
        if is_subtree_root {
            announce_child_added(&ctx, out);
        }
    }
    for id in &changes.added {
        let Some(ctx) = lookup(app, surface, *id) else {
            continue;
        };
        if matches!(
            ctx.node.role(),
            accesskit::Role::Document | accesskit::Role::RootWebArea | accesskit::Role::PdfRoot
        ) {
            out.event(
                ctx.path().as_str(),
                DOCUMENT,
                "LoadComplete",
                ("", 0, 0, Value::I32(0)),
            );
        }
    }
    if changes.kind == FrameKind::Created {
        if let Some(root) = objects::surface_root(surface) {
            let ctx = NodeCtx {
                app,
                surface,
                node: root,
            };
            let name = Value::from(describe::name(&ctx));
            out.event(ctx.path().as_str(), WINDOW, "Create", ("", 0, 0, name));
        }
    }
}

/// children-changed:add on the AT-SPI parent (the app root for a surface root).
fn announce_child_added(ctx: &NodeCtx, out: &mut Out) {
    let index = to_i32(objects::index_in_parent(ctx));
    let child = ref_value(ctx.object_ref());
    match objects::parent(ctx) {
        objects::Parent::AppRoot => out.object(ROOT_PATH, "ChildrenChanged", "add", index, child),
        objects::Parent::Node(parent) => {
            let parent_path = paths::node_path(ctx.surface.id(), paths::local_id(&parent));
            out.object(parent_path.as_str(), "ChildrenChanged", "add", index, child);
        }
    }
}

/// Children that changed parent within the tree (neither added nor
/// removed): children-changed:remove on the old parent, children-changed:add
/// on the new one, and property-change:accessible-parent on the child.
fn moved_children(app: &AppContext, surface: &SurfaceReplica, changes: &ChangeSet, out: &mut Out) {
    let added: HashSet<NodeId> = changes.added.iter().copied().collect();
    let removed: HashSet<NodeId> = changes.removed.iter().map(|r| r.id).collect();
    let children_changes = || {
        changes.updated.iter().flat_map(|update| {
            update
                .changes
                .iter()
                .filter_map(move |change| match change {
                    Change::Children { old, new } => Some((update.id, old, new)),
                    _ => None,
                })
        })
    };
    for (parent, old, new) in children_changes() {
        let stays: HashSet<&NodeId> = new.iter().collect();
        if !still_exposed(Some(surface), parent) {
            continue;
        }
        let parent_path = paths::node_path(surface.id(), parent);
        for (index, id) in old.iter().enumerate() {
            if !stays.contains(id) && !removed.contains(id) {
                let child = ref_value(paths::node_ref(app.unique_name, surface.id(), *id));
                out.object(
                    parent_path.as_str(),
                    "ChildrenChanged",
                    "remove",
                    to_i32(index),
                    child,
                );
            }
        }
    }
    for (parent, old, new) in children_changes() {
        let was: HashSet<&NodeId> = old.iter().collect();
        for id in new
            .iter()
            .filter(|id| !was.contains(id) && !added.contains(id))
        {
            let Some(ctx) = lookup(app, surface, *id) else {
                continue;
            };
            announce_child_added(&ctx, out);
            let parent_ref = ref_value(paths::node_ref(app.unique_name, surface.id(), parent));
            out.object(
                ctx.path().as_str(),
                "PropertyChange",
                "accessible-parent",
                0,
                parent_ref,
            );
        }
    }
}

fn node_changes(app: &AppContext, surface: &SurfaceReplica, update: &NodeUpdate, out: &mut Out) {
    // Hidden/shown changes structure, so they are handled even when the
    // node is no longer exposed.
    for change in &update.changes {
        if let Change::Flag {
            flag: FlagName::Hidden,
            old,
            new,
        } = change
        {
            visibility_changed(app, surface, update.id, *old, *new, out);
        }
    }
    let Some(ctx) = lookup(app, surface, update.id) else {
        return;
    };
    let path = ctx.path();
    let path = path.as_str();
    if may_change_interfaces(update) {
        // libatspi keeps an object's interfaces and states from the last
        // cache item it saw (GetItems or AddAccessible) and no event updates
        // interfaces: a node that became a slider in place would otherwise
        // keep a label's interfaces and states in Orca's view. A fresh item
        // replaces them (and role, name, description) before the events below.
        out.push(
            CACHE_PATH,
            names::CACHE,
            "AddAccessible",
            &(cache_items::node_item(&ctx),),
        );
    }
    for change in &update.changes {
        match change {
            Change::Role { .. } => {
                out.object(
                    path,
                    "PropertyChange",
                    "accessible-role",
                    0,
                    Value::U32(roles::atspi_role(&ctx.node) as u32),
                );
            }
            Change::Name { old, new } => {
                name_changed(&ctx, out);
                named_text_changed(&ctx, old, new, out);
            }
            Change::Description { .. } => {
                out.object(
                    path,
                    "PropertyChange",
                    "accessible-description",
                    0,
                    Value::from(describe::description(&ctx.node)),
                );
            }
            // A node that lost its value lost its Value interface too (the
            // fresh cache item above says so); a value event would only make
            // clients ask an interface that is gone.
            Change::NumericValue { old, new } => {
                if new.is_some() {
                    out.object(path, "PropertyChange", "accessible-value", 0, Value::I32(0))
                }
                if ctx.node.role() == accesskit::Role::ProgressIndicator
                    && old.is_some() != new.is_some()
                {
                    out.state(path, State::Indeterminate, new.is_none());
                }
            }
            Change::Value { old, new } => value_changed(&ctx, update, old, new, out),
            Change::Toggled { old, new } => toggled_changed(&ctx, path, *old, *new, out),
            Change::Selected { old, new } if old.unwrap_or(false) != new.unwrap_or(false) => {
                out.state(path, State::Selected, new.unwrap_or(false));
            }
            Change::Expanded { old, new } => {
                if old.unwrap_or(false) != new.unwrap_or(false) {
                    out.state(path, State::Expanded, new.unwrap_or(false));
                }
                if *new == Some(false) || *old == Some(false) {
                    out.state(path, State::Collapsed, *new == Some(false));
                }
            }
            Change::Flag { flag, old, new } if old != new => {
                flag_changed(&ctx, path, *flag, *new, out)
            }
            Change::Bounds { .. } => {
                let (x, y, w, h) = to_xywh(extents(&ctx, CoordType::Screen));
                let rect = Value::from(Structure::from((x, y, w, h)));
                out.object(path, "BoundsChanged", "", 0, rect);
            }
            Change::Actions { .. } => {
                let focusable = states::is_focusable(&ctx.node);
                out.state(path, State::Focusable, focusable);
            }
            _ => {}
        }
    }
}

/// Whether the frame may have changed which interfaces the node offers (see
/// each interface's `supported`): its role, whether it has a numeric or
/// string value, its actions, its editability, or its children (text runs
/// give Text and Hypertext).
fn may_change_interfaces(update: &NodeUpdate) -> bool {
    update.changes.iter().any(|change| match change {
        Change::Role { .. } | Change::Actions { .. } | Change::Children { .. } => true,
        Change::NumericValue { old, new } => old.is_some() != new.is_some(),
        Change::Value { old, new } => old.is_some() != new.is_some(),
        Change::Flag { flag, old, new } => {
            old != new
                && matches!(
                    flag,
                    FlagName::ReadOnly | FlagName::Disabled | FlagName::Editable
                )
        }
        _ => false,
    })
}

/// accessible-name on the node and on nearby nodes it labels.
fn name_changed(ctx: &NodeCtx, out: &mut Out) {
    let path = ctx.path();
    out.object(
        path.as_str(),
        "PropertyChange",
        "accessible-name",
        0,
        Value::from(describe::name(ctx)),
    );
    for labelled in relations::labelled_nodes(ctx.surface, &ctx.node) {
        let target = ctx.with_node(labelled);
        let name = Value::from(describe::name(&target));
        out.object(
            target.path().as_str(),
            "PropertyChange",
            "accessible-name",
            0,
            name,
        );
    }
}

/// A header cell's or heading's Text is its name (`text::has_name_as_text`),
/// so a new name is also a text edit.
fn named_text_changed(ctx: &NodeCtx, old: &Option<String>, new: &Option<String>, out: &mut Out) {
    if !crate::model::text::has_name_as_text(&ctx.node) {
        return;
    }
    text_edited(ctx.path().as_str(), old, new, out);
}

/// text-changed delete and insert for a plain text (one without runs) that
/// went from `old` to `new`.
fn text_edited(path: &str, old: &Option<String>, new: &Option<String>, out: &mut Out) {
    let edit = text_edit(old.as_deref().unwrap_or(""), new.as_deref().unwrap_or(""));
    if let Some((start, removed)) = edit.deleted {
        out.object_text(path, "delete", start, removed);
    }
    if let Some((start, inserted)) = edit.inserted {
        out.object_text(path, "insert", start, inserted);
    }
}

/// A string value changed: a Label's name, the text of a text node without
/// runs (its text is its value), or else the accessible value.
fn value_changed(
    ctx: &NodeCtx,
    update: &NodeUpdate,
    old: &Option<String>,
    new: &Option<String>,
    out: &mut Out,
) {
    let path = ctx.path();
    let path = path.as_str();
    let has_name_change = update
        .changes
        .iter()
        .any(|c| matches!(c, Change::Name { .. }));
    if ctx.node.label_comes_from_value() && !has_name_change {
        name_changed(ctx, out);
    }
    if ctx.node.supports_text_ranges() {
        return; // Change::Text carries the edit.
    }
    if ctx.node.is_text_input() || ctx.node.label_comes_from_value() {
        text_edited(path, old, new, out);
    } else if ctx.node.numeric_value().is_none() {
        out.object(path, "PropertyChange", "accessible-value", 0, Value::I32(0));
    }
}

fn visibility_changed(
    app: &AppContext,
    surface: &SurfaceReplica,
    id: NodeId,
    old: bool,
    new: bool,
    out: &mut Out,
) {
    if old == new {
        return;
    }
    let Some(node) = surface
        .tree()
        .and_then(|t| t.state().node_by_tree_local_id(id, TreeId::ROOT))
    else {
        return;
    };
    if node.role() == accesskit::Role::TextRun {
        return;
    }
    let ctx = NodeCtx { app, surface, node };
    if new {
        // Now hidden: gone from its parent's children.
        let child = ref_value(ctx.object_ref());
        let index = to_i32(objects::index_in_parent(&ctx));
        let parent_path = match objects::parent(&ctx) {
            objects::Parent::AppRoot => paths::static_path(ROOT_PATH),
            objects::Parent::Node(parent) => {
                paths::node_path(surface.id(), paths::local_id(&parent))
            }
        };
        out.state(ctx.path().as_str(), State::Showing, false);
        out.object(
            parent_path.as_str(),
            "ChildrenChanged",
            "remove",
            index,
            child,
        );
    } else if is_exposed(&ctx.node) {
        announce_child_added(&ctx, out);
        out.state(ctx.path().as_str(), State::Showing, true);
    }
}

fn toggled_changed(
    ctx: &NodeCtx,
    path: &str,
    old: Option<accesskit::Toggled>,
    new: Option<accesskit::Toggled>,
    out: &mut Out,
) {
    use accesskit::Toggled;
    let checked = |t: Option<Toggled>| t == Some(Toggled::True);
    let mixed = |t: Option<Toggled>| t == Some(Toggled::Mixed);
    if checked(old) != checked(new) {
        out.state(path, states::toggle_state(&ctx.node), checked(new));
    }
    if mixed(old) != mixed(new) {
        out.state(path, State::Indeterminate, mixed(new));
    }
    if old.is_some() != new.is_some() {
        out.state(path, State::Checkable, new.is_some());
    }
}

fn flag_changed(ctx: &NodeCtx, path: &str, flag: FlagName, on: bool, out: &mut Out) {
    match flag {
        FlagName::Hidden | FlagName::Focused => {}
        FlagName::Disabled => {
            out.state(path, State::Enabled, !on);
            out.state(path, State::Sensitive, !on);
        }
        FlagName::ReadOnly => {
            out.state(path, State::ReadOnly, on);
            if ctx.node.is_text_input() {
                out.state(path, State::Editable, !on);
            }
        }
        FlagName::Required => out.state(path, State::Required, on),
        FlagName::Busy => out.state(path, State::Busy, on),
        FlagName::Modal => out.state(path, State::Modal, on),
        FlagName::Visited => out.state(path, State::Visited, on),
        FlagName::Multiselectable => out.state(path, State::Multiselectable, on),
        FlagName::Focusable => out.state(path, State::Focusable, on),
        FlagName::Editable => out.state(path, State::Editable, on),
    }
}

/// One selection-changed per container whose items' selection changed.
fn selection_containers(
    app: &AppContext,
    surface: &SurfaceReplica,
    changes: &ChangeSet,
    out: &mut Out,
) {
    let mut done: HashSet<NodeId> = HashSet::new();
    for update in &changes.updated {
        if !update
            .changes
            .iter()
            .any(|c| matches!(c, Change::Selected { .. }))
        {
            continue;
        }
        let Some(ctx) = lookup(app, surface, update.id) else {
            continue;
        };
        let Some(container) = ctx.node.selection_container(&exposure_filter) else {
            continue;
        };
        let id = paths::local_id(&container);
        if done.insert(id) {
            out.object(
                paths::node_path(surface.id(), id).as_str(),
                "SelectionChanged",
                "",
                0,
                Value::I32(0),
            );
        }
    }
}

fn focus_moved(
    app: &AppContext,
    surface: &SurfaceReplica,
    old: Option<NodeId>,
    new: Option<NodeId>,
    out: &mut Out,
) {
    dialog_activation(app, surface, old, new, out);
    if let Some(old) = old.filter(|old| Some(*old) != new) {
        if let Some(ctx) = lookup(app, surface, old) {
            out.focus_state(ctx.path().as_str(), &ctx.node, false);
        }
    }
    if let Some(new) = new {
        if let Some(ctx) = lookup(app, surface, new) {
            let effective = ctx
                .node
                .active_descendant()
                .filter(is_exposed)
                .unwrap_or(ctx.node);
            out.focus_state(ctx.with_node(effective).path().as_str(), &effective, true);
        }
    }
}

/// Focus entering or leaving an in-window dialog makes it (in)active.
fn dialog_activation(
    app: &AppContext,
    surface: &SurfaceReplica,
    old: Option<NodeId>,
    new: Option<NodeId>,
    out: &mut Out,
) {
    let dialog_around = |id: Option<NodeId>| {
        let mut current = id
            .and_then(|id| lookup(app, surface, id))
            .map(|ctx| ctx.node);
        while let Some(node) = current {
            if node.is_dialog() {
                return Some(node);
            }
            current = node.parent();
        }
        None
    };
    let (before, after) = (dialog_around(old), dialog_around(new));
    if before.map(|d| d.id()) == after.map(|d| d.id()) {
        return;
    }
    if let Some(dialog) = before {
        out.state(
            paths::node_path(surface.id(), paths::local_id(&dialog)).as_str(),
            State::Active,
            false,
        );
    }
    if let Some(dialog) = after {
        out.state(
            paths::node_path(surface.id(), paths::local_id(&dialog)).as_str(),
            State::Active,
            true,
        );
    }
}

fn text_changes(app: &AppContext, surface: &SurfaceReplica, update: &NodeUpdate, out: &mut Out) {
    let Some(ctx) = lookup(app, surface, update.id) else {
        return;
    };
    if crate::model::text_env::layout_of(&ctx).is_block_text(&ctx.node) {
        block_text_changes(&ctx, update, out);
        return;
    }
    let path = ctx.path();
    let path = path.as_str();
    for change in &update.changes {
        if let Change::Text { old, new } = change {
            let edit = text_edit(old, new);
            if let Some((start, removed)) = edit.deleted {
                out.object_text(path, "delete", start, removed);
            }
            if let Some((start, inserted)) = edit.inserted {
                out.object_text(path, "insert", start, inserted);
            }
        }
    }
    let focused = states::is_focused(surface, &ctx.node);
    for change in &update.changes {
        if let Change::TextSelection { old, new } = change {
            selection_moved(path, *old, *new, focused, out);
        }
    }
}

/// The per-block layout (`text/blocks.rs`): the replica reports edits and
/// the caret in the document's inline text; each goes to the block showing
/// it, with offsets in that block's text. An edit is placed by where it
/// starts, so one that spans blocks is reported on the first.
fn block_text_changes(ctx: &NodeCtx, update: &NodeUpdate, out: &mut Out) {
    let holder = &ctx.node;
    let path_of = |block: &NodeRef| ctx.with_node(*block).path();
    for change in &update.changes {
        if let Change::Text { old, new } = change {
            let edit = text_edit(old, new);
            for (detail, piece) in [("delete", edit.deleted), ("insert", edit.inserted)] {
                let Some((start, text)) = piece else { continue };
                if let Some((block, at)) = crate::model::text::block_offset(holder, start) {
                    out.object_text(path_of(&block).as_str(), detail, at, text);
                }
            }
        }
    }
    let focused = states::is_focused(ctx.surface, holder);
    let in_block = |selection: Option<TextSelectionOffsets>| {
        let selection = selection?;
        let (block, focus) = crate::model::text::block_offset(holder, selection.focus)?;
        let anchor = match crate::model::text::block_offset(holder, selection.anchor) {
            Some((anchor_block, anchor)) if anchor_block.id() == block.id() => anchor,
            // A selection across blocks: this block's part runs from its start.
            _ => 0,
        };
        Some((block, TextSelectionOffsets { anchor, focus }))
    };
    for change in &update.changes {
        if let Change::TextSelection { old, new } = change {
            let (old, new) = (in_block(*old), in_block(*new));
            let Some((block, offsets)) = new else {
                continue;
            };
            let before = old
                .filter(|(old_block, _)| old_block.id() == block.id())
                .map(|(_, offsets)| offsets);
            selection_moved(
                path_of(&block).as_str(),
                before,
                Some(offsets),
                focused,
                out,
            );
        }
    }
}

impl Out<'_> {
    fn object_text(&mut self, path: &str, detail: &str, start: usize, text: String) {
        let length = to_i32(text.chars().count());
        self.event(
            path,
            OBJECT,
            "TextChanged",
            (detail, to_i32(start), length, Value::from(text)),
        );
    }
}

/// Caret and text selection events. A selection that only collapsed on a
/// node without focus sends nothing: egui drops a field's selection a frame
/// after focus left it, and Orca 43.1 would say "Text unselected." while the
/// listener is already on the next control. A client that asks gets the
/// collapsed selection all the same.
fn selection_moved(
    path: &str,
    old: Option<TextSelectionOffsets>,
    new: Option<TextSelectionOffsets>,
    focused: bool,
    out: &mut Out,
) {
    let caret = |s: Option<TextSelectionOffsets>| s.map(|s| s.focus);
    if caret(old) != caret(new) {
        if let Some(offset) = caret(new) {
            out.object(path, "TextCaretMoved", "", to_i32(offset), Value::I32(0));
        }
    }
    let selected = |s: Option<TextSelectionOffsets>| {
        s.filter(|s| s.anchor != s.focus)
            .map(|s| (s.anchor.min(s.focus), s.anchor.max(s.focus)))
    };
    let collapsed_away = !focused && selected(new).is_none();
    if selected(old) != selected(new) && !collapsed_away {
        out.object(path, "TextSelectionChanged", "", 0, Value::from(""));
    }
}

/// What a text change did, in characters: one deletion and/or one insertion
/// at the same offset (common prefix and suffix kept).
#[derive(Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub deleted: Option<(usize, String)>,
    pub inserted: Option<(usize, String)>,
}

/// Diffs `old` → `new` by common prefix and suffix (in characters).
pub fn text_edit(old: &str, new: &str) -> TextEdit {
    let old_chars: Vec<char> = old.chars().collect();
    let new_chars: Vec<char> = new.chars().collect();
    let prefix = old_chars
        .iter()
        .zip(&new_chars)
        .take_while(|(a, b)| a == b)
        .count();
    let max_suffix = old_chars.len().min(new_chars.len()) - prefix;
    let suffix = old_chars
        .iter()
        .rev()
        .zip(new_chars.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let removed: String = old_chars[prefix..old_chars.len() - suffix].iter().collect();
    let inserted: String = new_chars[prefix..new_chars.len() - suffix].iter().collect();
    TextEdit {
        deleted: (!removed.is_empty()).then_some((prefix, removed)),
        inserted: (!inserted.is_empty()).then_some((prefix, inserted)),
    }
}

/// active-descendant-changed on the container. The replica reports the
/// resulting focus move itself (the consumer's focus follows the active
/// descendant) when the surface is focused; `own_focus` = no such report in
/// this change set, so the focused states are emitted here.
fn active_descendant_changes(
    app: &AppContext,
    surface: &SurfaceReplica,
    update: &NodeUpdate,
    own_focus: bool,
    out: &mut Out,
) {
    let Some(ctx) = lookup(app, surface, update.id) else {
        return;
    };
    let path = ctx.path();
    let path = path.as_str();
    for change in &update.changes {
        let Change::ActiveDescendant { old, new } = change else {
            continue;
        };
        let has_focus = own_focus && ctx.surface.is_focused() && ctx.node.is_focused_in_tree();
        if let Some(previous) = old
            .and_then(|id| lookup(app, surface, id))
            .filter(|_| has_focus)
        {
            out.focus_state(previous.path().as_str(), &previous.node, false);
        }
        let Some(descendant) = new.and_then(|id| lookup(app, surface, id)) else {
            continue;
        };
        let index = to_i32(objects::index_in_parent(&descendant));
        out.object(
            path,
            "ActiveDescendantChanged",
            "",
            index,
            ref_value(descendant.object_ref()),
        );
        if has_focus && states::is_focused(surface, &descendant.node) {
            out.focus_state(descendant.path().as_str(), &descendant.node, true);
        }
    }
}

fn announcements(app: &AppContext, surface: &SurfaceReplica, update: &NodeUpdate, out: &mut Out) {
    let Some(ctx) = lookup(app, surface, update.id) else {
        return;
    };
    let path = ctx.path();
    let path = path.as_str();
    for change in &update.changes {
        if let Change::LiveRegion { politeness, text } = change {
            let level = match politeness {
                Live::Off => continue,
                Live::Polite => 1,
                Live::Assertive => 2,
            };
            out.object(path, "Announcement", "", level, Value::from(text.clone()));
        }
    }
}

/// Every signal for a compositor focus change, given the change sets
/// `AppReplica::set_focused_surface` returned (losing surface first): for a
/// surface that lost focus, its other changes then Window:Deactivate,
/// active=0 and focused=0; for the surface that gained it, Window:Activate,
/// active=1, focused=1, then its other changes. The change sets' own focus
/// moves are replaced by these, so nothing is sent twice.
pub fn compositor_focus_events(app: &AppContext, changes: &[ChangeSet]) -> Vec<Message> {
    let mut messages = Vec::new();
    for change_set in changes {
        let mut rest = change_set.clone();
        rest.focus = None;
        let gained = app
            .replica
            .surface(change_set.surface)
            .is_some_and(SurfaceReplica::is_focused);
        if gained {
            messages.extend(focus_events(app, change_set.surface, true));
            messages.extend(events_for(app, &rest));
        } else {
            messages.extend(events_for(app, &rest));
            messages.extend(focus_events(app, change_set.surface, false));
        }
    }
    messages
}

/// Compositor focus moved to (`gained`) or away from `surface`.
///
/// Gain: Window:Activate (any_data = window name) and state-changed:active=1
/// on the surface root, then state-changed:focused=1 from the focused node.
/// Loss: Window:Deactivate, active=0, and focused=0 on the node that had it.
pub fn focus_events(app: &AppContext, surface: SurfaceId, gained: bool) -> Vec<Message> {
    let mut out = Out {
        messages: Vec::new(),
        listeners: None,
    };
    let Some(surface) = app.replica.surface(surface) else {
        return out.messages;
    };
    let Some(root) = objects::surface_root(surface) else {
        return out.messages;
    };
    let root_ctx = NodeCtx {
        app,
        surface,
        node: root,
    };
    let root_path = root_ctx.path();
    let window_name = describe::name(&root_ctx);
    let member = if gained { "Activate" } else { "Deactivate" };
    out.event(
        root_path.as_str(),
        WINDOW,
        member,
        ("", 0, 0, Value::from(window_name)),
    );
    out.state(root_path.as_str(), State::Active, gained);
    if let Some(focus) = tree_focus(surface).filter(is_exposed) {
        out.focus_state(root_ctx.with_node(focus).path().as_str(), &focus, gained);
    }
    out.messages
}

/// The tree's focus (or its active descendant), whatever the compositor says.
fn tree_focus(surface: &SurfaceReplica) -> Option<NodeRef<'_>> {
    let state = surface.tree()?.state();
    let focus = state.node_by_id(state.focus_id_in_tree())?;
    Some(focus.active_descendant().unwrap_or(focus))
}

/// `(class, major, detail)` of an event signal built by this module, e.g.
/// `("Object", "StateChanged", "focused")`; Cache signals give
/// `("Cache", member, "")`. `None` for anything else.
pub fn event_name(message: &Message) -> Option<(String, String, String)> {
    let header = message.header();
    let interface = header.interface()?.as_str().to_owned();
    let member = header.member()?.as_str().to_owned();
    if interface == names::CACHE {
        return Some(("Cache".to_owned(), member, String::new()));
    }
    let class = interface.strip_prefix("org.a11y.atspi.Event.")?.to_owned();
    let detail = message
        .body()
        .deserialize::<(
            String,
            i32,
            i32,
            zvariant::OwnedValue,
            HashMap<String, zvariant::OwnedValue>,
        )>()
        .ok()?
        .0;
    Some((class, member, detail))
}

/// The registry's event listeners, to skip events nobody listens for.
///
/// Until the first listener list arrives every event is needed (atk-bridge
/// behaves the same way). Events libatspi needs for its cache are always
/// needed: Object:ChildrenChanged, Object:PropertyChange for
/// name/description/parent/role, Object:StateChanged, and Cache signals.
#[derive(Clone, Debug, Default)]
pub struct EventListeners {
    known: bool,
    /// (listener bus name, normalised event parts)
    registrations: Vec<(String, Vec<String>)>,
}

impl EventListeners {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces everything with `GetRegisteredEvents`' `a(ss)` answer
    /// (listener bus name, event).
    pub fn set_registered(&mut self, registered: &[(String, String)]) {
        self.known = true;
        self.registrations = registered
            .iter()
            .map(|(bus, event)| (bus.clone(), split_event(event)))
            .collect();
    }

    /// `EventListenerRegistered(bus, event, ...)`.
    pub fn registered(&mut self, bus: &str, event: &str) {
        self.known = true;
        self.registrations
            .push((bus.to_owned(), split_event(event)));
    }

    /// `EventListenerDeregistered(bus, event)`: removes one matching entry.
    pub fn deregistered(&mut self, bus: &str, event: &str) {
        let parts = split_event(event);
        if let Some(position) = self
            .registrations
            .iter()
            .position(|(b, p)| b == bus && *p == parts)
        {
            self.registrations.remove(position);
        }
    }

    /// Drops a listener that left the bus.
    pub fn listener_gone(&mut self, bus: &str) {
        self.registrations.retain(|(b, _)| b != bus);
    }

    /// Whether an event `class:major:detail` must be sent.
    pub fn is_needed(&self, class: &str, major: &str, detail: &str) -> bool {
        if !self.known || always_needed(class, major, detail) {
            return true;
        }
        let event = [normalise(class), normalise(major), normalise(detail)];
        self.registrations
            .iter()
            .any(|(_, parts)| is_subtype(&event, parts))
    }
}

fn always_needed(class: &str, major: &str, detail: &str) -> bool {
    match (class, major) {
        ("Cache", _) => true,
        ("Object", "ChildrenChanged" | "StateChanged") => true,
        ("Object", "PropertyChange") => matches!(
            detail,
            "accessible-name" | "accessible-description" | "accessible-parent" | "accessible-role"
        ),
        _ => false,
    }
}

/// Lower-case without '-' and '_', so "StateChanged", "state-changed" and
/// "state_changed" compare equal, as do "InvalidEntry" and "invalid-entry".
fn normalise(part: &str) -> String {
    part.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn split_event(event: &str) -> Vec<String> {
    event.splitn(3, ':').map(normalise).collect()
}

/// atk-bridge's `spi_event_is_subtype`: every non-empty registered part
/// equals the event's part (a registered minor "insert" covers "insert/system").
fn is_subtype(event: &[String; 3], registered: &[String]) -> bool {
    registered.iter().enumerate().all(|(i, part)| {
        part.is_empty()
            || event.get(i).is_some_and(|have| {
                have == part
                    || (i == 2
                        && have
                            .strip_prefix(part.as_str())
                            .is_some_and(|rest| rest.starts_with('/')))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_edit_finds_insertions_and_deletions() {
        assert_eq!(
            text_edit("ac", "abc"),
            TextEdit {
                deleted: None,
                inserted: Some((1, "b".into()))
            }
        );
        assert_eq!(
            text_edit("abc", "ac"),
            TextEdit {
                deleted: Some((1, "b".into())),
                inserted: None
            }
        );
        assert_eq!(
            text_edit("héllo", "hallo"),
            TextEdit {
                deleted: Some((1, "é".into())),
                inserted: Some((1, "a".into()))
            }
        );
        assert_eq!(
            text_edit("aaa", "aaaa"),
            TextEdit {
                deleted: None,
                inserted: Some((3, "a".into()))
            }
        );
        assert_eq!(
            text_edit("", ""),
            TextEdit {
                deleted: None,
                inserted: None
            }
        );
    }

    #[test]
    fn a_signal_over_the_message_budget_is_not_sent() {
        let mut out = Out {
            messages: Vec::new(),
            listeners: None,
        };
        // The generic cap, whatever the signal carries: a body just over it, then one within.
        let over = "x".repeat(crate::model::budgets::MAX_MESSAGE_BYTES + 1);
        out.push("/org/a11y/atspi/accessible/1", OBJECT, "TextChanged", &over);
        assert!(
            out.messages.is_empty(),
            "a signal over the budget was queued"
        );
        let within = "x".repeat(crate::model::budgets::MAX_MESSAGE_BYTES - 1024);
        out.push(
            "/org/a11y/atspi/accessible/1",
            OBJECT,
            "TextChanged",
            &within,
        );
        assert_eq!(out.messages.len(), 1);
        assert!(out.messages[0].data().len() <= crate::model::budgets::MAX_MESSAGE_BYTES);
    }

    #[test]
    fn listeners_follow_subtype_rules() {
        let mut listeners = EventListeners::new();
        assert!(
            listeners.is_needed("Object", "TextChanged", "insert"),
            "unknown list: everything"
        );
        listeners.set_registered(&[
            (":1.5".into(), "Object:TextChanged:Insert".into()),
            (":1.5".into(), "window:".into()),
        ]);
        assert!(listeners.is_needed("Object", "TextChanged", "insert"));
        assert!(listeners.is_needed("Object", "TextChanged", "insert/system"));
        assert!(!listeners.is_needed("Object", "TextChanged", "delete"));
        assert!(listeners.is_needed("Window", "Activate", ""));
        assert!(!listeners.is_needed("Object", "Announcement", ""));
        assert!(
            listeners.is_needed("Object", "StateChanged", "armed"),
            "always needed"
        );
        assert!(listeners.is_needed("Object", "PropertyChange", "accessible-name"));
        assert!(!listeners.is_needed("Object", "PropertyChange", "accessible-value"));
        listeners.registered(":1.6", "object:property-change");
        assert!(listeners.is_needed("Object", "PropertyChange", "accessible-value"));
        listeners.deregistered(":1.6", "object:property-change");
        assert!(!listeners.is_needed("Object", "PropertyChange", "accessible-value"));
        listeners.listener_gone(":1.5");
        assert!(!listeners.is_needed("Window", "Activate", ""));
    }
}
