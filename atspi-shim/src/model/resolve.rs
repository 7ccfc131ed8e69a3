//! Resolving a call's path to the object it names: the app root, the cache
//! object, an exposed replica node or a link's hyperlink object.

use crate::model::context::AppContext;
use crate::model::context::NodeCtx;
use crate::model::error::CallError;
use crate::model::implements::is_hyperlink_node;
use crate::model::objects::node_ctx;
use crate::model::paths::{self, ObjectAddress};

/// What a call's path resolved to.
pub(crate) enum Object<'a> {
    Root,
    Cache,
    Node(NodeCtx<'a>),
    /// The hyperlink object of an exposed link node (serves only Hyperlink).
    Hyperlink(NodeCtx<'a>),
}

/// Resolves `path`; unknown, removed or unexposed nodes, and hyperlink paths
/// of nodes that are not links, give UnknownObject.
pub(crate) fn resolve<'a>(app: &'a AppContext<'a>, path: &str) -> Result<Object<'a>, CallError> {
    match paths::parse(path) {
        Some(ObjectAddress::Root) => Ok(Object::Root),
        Some(ObjectAddress::Cache) => Ok(Object::Cache),
        Some(ObjectAddress::Node { surface, node }) => {
            let surface = app.replica.surface(surface).ok_or_else(|| unknown(path))?;
            node_ctx(app, surface, node)
                .map(Object::Node)
                .ok_or_else(|| unknown(path))
        }
        Some(ObjectAddress::Hyperlink { surface, node }) => {
            let surface = app.replica.surface(surface).ok_or_else(|| unknown(path))?;
            node_ctx(app, surface, node)
                .filter(is_hyperlink_node)
                .map(Object::Hyperlink)
                .ok_or_else(|| unknown(path))
        }
        None => Err(unknown(path)),
    }
}

fn unknown(path: &str) -> CallError {
    CallError::UnknownObject(path.to_owned())
}
