//! The thin IO shell around `ReceiverSession`: one task per sender
//! connection (socket or stdio) feeding bytes to the sans-IO session and
//! acting on its events.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_executor::Task;
use async_io::Async;
use futures::{AsyncReadExt, AsyncWriteExt, FutureExt};
use newton_cache::RejectError;
use newton_push_protocol::text::{escape_bounded, REASON_BYTES};
use newton_push_protocol::{
    encode_bridge_payload, encode_frame, AppInfo, BridgeMessage, Encoding, ReceiverConfig,
    ReceiverEvent, ReceiverSession, SurfaceId,
};
use tracing::{debug, error, info, warn};

use crate::app::{BridgedApp, Identity};
use crate::daemon::Daemon;
use crate::logging::LogLimiter;
use crate::shutdown::Session;
use crate::socket::{Peer, SenderCredentials};

/// Messages an application queues towards its sender (actions, wanted
/// state) before they are framed into the outbox.
const APP_QUEUE: usize = 1024;
const READ_CHUNK: usize = 64 * 1024;
/// How long the answers left in the outbox may take to reach a sender once
/// its connection is over (the `error` saying why, last answers). At
/// shutdown the daemon waits for no session longer than its own, shorter
/// bound (`SHUTDOWN_TIMEOUT` in daemon.rs): a logout is not held for 5 s.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// Unread bytes beyond which actions and wanted-state messages for a sender
/// are dropped (logged) rather than queued.
const DROPPABLE_BYTES: usize = 64 * 1024;

/// Frames queued towards one sender, with their bytes counted: answers
/// (`rejected`, `syncDone`, `error`) are never dropped; the session closes a
/// sender that lets more than `--max-unread-bytes` pile up (rule
/// `unread-replies`). Actions and wanted-state messages, whose number an AT
/// decides, are dropped instead once [`DROPPABLE_BYTES`] are unread: an
/// action that waits behind that much is stale anyway.
#[derive(Clone)]
struct Outbox {
    frames: async_channel::Sender<Vec<u8>>,
    unread: Arc<AtomicUsize>,
    max_unread: usize,
}

impl Outbox {
    fn new(max_unread: usize) -> (Self, OutboxReader) {
        let (frames, receiver) = async_channel::unbounded();
        let unread = Arc::new(AtomicUsize::new(0));
        let outbox = Self {
            frames,
            unread: unread.clone(),
            max_unread,
        };
        (outbox, OutboxReader { receiver, unread })
    }

    /// Queues an answer; never drops it.
    fn answer(&self, frame: Vec<u8>) {
        let len = frame.len();
        // Counted before it is queued: the writer subtracts it once written,
        // which may happen before `try_send` even returns.
        self.unread.fetch_add(len, Ordering::Relaxed);
        if self.frames.try_send(frame).is_err() {
            self.unread.fetch_sub(len, Ordering::Relaxed);
        }
    }

    /// Queues a message the sender may lose when it does not read; false
    /// when it was dropped.
    fn offer(&self, frame: Vec<u8>) -> bool {
        if self.unread() > self.max_unread.min(DROPPABLE_BYTES) {
            return false;
        }
        self.answer(frame);
        true
    }

    fn unread(&self) -> usize {
        self.unread.load(Ordering::Relaxed)
    }

    fn close(&self) {
        self.frames.close();
    }
}

struct OutboxReader {
    receiver: async_channel::Receiver<Vec<u8>>,
    unread: Arc<AtomicUsize>,
}

impl OutboxReader {
    async fn next(&self) -> Option<Vec<u8>> {
        self.receiver.recv().await.ok()
    }

    fn written(&self, len: usize) {
        self.unread.fetch_sub(len, Ordering::Relaxed);
    }
}

/// Serves one sender connected on the socket. The session is counted at
/// once, before the returned future first runs: a shutdown that starts
/// before then still waits for it.
pub fn serve_connection(
    daemon: Arc<Daemon>,
    stream: Async<UnixStream>,
    peer: Peer,
) -> impl std::future::Future<Output = ()> {
    let session = daemon.sessions.register();
    serve_connection_counted(daemon, stream, peer, session)
}

