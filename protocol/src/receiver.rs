//! The bridge's side of a connection: bytes in, events out.
//!
//! [`ReceiverSession`] checks the hello, decodes frames, buffers each
//! surface's updates until its commit and turns protocol violations into
//! events. It never does IO: the bridge writes the reply bytes it hands out.

use std::collections::HashMap;

use accesskit::TreeUpdate;
use thiserror::Error;

use crate::codec::{decode_sender_message, encode_bridge_payload, CodecError};
use crate::frame::{encode_frame, FrameDecoder, FrameError};
use crate::hello::{parse_hello, HelloError};
use crate::messages::{
    AppInfo, BridgeMessage, Encoding, Geometry, SenderMessage, SurfaceId, DEFAULT_MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
};

/// Default limit on one surface's buffered, uncommitted updates (bytes of
/// encoded payload).
pub const DEFAULT_MAX_PENDING_BYTES_PER_SURFACE: usize = 64 * 1024 * 1024;

/// Default limit on node entries in one surface's buffered, uncommitted
/// updates. Bounds decoded memory, which for postcard can be ~20 times the
/// encoded size; twice the cache's default node limit.
pub const DEFAULT_MAX_PENDING_NODES_PER_SURFACE: usize = 2_000_000;

/// Default limit on encoded bytes buffered across all surfaces of one
/// connection.
pub const DEFAULT_MAX_PENDING_BYTES_TOTAL: usize = 256 * 1024 * 1024;

/// Default limit on live surfaces per connection.
pub const DEFAULT_MAX_SURFACES: usize = 1024;

/// Limits a [`ReceiverSession`] enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Largest frame payload accepted; announced in the Welcome.
    pub max_frame_bytes: u32,
    /// Largest sum of encoded update payloads buffered for one surface
    /// before its commit.
    pub max_pending_bytes_per_surface: usize,
    /// Largest number of node entries (`TreeUpdate::nodes`) buffered for one
    /// surface before its commit.
    pub max_pending_nodes_per_surface: usize,
    /// Largest sum of encoded update payloads buffered across all surfaces.
    pub max_pending_bytes_total: usize,
    /// Most surfaces one connection may have at once.
    pub max_surfaces: usize,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_pending_bytes_per_surface: DEFAULT_MAX_PENDING_BYTES_PER_SURFACE,
            max_pending_nodes_per_surface: DEFAULT_MAX_PENDING_NODES_PER_SURFACE,
            max_pending_bytes_total: DEFAULT_MAX_PENDING_BYTES_TOTAL,
            max_surfaces: DEFAULT_MAX_SURFACES,
        }
    }
}

/// A violation that ends the connection. The bridge sends the reply bytes
/// of [`ReceiverEvent::Fatal`] (an `Error` message), then closes.
#[derive(Debug, Error)]
pub enum ProtocolError {
    /// Framing failed (oversize length prefix).
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The first frame was a sender message, not a hello.
    #[error("message before hello: the first frame must be the JSON hello (rule `hello-first`)")]
    MessageBeforeHello,
    /// The first frame is not a usable hello.
    #[error("bad hello (rule `hello`): {reason}")]
    BadHello {
        /// What is wrong with it.
        reason: String,
    },
    /// The hello asks for a protocol version this bridge does not speak.
    #[error(
        "unsupported protocol version {got} (rule `version`): this bridge speaks version \
         {PROTOCOL_VERSION}; upgrade the sender or the bridge so they match"
    )]
    UnsupportedVersion {
        /// The version the hello asked for.
        got: u64,
    },
    /// A frame after the hello did not decode as a sender message.
    #[error("undecodable payload in frame {frame} (rule `decode`): {source}")]
    UndecodablePayload {
        /// 0-based index of the frame on this connection (the hello is 0).
        frame: u64,
        /// Why decoding failed.
        #[source]
        source: CodecError,
    },
}

