//! [`ReconnectingSender`]: a sender that survives bridge restarts.
//!
//! It wraps [`Sender`] with the two pieces docs/protocol.md §2.3 asks of a
//! sender: a [`ResendState`] that records every message (so a new bridge
//! can be brought to the same state) and a supervisor thread that, when the
//! connection ends or cannot be made, waits a [`Backoff`] delay, connects
//! again, sends the hello and [`ResendState::resend`], and carries on.
//! While no bridge is reachable every call still succeeds and is recorded:
//! nothing the application sent is lost, it reaches the next bridge as part
//! of the full trees.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use accesskit::TreeUpdate;
use newton_push_protocol::{
    default_socket_path, BridgeMessage, Geometry, Hello, SenderMessage, SurfaceId,
};

use crate::backoff::{Backoff, DEFAULT_INITIAL_DELAY, DEFAULT_MAX_DELAY};
use crate::error::{ConnectError, RecvError, SendError};
use crate::resend::ResendState;
use crate::sender::{Sender, DEFAULT_WELCOME_TIMEOUT};

/// How a [`ReconnectingSender`] retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconnectOptions {
    /// Backoff's first delay bound (waits are jittered in `[d/2, d]`).
    pub initial_delay: Duration,
    /// Backoff's cap.
    pub max_delay: Duration,
    /// How long one attempt waits for the Welcome.
    pub welcome_timeout: Duration,
    /// A connection that lasted at least this long resets the backoff, so
    /// a bridge that accepts and drops at once is not hammered.
    pub stable_after: Duration,
}

impl Default for ReconnectOptions {
    fn default() -> Self {
        Self {
            initial_delay: DEFAULT_INITIAL_DELAY,
            max_delay: DEFAULT_MAX_DELAY,
            welcome_timeout: DEFAULT_WELCOME_TIMEOUT,
            stable_after: Duration::from_secs(1),
        }
    }
}

/// What a [`ReconnectingSender`] reports, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum ConnectionEvent {
    /// A bridge welcomed us and every surface, tree and fact was sent to it
    /// again (`resent` messages). Surfaces start unwanted on a new bridge.
    Connected {
        /// Messages replayed from the [`ResendState`].
        resent: usize,
    },
    /// The connection ended; the sender reconnects by itself.
    Disconnected {
        /// Why, as far as known.
        reason: String,
    },
    /// A bridge message. An `Error` is followed by `Disconnected`.
    Message(BridgeMessage),
}

/// A connection to the bridge that reconnects by itself (blocking std IO).
///
/// Every method takes `&self` and none waits for the bridge to be up: while
/// it is away, messages are recorded and reach the next bridge.
pub struct ReconnectingSender {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    hello: Hello,
    options: ReconnectOptions,
    link: Mutex<Link>,
    /// Signalled when a connection comes up.
    link_changed: Condvar,
    events_tx: Mutex<mpsc::Sender<ConnectionEvent>>,
    events: Mutex<Events>,
    stop: Mutex<bool>,
    stop_changed: Condvar,
    last_error: Mutex<Option<String>>,
}

/// What the sending threads and the supervisor share.
struct Link {
    state: ResendState,
    connection: Option<Arc<Sender>>,
    next_serial: u64,
}

struct Events {
    from_supervisor: mpsc::Receiver<ConnectionEvent>,
    backlog: VecDeque<ConnectionEvent>,
}

/// How long the supervisor blocks on a live connection between checks of
/// the stop flag (it is woken at once by a closed connection anyway).
const PUMP_WAIT: Duration = Duration::from_secs(3600);

impl ReconnectingSender {
    /// [`ReconnectingSender::new`] at the default socket path
    /// (`$NEWTON_ATSPI_SOCKET`, else `$XDG_RUNTIME_DIR/newton-atspi/bridge.sock`).
    pub fn new_default(hello: Hello, options: ReconnectOptions) -> Result<Self, ConnectError> {
        Self::new(default_socket_path()?, hello, options)
    }

