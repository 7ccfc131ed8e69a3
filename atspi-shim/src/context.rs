//! What a handler needs to answer a call: the application's replica, its
//! identity, and where it sits on the bus.

use accesskit_consumer::NodeRef;
use newton_cache::{AppReplica, SurfaceReplica};
use newton_push_protocol::AppInfo;

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
}

/// A call aimed at one replica node.
pub struct NodeCtx<'a> {
    pub app: &'a AppContext<'a>,
    pub surface: &'a SurfaceReplica,
    pub node: NodeRef<'a>,
}
