//! The bridge's side of a connection: bytes in, events out.
//!
//! [`ReceiverSession`] checks the hello, decodes frames, buffers each
//! surface's updates until its commit and turns protocol violations into
//! events. It never does IO: the bridge writes the reply bytes it hands out.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use accesskit::TreeUpdate;
use thiserror::Error;

use crate::codec::{decode_sender_message, encode_bridge_payload, CodecError};
use crate::frame::{encode_frame, FrameDecoder, FrameError};
use crate::hello::{parse_hello, HelloError};
use crate::messages::{
    AppInfo, BridgeMessage, Encoding, Geometry, KeyEvent, SenderMessage, SurfaceId,
    ACCESSKIT_VERSION, DEFAULT_MAX_FRAME_BYTES, PROTOCOL_VERSION,
};
use crate::text::{escape_bounded, REASON_BYTES};

/// Default limit on one surface's buffered, uncommitted updates (bytes of
/// encoded payload).
pub const DEFAULT_MAX_PENDING_BYTES_PER_SURFACE: usize = 64 * 1024 * 1024;

/// Default limit on node entries in one surface's buffered, uncommitted
/// updates. Bounds decoded memory, which for postcard can be ~20 times the
/// encoded size; twice the cache's default node limit.
pub const DEFAULT_MAX_PENDING_NODES_PER_SURFACE: usize = 2_000_000;

/// Default limit on the bytes one connection (one application) has queued:
/// encoded updates received but not applied yet, uncommitted or waiting for
/// the frame-rate limit, across all its surfaces.
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 256 * 1024 * 1024;

/// Default sustained frame rate per application: commits applied per second
/// before further commits are coalesced.
pub const DEFAULT_MAX_FRAMES_PER_SECOND: u32 = 60;

/// Default burst: commits applied at once, without coalescing, after a quiet
/// spell (the token bucket's size).
pub const DEFAULT_FRAME_BURST: u32 = 120;

/// Default limit on live surfaces per connection.
pub const DEFAULT_MAX_SURFACES: usize = 1024;

/// Default limit on the hello frame (rule `hello-too-large`): a hello is a
/// few hundred bytes, and nothing larger is buffered before it is accepted.
pub const DEFAULT_MAX_HELLO_BYTES: u32 = 64 * 1024;

