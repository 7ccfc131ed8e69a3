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

use accesskit::Action;
use accesskit_consumer::NodeRef;
use zbus::message::Message;
use zvariant::OwnedValue;

use crate::accessible::no_args;
use crate::component::request;
use crate::context::NodeCtx;
use crate::objects::{client_index, exposed_children, exposure_filter, to_i32};
use crate::properties::owned;
use crate::reply::{args, method_return};
use crate::{CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Selection";

pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    ctx.node.is_container_with_selectable_children()
}

pub(crate) fn selected_items<'a>(node: &NodeRef<'a>) -> impl Iterator<Item = NodeRef<'a>> + 'a {
    node.items(exposure_filter)
        .filter(|item| item.is_selected() == Some(true))
}

pub(crate) fn property(ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    match name {
        "NSelectedChildren" => owned(to_i32(selected_items(&ctx.node).count())),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}

fn child<'a>(ctx: &NodeCtx<'a>, index: i32) -> Result<NodeRef<'a>, CallError> {
    let wanted = client_index(index)?;
    exposed_children(&ctx.node)
        .nth(wanted)
        .ok_or_else(|| CallError::InvalidArgs(format!("child index {index} is out of range")))
}

fn selected<'a>(ctx: &NodeCtx<'a>, index: i32) -> Result<NodeRef<'a>, CallError> {
    let wanted = client_index(index)?;
    selected_items(&ctx.node).nth(wanted).ok_or_else(|| {
        CallError::InvalidArgs(format!("selected child index {index} is out of range"))
    })
}

/// Replies `changed` and, when a click flips the item, the Click request.
fn toggle_to(
    ctx: &NodeCtx,
    item: NodeRef,
    want_selected: bool,
    call: &Message,
) -> Result<Handled, CallError> {
    let is_selected = item.is_selected() == Some(true);
    if is_selected == want_selected {
        return Ok(Handled::reply(method_return(call, &(true,))?));
    }
    if item.is_selected().is_none() || !item.supports_action(Action::Click, &exposure_filter) {
        return Ok(Handled::reply(method_return(call, &(false,))?));
    }
    let reply = method_return(call, &(true,))?;
    Ok(Handled::with_action(
        reply,
        request(&ctx.with_node(item), Action::Click, None),
    ))
}

pub(crate) fn call(ctx: &NodeCtx, member: &str, call: &Message) -> Result<Handled, CallError> {
    match member {
        "GetSelectedChild" => {
            let (index,): (i32,) = args(call)?;
            let item = selected(ctx, index)?;
            Ok(Handled::reply(method_return(call, &(ctx.ref_to(&item),))?))
        }
        "SelectChild" => {
            let (index,): (i32,) = args(call)?;
            toggle_to(ctx, child(ctx, index)?, true, call)
        }
        "DeselectChild" => {
            let (index,): (i32,) = args(call)?;
            toggle_to(ctx, child(ctx, index)?, false, call)
        }
        "DeselectSelectedChild" => {
            let (index,): (i32,) = args(call)?;
            toggle_to(ctx, selected(ctx, index)?, false, call)
        }
        "IsChildSelected" => {
            let (index,): (i32,) = args(call)?;
            let is_selected = child(ctx, index)?.is_selected() == Some(true);
            Ok(Handled::reply(method_return(call, &(is_selected,))?))
        }
        "SelectAll" | "ClearSelection" => {
            no_args(call)?;
            Ok(Handled::reply(method_return(call, &(false,))?))
        }
        _ => Err(CallError::UnknownMethod {
            interface: INTERFACE.to_owned(),
            member: member.to_owned(),
        }),
    }
}
