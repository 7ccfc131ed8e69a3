//! `org.a11y.atspi.Action`: every action the node supports, under the names
//! Orca matches literally ("click", "show-menu", …). `DoAction` answers
//! true at once and hands the request to the bridge; the application
//! performs it asynchronously.

use crate::model::actions::{actions, request, NodeAction};
use crate::model::context::NodeCtx;
use crate::model::error::CallError;
use crate::model::index::{client_index, to_i32};
use crate::model::names;
use crate::surface::{declare_interface, Acted};

declare_interface! {
    pub(crate) static ACTION = names::ACTION, on node {
        fn GetDescription(index: i32) -> (description: String) = description;
        fn GetName(index: i32) -> (name: String) = name;
        fn GetLocalizedName(index: i32) -> (name: String) = name;
        fn GetKeyBinding(index: i32) -> (binding: String) = key_binding_at;
        fn GetActions() -> (actions: Vec<(String, String, String)>) = list;
        fn DoAction(index: i32) -> (success: bool) = do_action, acting;
        property version: u32 = crate::surface::interface_version;
        property NActions: i32 = n_actions;
    }
}

fn n_actions(ctx: &NodeCtx) -> Result<i32, CallError> {
    Ok(to_i32(actions(ctx).len()))
}

fn nth(ctx: &NodeCtx, index: i32) -> Result<(usize, NodeAction), CallError> {
    let wanted = client_index(index)?;
    actions(ctx)
        .into_iter()
        .enumerate()
        .nth(wanted)
        .ok_or_else(|| CallError::InvalidArgs(format!("action index {index} is out of range")))
}

fn name(ctx: &NodeCtx, index: i32) -> Result<String, CallError> {
    Ok(nth(ctx, index)?.1.name)
}

fn description(ctx: &NodeCtx, index: i32) -> Result<String, CallError> {
    Ok(nth(ctx, index)?.1.description)
}

fn key_binding_at(ctx: &NodeCtx, index: i32) -> Result<String, CallError> {
    let (position, _) = nth(ctx, index)?;
    Ok(key_binding(ctx, position))
}

fn list(ctx: &NodeCtx) -> Result<Vec<(String, String, String)>, CallError> {
    Ok(actions(ctx)
        .into_iter()
        .enumerate()
        .map(|(position, a)| (a.name, a.description, key_binding(ctx, position)))
        .collect())
}

/// Answers true at once; the application performs the action later.
fn do_action(ctx: &NodeCtx, index: i32) -> Result<Acted<bool>, CallError> {
    let (_, chosen) = nth(ctx, index)?;
    Ok(Acted::with(true, request(ctx, chosen.action, chosen.data)))
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