impl From<HelloError> for ProtocolError {
    fn from(error: HelloError) -> Self {
        match error {
            HelloError::NotAHello => ProtocolError::MessageBeforeHello,
            HelloError::Invalid(reason) => ProtocolError::BadHello { reason },
            HelloError::Version(got) => ProtocolError::UnsupportedVersion { got },
        }
    }
}

/// The per-surface rule a message broke. Not fatal: the bridge answers with
/// `BridgeMessage::Rejected` and the connection goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SurfaceRule {
    /// The surface was never created (or is already destroyed).
    UnknownSurface,
    /// `CreateSurface` for a surface that exists.
    SurfaceExists,
    /// The surface's uncommitted updates exceeded the pending limit; they
    /// were discarded.
    PendingOverflow,
    /// `CreateSurface` beyond the per-connection surface limit.
    TooManySurfaces,
    /// `Geometry` with a scale that is not a finite positive number.
    BadGeometry,
}

impl SurfaceRule {
    /// The rule's name on the wire (`Rejected.rule`).
    pub fn as_str(self) -> &'static str {
        match self {
            SurfaceRule::UnknownSurface => "unknown-surface",
            SurfaceRule::SurfaceExists => "duplicate-surface",
            SurfaceRule::PendingOverflow => "pending-overflow",
            SurfaceRule::TooManySurfaces => "too-many-surfaces",
            SurfaceRule::BadGeometry => "bad-geometry",
        }
    }

    /// Whether the sender must send a full tree next (`Rejected.resync`).
    pub fn needs_resync(self) -> bool {
        matches!(self, SurfaceRule::PendingOverflow)
    }
}

/// A non-fatal, per-surface error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SurfaceError {
    /// The surface the message named.
    pub surface: SurfaceId,
    /// The commit serial, when the failing message was a commit.
    pub serial: Option<u64>,
    /// The rule that was broken.
    pub rule: SurfaceRule,
    /// Human-readable explanation with what to do next.
    pub reason: String,
}

impl SurfaceError {
    /// The `Rejected` message the bridge should send for this error.
    pub fn to_rejected(&self) -> BridgeMessage {
        BridgeMessage::Rejected {
            surface: self.surface,
            serial: self.serial.unwrap_or(0),
            rule: self.rule.as_str().to_owned(),
            reason: self.reason.clone(),
            resync: self.rule.needs_resync(),
        }
    }
}

/// What the bridge must act on, in stream order.
#[derive(Debug)]
pub enum ReceiverEvent {
    /// The hello was accepted; write `welcome` (a complete frame) to the
    /// sender.
    HelloAccepted {
        /// The application's identity from the hello.
        app: AppInfo,
        /// Encoding of every later frame, both directions.
        encoding: Encoding,
        /// The framed `Welcome` message to write.
        welcome: Vec<u8>,
    },
    /// A new surface.
    SurfaceCreated {
        /// Its id.
        surface: SurfaceId,
        /// Its title, if the sender gave one.
        title: Option<String>,
    },
    /// Every update buffered for the surface since its last commit, to be
    /// applied atomically (all or nothing).
    Commit {
        /// The surface.
        surface: SurfaceId,
        /// The sender's serial, for `Rejected`.
        serial: u64,
        /// The buffered updates, in arrival order (may be empty).
        updates: Vec<TreeUpdate>,
        /// Sum of their encoded payload sizes.
        encoded_bytes: usize,
    },
    /// Compositor fact: the application's focused surface, if any.
    Focus {
        /// The focused surface, or `None`.
        surface: Option<SurfaceId>,
    },
    /// Compositor fact: a surface's screen geometry.
    Geometry {
        /// The surface.
        surface: SurfaceId,
        /// Its geometry (scale checked finite and positive).
        geometry: Geometry,
    },
    /// A surface is gone; its uncommitted updates were dropped.
    SurfaceDestroyed {
        /// The surface.
        surface: SurfaceId,
    },
    /// Answer with `SyncDone { serial }` once everything before it is
    /// applied.
    Sync {
        /// The serial to echo.
        serial: u64,
    },
    /// Clean close: remove the application. The session ignores anything
    /// after it.
    Goodbye,
    /// A per-surface error; send `error.to_rejected()` and go on.
    SurfaceError(SurfaceError),
    /// The connection is broken: write `reply` (a framed `Error`), then
    /// close. The session ignores anything after it.
    Fatal {
        /// What went wrong.
        error: ProtocolError,
        /// The framed `Error` message to write (empty if it could not be
        /// encoded).
        reply: Vec<u8>,
    },
}

