//! [`Sender`]: one application's connection to the bridge.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use accesskit::TreeUpdate;
use newton_push_protocol::{
    default_socket_path, BridgeMessage, Geometry, Hello, KeyEvent, SenderMessage, SenderSession,
    SurfaceId,
};

use crate::error::{ConnectError, RecvError, SendError};
use crate::reader::{spawn_reader, Incoming};

/// How long [`Sender::connect`] and [`Sender::from_stream`] wait for the
/// bridge's Welcome.
pub const DEFAULT_WELCOME_TIMEOUT: Duration = Duration::from_secs(10);

/// Messages from the reader thread, plus those set aside by `sync`.
struct Inbox {
    from_reader: mpsc::Receiver<Incoming>,
    backlog: VecDeque<BridgeMessage>,
    closed: Option<String>,
}

/// A connection to the bridge for one application (blocking std IO).
///
/// Every method takes `&self`, so a `Sender` can be shared (`Arc`) between
/// a thread pushing updates and one handling action requests. A background
/// thread reads bridge messages; receive them with [`Sender::recv_timeout`]
/// or [`Sender::try_recv`].
pub struct Sender {
    writer: Mutex<Box<dyn Write + Send>>,
    session: Arc<Mutex<SenderSession>>,
    inbox: Mutex<Inbox>,
    next_serial: AtomicU64,
    /// Set by the reader thread when the connection ends.
    closed: Arc<Mutex<Option<String>>>,
    /// Kept to unblock the reader thread on drop.
    socket: Option<UnixStream>,
}

impl Sender {
    /// Connects to the bridge at the default socket path
    /// (`$NEWTON_ATSPI_SOCKET`, else `$XDG_RUNTIME_DIR/newton-atspi/bridge.sock`).
    pub fn connect_default(hello: Hello) -> Result<Self, ConnectError> {
        Self::connect(default_socket_path()?, hello)
    }

    /// Connects to the bridge's Unix socket, sends the hello and waits for
    /// the Welcome.
    pub fn connect(path: impl AsRef<Path>, hello: Hello) -> Result<Self, ConnectError> {
        Self::connect_with_timeout(path, hello, DEFAULT_WELCOME_TIMEOUT)
    }

    /// [`Sender::connect`], waiting at most `welcome_timeout` for the
    /// Welcome (a bridge started by socket activation answers once it is up).
    pub fn connect_with_timeout(
        path: impl AsRef<Path>,
        hello: Hello,
        welcome_timeout: Duration,
    ) -> Result<Self, ConnectError> {
        let path = path.as_ref();
        let stream = UnixStream::connect(path).map_err(|source| connect_error(path, source))?;
        let io_error = |source| ConnectError::Io {
            path: path.to_owned(),
            source,
        };
        let read = stream.try_clone().map_err(io_error)?;
        let write = stream.try_clone().map_err(io_error)?;
        Self::start(
            Box::new(read),
            Box::new(write),
            Some(stream),
            hello,
            welcome_timeout,
        )
    }