async fn serve_connection_counted(
    daemon: Arc<Daemon>,
    stream: Async<UnixStream>,
    peer: Peer,
    session: Session,
) {
    let stream = Arc::new(stream);
    let (inbox_tx, inbox) = async_channel::bounded::<Vec<u8>>(16);
    let (outbox, outbox_rx) = Outbox::new(daemon.max_unread_bytes);
    let reader = stream.clone();
    daemon
        .executor
        .spawn(async move {
            let mut buffer = vec![0u8; READ_CHUNK];
            loop {
                match (&*reader).read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if inbox_tx.send(buffer[..n].to_vec()).await.is_err() {
                            break;
                        }
                    }
                }
            }
        })
        .detach();
    let writer = stream.clone();
    let writing = daemon.executor.spawn(async move {
        while let Some(frame) = outbox_rx.next().await {
            let written = (&*writer).write_all(&frame).await;
            outbox_rx.written(frame.len());
            if written.is_err() {
                break;
            }
        }
        let _ = writer.get_ref().shutdown(std::net::Shutdown::Both);
    });
    run_session(daemon, inbox, outbox, Some(peer), &session).await;
    let _ = stream.get_ref().shutdown(std::net::Shutdown::Read);
    // The last answers (the `error` saying why, when there is one) get a
    // moment to reach a sender; one that does not read is cut off.
    let flushed = futures::future::select(writing, async_io::Timer::after(FLUSH_TIMEOUT)).await;
    if let futures::future::Either::Right((_, writing)) = flushed {
        let _ = stream.get_ref().shutdown(std::net::Shutdown::Both);
        writing.await;
    }
    // Only now, with everything written (or cut off), does a shutdown stop
    // waiting for this session.
    drop(session);
}

/// Serves one sender on stdin/stdout (`serve --stdio`), counted at once
/// like [`serve_connection`].
pub fn serve_stdio(daemon: Arc<Daemon>) -> impl std::future::Future<Output = ()> {
    let session = daemon.sessions.register();
    serve_stdio_counted(daemon, session)
}

