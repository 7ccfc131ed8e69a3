//! `org.a11y.atspi.Selection` on containers of selectable items.
//!
//! Selected children are the container's selectable items (nested items
//! count: AccessKit flattens groups). Index arguments of SelectChild,
//! DeselectChild and IsChildSelected are the container's exposed-child
//! indices, as libatspi passes them; GetSelectedChild/DeselectSelectedChild
//! index the selected items. Selecting or deselecting is requested as a
//! Click on the item (the only selection action AccessKit has), so it is
//! only offered when the item declares Click. SelectAll and ClearSelection
//! have no AccessKit equivalent and answer false.

use crate::model::actions::request;
use crate::model::context::NodeCtx;
use crate::model::error::CallError;
use crate::model::exposure::exposure_filter;
use crate::model::index::{client_index, to_i32};
use crate::model::names;
use crate::model::objects;
use crate::model::paths::ObjectRef;
use crate::surface::{declare_interface, Acted};
use accesskit::Action;
use accesskit_consumer::NodeRef;

declare_interface! {
    pub(crate) static SELECTION = names::SELECTION, on node {
        fn GetSelectedChild(selected_child_index: i32) -> (child: ObjectRef)
            = selected_child, heavy over objects::tree_work;
        fn SelectChild(child_index: i32) -> (success: bool)
            = select_child, acting over objects::counted_width;
        fn DeselectSelectedChild(selected_child_index: i32) -> (success: bool)
            = deselect_selected_child, acting over objects::tree_work;
        fn IsChildSelected(child_index: i32) -> (selected: bool)
            = is_child_selected, heavy over objects::counted_width;
        fn SelectAll() -> (success: bool) = unsupported;
        fn ClearSelection() -> (success: bool) = unsupported;
        fn DeselectChild(child_index: i32) -> (success: bool)
            = deselect_child, acting over objects::counted_width;
        property version: u32 = crate::surface::interface_version;
        property NSelectedChildren: i32 = n_selected_children, heavy over objects::tree_work;
    }
}

pub(crate) fn selected_items<'a>(node: &NodeRef<'a>) -> impl Iterator<Item = NodeRef<'a>> + 'a {
    node.items(exposure_filter)
        .filter(|item| item.is_selected() == Some(true))
}

fn n_selected_children(ctx: &NodeCtx) -> Result<i32, CallError> {
    Ok(to_i32(selected_items(&ctx.node).count()))
}

fn child<'a>(ctx: &NodeCtx<'a>, index: i32) -> Result<NodeRef<'a>, CallError> {
    let wanted = client_index(index)?;
    objects::child_at(ctx.surface, &ctx.node, wanted)
        .ok_or_else(|| CallError::InvalidArgs(format!("child index {index} is out of range")))
}

fn selected<'a>(ctx: &NodeCtx<'a>, index: i32) -> Result<NodeRef<'a>, CallError> {
    let wanted = client_index(index)?;
    selected_items(&ctx.node).nth(wanted).ok_or_else(|| {
        CallError::InvalidArgs(format!("selected child index {index} is out of range"))
    })
}

/// Answers whether the item is (or is being made) as wanted and, when a
/// click flips it, the Click request.
fn toggle_to(ctx: &NodeCtx, item: NodeRef, want_selected: bool) -> Acted<bool> {
    let is_selected = item.is_selected() == Some(true);
    if is_selected == want_selected {
        return Acted::without(true);
    }
    if item.is_selected().is_none() || !item.supports_action(Action::Click, &exposure_filter) {
        return Acted::without(false);
    }
    Acted::with(true, request(&ctx.with_node(item), Action::Click, None))
}

fn selected_child(ctx: &NodeCtx, index: i32) -> Result<ObjectRef, CallError> {
    Ok(ctx.ref_to(&selected(ctx, index)?))
}

fn select_child(ctx: &NodeCtx, index: i32) -> Result<Acted<bool>, CallError> {
    Ok(toggle_to(ctx, child(ctx, index)?, true))
}

fn deselect_child(ctx: &NodeCtx, index: i32) -> Result<Acted<bool>, CallError> {
    Ok(toggle_to(ctx, child(ctx, index)?, false))
}

fn deselect_selected_child(ctx: &NodeCtx, index: i32) -> Result<Acted<bool>, CallError> {
    Ok(toggle_to(ctx, selected(ctx, index)?, false))
}

fn is_child_selected(ctx: &NodeCtx, index: i32) -> Result<bool, CallError> {
    Ok(child(ctx, index)?.is_selected() == Some(true))
}

/// SelectAll and ClearSelection: AccessKit has no equivalent.
fn unsupported(_ctx: &NodeCtx) -> Result<bool, CallError> {
    Ok(false)
}