/// Default time a connection has to deliver its complete hello (rule
/// `hello-timeout`).
pub const DEFAULT_HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// Default limit on answers queued for a sender that does not read them
/// (rule `unread-replies`): `rejected`, `syncDone` and the rest are never
/// dropped; a sender that lets more than this pile up is disconnected.
pub const DEFAULT_MAX_UNREAD_REPLY_BYTES: usize = 8 * 1024 * 1024;

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
    /// Largest sum of encoded update payloads queued across all surfaces:
    /// uncommitted updates plus committed ones waiting for the frame-rate
    /// limit (rule `queued-bytes`).
    pub max_queued_bytes: usize,
    /// Most surfaces one connection may have at once.
    pub max_surfaces: usize,
    /// Sustained commits per second before further commits are coalesced;
    /// 0 disables the limit.
    pub max_frames_per_second: u32,
    /// Commits applied at once after a quiet spell (at least 1).
    pub frame_burst: u32,
    /// Largest hello accepted; a longer one (or a first frame announcing
    /// more) ends the connection before it is buffered (rule
    /// `hello-too-large`).
    pub max_hello_bytes: u32,
    /// Time from the session's start to a complete hello; `None` waits for
    /// ever (rule `hello-timeout`).
    pub hello_timeout: Option<Duration>,
    /// Largest sum of answer bytes queued for the sender and not yet read
    /// by it (rule `unread-replies`, see
    /// [`ReceiverSession::check_unread_replies`]).
    pub max_unread_reply_bytes: usize,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_pending_bytes_per_surface: DEFAULT_MAX_PENDING_BYTES_PER_SURFACE,
            max_pending_nodes_per_surface: DEFAULT_MAX_PENDING_NODES_PER_SURFACE,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
            max_surfaces: DEFAULT_MAX_SURFACES,
            max_frames_per_second: DEFAULT_MAX_FRAMES_PER_SECOND,
            frame_burst: DEFAULT_FRAME_BURST,
            max_hello_bytes: DEFAULT_MAX_HELLO_BYTES,
            hello_timeout: Some(DEFAULT_HELLO_TIMEOUT),
            max_unread_reply_bytes: DEFAULT_MAX_UNREAD_REPLY_BYTES,
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
    /// The first frame announces (or is) more than `max_hello_bytes`.
    #[error(
        "hello too large (rule `hello-too-large`): the first frame announces {announced} bytes \
         but a hello may have at most {max}; send the JSON hello first"
    )]
    HelloTooLarge {
        /// Length announced by the first frame's prefix.
        announced: usize,
        /// The limit.
        max: u32,
    },
    /// No complete hello within the hello timeout.
    #[error(
        "no complete hello within {seconds} s of connecting (rule `hello-timeout`); send the \
         JSON hello as soon as the connection is open"
    )]
    HelloTimeout {
        /// The timeout, in seconds.
        seconds: u64,
    },
    /// The sender let more answers pile up than the bridge keeps for it.
    #[error(
        "the sender does not read its answers (rule `unread-replies`): {queued} bytes of \
         answers (rejected, syncDone, actions) are waiting, over the limit of {max}; none was \
         dropped, the connection is closed instead; read the socket while writing"
    )]
    UnreadReplies {
        /// Bytes of answers queued and not yet written to the sender.
        queued: usize,
        /// The limit.
        max: usize,
    },
    /// The bytes this connection has pending (a partial frame, uncommitted
    /// updates, commits waiting for the frame-rate limit) do not fit in
    /// what is left of the bridge's total byte budget.
    #[error(
        "the bridge's total memory budget is used up (rule `total-bytes`): this connection \
         would hold {held} bytes of pending frames and updates, and the budget of {max} bytes \
         shared by every application's replica and pending frames has no room for them; \
         reconnect later or send smaller frames"
    )]
    TotalBytes {
        /// Bytes the connection would hold with the refused input.
        held: usize,
        /// The total budget.
        max: usize,
    },
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
    /// The hello's tree payloads are built with an accesskit release whose
    /// types differ from the bridge's.
    #[error(
        "incompatible accesskit version \"{}\" (rule `accesskit-version`): this bridge \
         decodes tree payloads as accesskit {ACCESSKIT_VERSION}, and accesskit {series} \
         releases differ in roles, properties, action and flag bits; build the sender with \
         accesskit {series}.x or use a bridge built for the sender's accesskit",
        crate::text::escaped(got, crate::text::QUOTE_BYTES),
        series = accesskit_series()
    )]
    IncompatibleAccesskit {
        /// The hello's `accesskitVersion`.
        got: String,
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

impl ProtocolError {
    /// The rule's name, as in the reason (for counting and rate-limited logs).
    pub fn rule(&self) -> &'static str {
        match self {
            ProtocolError::Frame(_) => "max-frame-bytes",
            ProtocolError::MessageBeforeHello => "hello-first",
            ProtocolError::HelloTooLarge { .. } => "hello-too-large",
            ProtocolError::HelloTimeout { .. } => "hello-timeout",
            ProtocolError::UnreadReplies { .. } => "unread-replies",
            ProtocolError::TotalBytes { .. } => "total-bytes",
            ProtocolError::BadHello { .. } => "hello",
            ProtocolError::UnsupportedVersion { .. } => "version",
            ProtocolError::IncompatibleAccesskit { .. } => "accesskit-version",
            ProtocolError::UndecodablePayload { .. } => "decode",
        }
    }
}

impl From<HelloError> for ProtocolError {
    fn from(error: HelloError) -> Self {
        match error {
            HelloError::NotAHello => ProtocolError::MessageBeforeHello,
            HelloError::Invalid(reason) => ProtocolError::BadHello { reason },
            HelloError::Version(got) => ProtocolError::UnsupportedVersion { got },
            HelloError::Accesskit(got) => ProtocolError::IncompatibleAccesskit { got },
        }
    }
}

