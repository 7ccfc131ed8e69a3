//! Action requests: what the shim asks an application to do, and the
//! actions a node offers (Action's list, Collection's match on it).

use accesskit::{Action, ActionData, ActionRequest, TreeId};
use accesskit_consumer::NodeRef;

use crate::model::context::NodeCtx;
use crate::model::exposure::exposure_filter;

/// An action request aimed at the node.
pub(crate) fn request(ctx: &NodeCtx, action: Action, data: Option<ActionData>) -> ActionRequest {
    ActionRequest {
        action,
        target_tree: TreeId::ROOT,
        target_node: ctx.id(),
        data,
    }
}

/// An action request aimed at `node` in its own tree.
pub(crate) fn action_on(node: &NodeRef, action: Action, data: Option<ActionData>) -> ActionRequest {
    let (target_node, target_tree) = node.locate();
    ActionRequest {
        action,
        target_tree,
        target_node,
        data,
    }
}

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

/// Whether the node has any action (Action in `GetInterfaces` and cache
/// items): cheaper than listing them.
pub(crate) fn has_actions(ctx: &NodeCtx) -> bool {
    let node = &ctx.node;
    !node.data().custom_actions().is_empty()
        || STANDARD
            .iter()
            .any(|(action, _, _)| node.supports_action(*action, &exposure_filter))
}