/// Failure to encode an outgoing message.
#[derive(Debug, Error)]
pub enum EncodeError {
    /// The payload could not be serialized.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// The payload is too large to frame or exceeds the peer's limit.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

/// Uncommitted state of one surface.
#[derive(Debug, Default)]
struct PendingSurface {
    updates: Vec<TreeUpdate>,
    bytes: usize,
    nodes: usize,
    /// Which limit was exceeded since the last commit; later updates up to
    /// the commit are discarded.
    overflow: Option<String>,
}

#[derive(Debug)]
enum State {
    AwaitingHello,
    Open(Encoding),
    Closed,
}

/// Sans-IO state machine of the bridge's end of one sender connection.
#[derive(Debug)]
pub struct ReceiverSession {
    config: ReceiverConfig,
    decoder: FrameDecoder,
    state: State,
    app: Option<AppInfo>,
    surfaces: HashMap<SurfaceId, PendingSurface>,
    /// Encoded bytes buffered across all surfaces.
    pending_total: usize,
    frames_seen: u64,
}

impl ReceiverSession {
    /// A session waiting for the hello.
    pub fn new(config: ReceiverConfig) -> Self {
        Self {
            config,
            decoder: FrameDecoder::new(config.max_frame_bytes),
            state: State::AwaitingHello,
            app: None,
            surfaces: HashMap::new(),
            pending_total: 0,
            frames_seen: 0,
        }
    }

    /// The application's identity, once the hello is accepted.
    pub fn app(&self) -> Option<&AppInfo> {
        self.app.as_ref()
    }

    /// The negotiated encoding, once the hello is accepted.
    pub fn encoding(&self) -> Option<Encoding> {
        match self.state {
            State::Open(encoding) => Some(encoding),
            _ => None,
        }
    }

    /// True after `Goodbye` or a fatal error: nothing more will be decoded.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// Live surfaces, in no particular order.
    pub fn surfaces(&self) -> impl Iterator<Item = SurfaceId> + '_ {
        self.surfaces.keys().copied()
    }

    /// Encoded bytes buffered for the surface since its last commit.
    pub fn pending_bytes(&self, surface: SurfaceId) -> usize {
        self.surfaces
            .get(&surface)
            .map_or(0, |pending| pending.bytes)
    }

    /// Encodes and frames a bridge → sender message in the session's
    /// encoding (JSON before the hello is accepted).
    pub fn encode_bridge_message(&self, message: &BridgeMessage) -> Result<Vec<u8>, EncodeError> {
        let encoding = self.encoding().unwrap_or(Encoding::Json);
        Ok(encode_frame(&encode_bridge_payload(message, encoding)?)?)
    }