async fn serve_stdio_counted(daemon: Arc<Daemon>, session: Session) {
    let (inbox_tx, inbox) = async_channel::bounded::<Vec<u8>>(16);
    // Dropped by the stdout thread once it has written everything: the
    // session waits for that (bounded) as a socket session waits for its writer.
    let (written_tx, written) = async_channel::bounded::<()>(1);
    let (outbox, outbox_rx) = Outbox::new(daemon.max_unread_bytes);
    let spawned = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buffer = vec![0u8; READ_CHUNK];
            while let Ok(n) = stdin.read(&mut buffer) {
                if n == 0 || inbox_tx.send_blocking(buffer[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
    let spawned_out = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || {
            let _written = written_tx;
            let mut stdout = std::io::stdout().lock();
            while let Some(frame) = async_io::block_on(outbox_rx.next()) {
                let written = stdout.write_all(&frame).and_then(|_| stdout.flush());
                outbox_rx.written(frame.len());
                if written.is_err() {
                    break;
                }
            }
        });
    if spawned.is_err() || spawned_out.is_err() {
        warn!("cannot start the stdio threads; --stdio disabled");
        return;
    }
    run_session(daemon, inbox, outbox, None, &session).await;
    let _ = futures::future::select(
        std::pin::pin!(written.recv()),
        async_io::Timer::after(FLUSH_TIMEOUT),
    )
    .await;
    drop(session);
}

/// One sender's life: hello, surfaces, commits, facts, until it leaves.
/// Commits over the frame-rate limit wait in the session; the loop wakes at
/// the session's deadline to hand them out, coalesced.
async fn run_session(
    daemon: Arc<Daemon>,
    inbox: async_channel::Receiver<Vec<u8>>,
    outbox: Outbox,
    peer: Option<Peer>,
    stop: &Session,
) {
    let config = ReceiverConfig {
        max_frame_bytes: daemon.max_frame_bytes,
        max_surfaces: daemon.limits.max_surfaces,
        max_queued_bytes: daemon.max_queued_bytes,
        max_frames_per_second: daemon.max_fps,
        frame_burst: daemon.fps_burst,
        hello_timeout: daemon.hello_timeout,
        max_unread_reply_bytes: daemon.max_unread_bytes,
        ..ReceiverConfig::default()
    };
    let mut connection = Connection {
        pending: PendingCharge::new(daemon.replica_budget.clone()),
        daemon,
        session: ReceiverSession::new(config),
        outbox,
        app: None,
        app_queue: None,
        stopping: false,
        peer,
        throttle_log: ThrottleLog::default(),
        log_limiter: LogLimiter::default(),
        keys_in_flight: Arc::new(AtomicUsize::new(0)),
    };
    'read: loop {
        let events = match next_wake(&inbox, connection.session.next_deadline(), stop).await {
            Wake::Input(bytes) => connection.feed(&bytes),
            Wake::InputEnded => break,
            Wake::Deadline => {
                let events = connection.session.poll_at(Instant::now());
                connection.pending.settle(connection.session.held_bytes());
                events
            }
            Wake::Stop => {
                connection.stopping = true;
                break;
            }
        };
        for event in events {
            if !connection.handle(event).await {
                break 'read;
            }
            // One thread answers every call and applies every commit
            // (`daemon.rs`): a sender flooding commits lets every other task
            // that is ready run between two of them.
            crate::driven::yield_now().await;
        }
        if let Some(fatal) = connection
            .session
            .check_unread_replies(connection.outbox.unread())
        {
            connection.handle(fatal).await;
            break;
        }
        connection.log_throttling();
    }
    connection.close().await;
}

/// What a session's wait ended with.
enum Wake {
    Input(Vec<u8>),
    /// The sender closed its side (or the reader failed).
    InputEnded,
    /// The session's deadline (held-back commits, hello timeout) came.
    Deadline,
    /// The daemon shuts down.
    Stop,
}

/// Waits for the sender's next bytes, the session's deadline or the
/// daemon's shutdown; shutdown first, so a flooding sender cannot delay it.
async fn next_wake(
    inbox: &async_channel::Receiver<Vec<u8>>,
    deadline: Option<Instant>,
    stop: &Session,
) -> Wake {
    let input = async { inbox.recv().await.map_or(Wake::InputEnded, Wake::Input) };
    let deadline = async {
        match deadline {
            Some(at) => {
                async_io::Timer::at(at).await;
                Wake::Deadline
            }
            None => futures::future::pending().await,
        }
    };
    futures::select_biased! {
        wake = stop.stopped().map(|()| Wake::Stop).fuse() => wake,
        wake = input.fuse() => wake,
        wake = deadline.fuse() => wake,
    }
}

/// Rate-limited logging of the frame-rate limit: one line when an
/// application first goes over it, then at most one every
/// [`THROTTLE_LOG_INTERVAL`] while it stays over, never one per frame.
#[derive(Default)]
struct ThrottleLog {
    logged_at: Option<Instant>,
    logged_count: u64,
    /// Held-back commits already added to the daemon's status counters.
    counted: u64,
}

const THROTTLE_LOG_INTERVAL: Duration = Duration::from_secs(10);

struct Connection {
    daemon: Arc<Daemon>,
    session: ReceiverSession,
    outbox: Outbox,
    app: Option<(u64, Arc<BridgedApp>)>,
    /// The application's queue towards the sender and the task moving it
    /// into the outbox: closed and awaited at close, so nothing the
    /// application queued is lost (not even a message that task holds).
    app_queue: Option<(async_channel::Sender<BridgeMessage>, Task<()>)>,
    /// The daemon shuts down: the sender is told so at close.
    stopping: bool,
    /// The sender's credentials read at accept (`None` on stdio): who the
    /// application is, whatever its hello says.
    peer: Option<Peer>,
    throttle_log: ThrottleLog,
    /// One warning line per rule per interval for this sender's rejections.
    log_limiter: LogLimiter,
    /// Keys waiting for the registry's verdict (bounded by [`MAX_KEYS_IN_FLIGHT`]).
    keys_in_flight: Arc<AtomicUsize>,
    /// This connection's pending input, charged to the total byte budget.
    pending: PendingCharge,
}

/// The bytes one connection holds for its sender's input (a partial frame,
/// queued updates: [`ReceiverSession::held_bytes`]), charged to the same
/// total budget the replicas draw from (`--max-total-bytes`, rule
/// `total-bytes`). Each chunk read is reserved *before* the session
/// buffers it (feeding `n` bytes grows what the session holds by at most
/// `n`); once the session has consumed it, the charge is brought down to
/// what it really holds. Updates handed out in a commit leave the charge
/// before the replica charges their nodes. Dropped with the connection.
struct PendingCharge {
    budget: Arc<newton_cache::ByteBudget>,
    charged: usize,
}

impl PendingCharge {
    fn new(budget: Arc<newton_cache::ByteBudget>) -> Self {
        Self { budget, charged: 0 }
    }

    /// Reserves `bytes` more; false (nothing reserved) when they do not fit.
    fn reserve(&mut self, bytes: usize) -> bool {
        if !self.budget.try_reserve(bytes) {
            return false;
        }
        self.charged += bytes;
        true
    }

    /// Brings the charge to `held`, what the session holds now.
    fn settle(&mut self, held: usize) {
        if held < self.charged {
            self.budget.release(self.charged - held);
            self.charged = held;
        } else if held > self.charged && self.budget.try_reserve(held - self.charged) {
            // Not expected (feeding never grows the session by more than
            // it was given); kept exact when it happens anyway.
            self.charged = held;
        }
    }
}

impl Drop for PendingCharge {
    fn drop(&mut self) {
        self.budget.release(self.charged);
    }
}

/// Keys of one sender that may wait for the registry at once.
const MAX_KEYS_IN_FLIGHT: usize = 32;

impl Connection {
    /// Feeds bytes read from the sender, charged to the total byte budget
    /// first: input that does not fit ends the connection (rule
    /// `total-bytes`) before the session buffers any of it.
    fn feed(&mut self, bytes: &[u8]) -> Vec<ReceiverEvent> {
        if !self.pending.reserve(bytes.len()) {
            let held = self.session.held_bytes() + bytes.len();
            let max = self.daemon.replica_budget.max();
            return vec![self.session.refuse_over_total_budget(held, max)];
        }
        let events = self.session.feed_at(bytes, Instant::now());
        self.pending.settle(self.session.held_bytes());
        events
    }

    fn app_name(&self) -> &str {
        self.app
            .as_ref()
            .map_or("", |(_, app)| app.info.name.as_str())
    }

    fn log_throttling(&mut self) {
        let count = self.session.coalesced_commits();
        if count > self.throttle_log.counted {
            self.daemon
                .stats
                .held_back(count - self.throttle_log.counted);
            self.throttle_log.counted = count;
        }
        if count == self.throttle_log.logged_count {
            return;
        }
        let now = Instant::now();
        if self
            .throttle_log
            .logged_at
            .is_some_and(|at| now.duration_since(at) < THROTTLE_LOG_INTERVAL)
        {
            return;
        }
        warn!(
            app = %self.app_name(),
            held_back = count,
            "the sender commits faster than {} frames/s (rule max-fps): commits are coalesced \
             and the latest state applied at that rate; nothing is lost",
            self.daemon.max_fps
        );
        self.throttle_log.logged_at = Some(now);
        self.throttle_log.logged_count = count;
    }

    /// Acts on one session event; false ends the connection.
    async fn handle(&mut self, event: ReceiverEvent) -> bool {
        match event {
            ReceiverEvent::HelloAccepted {
                app,
                encoding,
                welcome,
            } => {
                self.write(welcome);
                return self.open_app(app, encoding).await;
            }
            ReceiverEvent::Fatal { error, reply } => {
                let message = format!("sender violated the protocol: {error}");
                crate::accept::warn_limited(&self.daemon.log_limiter, error.rule(), &message);
                self.write(reply);
                return false;
            }
            ReceiverEvent::Goodbye => return false,
            ReceiverEvent::SurfaceError(error) => {
                let rule = error.rule.as_str();
                if let Some(suppressed) = self.log_limiter.check(rule, Instant::now()) {
                    warn!(app = %self.app_name(), suppressed, "surface {}: {} ({rule})", error.surface.0, error.reason);
                }
                self.daemon
                    .stats
                    .note_rejection(self.app_name(), rule, &error.reason);
                self.send(&error.to_rejected());
            }
            ReceiverEvent::Sync { serial } => self.send(&BridgeMessage::SyncDone { serial }),
            ReceiverEvent::Key { serial, event } => self.forward_key(serial, event),
            other => self.handle_app_event(other).await,
        }
        true
    }

    /// Applies one event to the application. A panic in there (a bug: the
    /// validator should have refused what caused it) is contained to this
    /// application: it is reset and its sender asked for full trees, while
    /// every other application goes on.
    async fn handle_app_event(&mut self, event: ReceiverEvent) {
        let Some((_, app)) = self.app.clone() else {
            return;
        };
        let (surface, serial) = event_surface(&event);
        let applied = AssertUnwindSafe(self.apply_app_event(&app, event))
            .catch_unwind()
            .await;
        if applied.is_err() {
            error!(
                app = %app.info.name,
                "internal error (panic) while applying this application's message for surface {}; \
                 resetting this application only: its trees are dropped and its sender asked for \
                 full trees",
                surface.map_or(0, |s| s.0)
            );
            self.reset_app(&app, surface, serial).await;
        }
    }

    async fn apply_app_event(&mut self, app: &Arc<BridgedApp>, event: ReceiverEvent) {
        let (surface, serial, coalesced, result) = match event {
            ReceiverEvent::SurfaceCreated { surface, title } => {
                let result = app
                    .lock_async()
                    .await
                    .replica
                    .create_surface(surface, title);
                if result.is_ok() {
                    self.send(&crate::app::wanted_message(
                        surface,
                        self.daemon.at_present(),
                    ));
                }
                (surface, 0, 1, result)
            }
            ReceiverEvent::Commit {
                surface,
                serial,
                updates,
                encoded_bytes,
                coalesced,
            } => (
                surface,
                serial,
                coalesced,
                app.commit(surface, updates, encoded_bytes).await,
            ),
            ReceiverEvent::Focus { surface } => (
                surface.unwrap_or(SurfaceId(0)),
                0,
                1,
                app.set_focus(surface).await,
            ),
            ReceiverEvent::Geometry { surface, geometry } => (
                surface,
                0,
                1,
                app.lock_async()
                    .await
                    .replica
                    .set_geometry(surface, geometry),
            ),
            ReceiverEvent::SurfaceDestroyed { surface } => {
                (surface, 0, 1, app.destroy_surface(surface).await)
            }
            _ => return,
        };
        if let Err(error) = result {
            let awaiting_resync = app.needs_resync(surface).await;
            self.reject(app, surface, serial, coalesced, awaiting_resync, error);
        }
    }

    /// After a contained panic: drop the application's trees (keeping its
    /// surfaces, its bus connection and its place on the desktop) and tell
    /// the sender, per surface, to send a full tree (`internal-error`,
    /// `resync: true`).
    async fn reset_app(&self, app: &Arc<BridgedApp>, failed: Option<SurfaceId>, serial: u64) {
        let surfaces = app.reset_after_panic().await;
        let reason = "the bridge hit an internal error while applying this application's \
                      messages; it dropped this application's trees (other applications are \
                      unaffected) and needs a full tree for this surface";
        for surface in surfaces {
            self.daemon
                .stats
                .note_rejection(&app.info.name, INTERNAL_ERROR_RULE, reason);
            self.send(&BridgeMessage::Rejected {
                surface,
                serial: if Some(surface) == failed { serial } else { 0 },
                rule: INTERNAL_ERROR_RULE.to_owned(),
                reason: reason.to_owned(),
                resync: true,
            });
        }
    }

    fn reject(
        &mut self,
        app: &BridgedApp,
        surface: SurfaceId,
        serial: u64,
        coalesced: u32,
        awaiting_resync: bool,
        error: RejectError,
    ) {
        let mut reason = error.to_string();
        if coalesced > 1 {
            // The sender's earlier serials were never answered one by one:
            // it cannot know which state the bridge has, so it resyncs.
            reason.push_str(&format!(
                " (this frame carried {coalesced} commits coalesced by the frame-rate limit, the \
                 last with serial {serial}; none of them was applied; send a full tree)"
            ));
        }
        let reason = escape_bounded(&reason, REASON_BYTES);
        if let Some(suppressed) = self.log_limiter.check(error.rule.as_str(), Instant::now()) {
            warn!(app = %app.info.name, suppressed, "{reason}");
        }
        self.daemon
            .stats
            .note_rejection(&app.info.name, error.rule.as_str(), &reason);
        self.send(&BridgeMessage::Rejected {
            surface,
            serial,
            rule: error.rule.as_str().to_owned(),
            reason,
            resync: coalesced > 1 || awaiting_resync,
        });
    }

    /// Offers a key to the ATs from the application's connection, off the
    /// session loop (the registry waits for the AT), and answers
    /// `keyHandled` through the application's queue towards the sender.
    /// The answer is an answer: never dropped (see [`Outbox`]). At most
    /// [`MAX_KEYS_IN_FLIGHT`] keys per sender wait for the registry; beyond
    /// that a key is answered "not consumed" at once, so a sender flooding
    /// keys costs the bus nothing more.
    fn forward_key(&mut self, serial: u64, event: newton_push_protocol::KeyEvent) {
        let Some((_, app)) = self.app.clone() else {
            return;
        };
        let encoding = self.session.encoding().unwrap_or_default();
        let outbox = self.outbox.clone();
        let answer = move |consumed| {
            let frame =
                encode_bridge_payload(&BridgeMessage::KeyHandled { serial, consumed }, encoding)
                    .ok()
                    .and_then(|payload| encode_frame(&payload).ok());
            if let Some(frame) = frame {
                outbox.answer(frame);
            }
        };
        if self.keys_in_flight.fetch_add(1, Ordering::SeqCst) >= MAX_KEYS_IN_FLIGHT {
            self.keys_in_flight.fetch_sub(1, Ordering::SeqCst);
            if let Some(suppressed) = self.log_limiter.check("keys-in-flight", Instant::now()) {
                warn!(app = %app.info.name, suppressed, "more than {MAX_KEYS_IN_FLIGHT} keys wait for the registry; later ones are answered not consumed");
            }
            answer(false);
            return;
        }
        let in_flight = self.keys_in_flight.clone();
        self.daemon
            .executor
            .spawn(async move {
                let consumed = match crate::keys::notify_listeners(&app.conn(), &event).await {
                    Ok(consumed) => consumed,
                    Err(error) => {
                        debug!(app = %app.info.name, "NotifyListenersSync failed: {error}");
                        false
                    }
                };
                in_flight.fetch_sub(1, Ordering::SeqCst);
                answer(consumed);
            })
            .detach();
    }

    /// Connects the application to the bus and embeds it.
    async fn open_app(&mut self, mut info: AppInfo, encoding: Encoding) -> bool {
        let credentials = SenderCredentials::from_hello(&mut info, self.peer);
        if let Some((claimed, real)) = credentials.mismatch() {
            // Not an error: a sandboxed sender counts pids in its own
            // namespace, a compositor names the application it sends for.
            debug!(
                app = %info.name,
                claimed_pid = claimed,
                pid = real,
                "the hello claims another pid than the kernel reports for the sender \
                 (its own pid namespace, or a compositor sending for the application); \
                 the kernel's pid is the one reported"
            );
        }
        let identity = Identity { info, credentials };
        let (to_sender, from_app) = async_channel::bounded::<BridgeMessage>(APP_QUEUE);
        let app = match BridgedApp::connect(
            &self.daemon.a11y_address(),
            identity,
            self.daemon.limits,
            self.daemon.replica_budget.clone(),
            to_sender.clone(),
            self.daemon.listeners.clone(),
            &self.daemon.executor,
        )
        .await
        {
            Ok(app) => app,
            Err(error) => {
                warn!("{error}");
                self.send(&BridgeMessage::Error {
                    reason: error.to_string(),
                });
                return false;
            }
        };
        app.start_serving(&self.daemon.executor);
        let forwarding =
            self.daemon
                .executor
                .spawn(forward_to_sender(from_app, self.outbox.clone(), encoding));
        self.app_queue = Some((to_sender, forwarding));
        info!(
            app = %app.info.name,
            app_id = %app.info.app_id,
            pid = ?app.credentials.pid(),
            uid = ?app.credentials.uid(),
            bus = %app.unique_name(),
            "application connected"
        );
        let key = self.daemon.add_app(app.clone());
        self.daemon
            .executor
            .spawn(crate::daemon::keep_on_bus(self.daemon.clone(), app.clone()))
            .detach();
        // Peer-to-peer before Embed: libatspi asks for the address at first
        // contact, right after the registry announces the application.
        if let Some(dir) = &self.daemon.p2p_dir {
            app.offer_p2p(dir, key, &self.daemon.p2p_limits, &self.daemon.executor);
        }
        if let Err(error) = app.embed().await {
            warn!(app = %app.info.name, "could not register with the AT-SPI registry: {error}");
        }
        self.app = Some((key, app));
        true
    }

    fn send(&self, message: &BridgeMessage) {
        match self.session.encode_bridge_message(message) {
            Ok(frame) => self.write(frame),
            Err(error) => warn!("cannot encode a message for the sender: {error}"),
        }
    }

    /// Queues an answer for the sender; never dropped (see [`Outbox`]).
    fn write(&self, frame: Vec<u8>) {
        if !frame.is_empty() {
            self.outbox.answer(frame);
        }
    }

    async fn close(&mut self) {
        for (rule, count) in self.log_limiter.take_suppressed() {
            warn!(app = %self.app_name(), count, "{count} more rejections (rule {rule}) on this connection were not logged one by one");
        }
        let held_back = self.session.coalesced_commits();
        if held_back > 0 {
            info!(
                app = %self.app_name(),
                held_back,
                "frame-rate limit (rule max-fps): commits held back and coalesced over the connection"
            );
        }
        let app = self.app.take();
        if let Some((key, _)) = &app {
            // First: the daemon stops announcing to it (wanted state).
            self.daemon.remove_app(*key);
        }
        self.flush_app_queue().await;
        if self.stopping {
            self.send(&BridgeMessage::Error {
                reason: SHUTTING_DOWN.into(),
            });
        }
        if let Some((_, app)) = app {
            app.shut_down().await;
            drop(app);
            crate::memory::trim_soon(&self.daemon.executor);
        }
        // The writer ends (and shuts the socket down) once it has written
        // everything queued before this.
        self.outbox.close();
        debug!("sender connection closed");
    }

    /// Moves everything the application queued for the sender into the
    /// outbox: the queue is closed (what it holds is still received) and the
    /// task draining it awaited, so a message that task took off the queue is
    /// in the outbox too before anything is queued after it.
    async fn flush_app_queue(&mut self) {
        if let Some((queue, forwarding)) = self.app_queue.take() {
            queue.close();
            forwarding.await;
        }
    }
}

/// The `error` every sender gets when the bridge stops (SIGTERM, SIGINT).
const SHUTTING_DOWN: &str = "the bridge is shutting down";

/// `Rejected.rule` after a contained internal error (docs/protocol.md §8.2).
const INTERNAL_ERROR_RULE: &str = "internal-error";

/// The surface (and commit serial) an application event is about.
fn event_surface(event: &ReceiverEvent) -> (Option<SurfaceId>, u64) {
    match event {
        ReceiverEvent::Commit {
            surface, serial, ..
        } => (Some(*surface), *serial),
        ReceiverEvent::SurfaceCreated { surface, .. }
        | ReceiverEvent::Geometry { surface, .. }
        | ReceiverEvent::SurfaceDestroyed { surface } => (Some(*surface), 0),
        ReceiverEvent::Focus { surface } => (*surface, 0),
        _ => (None, 0),
    }
}

/// Encodes the application's messages (actions) for the sender.
async fn forward_to_sender(
    from_app: async_channel::Receiver<BridgeMessage>,
    outbox: Outbox,
    encoding: Encoding,
) {
    let mut dropped: u64 = 0;
    while let Ok(message) = from_app.recv().await {
        let frame = encode_bridge_payload(&message, encoding)
            .ok()
            .and_then(|payload| encode_frame(&payload).ok());
        match frame {
            Some(frame) => {
                if !outbox.offer(frame) {
                    dropped += 1;
                    // The AT decides how many actions come: log 1, 2, 4, 8, … drops.
                    if dropped.is_power_of_two() {
                        warn!(
                            dropped,
                            "sender is not reading; actions dropped (over 64 KiB unread)"
                        );
                    }
                }
            }
            None => warn!("cannot encode a message for the sender"),
        }
    }
}
