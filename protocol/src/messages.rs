//! Message types of protocol version 1. See `docs/protocol.md`.

use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The accesskit release whose types the tree payloads are: `TreeUpdate`,
/// `ActionRequest` and everything in them. Both encodings depend on it
/// (postcard's enum indices and the JSON bitmasks of actions and flags), so
/// the hello announces it and the bridge refuses an incompatible one
/// (`docs/protocol.md` §5.1). Kept equal to the workspace's pinned accesskit
/// by a test that reads `Cargo.lock`.
pub const ACCESSKIT_VERSION: &str = "0.25.2";

/// Optional additions to protocol version 1 this bridge implements, listed
/// in the welcome (`capabilities`). A sender uses an addition only when the
/// bridge's welcome lists it; every message of the base protocol needs none.
/// Names are camelCase; `docs/protocol.md` §7.2 describes each.
pub const BRIDGE_CAPABILITIES: &[&str] = &[CAPABILITY_ACCESSKIT_VERSION, FEATURE_KEY_EVENTS];

/// The bridge checks the hello's `accesskitVersion` and refuses an
/// incompatible one (rule `accesskit-version`).
pub const CAPABILITY_ACCESSKIT_VERSION: &str = "accesskitVersion";

/// The bridge forwards keys (`key` / `keyHandled`, docs/protocol.md §6.1). A
/// sender sends `key` only when the welcome lists it; the bridge sends
/// `keyHandled` only in answer to `key`, so senders that do not know the
/// capability never see it.
pub const FEATURE_KEY_EVENTS: &str = "keyEvents";

/// Default largest frame payload accepted by the bridge (bytes).
pub const DEFAULT_MAX_FRAME_BYTES: u32 = 64 * 1024 * 1024;

/// A surface (window) of one application, chosen by the sender. Unique per
/// connection only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct SurfaceId(pub u32);

/// How frame payloads after the hello are encoded; chosen by the sender in
/// its hello, for both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// Must be [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// Encoding of every frame after the hello and its reply, both
    /// directions. Defaults to JSON when absent.
    #[serde(default)]
    pub encoding: Encoding,
    /// The application's identity, as the compositor side knows it.
    pub app: AppInfo,
    /// The accesskit version the sender's tree payloads are built with
    /// (e.g. `"0.25.2"`). Absent in hellos written before the field
    /// existed, which were all accesskit 0.25. [`crate::SenderSession`] fills
    /// in [`ACCESSKIT_VERSION`] when it is `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accesskit_version: Option<String>,
}

/// Press or release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum KeyEventKind {
    /// The key went down (or auto-repeated).
    Press,
    /// The key went up.
    Release,
}

/// One key press or release the application received, forwarded so that a
/// screen reader that learns keys from applications (Orca < 48, through the
/// AT-SPI registry's `DeviceEventController`) can see and consume it.
/// Values are X11's, as atk-bridge forwards them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct KeyEvent {
    /// Press or release.
    pub kind: KeyEventKind,
    /// X keysym (e.g. `0xff09` Tab, `0xff8d` KP_Enter, `0x61` a).
    pub keysym: u32,
    /// X keycode of the physical key (evdev code + 8).
    pub keycode: u16,
    /// X modifier mask (Shift 1, Lock 2, Control 4, Mod1/Alt 8, Mod2/NumLock
    /// 16, Mod4/Super 64).
    pub modifiers: u16,
    /// The text the key produces, when it produces text (`"a"`, `"A"`);
    /// `None` for keys that do not (Tab, arrows, function keys).
    pub text: Option<String>,
    /// Milliseconds, from the input event (any fixed origin; wraps).
    pub timestamp_ms: u32,
}

/// A surface's position on screen, as the compositor knows it. Tree bounds are
/// surface-relative; `screen = origin + bounds * scale`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Geometry {
    /// Screen x of the surface's origin (top-left corner).
    pub x: i32,
    /// Screen y of the surface's origin (top-left corner).
    pub y: i32,
    /// Width of the surface in screen units.
    pub width: u32,
    /// Height of the surface in screen units.
    pub height: u32,
    /// Factor from tree units to screen units (1.0 when they are the same).
    pub scale: f64,
}

impl Default for Geometry {
    fn default() -> Self {
        Self {
            x: 0,
            y: 0,
            width: 0,
            height: 0,
            scale: 1.0,
        }
    }
}