    /// Starts connecting to the bridge at `path` in the background and
    /// returns at once; fails only when the supervisor thread cannot start.
    /// Use [`ReconnectingSender::wait_connected`] to wait for a bridge.
    pub fn new(
        path: impl AsRef<Path>,
        hello: Hello,
        options: ReconnectOptions,
    ) -> Result<Self, ConnectError> {
        let (events_tx, from_supervisor) = mpsc::channel();
        let shared = Arc::new(Shared {
            path: path.as_ref().to_owned(),
            hello,
            options,
            link: Mutex::new(Link {
                state: ResendState::new(),
                connection: None,
                next_serial: 1,
            }),
            link_changed: Condvar::new(),
            events_tx: Mutex::new(events_tx),
            events: Mutex::new(Events {
                from_supervisor,
                backlog: VecDeque::new(),
            }),
            stop: Mutex::new(false),
            stop_changed: Condvar::new(),
            last_error: Mutex::new(None),
        });
        let supervisor = shared.clone();
        thread::Builder::new()
            .name("newton-producer-reconnect".into())
            .spawn(move || supervise(&supervisor))
            .map_err(|source| ConnectError::Closed {
                reason: format!("cannot start the reconnect thread: {source}"),
            })?;
        Ok(Self { shared })
    }

    /// Waits until a bridge welcomed this sender (now or later), at most
    /// `timeout`; true when connected.
    pub fn wait_connected(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut link = lock(&self.shared.link);
        while link.connection.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            link = self
                .shared
                .link_changed
                .wait_timeout(link, left)
                .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard);
        }
        true
    }

    /// Whether a bridge is connected now.
    pub fn is_connected(&self) -> bool {
        lock(&self.shared.link).connection.is_some()
    }

    /// Why the last connection attempt failed, if it did (cleared on success).
    pub fn last_error(&self) -> Option<String> {
        lock(&self.shared.last_error).clone()
    }

    /// The hello sent on every connection.
    pub fn hello(&self) -> &Hello {
        &self.shared.hello
    }

    /// The socket this sender connects to.
    pub fn socket_path(&self) -> &Path {
        &self.shared.path
    }

    /// Whether the connected bridge wants updates for `surface`; false
    /// while no bridge is connected (build nothing then: the full tree is
    /// asked for again with `updatesWanted`).
    pub fn is_wanted(&self, surface: SurfaceId) -> bool {
        lock(&self.shared.link)
            .connection
            .as_ref()
            .is_some_and(|connection| connection.is_wanted(surface))
    }

    /// The surface's full tree as this sender last committed it (see
    /// [`ResendState::full_tree`]); for answering a `rejected` with `resync`.
    pub fn full_tree(&self, surface: SurfaceId) -> Option<TreeUpdate> {
        lock(&self.shared.link).state.full_tree(surface)
    }

    /// Sends any sender message (replay uses this); a commit's serial is
    /// taken as given and later serials continue above it.
    pub fn send(&self, message: &SenderMessage) -> Result<(), SendError> {
        self.transmit(message.clone())
    }

    /// Announces a new surface.
    pub fn create_surface(&self, surface: SurfaceId, title: Option<&str>) -> Result<(), SendError> {
        self.transmit(SenderMessage::CreateSurface {
            surface,
            title: title.map(str::to_owned),
        })
    }

    /// Buffers one tree update for the surface.
    pub fn update(&self, surface: SurfaceId, update: TreeUpdate) -> Result<(), SendError> {
        self.transmit(SenderMessage::Update { surface, update })
    }

    /// Applies the surface's buffered updates; returns the commit's serial.
    pub fn commit(&self, surface: SurfaceId) -> Result<u64, SendError> {
        let mut link = lock(&self.shared.link);
        let serial = link.next_serial;
        self.transmit_locked(&mut link, SenderMessage::Commit { surface, serial })?;
        Ok(serial)
    }

    /// Compositor fact: which surface has focus.
    pub fn focus(&self, surface: Option<SurfaceId>) -> Result<(), SendError> {
        self.transmit(SenderMessage::Focus { surface })
    }

    /// Compositor fact: where the surface is on screen.
    pub fn geometry(&self, surface: SurfaceId, geometry: Geometry) -> Result<(), SendError> {
        self.transmit(SenderMessage::Geometry { surface, geometry })
    }

    /// Removes a surface.
    pub fn destroy_surface(&self, surface: SurfaceId) -> Result<(), SendError> {
        self.transmit(SenderMessage::DestroySurface { surface })
    }

    /// Clean close: the bridge removes the application and this sender
    /// stops reconnecting.
    pub fn goodbye(&self) -> Result<(), SendError> {
        let result = self.transmit(SenderMessage::Goodbye);
        self.shared.request_stop();
        result
    }

    /// Sends `Sync` and waits for its `SyncDone` (other events stay queued).
    /// Fails when no bridge is connected or the connection ends first: a
    /// barrier cannot span two bridges.
    pub fn sync(&self, timeout: Duration) -> Result<u64, SendError> {
        let serial = {
            let mut link = lock(&self.shared.link);
            let serial = link.next_serial;
            if link.connection.is_none() {
                return Err(SendError::ClosedDuringSync {
                    serial,
                    reason: "no bridge is connected (reconnecting)".into(),
                });
            }
            self.transmit_locked(&mut link, SenderMessage::Sync { serial })?;
            serial
        };
        let deadline = Instant::now() + timeout;
        let mut events = lock(&self.shared.events);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match events.from_supervisor.recv_timeout(left) {
                Ok(ConnectionEvent::Message(BridgeMessage::SyncDone { serial: done }))
                    if done == serial =>
                {
                    return Ok(serial)
                }
                Ok(ConnectionEvent::Disconnected { reason }) => {
                    events.backlog.push_back(ConnectionEvent::Disconnected {
                        reason: reason.clone(),
                    });
                    return Err(SendError::ClosedDuringSync { serial, reason });
                }
                Ok(other) => events.backlog.push_back(other),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(SendError::SyncTimeout {
                        serial,
                        waited: timeout,
                    })
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(SendError::ClosedDuringSync {
                        serial,
                        reason: "the reconnect thread stopped".into(),
                    })
                }
            }
        }
    }

    /// The next event, waiting at most `timeout` (`Err(Timeout)` then).
    pub fn recv_timeout(&self, timeout: Duration) -> Result<ConnectionEvent, RecvError> {
        let mut events = lock(&self.shared.events);
        if let Some(event) = events.backlog.pop_front() {
            return Ok(event);
        }
        match events.from_supervisor.recv_timeout(timeout) {
            Ok(event) => Ok(event),
            Err(RecvTimeoutError::Timeout) => Err(RecvError::Timeout),
            Err(RecvTimeoutError::Disconnected) => Err(RecvError::Closed {
                reason: "the reconnect thread stopped".into(),
            }),
        }
    }

    /// The next event if one is waiting.
    pub fn try_recv(&self) -> Result<Option<ConnectionEvent>, RecvError> {
        match self.recv_timeout(Duration::ZERO) {
            Ok(event) => Ok(Some(event)),
            Err(RecvError::Timeout) => Ok(None),
            Err(closed) => Err(closed),
        }
    }

    fn transmit(&self, message: SenderMessage) -> Result<(), SendError> {
        let mut link = lock(&self.shared.link);
        self.transmit_locked(&mut link, message)
    }

    /// Sends on the live connection, if any, and records the message. A
    /// write failure drops the connection (the supervisor reconnects and the
    /// message reaches the next bridge through the resent state); only a
    /// message that cannot be encoded is an error.
    fn transmit_locked(&self, link: &mut Link, message: SenderMessage) -> Result<(), SendError> {
        if let Some(connection) = link.connection.clone() {
            match connection.send(&message) {
                Ok(()) => {}
                Err(error @ SendError::Encode(_)) => return Err(error),
                Err(_) => {
                    connection.shutdown();
                    link.connection = None;
                }
            }
        }
        if let SenderMessage::Commit { serial, .. } | SenderMessage::Sync { serial } = &message {
            link.next_serial = link.next_serial.max(serial.saturating_add(1));
        }
        link.state.observe(message);
        Ok(())
    }
}

