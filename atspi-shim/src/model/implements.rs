//! Which AT-SPI interfaces each object implements, by name, in the order
//! `GetInterfaces` lists them: the app root's, and for a replica node each
//! interface with the predicate saying whether the node implements it. `GetInterfaces`, cache
//! items and Collection's interface match read these; dispatch pairs each
//! name with its declaration (`declared.rs`).

use accesskit::Role;

use crate::model::actions::has_actions;
use crate::model::context::NodeCtx;
use crate::model::grid::{in_table, is_table};
use crate::model::hyperlinks::{has_links, is_hyperlink};
use crate::model::names;
use crate::model::roles::is_document;
use crate::model::text_env::{has_text, is_editable, layout_of, Env};

/// The app root's interfaces.
pub(crate) const ROOT: &[&str] = &[names::ACCESSIBLE, names::APPLICATION];

// The cache object serves Cache alone, a link's hyperlink object
// (`…/<surface>_<node>_hyperlink`) Hyperlink alone.

type SupportedFn = for<'a> fn(&NodeCtx<'a>) -> bool;

/// One interface a replica node may implement.
pub(crate) struct NodeInterface {
    pub name: &'static str,
    /// Whether this node implements it.
    pub supported: SupportedFn,
}

/// Every node interface.
pub(crate) const NODE: &[NodeInterface] = &[
    NodeInterface {
        name: names::ACCESSIBLE,
        supported: every_node,
    },
    // Every exposed object is a Component, as GTK and atk-bridge make every
    // object one: Orca's flat review (`isOnScreen`) and hit testing descend
    // only through objects whose extents they can read, so a bound-less
    // container without Component would hide everything inside it.
    NodeInterface {
        name: names::COMPONENT,
        supported: every_node,
    },
    NodeInterface {
        name: names::ACTION,
        supported: has_actions,
    },
    NodeInterface {
        name: names::VALUE,
        supported: |ctx| ctx.node.numeric_value().is_some(),
    },
    NodeInterface {
        name: names::SELECTION,
        supported: |ctx| ctx.node.is_container_with_selectable_children(),
    },
    NodeInterface {
        name: names::IMAGE,
        supported: |ctx| {
            matches!(
                ctx.node.role(),
                Role::Image | Role::SvgRoot | Role::GraphicsSymbol | Role::Canvas
            )
        },
    },
    NodeInterface {
        name: names::TEXT,
        supported: |ctx| has_text(&ctx.node, layout_of(ctx)),
    },
    NodeInterface {
        name: names::EDITABLE_TEXT,
        supported: |ctx| is_editable(&ctx.node),
    },
    NodeInterface {
        name: names::HYPERTEXT,
        supported: |ctx| has_links(&Env::of(ctx), &ctx.node),
    },
    NodeInterface {
        name: names::HYPERLINK,
        supported: is_hyperlink_node,
    },
    NodeInterface {
        name: names::DOCUMENT,
        supported: |ctx| is_document(&ctx.node),
    },
    NodeInterface {
        name: names::TABLE,
        supported: |ctx| is_table(&ctx.node),
    },
    NodeInterface {
        name: names::TABLE_CELL,
        supported: |ctx| in_table(&ctx.node),
    },
    // Every exposed node can be searched from.
    NodeInterface {
        name: names::COLLECTION,
        supported: every_node,
    },
];

fn every_node(_ctx: &NodeCtx) -> bool {
    true
}

/// Whether the node is a hyperlink (and has a hyperlink object).
pub(crate) fn is_hyperlink_node(ctx: &NodeCtx) -> bool {
    is_hyperlink(&Env::of(ctx), &ctx.node)
}

/// The names of the app root's interfaces.
pub(crate) fn root_interface_names() -> Vec<&'static str> {
    ROOT.to_vec()
}

/// The names of the interfaces this node implements.
pub(crate) fn node_interface_names(ctx: &NodeCtx) -> Vec<&'static str> {
    NODE.iter()
        .filter(|iface| (iface.supported)(ctx))
        .map(|iface| iface.name)
        .collect()
}