    /// Speaks the protocol over any byte stream (stdin/stdout of
    /// `newton-atspi-bridge serve --stdio`, a pipe, an ssh channel): sends
    /// the hello and waits for the Welcome. The reader thread owns `read`
    /// and ends when it reaches end of file or fails; dropping the `Sender`
    /// closes `write` but cannot interrupt a blocked `read`.
    pub fn from_stream<R, W>(read: R, write: W, hello: Hello) -> Result<Self, ConnectError>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        Self::start(
            Box::new(read),
            Box::new(write),
            None,
            hello,
            DEFAULT_WELCOME_TIMEOUT,
        )
    }

    fn start(
        read: Box<dyn Read + Send>,
        write: Box<dyn Write + Send>,
        socket: Option<UnixStream>,
        hello: Hello,
        welcome_timeout: Duration,
    ) -> Result<Self, ConnectError> {
        let session = Arc::new(Mutex::new(SenderSession::new(hello)));
        let (to_inbox, from_reader) = mpsc::channel();
        let closed = Arc::new(Mutex::new(None));
        spawn_reader(read, session.clone(), to_inbox, closed.clone()).map_err(|source| {
            ConnectError::Closed {
                reason: format!("cannot start the reader thread: {source}"),
            }
        })?;
        let sender = Self {
            writer: Mutex::new(write),
            session,
            inbox: Mutex::new(Inbox {
                from_reader,
                backlog: VecDeque::new(),
                closed: None,
            }),
            next_serial: AtomicU64::new(1),
            closed,
            socket,
        };
        sender.send_hello()?;
        sender.await_welcome(welcome_timeout)?;
        Ok(sender)
    }

    fn send_hello(&self) -> Result<(), ConnectError> {
        let bytes = lock(&self.session)
            .hello_bytes()
            .map_err(|error| ConnectError::Hello(error.into()))?;
        self.write_bytes(&bytes).map_err(ConnectError::Hello)
    }

    fn await_welcome(&self, timeout: Duration) -> Result<(), ConnectError> {
        let inbox = lock(&self.inbox);
        match inbox.from_reader.recv_timeout(timeout) {
            Ok(Incoming::Welcomed) => Ok(()),
            Ok(Incoming::Message(BridgeMessage::Error { reason })) => {
                Err(ConnectError::Refused { reason })
            }
            Ok(Incoming::Message(other)) => Err(ConnectError::Closed {
                reason: format!(
                    "unexpected {} before the welcome",
                    newton_push_protocol::variant_name(&other)
                ),
            }),
            Ok(Incoming::Closed(reason)) => Err(ConnectError::Closed { reason }),
            Err(RecvTimeoutError::Timeout) => Err(ConnectError::WelcomeTimeout { waited: timeout }),
            Err(RecvTimeoutError::Disconnected) => Err(ConnectError::Closed {
                reason: "the reader thread stopped".into(),
            }),
        }
    }

    /// The hello this sender announced.
    pub fn hello(&self) -> Hello {
        lock(&self.session).hello().clone()
    }

    /// The bridge's frame limit from its Welcome.
    pub fn max_frame_bytes(&self) -> u32 {
        lock(&self.session).max_frame_bytes()
    }

    /// Whether the bridge wants updates for `surface` now. While unwanted,
    /// a toolkit should build nothing; after `UpdatesWanted` it must push
    /// a full tree.
    pub fn is_wanted(&self, surface: SurfaceId) -> bool {
        lock(&self.session).is_wanted(surface)
    }

    /// Sends any sender message as is (replay uses this).
    pub fn send(&self, message: &SenderMessage) -> Result<(), SendError> {
        // The writer lock is held while encoding so messages from several
        // threads reach the wire in the order they were encoded.
        let mut writer = lock(&self.writer);
        let bytes = lock(&self.session).encode(message)?;
        writer
            .write_all(&bytes)
            .and_then(|()| writer.flush())
            .map_err(|source| SendError::Io {
                source,
                closed: self.closed_reason(),
            })
    }

    fn write_bytes(&self, bytes: &[u8]) -> Result<(), SendError> {
        let mut writer = lock(&self.writer);
        writer
            .write_all(bytes)
            .and_then(|()| writer.flush())
            .map_err(|source| SendError::Io {
                source,
                closed: self.closed_reason(),
            })
    }

    /// Announces a new surface.
    pub fn create_surface(&self, surface: SurfaceId, title: Option<&str>) -> Result<(), SendError> {
        self.send(&SenderMessage::CreateSurface {
            surface,
            title: title.map(str::to_owned),
        })
    }

    /// Buffers one tree update for the surface (applied at its next commit).
    pub fn update(&self, surface: SurfaceId, update: TreeUpdate) -> Result<(), SendError> {
        self.send(&SenderMessage::Update { surface, update })
    }

    /// Applies the surface's buffered updates atomically; returns the
    /// commit's serial (echoed in `Rejected`).
    pub fn commit(&self, surface: SurfaceId) -> Result<u64, SendError> {
        let serial = self.next_serial();
        self.send(&SenderMessage::Commit { surface, serial })?;
        Ok(serial)
    }

    /// Compositor fact: which surface of the application has focus.
    pub fn focus(&self, surface: Option<SurfaceId>) -> Result<(), SendError> {
        self.send(&SenderMessage::Focus { surface })
    }

    /// Compositor fact: where the surface is on screen.
    pub fn geometry(&self, surface: SurfaceId, geometry: Geometry) -> Result<(), SendError> {
        self.send(&SenderMessage::Geometry { surface, geometry })
    }

    /// Removes a surface.
    pub fn destroy_surface(&self, surface: SurfaceId) -> Result<(), SendError> {
        self.send(&SenderMessage::DestroySurface { surface })
    }

    /// Whether the bridge forwards keys to the ATs (its welcome offered
    /// `keyEvents`; docs/protocol.md §6.1).
    pub fn accepts_key_events(&self) -> bool {
        lock(&self.session).accepts_key_events()
    }

    /// Sends a key the application received; the bridge answers
    /// `KeyHandled` with the returned serial once the ATs decided whether
    /// they consumed it. Only when [`Sender::accepts_key_events`].
    pub fn key(&self, event: KeyEvent) -> Result<u64, SendError> {
        let serial = self.next_serial();
        self.send(&SenderMessage::Key { serial, event })?;
        Ok(serial)
    }

    /// Clean close: the bridge removes the application.
    pub fn goodbye(&self) -> Result<(), SendError> {
        self.send(&SenderMessage::Goodbye)
    }

    /// Sends `Sync` and blocks until the bridge's `SyncDone`, i.e. until
    /// every message sent before has been processed. Messages arriving
    /// meanwhile stay queued for `recv_timeout`/`try_recv`. Returns the
    /// sync's serial.
    pub fn sync(&self, timeout: Duration) -> Result<u64, SendError> {
        let serial = self.next_serial();
        self.send(&SenderMessage::Sync { serial })?;
        let deadline = Instant::now() + timeout;
        let mut inbox = lock(&self.inbox);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match inbox.next_message(left) {
                Ok(BridgeMessage::SyncDone { serial: done }) if done == serial => {
                    return Ok(serial)
                }
                Ok(other) => inbox.backlog.push_back(other),
                Err(RecvError::Timeout) => {
                    return Err(SendError::SyncTimeout {
                        serial,
                        waited: timeout,
                    })
                }
                Err(RecvError::Closed { reason }) => {
                    return Err(SendError::ClosedDuringSync { serial, reason })
                }
            }
        }
    }

    /// The next bridge message, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<BridgeMessage, RecvError> {
        let mut inbox = lock(&self.inbox);
        match inbox.backlog.pop_front() {
            Some(message) => Ok(message),
            None => inbox.next_message(timeout),
        }
    }

    /// The next bridge message if one is waiting; `Ok(None)` if none.
    pub fn try_recv(&self) -> Result<Option<BridgeMessage>, RecvError> {
        match self.recv_timeout(Duration::ZERO) {
            Ok(message) => Ok(Some(message)),
            Err(RecvError::Timeout) => Ok(None),
            Err(closed) => Err(closed),
        }
    }

    /// Closes the socket without a goodbye (the bridge removes the
    /// application); the reader thread then reports the connection closed.
    /// Does nothing for a sender made with [`Sender::from_stream`].
    pub fn shutdown(&self) {
        if let Some(socket) = &self.socket {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    fn next_serial(&self) -> u64 {
        self.next_serial.fetch_add(1, Ordering::Relaxed)
    }

    /// Why the connection closed, if the reader thread already knows.
    fn closed_reason(&self) -> Option<String> {
        lock(&self.closed).clone()
    }
}

impl Inbox {
    /// Waits for the next message from the reader thread (not the backlog).
    fn next_message(&mut self, timeout: Duration) -> Result<BridgeMessage, RecvError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(reason) = &self.closed {
                return Err(RecvError::Closed {
                    reason: reason.clone(),
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_reader.recv_timeout(left) {
                Ok(Incoming::Message(message)) => return Ok(message),
                Ok(Incoming::Welcomed) => {}
                Ok(Incoming::Closed(reason)) => self.closed = Some(reason),
                Err(RecvTimeoutError::Timeout) => return Err(RecvError::Timeout),
                Err(RecvTimeoutError::Disconnected) => {
                    self.closed = Some("the reader thread stopped".into())
                }
            }
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        // Unblocks the reader thread; it ends on its own for other streams
        // when they reach end of file.
        self.shutdown();
    }
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("hello", &self.hello())
            .finish_non_exhaustive()
    }
}

fn connect_error(path: &Path, source: std::io::Error) -> ConnectError {
    match source.kind() {
        ErrorKind::ConnectionRefused | ErrorKind::NotFound => ConnectError::NoBridge {
            path: path.to_owned(),
            source,
        },
        _ => ConnectError::Io {
            path: path.to_owned(),
            source,
        },
    }
}

/// Locks a mutex, recovering from poisoning: the guarded state stays valid
/// because no method leaves it half-updated.
fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Sender>();
}