/// `0.25` of `0.25.2`: the release series senders must match.
fn accesskit_series() -> &'static str {
    ACCESSKIT_VERSION
        .rsplit_once('.')
        .map_or(ACCESSKIT_VERSION, |(series, _)| series)
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
    /// The connection's queued bytes (uncommitted updates plus commits
    /// waiting for the frame-rate limit, all surfaces) exceeded
    /// `max_queued_bytes`; this surface's queued updates were discarded.
    QueuedBytes,
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
            SurfaceRule::QueuedBytes => "queued-bytes",
        }
    }

    /// Whether the sender must send a full tree next (`Rejected.resync`).
    pub fn needs_resync(self) -> bool {
        matches!(
            self,
            SurfaceRule::PendingOverflow | SurfaceRule::QueuedBytes
        )
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
    /// Every update buffered for the surface since its last applied commit,
    /// to be applied atomically (all or nothing). When the sender commits
    /// faster than the frame-rate limit, several commits are coalesced into
    /// one: their updates in stream order, the last one's serial.
    Commit {
        /// The surface.
        surface: SurfaceId,
        /// The sender's serial (the last one when coalesced), for `Rejected`.
        serial: u64,
        /// The buffered updates, in arrival order (may be empty).
        updates: Vec<TreeUpdate>,
        /// The largest encoded size of one of the coalesced commits (the sum
        /// of its updates' payloads): what a per-commit frame limit is about.
        encoded_bytes: usize,
        /// How many of the sender's commits this one carries (1 unless the
        /// frame-rate limit coalesced them).
        coalesced: u32,
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
    /// A key the application received: offer it to the ATs' key listeners
    /// and answer `KeyHandled { serial, consumed }`.
    Key {
        /// The serial to echo.
        serial: u64,
        /// The key.
        event: KeyEvent,
    },
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
    /// Which limit was exceeded since the last commit, and its rule; later
    /// updates up to the commit are discarded.
    overflow: Option<(SurfaceRule, String)>,
    /// Committed updates waiting for the frame-rate limit (coalesced).
    waiting: Option<Coalesced>,
}

impl PendingSurface {
    /// Encoded bytes this surface holds, uncommitted or waiting.
    fn queued_bytes(&self) -> usize {
        self.bytes + self.waiting.as_ref().map_or(0, |w| w.bytes)
    }
}

/// Commits of one surface coalesced while the frame-rate limit holds them.
#[derive(Debug, Default)]
struct Coalesced {
    updates: Vec<TreeUpdate>,
    bytes: usize,
    largest_commit: usize,
    serial: u64,
    commits: u32,
}

/// A token bucket: `rate` tokens a second, at most `burst` saved up.
#[derive(Debug)]
struct FrameBudget {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Option<Instant>,
}

impl FrameBudget {
    fn new(frames_per_second: u32, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate: f64::from(frames_per_second),
            burst,
            tokens: burst,
            at: None,
        }
    }

    fn unlimited(&self) -> bool {
        self.rate <= 0.0
    }

    fn refill(&mut self, now: Instant) {
        if let Some(at) = self.at {
            let elapsed = now.saturating_duration_since(at).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        }
        if self.at.is_none_or(|at| now > at) {
            self.at = Some(now);
        }
    }

    /// Takes one frame's token if there is one.
    fn take(&mut self, now: Instant) -> bool {
        if self.unlimited() {
            return true;
        }
        self.refill(now);
        // The epsilon absorbs float rounding, so that waking at the
        // computed deadline always finds its token (no busy loop).
        if self.tokens + 1e-9 >= 1.0 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }

    /// When the next token is there.
    fn next_token(&self) -> Option<Instant> {
        if self.unlimited() {
            return None;
        }
        let at = self.at?;
        let missing = (1.0 - self.tokens).max(0.0);
        Some(at + Duration::from_secs_f64(missing / self.rate))
    }
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
    /// Encoding of bridge → sender messages: JSON until the hello is
    /// accepted, then the negotiated one, kept after the session closes
    /// (the events of the feed that closed it are still answered).
    reply_encoding: Encoding,
    app: Option<AppInfo>,
    surfaces: HashMap<SurfaceId, PendingSurface>,
    /// Encoded bytes queued across all surfaces (uncommitted or waiting).
    pending_total: usize,
    frames_seen: u64,
    budget: FrameBudget,
    /// Surfaces with commits waiting for the frame-rate limit, in the order
    /// their first waiting commit arrived.
    waiting_order: Vec<SurfaceId>,
    /// `sync` serials received while commits were waiting: answered right
    /// after those commits are handed out.
    waiting_syncs: Vec<u64>,
    /// Commits the frame-rate limit held back, ever.
    coalesced_total: u64,
    /// When the session started (for the hello timeout).
    started: Instant,
}

