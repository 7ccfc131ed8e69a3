//! Message types of protocol version 1. See `docs/protocol.md`.

use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Default largest frame payload accepted by the bridge (bytes).
pub const DEFAULT_MAX_FRAME_BYTES: u32 = 64 * 1024 * 1024;

/// A surface (window) of one application, chosen by the sender. Unique per
/// connection only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SurfaceId(pub u32);

/// How frame payloads after the hello are encoded; chosen by the sender in
/// its hello, for both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// `serde_json`, the Newton prototype's format.
    #[default]
    Json,
    /// `postcard`, compact; enum variants travel as indices, so both ends
    /// must use the same accesskit minor version (0.25).
    Postcard,
}

/// Who the application is. Supplied by the sender (the compositor side),
/// never taken from tree content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    /// Stable application id (Wayland `xdg_toplevel` app_id, desktop file id).
    pub app_id: String,
    /// Human-readable name; becomes the AT-SPI application's Name.
    pub name: String,
    /// Process id of the application, when the sender knows it.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Toolkit name (AT-SPI `Application.ToolkitName`).
    #[serde(default)]
    pub toolkit_name: Option<String>,
    /// Toolkit version (AT-SPI `Application.Version`).
    #[serde(default)]
    pub toolkit_version: Option<String>,
}

/// The first frame on every connection, always JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// Must be [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// Encoding of every later frame, both directions.
    #[serde(default)]
    pub encoding: Encoding,
    pub app: AppInfo,
}

/// A surface's position on screen, as the compositor knows it. Tree bounds are
/// surface-relative; `screen = origin + bounds * scale`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Geometry {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    /// Factor from tree units to screen units (1.0 when they are the same).
    pub scale: f64,
}

impl Default for Geometry {
    fn default() -> Self {
        Self { x: 0, y: 0, width: 0, height: 0, scale: 1.0 }
    }
}

/// Sender → bridge, after the hello.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SenderMessage {
    /// A new surface (window). Its first committed update must carry `tree`.
    CreateSurface { surface: SurfaceId, title: Option<String> },
    /// Buffer one `TreeUpdate` for the surface; invisible until `Commit`.
    Update { surface: SurfaceId, update: accesskit::TreeUpdate },
    /// Apply every buffered update of the surface as one frame, atomically.
    Commit { surface: SurfaceId, serial: u64 },
    /// Compositor fact: the surface of this application that has keyboard
    /// focus (and is the active window), or none.
    Focus { surface: Option<SurfaceId> },
    /// Compositor fact: where the surface is on screen.
    Geometry { surface: SurfaceId, geometry: Geometry },
    /// The surface is gone.
    DestroySurface { surface: SurfaceId },
    /// Clean close; the bridge removes the application.
    Goodbye,
}

/// Bridge → sender.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BridgeMessage {
    /// Reply to the hello; the session is open.
    Welcome { protocol: u32, max_frame_bytes: u32 },
    /// An AT is listening: send a full tree for the surface, then updates.
    UpdatesWanted { surface: SurfaceId },
    /// No AT listens: build nothing for this surface until wanted again.
    UpdatesUnwanted { surface: SurfaceId },
    /// An AT asked for an action.
    Action { surface: SurfaceId, request: accesskit::ActionRequest },
    /// A commit failed validation; the surface keeps its last good state.
    /// When `resync` is true the sender must send a full tree next.
    Rejected { surface: SurfaceId, serial: u64, rule: String, reason: String, resync: bool },
    /// Fatal protocol error; the bridge closes the connection after this.
    Error { reason: String },
}

/// One line of a recorded stream (`*.jsonl`): the hello or a sender message,
/// with the time since the recording started. Exactly one of `hello` and
/// `message` is set. Recordings are always JSON, whatever the encoding used
/// on the wire when they are replayed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedLine {
    pub at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hello: Option<Hello>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<SenderMessage>,
}
