//! What a handler needs to answer a call: the application's replica, its
//! identity, and where it sits on the bus.

use accesskit::NodeId;
use accesskit_consumer::NodeRef;
use newton_cache::{AppReplica, SurfaceReplica};
use newton_push_protocol::{AppInfo, SurfaceId};
use zvariant::OwnedObjectPath;

use crate::model::derived::{DerivedModels, ModelsAt};
use crate::model::error::CallError;
use crate::model::host::HostFacts;
/// Also at its old place (`newton_atspi_shim::context::local_id`).
pub use crate::model::paths::local_id;
use crate::model::paths::{self, ObjectRef};

/// One bridged application as seen from its own bus connection.
pub struct AppContext<'a> {
    pub replica: &'a AppReplica,
    pub info: &'a AppInfo,
    /// This application's unique name on the accessibility bus.
    pub unique_name: &'a str,
    /// The desktop reference returned by `Socket.Embed` (bus name, path), used
    /// as the app root's parent; `None` before registration.
    pub desktop: Option<(&'a str, &'a str)>,
    /// `Application.Id` as set by the registry (0 until set).
    pub app_id: i32,
    /// The session locale and machine id, gathered by the daemon.
    pub host: &'a HostFacts,
    /// Text models and grids built for this application's surfaces, kept
    /// for the next call on any thread (the daemon keeps one per application).
    pub models: &'a DerivedModels,
}

impl AppContext<'_> {
    /// `(unique name, app root)`.
    pub fn root_ref(&self) -> ObjectRef {
        paths::root_ref(self.unique_name)
    }

    /// `(unique name, node path)`.
    pub fn node_ref(&self, surface: SurfaceId, node: &NodeRef) -> ObjectRef {
        paths::node_ref(self.unique_name, surface, local_id(node))
    }
}

/// A call aimed at one replica node.
pub struct NodeCtx<'a> {
    pub app: &'a AppContext<'a>,
    pub surface: &'a SurfaceReplica,
    pub node: NodeRef<'a>,
}

impl<'a> NodeCtx<'a> {
    /// The same surface, another node.
    pub fn with_node(&self, node: NodeRef<'a>) -> NodeCtx<'a> {
        NodeCtx {
            app: self.app,
            surface: self.surface,
            node,
        }
    }

    /// The node's id as the producer sent it.
    pub fn id(&self) -> NodeId {
        local_id(&self.node)
    }

    pub fn path(&self) -> OwnedObjectPath {
        paths::node_path(self.surface.id(), self.id())
    }

    pub fn object_ref(&self) -> ObjectRef {
        paths::local_ref(self.app.unique_name, self.path())
    }

    /// A reference to another node of the same surface.
    pub fn ref_to(&self, node: &NodeRef) -> ObjectRef {
        self.app.node_ref(self.surface.id(), node)
    }

    /// The kept models of this surface's current state.
    pub(crate) fn models(&self) -> ModelsAt<'a> {
        self.app
            .models
            .at(self.surface.id(), self.surface.generation())
    }

    /// Whether the node is the surface's tree root (the window).
    pub fn is_surface_root(&self) -> bool {
        self.node.is_root()
    }
}

/// The object a declared handler answers for (`surface`, `on any`), and
/// what a declared cost estimate (`heavy over ESTIMATE`) is asked about:
/// the application or one of its replica nodes.
#[derive(Clone, Copy)]
pub(crate) enum Target<'t, 'a> {
    /// The app root or the cache object.
    App(&'t AppContext<'a>),
    /// A replica node (or its hyperlink object).
    Node(&'t NodeCtx<'a>),
}

impl<'t, 'a> Target<'t, 'a> {
    pub fn node(self) -> Result<&'t NodeCtx<'a>, CallError> {
        match self {
            Target::Node(ctx) => Ok(ctx),
            Target::App(_) => Err(wrong_target("a replica node")),
        }
    }

    pub fn app(self) -> Result<&'t AppContext<'a>, CallError> {
        match self {
            Target::App(app) => Ok(app),
            Target::Node(_) => Err(wrong_target("the application")),
        }
    }
}

/// Dispatch only routes an interface to the objects that implement it, so
/// this never reaches a client; should it, the client gets a clear Failed.
fn wrong_target(wanted: &str) -> CallError {
    CallError::Failed(format!(
        "internal: this interface is served by {wanted} only"
    ))
}