impl ReceiverSession {
    /// A session waiting for the hello, started now.
    pub fn new(config: ReceiverConfig) -> Self {
        Self::new_at(config, Instant::now())
    }

    /// A session waiting for the hello, started at `now` (the hello
    /// timeout counts from there).
    pub fn new_at(config: ReceiverConfig, now: Instant) -> Self {
        Self {
            config,
            decoder: FrameDecoder::new(config.max_frame_bytes),
            state: State::AwaitingHello,
            reply_encoding: Encoding::Json,
            app: None,
            surfaces: HashMap::new(),
            pending_total: 0,
            frames_seen: 0,
            budget: FrameBudget::new(config.max_frames_per_second, config.frame_burst),
            waiting_order: Vec::new(),
            waiting_syncs: Vec::new(),
            coalesced_total: 0,
            started: now,
        }
    }

    /// When the hello is due, while it is awaited.
    fn hello_deadline(&self) -> Option<Instant> {
        match self.state {
            State::AwaitingHello => self.config.hello_timeout.map(|t| self.started + t),
            _ => None,
        }
    }

    /// Ends the session with `hello-timeout` when the hello is overdue at `now`.
    fn check_hello_deadline(&mut self, now: Instant, events: &mut Vec<ReceiverEvent>) {
        if self.hello_deadline().is_some_and(|due| now >= due) {
            let seconds = self.config.hello_timeout.map_or(0, |t| t.as_secs());
            events.push(self.fail(ProtocolError::HelloTimeout { seconds }));
        }
    }

    /// Checks the answers queued for the sender and not yet read by it
    /// (`queued_bytes`, counted by the IO shell) against
    /// `max_unread_reply_bytes`. Over it, the session closes and the
    /// returned `Fatal` (rule `unread-replies`) carries the `error` frame to
    /// queue last: answers are never dropped, a sender that will not read
    /// them is disconnected.
    pub fn check_unread_replies(&mut self, queued_bytes: usize) -> Option<ReceiverEvent> {
        let max = self.config.max_unread_reply_bytes;
        if queued_bytes <= max || self.is_closed() {
            return None;
        }
        Some(self.fail(ProtocolError::UnreadReplies {
            queued: queued_bytes,
            max,
        }))
    }

    /// Bytes this session holds in memory for the sender's input: the
    /// partial frame being received plus every update queued and not yet
    /// handed out (uncommitted, or committed and waiting for the frame-rate
    /// limit). Updates handed out in [`ReceiverEvent::Commit`] are no longer
    /// counted: they belong to the caller (and then to the replica).
    /// Feeding `n` bytes grows this by at most `n`.
    pub fn held_bytes(&self) -> usize {
        self.decoder.buffered_bytes() + self.pending_total
    }

    /// Ends the session because input the sender wants to hand over does
    /// not fit in the bridge's total byte budget (rule `total-bytes`):
    /// `held` is what the connection would hold with it, `max` the budget.
    /// The returned `Fatal` carries the `error` frame to queue last.
    pub fn refuse_over_total_budget(&mut self, held: usize, max: usize) -> ReceiverEvent {
        self.fail(ProtocolError::TotalBytes { held, max })
    }