    /// Feeds bytes read from the sender; returns the resulting events in
    /// stream order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<ReceiverEvent> {
        let mut events = Vec::new();
        if self.is_closed() {
            return events;
        }
        let mut payloads = Vec::new();
        let framing = self.decoder.feed(bytes, &mut payloads);
        for payload in payloads {
            if self.is_closed() {
                return events;
            }
            self.handle_payload(&payload, &mut events);
        }
        if let Err(error) = framing {
            if !self.is_closed() {
                events.push(self.fail(error.into()));
            }
        }
        events
    }

    fn handle_payload(&mut self, payload: &[u8], events: &mut Vec<ReceiverEvent>) {
        let frame = self.frames_seen;
        self.frames_seen += 1;
        match self.state {
            State::AwaitingHello => events.push(self.accept_hello(payload)),
            State::Open(encoding) => match decode_sender_message(payload, encoding) {
                Ok(message) => self.handle_message(message, payload.len(), events),
                Err(source) => {
                    events.push(self.fail(ProtocolError::UndecodablePayload { frame, source }))
                }
            },
            State::Closed => {}
        }
    }

    fn accept_hello(&mut self, payload: &[u8]) -> ReceiverEvent {
        let hello = match parse_hello(payload) {
            Ok(hello) => hello,
            Err(error) => return self.fail(error.into()),
        };
        let welcome = BridgeMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            max_frame_bytes: self.config.max_frame_bytes,
        };
        // The Welcome is JSON, like the hello it answers.
        let welcome = self.encode_bridge_message(&welcome).unwrap_or_default();
        self.state = State::Open(hello.encoding);
        self.app = Some(hello.app.clone());
        ReceiverEvent::HelloAccepted {
            app: hello.app,
            encoding: hello.encoding,
            welcome,
        }
    }

    /// Closes the session and builds the `Error` reply for `error`.
    fn fail(&mut self, error: ProtocolError) -> ReceiverEvent {
        let message = BridgeMessage::Error {
            reason: error.to_string(),
        };
        let reply = self.encode_bridge_message(&message).unwrap_or_default();
        self.close();
        ReceiverEvent::Fatal { error, reply }
    }

    fn close(&mut self) {
        self.state = State::Closed;
        self.surfaces.clear();
        self.pending_total = 0;
    }

    fn handle_message(
        &mut self,
        message: SenderMessage,
        encoded: usize,
        events: &mut Vec<ReceiverEvent>,
    ) {
        let event = match message {
            SenderMessage::CreateSurface { surface, title } => self.create_surface(surface, title),
            SenderMessage::Update { surface, update } => {
                self.buffer_update(surface, update, encoded)
            }
            SenderMessage::Commit { surface, serial } => Some(self.commit(surface, serial)),
            SenderMessage::Focus { surface } => Some(self.focus(surface)),
            SenderMessage::Geometry { surface, geometry } => Some(self.geometry(surface, geometry)),
            SenderMessage::DestroySurface { surface } => Some(self.destroy_surface(surface)),
            SenderMessage::Sync { serial } => Some(ReceiverEvent::Sync { serial }),
            SenderMessage::Goodbye => {
                self.close();
                Some(ReceiverEvent::Goodbye)
            }
        };
        events.extend(event);
    }

    fn create_surface(
        &mut self,
        surface: SurfaceId,
        title: Option<String>,
    ) -> Option<ReceiverEvent> {
        if self.surfaces.contains_key(&surface) {
            let reason = format!(
                "surface {} already exists; destroy it first or pick a new id",
                surface.0
            );
            return Some(surface_error(
                surface,
                None,
                SurfaceRule::SurfaceExists,
                reason,
            ));
        }
        if self.surfaces.len() >= self.config.max_surfaces {
            let reason = format!(
                "this connection already has {} surfaces, the limit; destroy unused surfaces first",
                self.surfaces.len()
            );
            return Some(surface_error(
                surface,
                None,
                SurfaceRule::TooManySurfaces,
                reason,
            ));
        }
        self.surfaces.insert(surface, PendingSurface::default());
        Some(ReceiverEvent::SurfaceCreated { surface, title })
    }

    /// Buffers an update; reports nothing unless the surface is unknown.
    /// Overflow is reported at the commit, which then fails.
    fn buffer_update(
        &mut self,
        surface: SurfaceId,
        update: TreeUpdate,
        encoded: usize,
    ) -> Option<ReceiverEvent> {
        let config = self.config;
        let total = self.pending_total;
        let Some(pending) = self.surfaces.get_mut(&surface) else {
            return Some(unknown_surface(surface, None, "update"));
        };
        if pending.overflow.is_some() {
            return None;
        }
        match exceeded_limit(&config, pending, total, encoded, update.nodes.len()) {
            Some(overflow) => {
                self.pending_total = self.pending_total.saturating_sub(pending.bytes);
                *pending = PendingSurface {
                    overflow: Some(overflow),
                    ..PendingSurface::default()
                };
            }
            None => {
                pending.bytes += encoded;
                pending.nodes += update.nodes.len();
                pending.updates.push(update);
                self.pending_total += encoded;
            }
        }
        None
    }

    fn commit(&mut self, surface: SurfaceId, serial: u64) -> ReceiverEvent {
        let Some(pending) = self.surfaces.get_mut(&surface) else {
            return unknown_surface(surface, Some(serial), "commit");
        };
        let taken = std::mem::take(pending);
        self.pending_total = self.pending_total.saturating_sub(taken.bytes);
        match taken.overflow {
            Some(overflow) => {
                let reason = format!(
                    "the updates buffered before this commit exceeded {overflow}; they were \
                     discarded and the surface keeps its last good state; commit more often and \
                     send a full tree next"
                );
                surface_error(surface, Some(serial), SurfaceRule::PendingOverflow, reason)
            }
            None => ReceiverEvent::Commit {
                surface,
                serial,
                updates: taken.updates,
                encoded_bytes: taken.bytes,
            },
        }
    }

    fn focus(&self, surface: Option<SurfaceId>) -> ReceiverEvent {
        match surface {
            Some(id) if !self.surfaces.contains_key(&id) => unknown_surface(id, None, "focus"),
            _ => ReceiverEvent::Focus { surface },
        }
    }

    fn geometry(&self, surface: SurfaceId, geometry: Geometry) -> ReceiverEvent {
        if !self.surfaces.contains_key(&surface) {
            return unknown_surface(surface, None, "geometry");
        }
        if !(geometry.scale.is_finite() && geometry.scale > 0.0) {
            let reason = format!(
                "geometry scale {} is not a finite positive number",
                geometry.scale
            );
            return surface_error(surface, None, SurfaceRule::BadGeometry, reason);
        }
        ReceiverEvent::Geometry { surface, geometry }
    }

    fn destroy_surface(&mut self, surface: SurfaceId) -> ReceiverEvent {
        match self.surfaces.remove(&surface) {
            Some(pending) => {
                self.pending_total = self.pending_total.saturating_sub(pending.bytes);
                ReceiverEvent::SurfaceDestroyed { surface }
            }
            None => unknown_surface(surface, None, "destroySurface"),
        }
    }
}