/// Sender → bridge, after the hello.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum SenderMessage {
    /// A new surface (window). Its first committed update must carry `tree`.
    CreateSurface {
        /// Id chosen by the sender, unused so far on this connection.
        surface: SurfaceId,
        /// Window title from the compositor (`xdg_toplevel` title), if any.
        title: Option<String>,
    },
    /// Buffer one `TreeUpdate` for the surface; invisible until `Commit`.
    Update {
        /// Surface the update belongs to.
        surface: SurfaceId,
        /// One accesskit 0.25 tree update.
        update: accesskit::TreeUpdate,
    },
    /// Apply every buffered update of the surface as one frame, atomically.
    Commit {
        /// Surface whose buffered updates are applied.
        surface: SurfaceId,
        /// Chosen by the sender; echoed in `Rejected` so it can tell which
        /// commit failed.
        serial: u64,
    },
    /// Compositor fact: the surface of this application that has keyboard
    /// focus (and is the active window), or none.
    Focus {
        /// The focused surface, or `None` when the application lost focus.
        surface: Option<SurfaceId>,
    },
    /// Compositor fact: where the surface is on screen.
    Geometry {
        /// Surface being placed.
        surface: SurfaceId,
        /// Its origin, size and scale.
        geometry: Geometry,
    },
    /// The surface is gone.
    DestroySurface {
        /// Surface being removed.
        surface: SurfaceId,
    },
    /// Clean close; the bridge removes the application.
    Goodbye,
    /// Asks the bridge to answer `SyncDone` with the same serial once every
    /// message sent before this one has been processed (commits applied or
    /// rejected). Lets a sender know its stream has landed without sleeping.
    Sync {
        /// Chosen by the sender, echoed in `SyncDone`.
        serial: u64,
    },
    /// A key the application received (feature [`FEATURE_KEY_EVENTS`]; only
    /// when the welcome lists it). The bridge offers it to the ATs' key
    /// listeners and answers `KeyHandled` with the same serial.
    Key {
        /// Chosen by the sender, echoed in `KeyHandled`.
        serial: u64,
        /// The key.
        event: KeyEvent,
    },
}

/// Bridge → sender.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum BridgeMessage {
    /// Reply to the hello; the session is open.
    Welcome {
        /// The protocol version the bridge speaks ([`PROTOCOL_VERSION`]).
        protocol: u32,
        /// Largest frame payload the bridge accepts, in bytes
        /// (`maxFrameBytes` in JSON).
        #[serde(alias = "max_frame_bytes")]
        max_frame_bytes: u32,
        /// The accesskit version the bridge decodes tree payloads with
        /// ([`ACCESSKIT_VERSION`]); absent from bridges older than the field.
        #[serde(default)]
        accesskit_version: Option<String>,
        /// Optional additions to version 1 the bridge implements
        /// ([`BRIDGE_CAPABILITIES`]); empty from bridges older than the field.
        #[serde(default)]
        capabilities: Vec<String>,
    },
    /// An AT is listening: send a full tree for the surface, then updates.
    UpdatesWanted {
        /// Surface whose tree is wanted.
        surface: SurfaceId,
    },
    /// No AT listens: build nothing for this surface until wanted again.
    UpdatesUnwanted {
        /// Surface whose tree is no longer wanted.
        surface: SurfaceId,
    },
    /// An AT asked for an action.
    Action {
        /// Surface whose tree holds the target node.
        surface: SurfaceId,
        /// The request, exactly as accesskit defines it.
        request: accesskit::ActionRequest,
    },
    /// A commit failed validation; the surface keeps its last good state.
    /// When `resync` is true the sender must send a full tree next.
    Rejected {
        /// Surface whose commit failed.
        surface: SurfaceId,
        /// Serial of the failed commit (0 when the failure was not a commit).
        serial: u64,
        /// Machine-readable name of the broken rule, e.g. `unknown-surface`.
        rule: String,
        /// Human-readable explanation.
        reason: String,
        /// The sender must send a full tree (with `tree` set) next.
        resync: bool,
    },
    /// Fatal protocol error; the bridge closes the connection after this.
    Error {
        /// Human-readable explanation of what the sender did wrong.
        reason: String,
    },
    /// Answer to `SenderMessage::Sync`: every message sent before it has been
    /// processed.
    SyncDone {
        /// The serial of the `Sync` being answered.
        serial: u64,
    },
    /// Answer to `SenderMessage::Key`: whether an AT consumed the key (the
    /// application must then not act on it).
    KeyHandled {
        /// The serial of the `Key` being answered.
        serial: u64,
        /// True when an AT consumed the key.
        consumed: bool,
    },
}

impl Hello {
    /// A version-1 hello announcing this crate's accesskit version.
    pub fn new(encoding: Encoding, app: AppInfo) -> Self {
        Self {
            protocol: PROTOCOL_VERSION,
            encoding,
            app,
            accesskit_version: Some(ACCESSKIT_VERSION.to_owned()),
        }
    }
}

impl BridgeMessage {
    /// This bridge's welcome: protocol version 1, the frame limit, the
    /// accesskit version and [`BRIDGE_CAPABILITIES`].
    pub fn welcome(max_frame_bytes: u32) -> Self {
        BridgeMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            max_frame_bytes,
            accesskit_version: Some(ACCESSKIT_VERSION.to_owned()),
            capabilities: BRIDGE_CAPABILITIES.iter().map(|&c| c.to_owned()).collect(),
        }
    }
}

/// One line of a recorded stream (`*.jsonl`): the hello or a sender message,
/// with the time since the recording started. Exactly one of `hello` and
/// `message` is set. Recordings are always JSON, whatever the encoding used
/// on the wire when they are replayed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordedLine {
    /// Milliseconds since the recording started.
    pub at_ms: u64,
    /// The hello (first line only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hello: Option<Hello>,
    /// A sender message (every line after the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<SenderMessage>,
}
