//! [`Producer`]: one application's connection as the C API sees it, in safe
//! Rust. It wraps [`newton_producer::Sender`] and adds what a C main loop
//! needs: bridge messages queued for polling, a file descriptor that is
//! readable while any wait, serials for commits, syncs and keys, and a
//! blocking wait for a sync or a key's answer that leaves every other
//! message queued in order.
//!
//! A pump thread moves the sender's messages into the queue. It never calls
//! into the host (there is no callback): toolkit objects are not thread-safe,
//! so the host learns about messages on its own thread, through the
//! descriptor or by polling.

use std::collections::{BTreeMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use accesskit::TreeUpdate;
use newton_producer::{RecvError, Sender};
use newton_push_protocol::{
    default_socket_path, AppInfo, BridgeMessage, Encoding, Geometry, Hello, KeyEvent,
    SenderMessage, SurfaceId,
};

use crate::status::{Failure, NewtonStatus};

/// How long the pump blocks on the sender between checks of the stop flag;
/// closing the socket wakes it at once anyway.
const PUMP_WAIT: Duration = Duration::from_secs(3600);

/// One connection to the bridge, as the C API drives it.
pub struct Producer {
    sender: Arc<Sender>,
    inbox: Arc<Inbox>,
    next_serial: AtomicU64,
    pump: Mutex<Option<JoinHandle<()>>>,
    closed_by_us: AtomicBool,
}

/// Messages from the bridge, waiting for the host.
struct Inbox {
    state: Mutex<InboxState>,
    changed: Condvar,
    /// Readable while `state.queue` is non-empty or the connection closed;
    /// the host polls `wake_read`, the pump writes one byte to `wake_write`.
    wake_read: UnixStream,
    wake_write: UnixStream,
}

#[derive(Default)]
struct InboxState {
    queue: VecDeque<BridgeMessage>,
    /// Why the connection ended, once it has.
    closed: Option<String>,
    /// Whether `wake_write` holds an unread byte.
    signalled: bool,
    /// Syncs a caller waits for; once their `syncDone` came, how many
    /// `rejected` messages came between the previous `syncDone` and it.
    syncs: BTreeMap<u64, Option<u64>>,
    /// Keys a caller waits for, and their answer once it came.
    keys: BTreeMap<u64, Option<bool>>,
    /// `rejected` messages since the last `syncDone` (a sync reports them:
    /// in stream order they answer what was sent between the two syncs).
    rejected_since_sync: u64,
}

/// The identity a connection announces (docs/protocol.md §1, "Identity").
#[derive(Clone, Debug, Default)]
pub struct Identity {
    /// Stable application id, e.g. `org.example.Editor`; must not be empty.
    pub app_id: String,
    /// Human-readable name (the AT-SPI application's name).
    pub name: String,
    /// Process id; `None` means this process.
    pub pid: Option<u32>,
    /// Toolkit name (AT-SPI `ToolkitName`).
    pub toolkit_name: Option<String>,
    /// Toolkit version (AT-SPI `Version`).
    pub toolkit_version: Option<String>,
}

impl Producer {
    /// Connects to the bridge at `socket` (default: `$NEWTON_ATSPI_SOCKET`,
    /// else `$XDG_RUNTIME_DIR/newton-atspi/bridge.sock`), says hello with
    /// `identity` and waits for the welcome (at most 10 s).
    pub fn connect(socket: Option<PathBuf>, identity: Identity) -> Result<Producer, Failure> {
        if identity.app_id.trim().is_empty() {
            return Err(Failure::new(
                NewtonStatus::InvalidArgument,
                "`app_id` is empty; pass the application's stable id, e.g. its desktop file id \
                 (org.example.Editor)",
            ));
        }
        let path = match socket {
            Some(path) => path,
            None => default_socket_path().map_err(|error| {
                Failure::new(NewtonStatus::NoBridge, format!("no socket path: {error}"))
            })?,
        };
        let app = AppInfo {
            app_id: identity.app_id,
            name: identity.name,
            pid: Some(identity.pid.unwrap_or_else(std::process::id)),
            toolkit_name: identity.toolkit_name,
            toolkit_version: identity.toolkit_version,
        };
        // Postcard on the wire: the JSON a caller passes is parsed here (so a
        // bad tree is an error the caller gets back at once, not a fatal
        // `decode` that makes the bridge close the connection), and the
        // bridge then decodes the compact form.
        let sender = Arc::new(Sender::connect(&path, Hello::new(Encoding::Postcard, app))?);
        let (wake_read, wake_write) = UnixStream::pair().map_err(|error| {
            Failure::new(
                NewtonStatus::Io,
                format!("cannot create the wake-up socket pair: {error}"),
            )
        })?;
        for end in [&wake_read, &wake_write] {
            end.set_nonblocking(true).map_err(|error| {
                Failure::new(
                    NewtonStatus::Io,
                    format!("cannot make the wake-up socket non-blocking: {error}"),
                )
            })?;
        }
        let inbox = Arc::new(Inbox {
            state: Mutex::new(InboxState::default()),
            changed: Condvar::new(),
            wake_read,
            wake_write,
        });
        let pump = {
            let sender = sender.clone();
            let inbox = inbox.clone();
            thread::Builder::new()
                .name("newton-producer-c-pump".into())
                .spawn(move || pump(&sender, &inbox))
                .map_err(|error| {
                    Failure::new(
                        NewtonStatus::Io,
                        format!("cannot start the message thread: {error}"),
                    )
                })?
        };
        Ok(Producer {
            sender,
            inbox,
            next_serial: AtomicU64::new(1),
            pump: Mutex::new(Some(pump)),
            closed_by_us: AtomicBool::new(false),
        })
    }

    fn serial(&self) -> u64 {
        self.next_serial.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends one message; a failure names why the connection closed when it
    /// has.
    fn send(&self, message: SenderMessage) -> Result<(), Failure> {
        if self.closed_by_us.load(Ordering::Relaxed) {
            return Err(closed_failure("the connection was destroyed".into()));
        }
        self.sender.send(&message).map_err(|error| {
            let mut failure = Failure::from(error);
            if let Some(reason) = lock(&self.inbox.state).closed.clone() {
                if failure.status == NewtonStatus::Io {
                    failure.status = NewtonStatus::Closed;
                }
                if !failure.message.contains(&reason) {
                    failure.message =
                        format!("{} (the connection ended: {reason})", failure.message);
                }
            }
            failure
        })
    }

    /// Announces a surface (a window).
    pub fn create_surface(&self, surface: u32, title: Option<&str>) -> Result<(), Failure> {
        self.send(SenderMessage::CreateSurface {
            surface: SurfaceId(surface),
            title: title.map(str::to_owned),
        })
    }

    /// Removes a surface.
    pub fn destroy_surface(&self, surface: u32) -> Result<(), Failure> {
        self.send(SenderMessage::DestroySurface {
            surface: SurfaceId(surface),
        })
    }

    /// Buffers one tree update, given as accesskit 0.25 JSON, for the
    /// surface's next commit.
    pub fn update_json(&self, surface: u32, json: &str) -> Result<(), Failure> {
        let update: TreeUpdate = serde_json::from_str(json).map_err(|error| {
            Failure::new(
                NewtonStatus::InvalidJson,
                format!(
                    "the tree update is not an accesskit 0.25 TreeUpdate in JSON: {error}; see \
                     docs/schema/tree-update.schema.json and docs/protocol.md §4.3"
                ),
            )
        })?;
        self.send(SenderMessage::Update {
            surface: SurfaceId(surface),
            update,
        })
    }

    /// Applies the surface's buffered updates together; returns the commit's
    /// serial (a `rejected` message names it if the bridge refuses it).
    pub fn commit(&self, surface: u32) -> Result<u64, Failure> {
        let serial = self.serial();
        self.send(SenderMessage::Commit {
            surface: SurfaceId(surface),
            serial,
        })?;
        Ok(serial)
    }

    /// Which surface has keyboard focus (`None`: the application lost it).
    pub fn focus(&self, surface: Option<u32>) -> Result<(), Failure> {
        self.send(SenderMessage::Focus {
            surface: surface.map(SurfaceId),
        })
    }

    /// Where the surface is on screen.
    pub fn geometry(&self, surface: u32, geometry: Geometry) -> Result<(), Failure> {
        if !(geometry.scale.is_finite() && geometry.scale > 0.0) {
            return Err(Failure::new(
                NewtonStatus::InvalidArgument,
                format!(
                    "`scale` is {}; pass the factor from tree units to screen units (1.0 when \
                     they are the same)",
                    geometry.scale
                ),
            ));
        }
        self.send(SenderMessage::Geometry {
            surface: SurfaceId(surface),
            geometry,
        })
    }

    /// Whether the bridge wants updates for the surface now (an AT listens).
    pub fn is_wanted(&self, surface: u32) -> bool {
        self.sender.is_wanted(SurfaceId(surface))
    }

    /// Whether the bridge forwards keys (its welcome listed `keyEvents`).
    pub fn accepts_keys(&self) -> bool {
        self.sender.accepts_key_events()
    }

    fn check_keys(&self) -> Result<(), Failure> {
        if self.accepts_keys() {
            Ok(())
        } else {
            Err(Failure::new(
                NewtonStatus::NotSupported,
                "this bridge does not forward keys (its welcome did not list `keyEvents`); handle \
                 the key as if no screen reader consumed it",
            ))
        }
    }

    /// Forwards a key; the answer comes later as a `keyHandled` message with
    /// the returned serial.
    pub fn key(&self, event: KeyEvent) -> Result<u64, Failure> {
        self.check_keys()?;
        let serial = self.serial();
        self.send(SenderMessage::Key { serial, event })?;
        Ok(serial)
    }

    /// Forwards a key and waits for the answer: `Ok(true)` when a screen
    /// reader consumed it (the application must then not act on it).
    pub fn key_wait(&self, event: KeyEvent, timeout: Duration) -> Result<bool, Failure> {
        self.check_keys()?;
        let serial = self.serial();
        lock(&self.inbox.state).keys.insert(serial, None);
        let answer = self
            .send(SenderMessage::Key { serial, event })
            .and_then(|()| {
                self.wait_for(timeout, "the key's answer", |state| {
                    state.keys.get(&serial).copied().flatten()
                })
            });
        lock(&self.inbox.state).keys.remove(&serial);
        answer
    }

    /// Sends `sync` and waits until the bridge has processed everything sent
    /// before; returns how many `rejected` messages the bridge sent since
    /// the previous sync's answer, i.e. for what was sent since then (they
    /// are queued for [`Producer::poll`] too).
    pub fn sync(&self, timeout: Duration) -> Result<u64, Failure> {
        let serial = self.serial();
        lock(&self.inbox.state).syncs.insert(serial, None);
        let done = self.send(SenderMessage::Sync { serial }).and_then(|()| {
            self.wait_for(timeout, "the bridge's syncDone", |state| {
                state.syncs.get(&serial).copied().flatten()
            })
        });
        lock(&self.inbox.state).syncs.remove(&serial);
        done
    }

    /// Waits until `ready` finds its answer in the inbox, the connection
    /// closes, or `timeout` passes.
    fn wait_for<T>(
        &self,
        timeout: Duration,
        what: &str,
        mut ready: impl FnMut(&InboxState) -> Option<T>,
    ) -> Result<T, Failure> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = lock(&self.inbox.state);
        loop {
            if let Some(answer) = ready(&state) {
                return Ok(answer);
            }
            if let Some(reason) = &state.closed {
                return Err(closed_failure(format!(
                    "the connection ended before {what} came: {reason}"
                )));
            }
            let left = deadline.map_or(PUMP_WAIT, |deadline| {
                deadline.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Err(Failure::new(
                    NewtonStatus::Timeout,
                    format!(
                        "no answer within {} ms while waiting for {what}",
                        timeout.as_millis()
                    ),
                ));
            }
            state = self
                .inbox
                .changed
                .wait_timeout(state, left)
                .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard);
        }
    }

    /// The next bridge message if one waits: `Ok(Some)`; `Ok(None)` when
    /// none waits; `Err` (closed) once the connection ended and every
    /// message was taken.
    pub fn poll(&self) -> Result<Option<BridgeMessage>, Failure> {
        let mut state = lock(&self.inbox.state);
        let message = state.queue.pop_front();
        if message.is_none() {
            if let Some(reason) = &state.closed {
                return Err(closed_failure(format!(
                    "the connection to the bridge ended: {reason}"
                )));
            }
        }
        if state.queue.is_empty() && state.closed.is_none() {
            self.inbox.drain(&mut state);
        }
        Ok(message)
    }

    /// Like [`Producer::poll`], waiting at most `timeout` for a message.
    pub fn wait(&self, timeout: Duration) -> Result<Option<BridgeMessage>, Failure> {
        {
            let deadline = Instant::now().checked_add(timeout);
            let mut state = lock(&self.inbox.state);
            while state.queue.is_empty() && state.closed.is_none() {
                let left = deadline.map_or(PUMP_WAIT, |deadline| {
                    deadline.saturating_duration_since(Instant::now())
                });
                if left.is_zero() {
                    break;
                }
                state = self
                    .inbox
                    .changed
                    .wait_timeout(state, left)
                    .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard);
            }
        }
        self.poll()
    }

    /// The descriptor that is readable while a message waits or the
    /// connection has ended.
    pub fn fd(&self) -> RawFd {
        self.inbox.wake_read.as_raw_fd()
    }

    /// Says goodbye (the bridge removes the application), closes the socket
    /// and stops the message thread. Calls after this fail with `Closed`.
    pub fn close(&self) {
        if self.closed_by_us.swap(true, Ordering::Relaxed) {
            return;
        }
        // The bridge may be gone already; nothing to tell it then.
        let _ = self.sender.send(&SenderMessage::Goodbye);
        self.sender.shutdown();
        if let Some(pump) = lock(&self.pump).take() {
            // The pump ends as soon as the reader sees the closed socket.
            let _ = pump.join();
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Inbox {
    /// Makes the descriptor readable (once per batch).
    fn signal(&self, state: &mut InboxState) {
        if !state.signalled {
            // One byte at most is ever pending, so the non-blocking write
            // cannot find the buffer full; if it fails anyway, the host still
            // sees the messages at its next poll.
            state.signalled = matches!((&self.wake_write).write(&[1]), Ok(1));
        }
    }

    /// Empties the descriptor (the queue is empty and the connection open).
    fn drain(&self, state: &mut InboxState) {
        if state.signalled {
            let mut buffer = [0u8; 16];
            loop {
                match (&self.wake_read).read(&mut buffer) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(error) if error.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            state.signalled = false;
        }
    }
}

/// The pump thread: bridge messages into the inbox until the connection
/// ends.
fn pump(sender: &Sender, inbox: &Inbox) {
    loop {
        match sender.recv_timeout(PUMP_WAIT) {
            Ok(message) => {
                let mut state = lock(&inbox.state);
                match message {
                    BridgeMessage::SyncDone { serial } => {
                        // Only this library sends `sync`; an answer nobody waits
                        // for any more (the wait timed out) still closes the
                        // count of rejections.
                        let rejected = std::mem::take(&mut state.rejected_since_sync);
                        if let Some(done) = state.syncs.get_mut(&serial) {
                            *done = Some(rejected);
                        }
                    }
                    BridgeMessage::KeyHandled { serial, consumed }
                        if state.keys.contains_key(&serial) =>
                    {
                        state.keys.insert(serial, Some(consumed));
                    }
                    other => {
                        if matches!(other, BridgeMessage::Rejected { .. }) {
                            state.rejected_since_sync += 1;
                        }
                        state.queue.push_back(other);
                        inbox.signal(&mut state);
                    }
                }
                inbox.changed.notify_all();
            }
            Err(RecvError::Timeout) => {}
            Err(RecvError::Closed { reason }) => {
                let mut state = lock(&inbox.state);
                state.closed = Some(reason);
                inbox.signal(&mut state);
                inbox.changed.notify_all();
                return;
            }
        }
    }
}

fn closed_failure(message: String) -> Failure {
    Failure::new(NewtonStatus::Closed, message)
}

/// Locks a mutex, recovering from poisoning: no holder leaves the state
/// half-updated.
fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The messages' JSON, as on the wire in the JSON encoding
/// (docs/protocol.md §4.1): `{"action":{"surface":1,"request":{…}}}`.
pub fn message_json(message: &BridgeMessage) -> Result<String, Failure> {
    serde_json::to_string(message).map_err(|error| {
        Failure::new(
            NewtonStatus::Internal,
            format!("cannot write the bridge message as JSON: {error}"),
        )
    })
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Producer>();
}

/// A key kind from C (`NEWTON_KEY_PRESS` 0, `NEWTON_KEY_RELEASE` 1).
pub(crate) fn key_kind(kind: u32) -> Result<newton_push_protocol::KeyEventKind, Failure> {
    match kind {
        0 => Ok(newton_push_protocol::KeyEventKind::Press),
        1 => Ok(newton_push_protocol::KeyEventKind::Release),
        other => Err(Failure::new(
            NewtonStatus::InvalidArgument,
            format!("`kind` is {other}; pass NEWTON_KEY_PRESS (0) or NEWTON_KEY_RELEASE (1)"),
        )),
    }
}