/// Which pending limit one more update would exceed, described for the
/// `Rejected` reason.
fn exceeded_limit(
    config: &ReceiverConfig,
    pending: &PendingSurface,
    total: usize,
    encoded: usize,
    nodes: usize,
) -> Option<String> {
    let bytes = pending.bytes.saturating_add(encoded);
    let node_count = pending.nodes.saturating_add(nodes);
    let all_bytes = total.saturating_add(encoded);
    if bytes > config.max_pending_bytes_per_surface {
        Some(format!(
            "the limit of {} bytes per surface",
            config.max_pending_bytes_per_surface
        ))
    } else if node_count > config.max_pending_nodes_per_surface {
        Some(format!(
            "the limit of {} nodes per surface",
            config.max_pending_nodes_per_surface
        ))
    } else if all_bytes > config.max_pending_bytes_total {
        Some(format!(
            "the limit of {} bytes buffered across all surfaces of the connection",
            config.max_pending_bytes_total
        ))
    } else {
        None
    }
}

fn surface_error(
    surface: SurfaceId,
    serial: Option<u64>,
    rule: SurfaceRule,
    reason: String,
) -> ReceiverEvent {
    ReceiverEvent::SurfaceError(SurfaceError {
        surface,
        serial,
        rule,
        reason,
    })
}

fn unknown_surface(surface: SurfaceId, serial: Option<u64>, message: &str) -> ReceiverEvent {
    let reason = format!(
        "{message} names surface {}, which this connection never created (or destroyed); \
         send createSurface first",
        surface.0
    );
    surface_error(surface, serial, SurfaceRule::UnknownSurface, reason)
}