    /// Commits the frame-rate limit held back (delayed to the next frame's
    /// token, coalesced with the others waiting), ever (for logging).
    pub fn coalesced_commits(&self) -> u64 {
        self.coalesced_total
    }

    /// Encoded bytes queued across all surfaces: uncommitted updates plus
    /// commits waiting for the frame-rate limit.
    pub fn queued_bytes(&self) -> usize {
        self.pending_total
    }

    /// When [`ReceiverSession::poll_at`] has commits to hand out: `None`
    /// when nothing waits for the frame-rate limit.
    /// While the hello is awaited, the hello timeout's deadline instead.
    pub fn next_deadline(&self) -> Option<Instant> {
        if let Some(due) = self.hello_deadline() {
            return Some(due);
        }
        if self.waiting_order.is_empty() && self.waiting_syncs.is_empty() {
            return None;
        }
        self.budget.next_token()
    }

    /// Hands out the commits coalesced while the frame-rate limit held them
    /// (one token for all of them: one frame), then the `sync`s that came
    /// after them, once a token is there at `now`.
    /// A hello overdue at `now` ends the session (`hello-timeout`).
    pub fn poll_at(&mut self, now: Instant) -> Vec<ReceiverEvent> {
        let mut events = Vec::new();
        self.check_hello_deadline(now, &mut events);
        self.flush_waiting(now, &mut events);
        events
    }

    fn flush_waiting(&mut self, now: Instant, events: &mut Vec<ReceiverEvent>) {
        if self.waiting_order.is_empty() && self.waiting_syncs.is_empty() {
            return;
        }
        if !self.budget.take(now) {
            return;
        }
        for surface in std::mem::take(&mut self.waiting_order) {
            let Some(waiting) = self
                .surfaces
                .get_mut(&surface)
                .and_then(|pending| pending.waiting.take())
            else {
                continue;
            };
            self.pending_total = self.pending_total.saturating_sub(waiting.bytes);
            events.push(ReceiverEvent::Commit {
                surface,
                serial: waiting.serial,
                updates: waiting.updates,
                encoded_bytes: waiting.largest_commit,
                coalesced: waiting.commits,
            });
        }
        self.release_syncs(events);
    }