impl Drop for ReconnectingSender {
    fn drop(&mut self) {
        self.shared.request_stop();
        if let Some(connection) = lock(&self.shared.link).connection.take() {
            connection.shutdown();
        }
    }
}

impl std::fmt::Debug for ReconnectingSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReconnectingSender")
            .field("path", &self.shared.path)
            .field("app", &self.shared.hello.app.app_id)
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn stopped(&self) -> bool {
        *lock(&self.stop)
    }

    fn request_stop(&self) {
        *lock(&self.stop) = true;
        self.stop_changed.notify_all();
    }

    /// Sleeps `delay` unless stopped meanwhile; true when stopped.
    fn sleep_unless_stopped(&self, delay: Duration) -> bool {
        let deadline = Instant::now() + delay;
        let mut stop = lock(&self.stop);
        while !*stop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            stop = self
                .stop_changed
                .wait_timeout(stop, left)
                .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard);
        }
        true
    }

    fn emit(&self, event: ConnectionEvent) {
        // The application may have dropped the receiver side; nothing to do.
        let _ = lock(&self.events_tx).send(event);
    }
}

/// The supervisor: connect, resend, pump messages until the connection
/// ends, wait, repeat — until the sender is dropped or says goodbye.
fn supervise(shared: &Shared) {
    let options = shared.options;
    let mut backoff = Backoff::new(options.initial_delay, options.max_delay);
    while !shared.stopped() {
        match Sender::connect_with_timeout(
            &shared.path,
            shared.hello.clone(),
            options.welcome_timeout,
        ) {
            Ok(connection) => {
                *lock(&shared.last_error) = None;
                let connection = Arc::new(connection);
                let started = Instant::now();
                let reason = match install(shared, &connection) {
                    Ok(resent) => {
                        shared.emit(ConnectionEvent::Connected { resent });
                        pump(shared, &connection)
                    }
                    Err(reason) => reason,
                };
                uninstall(shared, &connection);
                if shared.stopped() {
                    return;
                }
                shared.emit(ConnectionEvent::Disconnected { reason });
                if started.elapsed() >= options.stable_after {
                    backoff.reset();
                }
            }
            Err(error) => *lock(&shared.last_error) = Some(error.to_string()),
        }
        if shared.sleep_unless_stopped(backoff.next_delay()) {
            return;
        }
    }
}

