//! `org.a11y.atspi.Action`: every action the node supports, under the names
//! Orca matches literally ("click", "show-menu", …). `DoAction` answers
//! true at once and hands the request to the bridge; the application
//! performs it asynchronously.

use accesskit::{Action, ActionData};
use zbus::message::Message;
use zvariant::OwnedValue;

use crate::accessible::no_args;
use crate::component::request;
use crate::context::NodeCtx;
use crate::objects::{client_index, exposure_filter, to_i32};
use crate::properties::owned;
use crate::reply::{args, method_return};
use crate::{CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Action";

/// Standard actions in the order they are listed (primary first), with
/// their AT-SPI name and description.
const STANDARD: &[(Action, &str, &str)] = &[
    (Action::Click, "click", "Activates the object"),
    (Action::Focus, "focus", "Gives the object keyboard focus"),
    (Action::Expand, "expand", "Expands the object"),
    (Action::Collapse, "collapse", "Collapses the object"),
    (Action::Increment, "increment", "Increases the value"),
    (Action::Decrement, "decrement", "Decreases the value"),
    (
        Action::ShowContextMenu,
        "show-menu",
        "Shows the context menu",
    ),
    (
        Action::ScrollIntoView,
        "scroll-into-view",
        "Scrolls the object into view",
    ),
];

/// One offered action.
pub(crate) struct NodeAction {
    pub name: String,
    pub description: String,
    pub action: Action,
    pub data: Option<ActionData>,
}

/// The node's actions: standard ones it (or its parent for its children)
/// declares, then its custom actions, named by their description.
pub(crate) fn actions(ctx: &NodeCtx) -> Vec<NodeAction> {
    let node = &ctx.node;
    let mut list: Vec<NodeAction> = STANDARD
        .iter()
        .filter(|(action, _, _)| node.supports_action(*action, &exposure_filter))
        .map(|(action, name, description)| NodeAction {
            name: (*name).to_owned(),
            description: (*description).to_owned(),
            action: *action,
            data: None,
        })
        .collect();
    list.extend(
        node.data()
            .custom_actions()
            .iter()
            .map(|custom| NodeAction {
                name: custom.description.clone(),
                description: custom.description.clone(),
                action: Action::CustomAction,
                data: Some(ActionData::CustomAction(custom.id)),
            }),
    );
    list
}

/// Cheap check used by `GetInterfaces`/the cache: any action at all.
pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    let node = &ctx.node;
    !node.data().custom_actions().is_empty()
        || STANDARD
            .iter()
            .any(|(action, _, _)| node.supports_action(*action, &exposure_filter))
}

pub(crate) fn property(ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    match name {
        "NActions" => owned(to_i32(actions(ctx).len())),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}

fn nth(ctx: &NodeCtx, index: i32) -> Result<(usize, NodeAction), CallError> {
    let wanted = client_index(index)?;
    actions(ctx)
        .into_iter()
        .enumerate()
        .nth(wanted)
        .ok_or_else(|| CallError::InvalidArgs(format!("action index {index} is out of range")))
}

pub(crate) fn call(ctx: &NodeCtx, member: &str, call: &Message) -> Result<Handled, CallError> {
    let reply = match member {
        "GetName" | "GetLocalizedName" => {
            let (index,): (i32,) = args(call)?;
            method_return(call, &(nth(ctx, index)?.1.name,))?
        }
        "GetDescription" => {
            let (index,): (i32,) = args(call)?;
            method_return(call, &(nth(ctx, index)?.1.description,))?
        }
        "GetKeyBinding" => {
            let (index,): (i32,) = args(call)?;
            let (position, _) = nth(ctx, index)?;
            method_return(call, &(key_binding(ctx, position),))?
        }
        "GetActions" => {
            no_args(call)?;
            let list: Vec<(String, String, String)> = actions(ctx)
                .into_iter()
                .enumerate()
                .map(|(position, a)| (a.name, a.description, key_binding(ctx, position)))
                .collect();
            method_return(call, &(list,))?
        }
        "DoAction" => {
            let (index,): (i32,) = args(call)?;
            let (_, chosen) = nth(ctx, index)?;
            let reply = method_return(call, &(true,))?;
            return Ok(Handled::with_action(
                reply,
                request(ctx, chosen.action, chosen.data),
            ));
        }
        _ => {
            return Err(CallError::UnknownMethod {
                interface: INTERFACE.to_owned(),
                member: member.to_owned(),
            })
        }
    };
    Ok(Handled::reply(reply))
}

/// The node's keyboard shortcut belongs to its primary action only.
fn key_binding(ctx: &NodeCtx, position: usize) -> String {
    if position == 0 {
        ctx.node
            .data()
            .keyboard_shortcut()
            .unwrap_or_default()
            .to_owned()
    } else {
        String::new()
    }
}