    /// Answers the `sync`s held back once no commit waits any more.
    fn release_syncs(&mut self, events: &mut Vec<ReceiverEvent>) {
        if self.waiting_order.is_empty() {
            events.extend(
                std::mem::take(&mut self.waiting_syncs)
                    .into_iter()
                    .map(|serial| ReceiverEvent::Sync { serial }),
            );
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
    /// encoding (JSON before the hello is accepted). After `Goodbye` or a
    /// fatal error the negotiated encoding is still used: events returned by
    /// the same [`ReceiverSession::feed`] before the close (a `Rejected`, a
    /// `SyncDone`) are answered in the encoding the sender reads.
    pub fn encode_bridge_message(&self, message: &BridgeMessage) -> Result<Vec<u8>, EncodeError> {
        Ok(encode_frame(&encode_bridge_payload(
            message,
            self.reply_encoding,
        )?)?)
    }

    /// Feeds bytes read from the sender; returns the resulting events in
    /// stream order. Same as [`ReceiverSession::feed_at`] at `Instant::now()`.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<ReceiverEvent> {
        self.feed_at(bytes, Instant::now())
    }

    /// Feeds bytes read from the sender at time `now` (for the frame-rate
    /// limit); returns the resulting events in stream order, starting with
    /// any coalesced commits whose time has come.
    pub fn feed_at(&mut self, bytes: &[u8], now: Instant) -> Vec<ReceiverEvent> {
        let mut events = Vec::new();
        if self.is_closed() {
            return events;
        }
        // A sender trickling bytes keeps the read path busy: the hello
        // deadline is checked here too, not only when the timer fires.
        self.check_hello_deadline(now, &mut events);
        if self.is_closed() {
            return events;
        }
        self.flush_waiting(now, &mut events);
        let mut payloads = Vec::new();
        let framing = self.decoder.feed(bytes, &mut payloads);
        for payload in payloads {
            if self.is_closed() {
                return events;
            }
            self.handle_payload(&payload, now, &mut events);
        }
        if let Err(error) = framing {
            if !self.is_closed() {
                events.push(self.fail(error.into()));
            }
        }
        self.check_hello_size(&mut events);
        events
    }

    fn handle_payload(&mut self, payload: &[u8], now: Instant, events: &mut Vec<ReceiverEvent>) {
        let frame = self.frames_seen;
        self.frames_seen += 1;
        match self.state {
            State::AwaitingHello => events.push(self.accept_hello(payload)),
            State::Open(encoding) => match decode_sender_message(payload, encoding) {
                Ok(message) => self.handle_message(message, payload.len(), now, events),
                Err(source) => {
                    events.push(self.fail(ProtocolError::UndecodablePayload { frame, source }))
                }
            },
            State::Closed => {}
        }
    }

    /// Before the hello, a first frame announcing more than
    /// `max_hello_bytes` ends the session: at most one read chunk of it was
    /// buffered.
    fn check_hello_size(&mut self, events: &mut Vec<ReceiverEvent>) {
        if !matches!(self.state, State::AwaitingHello) {
            return;
        }
        let max = self.config.max_hello_bytes;
        if let Some(announced) = self.decoder.partial_len() {
            if announced > max as usize {
                events.push(self.fail(ProtocolError::HelloTooLarge { announced, max }));
            }
        }
    }

    fn accept_hello(&mut self, payload: &[u8]) -> ReceiverEvent {
        let max = self.config.max_hello_bytes;
        if payload.len() > max as usize {
            let announced = payload.len();
            return self.fail(ProtocolError::HelloTooLarge { announced, max });
        }
        let hello = match parse_hello(payload) {
            Ok(hello) => hello,
            Err(error) => return self.fail(error.into()),
        };
        let welcome = BridgeMessage::welcome(self.config.max_frame_bytes);
        // The Welcome is JSON, like the hello it answers.
        let welcome = self.encode_bridge_message(&welcome).unwrap_or_default();
        self.state = State::Open(hello.encoding);
        self.reply_encoding = hello.encoding;
        self.app = Some(hello.app.clone());
        ReceiverEvent::HelloAccepted {
            app: hello.app,
            encoding: hello.encoding,
            welcome,
        }
    }

    /// Closes the session and builds the `Error` reply for `error`.
    /// The reason is escaped and bounded (`text`): it may quote what the
    /// sender sent.
    fn fail(&mut self, error: ProtocolError) -> ReceiverEvent {
        let message = BridgeMessage::Error {
            reason: escape_bounded(&error.to_string(), REASON_BYTES),
        };
        let reply = self.encode_bridge_message(&message).unwrap_or_default();
        self.close();
        ReceiverEvent::Fatal { error, reply }
    }

    fn close(&mut self) {
        self.state = State::Closed;
        // Nothing more is decoded: give back a partial frame's buffer.
        self.decoder = FrameDecoder::new(self.config.max_frame_bytes);
        self.surfaces.clear();
        self.pending_total = 0;
        self.waiting_order.clear();
        self.waiting_syncs.clear();
    }

    fn handle_message(
        &mut self,
        message: SenderMessage,
        encoded: usize,
        now: Instant,
        events: &mut Vec<ReceiverEvent>,
    ) {
        let event = match message {
            SenderMessage::CreateSurface { surface, title } => self.create_surface(surface, title),
            SenderMessage::Update { surface, update } => {
                self.buffer_update(surface, update, encoded)
            }
            SenderMessage::Commit { surface, serial } => self.commit(surface, serial, now),
            SenderMessage::Focus { surface } => Some(self.focus(surface)),
            SenderMessage::Geometry { surface, geometry } => Some(self.geometry(surface, geometry)),
            SenderMessage::DestroySurface { surface } => Some(self.destroy_surface(surface)),
            SenderMessage::Sync { serial } => {
                if self.waiting_order.is_empty() {
                    Some(ReceiverEvent::Sync { serial })
                } else {
                    self.waiting_syncs.push(serial);
                    None
                }
            }
            SenderMessage::Goodbye => {
                self.close();
                Some(ReceiverEvent::Goodbye)
            }
            // Keys are not frames: never delayed by the frame-rate limit.
            SenderMessage::Key { serial, event } => Some(ReceiverEvent::Key { serial, event }),
        };
        events.extend(event);
        // A destroyed or overflowed surface may have taken the last waiting
        // commits with it: the syncs behind them are due now.
        self.release_syncs(events);
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
                // Everything this surface queued goes, waiting commits too:
                // the sender resends a full tree (`resync`).
                self.pending_total = self.pending_total.saturating_sub(pending.queued_bytes());
                *pending = PendingSurface {
                    overflow: Some(overflow),
                    ..PendingSurface::default()
                };
                self.waiting_order.retain(|s| *s != surface);
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

    fn commit(&mut self, surface: SurfaceId, serial: u64, now: Instant) -> Option<ReceiverEvent> {
        let Some(pending) = self.surfaces.get_mut(&surface) else {
            return Some(unknown_surface(surface, Some(serial), "commit"));
        };
        let updates = std::mem::take(&mut pending.updates);
        let bytes = std::mem::replace(&mut pending.bytes, 0);
        pending.nodes = 0;
        if let Some((rule, overflow)) = pending.overflow.take() {
            self.pending_total = self.pending_total.saturating_sub(bytes);
            let reason = format!(
                "the updates queued before this commit exceeded {overflow}; they were \
                 discarded and the surface keeps its last good state; commit more often and \
                 send a full tree next"
            );
            return Some(surface_error(surface, Some(serial), rule, reason));
        }
        // Commits wait, in order, while any commit waits; otherwise one
        // frame's token lets this one through now.
        if self.waiting_order.is_empty() && self.budget.take(now) {
            self.pending_total = self.pending_total.saturating_sub(bytes);
            return Some(ReceiverEvent::Commit {
                surface,
                serial,
                updates,
                encoded_bytes: bytes,
                coalesced: 1,
            });
        }
        // Over the frame rate: coalesce. The bytes stay queued (counted
        // against `max_queued_bytes`) until the next frame's token.
        let waiting = pending.waiting.get_or_insert_with(Coalesced::default);
        self.coalesced_total += 1;
        waiting.updates.extend(updates);
        waiting.bytes += bytes;
        waiting.largest_commit = waiting.largest_commit.max(bytes);
        waiting.serial = serial;
        waiting.commits = waiting.commits.saturating_add(1);
        if !self.waiting_order.contains(&surface) {
            self.waiting_order.push(surface);
        }
        None
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
                self.pending_total = self.pending_total.saturating_sub(pending.queued_bytes());
                self.waiting_order.retain(|s| *s != surface);
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
) -> Option<(SurfaceRule, String)> {
    let bytes = pending.bytes.saturating_add(encoded);
    let node_count = pending.nodes.saturating_add(nodes);
    let all_bytes = total.saturating_add(encoded);
    if bytes > config.max_pending_bytes_per_surface {
        Some((
            SurfaceRule::PendingOverflow,
            format!(
                "the limit of {} bytes per surface",
                config.max_pending_bytes_per_surface
            ),
        ))
    } else if node_count > config.max_pending_nodes_per_surface {
        Some((
            SurfaceRule::PendingOverflow,
            format!(
                "the limit of {} nodes per surface",
                config.max_pending_nodes_per_surface
            ),
        ))
    } else if all_bytes > config.max_queued_bytes {
        Some((
            SurfaceRule::QueuedBytes,
            format!(
                "the limit of {} bytes queued across all surfaces of the application \
                 (uncommitted updates plus commits waiting for the frame-rate limit; \
                 rule queued-bytes)",
                config.max_queued_bytes
            ),
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