/// Replays the recorded state on a fresh connection and makes it the live
/// one, all under the link lock so no application message slips in between.
fn install(shared: &Shared, connection: &Arc<Sender>) -> Result<usize, String> {
    let mut guard = lock(&shared.link);
    let link = &mut *guard;
    if shared.stopped() {
        connection.shutdown();
        return Err("the sender was dropped".into());
    }
    let next_serial = &mut link.next_serial;
    let messages = link.state.resend(&mut || {
        let serial = *next_serial;
        *next_serial += 1;
        serial
    });
    for message in &messages {
        match connection.send(message) {
            Ok(()) => {}
            // A tree over the bridge's frame limit: the bridge could not take
            // it on the last connection either; the rest still goes through.
            Err(SendError::Encode(error)) => {
                *lock(&shared.last_error) = Some(format!("resending state: {error}"));
            }
            Err(error) => {
                connection.shutdown();
                return Err(format!("resending state failed: {error}"));
            }
        }
    }
    link.connection = Some(connection.clone());
    shared.link_changed.notify_all();
    Ok(messages.len())
}

fn uninstall(shared: &Shared, connection: &Arc<Sender>) {
    let mut link = lock(&shared.link);
    if link
        .connection
        .as_ref()
        .is_some_and(|live| Arc::ptr_eq(live, connection))
    {
        link.connection = None;
    }
}

/// Forwards bridge messages until the connection closes; returns why.
fn pump(shared: &Shared, connection: &Sender) -> String {
    loop {
        match connection.recv_timeout(PUMP_WAIT) {
            Ok(message) => shared.emit(ConnectionEvent::Message(message)),
            Err(RecvError::Timeout) if shared.stopped() => return "stopped".into(),
            Err(RecvError::Timeout) => {}
            Err(RecvError::Closed { reason }) => return reason,
        }
    }
}

/// Locks a mutex, recovering from poisoning (no method leaves the guarded
/// state half-updated).
fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<ReconnectingSender>();
}
