//! One bridged application: its own connection to the accessibility bus (libatspi
//! keys applications on the sender's unique name, and events must come from
//! the connection that serves the objects), its replica, and the loop that
//! answers every AT-SPI call from that replica.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};

use async_lock::MutexGuard as StateGuard;

use futures::StreamExt;
use newton_atspi_shim::{AppContext, DerivedModels, HostFacts};
use newton_cache::{AppReplica, ChangeSet, FrameKind, Limits, RejectError};
use newton_push_protocol::{AppInfo, BridgeMessage, SurfaceId};
use tracing::{debug, error, info, warn};
use zbus::message::{Message, Type as MessageType};

use crate::listeners::SharedListeners;
use crate::registry::{self, Desktop};
use crate::socket::SenderCredentials;

/// Mutable state of one application, behind its own lock so that one
/// application's work never waits on another's. The lock is asynchronous:
/// the heavy-call thread holds it for as long as a heavy call takes (it
/// reads the replica throughout), and the executor's thread, which answers
/// every other call and applies every commit, waits for it without
/// blocking ([`BridgedApp::lock_async`]), so the other applications are
/// served meanwhile.
pub struct AppState {
    pub replica: AppReplica,
    /// Text models and grids built by answers, kept for the next call on
    /// any thread while their surface does not change.
    pub models: DerivedModels,
    pub app_id: i32,
    pub desktop: Option<Desktop>,
}

/// The application's current connection to the accessibility bus (replaced
/// when the bus restarts).
struct Bus {
    conn: zbus::Connection,
    unique_name: String,
}

/// A call being answered on the heavy-call thread: its reply, if any.
type HeavyCall =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<(Message, bool)>> + Send>>;

/// Who an application is: its hello's identity and what the kernel says
/// about the connection it came on.
pub struct Identity {
    /// The hello's `app`, its pid taken out ([`SenderCredentials::from_hello`]).
    pub info: AppInfo,
    pub credentials: SenderCredentials,
}

/// A bridged application.
pub struct BridgedApp {
    /// The hello's identity. Its `pid` is always `None`: the process is
    /// [`credentials`](Self::credentials)' peer, the hello's pid only a claim.
    pub info: AppInfo,
    /// The sender's credentials from the kernel, and the hello's claimed pid.
    pub credentials: SenderCredentials,
    bus: Mutex<Bus>,
    state: async_lock::Mutex<AppState>,
    to_sender: async_channel::Sender<BridgeMessage>,
    listeners: SharedListeners,
    p2p: Mutex<Option<crate::p2p::P2pEndpoint>>,
    /// The tasks answering calls (bus and peer-to-peer connections). They
    /// hold the application; shutting down drops them, which ends those
    /// connections and frees the application.
    serving: Mutex<Vec<async_executor::Task<()>>>,
    /// The first bus connection's messages until `start_serving`.
    incoming: Mutex<Option<zbus::MessageStream>>,
    /// Actions dropped because the sender does not read (for rate-limited logging).
    dropped_actions: std::sync::atomic::AtomicU64,
    /// Calls whose answer panicked (for rate-limited logging: an AT decides
    /// how often it repeats a call).
    call_panics: std::sync::atomic::AtomicU64,
    /// Which error replies were logged (bounded; see [`ErrorReplyLog`]).
    error_replies: Mutex<ErrorReplyLog>,
    /// Bus connection losses (see [`BridgedApp::lost_bus`]).
    bus_watch: BusWatch,
}

/// What the application knows about its bus connection: which one is
/// current, whether it still serves, and where a loss is reported.
struct BusWatch {
    /// Bumped by every new bus connection; a loss names the generation it
    /// happened to, so a connection replaced on purpose is not "lost".
    generation: std::sync::atomic::AtomicU64,
    connected: std::sync::atomic::AtomicBool,
    /// Set by `shut_down`: the connection closes because the sender left.
    closing: std::sync::atomic::AtomicBool,
    lost_tx: async_channel::Sender<u64>,
    lost_rx: async_channel::Receiver<u64>,
    /// One reconnection at a time (a lost connection, a restarted bus).
    reconnecting: async_lock::Mutex<()>,
}

impl BusWatch {
    fn new() -> Self {
        let (lost_tx, lost_rx) = async_channel::bounded(4);
        Self {
            generation: std::sync::atomic::AtomicU64::new(0),
            connected: std::sync::atomic::AtomicBool::new(true),
            closing: std::sync::atomic::AtomicBool::new(false),
            lost_tx,
            lost_rx,
            reconnecting: async_lock::Mutex::new(()),
        }
    }
}

impl BridgedApp {
    /// Connects a fresh bus connection for the application.
    pub async fn connect(
        a11y_address: &str,
        identity: Identity,
        limits: Limits,
        budget: Arc<newton_cache::ByteBudget>,
        to_sender: async_channel::Sender<BridgeMessage>,
        listeners: SharedListeners,
        executor: &async_executor::Executor<'static>,
    ) -> Result<Arc<Self>, crate::a11y_bus::BusError> {
        let (bus, incoming) = open_bus(a11y_address, executor).await?;
        Ok(Self::new(
            bus, incoming, identity, limits, budget, to_sender, listeners,
        ))
    }

    /// The application on `bus`, whose calls wait in `incoming` until
    /// `start_serving`.
    fn new(
        bus: Bus,
        incoming: zbus::MessageStream,
        identity: Identity,
        limits: Limits,
        budget: Arc<newton_cache::ByteBudget>,
        to_sender: async_channel::Sender<BridgeMessage>,
        listeners: SharedListeners,
    ) -> Arc<Self> {
        let state = AppState {
            replica: AppReplica::with_shared_budget(limits, budget),
            models: DerivedModels::new(),
            app_id: 0,
            desktop: None,
        };
        let Identity { info, credentials } = identity;
        Arc::new(Self {
            info,
            credentials,
            bus: Mutex::new(bus),
            state: async_lock::Mutex::new(state),
            to_sender,
            listeners,
            p2p: Mutex::new(None),
            serving: Mutex::new(Vec::new()),
            incoming: Mutex::new(Some(incoming)),
            dropped_actions: std::sync::atomic::AtomicU64::new(0),
            call_panics: std::sync::atomic::AtomicU64::new(0),
            error_replies: Mutex::new(ErrorReplyLog::default()),
            bus_watch: BusWatch::new(),
        })
    }

    /// Starts answering calls on the bus connection made by `connect`
    /// (everything sent to it since it opened is waiting in its stream).
    pub fn start_serving(self: &Arc<Self>, executor: &async_executor::Executor<'static>) {
        let incoming = self
            .incoming
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(stream) = incoming {
            self.serve_bus_on(stream, executor);
        }
    }

    /// Offers a private peer-to-peer socket in `dir`, its clients admitted
    /// within `limits` (see `p2p`); on failure the application simply stays
    /// bus-only.
    pub fn offer_p2p(
        self: &Arc<Self>,
        dir: &std::path::Path,
        key: u64,
        limits: &crate::p2p::P2pLimits,
        executor: &Arc<async_executor::Executor<'static>>,
    ) {
        match crate::p2p::P2pEndpoint::bind(dir, key, self.clone(), limits, executor) {
            Ok(endpoint) => *self.p2p.lock().unwrap_or_else(|p| p.into_inner()) = Some(endpoint),
            Err(e) => {
                warn!(app = %self.info.name, "no peer-to-peer socket ({e}); calls go over the bus")
            }
        }
    }

    fn p2p_address(&self) -> Option<String> {
        self.p2p
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|e| e.address.clone())
    }

    /// This application's unique name on the accessibility bus.
    pub fn unique_name(&self) -> String {
        self.lock_bus().unique_name.clone()
    }

    /// The current bus connection (a cheap handle).
    pub fn conn(&self) -> zbus::Connection {
        self.lock_bus().conn.clone()
    }

    fn lock_bus(&self) -> MutexGuard<'_, Bus> {
        self.bus
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The accessibility bus restarted: connect again, answer calls on the
    /// new connection and embed again. The replica is kept as it is.
    pub async fn reconnect(
        self: &Arc<Self>,
        a11y_address: &str,
        executor: &async_executor::Executor<'static>,
    ) -> Result<(), crate::a11y_bus::BusError> {
        let _one_at_a_time = self.bus_watch.reconnecting.lock().await;
        self.replace_bus(a11y_address, executor).await
    }

    /// A new bus connection in place of the current one (closed, so its
    /// serving task ends and the registry drops it), served and embedded.
    async fn replace_bus(
        self: &Arc<Self>,
        a11y_address: &str,
        executor: &async_executor::Executor<'static>,
    ) -> Result<(), crate::a11y_bus::BusError> {
        let (bus, incoming) = open_bus(a11y_address, executor).await?;
        self.bus_watch
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let old = std::mem::replace(&mut *self.lock_bus(), bus);
        let _ = old.conn.close().await;
        self.lock_async().await.desktop = None;
        self.serve_bus_on(incoming, executor);
        self.bus_watch
            .connected
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Err(e) = self.embed().await {
            warn!(app = %self.info.name, "could not embed after reconnecting: {e}");
        }
        Ok(())
    }

    /// Whether the application's bus connection serves (false from the
    /// moment it was lost until a new one is embedded).
    pub fn bus_connected(&self) -> bool {
        self.bus_watch
            .connected
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until the application's bus connection is lost while it was
    /// current (the bus daemon dropped it, or the bus went away); returns
    /// that connection's generation. Replaced and shut-down connections are
    /// not reported.
    pub async fn lost_bus(&self) -> Option<u64> {
        self.bus_watch.lost_rx.recv().await.ok()
    }

    /// After [`lost_bus`](Self::lost_bus) reported `generation`: connects
    /// again and embeds, unless another reconnection (a restarted bus)
    /// already did. Retries with backoff (100 ms doubling to 5 s) until it
    /// succeeds or the application is shut down; returns the new bus name,
    /// or `None` when nothing was needed.
    pub async fn recover_bus(
        self: &Arc<Self>,
        generation: u64,
        a11y_address: impl Fn() -> String,
        executor: &async_executor::Executor<'static>,
    ) -> Option<String> {
        let mut delay = std::time::Duration::from_millis(100);
        let mut failures = 0u32;
        loop {
            {
                let _one_at_a_time = self.bus_watch.reconnecting.lock().await;
                if self.is_closing()
                    || self
                        .bus_watch
                        .generation
                        .load(std::sync::atomic::Ordering::SeqCst)
                        != generation
                {
                    return None;
                }
                match self.replace_bus(&a11y_address(), executor).await {
                    Ok(()) => return Some(self.unique_name()),
                    // The first failure at WARN; while the bus is away every
                    // application retries, and the control connection says so.
                    Err(e) if failures == 0 => warn!(
                        app = %self.info.name,
                        "could not connect to the accessibility bus again ({e}); retrying until it answers"
                    ),
                    Err(e) => debug!(app = %self.info.name, "still cannot connect: {e}"),
                }
                failures += 1;
            }
            async_io::Timer::after(delay).await;
            delay = (delay * 2).min(std::time::Duration::from_secs(5));
        }
    }

    fn is_closing(&self) -> bool {
        self.bus_watch
            .closing
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The state lock, waiting on the calling thread: for the heavy-call
    /// thread, and for what runs rarely (status, tests). On the executor's
    /// thread use [`lock_async`](Self::lock_async): a heavy call may hold
    /// the lock for hundreds of milliseconds. A panic while it was held (a
    /// bug, never expected) releases it; the replica is still consistent
    /// because the cache validates before it mutates.
    pub fn lock(&self) -> StateGuard<'_, AppState> {
        self.state.lock_blocking()
    }

    /// The state lock, waited for without blocking the executor's thread.
    pub async fn lock_async(&self) -> StateGuard<'_, AppState> {
        self.state.lock().await
    }

    /// Changes the replica with `f` under the lock, then drops the kept
    /// models the change made stale (a frame's surface, gone surfaces).
    fn change_replica<R>(state: &mut AppState, f: impl FnOnce(&mut AppReplica) -> R) -> R {
        let result = f(&mut state.replica);
        state.models.retain_current(&state.replica);
        result
    }

    /// Runs `f` with the shim's view of this application, its state locked
    /// by the caller.
    fn context_in<R>(&self, state: &AppState, f: impl FnOnce(&AppContext) -> R) -> R {
        let unique_name = self.unique_name();
        let context = AppContext {
            replica: &state.replica,
            info: &self.info,
            unique_name: &unique_name,
            desktop: state
                .desktop
                .as_ref()
                .map(|d| (d.bus_name.as_str(), d.path.as_str())),
            app_id: state.app_id,
            host: host_facts(),
            models: &state.models,
        };
        f(&context)
    }

    /// Registers with the registry; the dispatch loop must already run
    /// because the registry calls back (`Properties.Set` of `Application.Id`).
    pub async fn embed(&self) -> zbus::Result<()> {
        let desktop = registry::embed(&self.conn()).await?;
        info!(app = %self.info.name, bus = %self.unique_name(), "embedded in the desktop");
        self.lock_async().await.desktop = Some(desktop);
        Ok(())
    }

    /// Answers the calls arriving on `incoming` (a peer-to-peer client's
    /// stream, made before the connection started reading) until it closes
    /// or the application shuts down; `held` (the client's places in the
    /// connection limits) is dropped then.
    pub fn serve_on(
        self: &Arc<Self>,
        incoming: zbus::MessageStream,
        executor: &async_executor::Executor<'static>,
        held: impl Send + 'static,
    ) {
        let app = self.clone();
        let task = executor.spawn(async move {
            app.serve_calls(incoming).await;
            drop(held);
        });
        let mut serving = self.serving.lock().unwrap_or_else(|p| p.into_inner());
        serving.retain(|task| !task.is_finished());
        serving.push(task);
    }

    /// [`serve_on`](Self::serve_on) for the current bus connection: when its
    /// stream ends while it is still current and the application is not
    /// shutting down, the loss is reported to [`lost_bus`](Self::lost_bus).
    fn serve_bus_on(
        self: &Arc<Self>,
        incoming: zbus::MessageStream,
        executor: &async_executor::Executor<'static>,
    ) {
        let generation = self
            .bus_watch
            .generation
            .load(std::sync::atomic::Ordering::SeqCst);
        let app = self.clone();
        let task = executor.spawn(async move {
            app.clone().serve_calls(incoming).await;
            app.note_bus_closed(generation);
        });
        let mut serving = self.serving.lock().unwrap_or_else(|p| p.into_inner());
        serving.retain(|task| !task.is_finished());
        serving.push(task);
    }

    fn note_bus_closed(&self, generation: u64) {
        let current = self
            .bus_watch
            .generation
            .load(std::sync::atomic::Ordering::SeqCst);
        if current != generation || self.is_closing() {
            return;
        }
        self.bus_watch
            .connected
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let _ = self.bus_watch.lost_tx.try_send(generation);
    }

    /// Answers method calls from `stream` until its connection closes.
    /// Calls whose cost grows with the tree go to the heavy-call thread
    /// (`heavy.rs`), one at a time per connection; the calls after one are
    /// answered meanwhile (D-Bus matches replies by serial, not order).
    /// Which calls: those declared `heavy`, known from the header, and
    /// those declared `heavy over ESTIMATE` whose estimate on this replica
    /// is over the shim's `INLINE_WORK` (a `GetChildren` of a node with
    /// more than 2,000 children, not of one with ten), checked under the
    /// lock that then answers the call here if it stays. The lock is awaited,
    /// never waited for on the executor's thread: the heavy-call thread
    /// holds it while it answers.
    async fn serve_calls(self: Arc<Self>, mut stream: zbus::MessageStream) {
        let conn = zbus::Connection::from(&stream);
        let zbus_tasks = conn.executor().clone();
        let mut heavy_call: Option<HeavyCall> = None;
        loop {
            let message = match heavy_call.as_mut() {
                None => crate::driven::next_message(&mut stream, &zbus_tasks).await,
                Some(running) => {
                    let either = futures::future::select(stream.next(), running.as_mut());
                    match crate::driven::after_others(either).await {
                        futures::future::Either::Left((message, _)) => message,
                        futures::future::Either::Right((reply, _)) => {
                            heavy_call = None;
                            self.send_reply(&conn, reply).await;
                            continue;
                        }
                    }
                }
            };
            let Some(message) = message else { break };
            let Ok(message) = message else { continue };
            if message.message_type() != MessageType::MethodCall {
                continue;
            }
            if tracing::enabled!(tracing::Level::TRACE) {
                let header = message.header();
                tracing::trace!(
                    app = %self.info.name,
                    serial = header.primary().serial_num().get(),
                    member = header.member().map(|m| m.as_str()).unwrap_or(""),
                    path = header.path().map(|p| p.as_str()).unwrap_or(""),
                    "call"
                );
            }
            // Heavy by declaration (no lock needed to know), or by the work
            // it would do on this replica (estimated under the lock, which
            // then answers it here if it is not).
            let inline = if crate::heavy::is_heavy(&message) {
                None
            } else if crate::p2p::is_bus_address_query(&message) {
                Some(self.answer(&message))
            } else {
                let state = self.lock_async().await;
                let heavy_here = self.context_in(&state, |context| {
                    newton_atspi_shim::dispatch::is_heavy_here(context, &message)
                });
                (!heavy_here).then(|| self.answer_in(state, &message))
            };
            if let Some(reply) = inline {
                self.send_reply(&conn, reply).await;
                continue;
            }
            // One heavy call per connection: the next waits for the last.
            if let Some(previous) = heavy_call.take() {
                let reply = previous.await;
                self.send_reply(&conn, reply).await;
            }
            let app = self.clone();
            heavy_call = Some(Box::pin(async move {
                crate::heavy::run(move || app.answer(&message))
                    .await
                    .flatten()
            }));
        }
    }

    async fn send_reply(&self, conn: &zbus::Connection, answer: Option<(Message, bool)>) {
        let Some(reply) = answer.filter(|(_, wanted)| *wanted).map(|(reply, _)| reply) else {
            return;
        };
        if let Err(e) = conn.send(&reply).await {
            debug!("could not send a reply: {e}");
        }
        tracing::trace!(app = %self.info.name, "replied");
    }

    /// Computes the reply to one call from the replica; routes any action
    /// request to the sender without waiting for it. Takes the state lock
    /// on the calling thread (the heavy-call thread; the executor's uses
    /// [`answer_in`](Self::answer_in) with the lock it awaited).
    fn answer(&self, call: &Message) -> Option<(Message, bool)> {
        if crate::p2p::is_bus_address_query(call) {
            let address = self.p2p_address().unwrap_or_default();
            let reply = newton_atspi_shim::reply::method_return(call, &(address.as_str(),)).ok()?;
            return Some((reply, true));
        }
        self.answer_in(self.lock(), call)
    }

    /// [`answer`](Self::answer) with the state locked by the caller.
    fn answer_in(
        &self,
        mut state: StateGuard<'_, AppState>,
        call: &Message,
    ) -> Option<(Message, bool)> {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.context_in(&state, |context| {
                newton_atspi_shim::dispatch::handle_call(context, call)
            })
        }));
        let handled = match outcome {
            Ok(handled) => handled?,
            Err(_) => {
                let panics = self
                    .call_panics
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    + 1;
                // Answering only reads the replica: nothing to reset. Log 1, 2, 4, … times.
                if panics.is_power_of_two() {
                    error!(app = %self.info.name, panics, "internal error while answering a call; replying Failed");
                }
                let failure =
                    newton_atspi_shim::CallError::Failed("internal error in the bridge".into());
                return newton_atspi_shim::dispatch::error_reply(call, &failure)
                    .map(|reply| (reply, true));
            }
        };
        if handled.reply.message_type() == MessageType::Error {
            self.log_error_reply(call, &handled.reply);
        }
        if let Some(app_id) = handled.set_app_id {
            state.app_id = app_id;
        }
        drop(state);
        if let Some(request) = handled.action {
            self.route_action(call, request);
        }
        Some((handled.reply, handled.reply_wanted))
    }

    /// Logs, at debug level, a call answered with an error: the member, interface and object,
    /// and the error. This is how a member an AT needs and the bridge does not serve (or
    /// refuses) shows up in the bridge's log. Each (interface, member, error) is logged once;
    /// the AT decides how many calls come, not the log's size ([`ErrorReplyLog`]).
    fn log_error_reply(&self, call: &Message, reply: &Message) {
        let call_header = call.header();
        let reply_header = reply.header();
        let interface = call_header.interface().map(|i| i.as_str()).unwrap_or("");
        let member = call_header.member().map(|m| m.as_str()).unwrap_or("");
        let error = reply_header.error_name().map(|e| e.as_str()).unwrap_or("");
        let verdict = self
            .error_replies
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .note(interface, member, error);
        match verdict {
            ErrorLogVerdict::First => debug!(
                app = %self.info.name,
                interface,
                member,
                path = call_header.path().map(|p| p.as_str()).unwrap_or(""),
                error,
                "answered a call with an error (first of its kind)"
            ),
            ErrorLogVerdict::Overflow(count) => debug!(
                app = %self.info.name,
                count,
                interface,
                member,
                error,
                "answered a call with an error (too many kinds to log each)"
            ),
            ErrorLogVerdict::Quiet => {}
        }
    }

    fn route_action(&self, call: &Message, request: accesskit::ActionRequest) {
        let header = call.header();
        let address = header
            .path()
            .and_then(|p| newton_atspi_shim::paths::parse(p.as_str()));
        let Some(newton_atspi_shim::paths::ObjectAddress::Node { surface, .. }) = address else {
            warn!("action request on an object with no surface; dropped");
            return;
        };
        // Never block the AT on a slow sender: a full queue drops the action.
        if let Err(e) = self
            .to_sender
            .try_send(BridgeMessage::Action { surface, request })
        {
            let dropped = self
                .dropped_actions
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            // An AT controls how many actions it sends: log 1, 2, 4, 8, … drops.
            if dropped.is_power_of_two() {
                warn!(app = %self.info.name, dropped, "actions not delivered to the sender: {e}");
            }
        }
    }

    /// Sends, in order, the signals someone listens for (and those libatspi
    /// always needs); failures are logged, never fatal.
    pub async fn emit(&self, signals: Vec<Message>) {
        let conn = self.conn();
        for signal in signals.into_iter().filter(|s| self.listeners.wants(s)) {
            if let Err(e) = conn.send(&signal).await {
                debug!("could not emit a signal: {e}");
            }
        }
    }

    /// Builds the AT-SPI events for applied change sets, skipping those no
    /// listener wants before they are built.
    fn events_in(&self, state: &AppState, changes: &[ChangeSet]) -> Vec<Message> {
        let listeners = self.listeners.lock().clone();
        self.context_in(state, |context| {
            changes
                .iter()
                .flat_map(|set| {
                    newton_atspi_shim::events::events_for_listeners(context, set, &listeners)
                })
                .collect()
        })
    }

    /// Applies one commit and emits its events; a rejection is returned for
    /// the sender and leaves the replica as it was. A full tree is validated
    /// and built off the lock (and off the executor's thread), so queries keep
    /// being answered from the previous state while a big tree attaches.
    pub async fn commit(
        &self,
        surface: SurfaceId,
        updates: Vec<accesskit::TreeUpdate>,
        bytes: usize,
    ) -> Result<(), RejectError> {
        if crate::fault::close_bus_armed(&updates) {
            // Test hook (debug builds): the bus connection goes away under
            // the application, as when the bus daemon drops it.
            let _ = self.conn().close().await;
        }
        let full = {
            let state = self.lock_async().await;
            state
                .replica
                .is_full_replacement(surface, &updates)
                .then(|| *state.replica.limits())
        };
        let signals = if let Some(limits) = full {
            let prepared = blocking::unblock(move || {
                // Test hook (debug builds): a panic on the blocking thread
                // resumes in this future, where the caller contains it.
                crate::fault::panic_if_armed(&updates);
                newton_cache::app::prepare_full_tree(&limits, surface, updates, bytes)
            })
            .await;
            let mut state = self.lock_async().await;
            match prepared {
                Ok(prepared) => {
                    let changes =
                        Self::change_replica(&mut state, |replica| replica.install(prepared))?;
                    self.commit_events(&state, changes)
                }
                Err(error) => {
                    state.replica.note_rejected(surface);
                    return Err(error);
                }
            }
        } else {
            let mut state = self.lock_async().await;
            let changes = Self::change_replica(&mut state, |replica| {
                // Test hook (debug builds): a panic under the lock.
                crate::fault::panic_if_armed(&updates);
                replica.commit(surface, updates, bytes)
            })?;
            self.commit_events(&state, changes)
        };
        self.emit(signals).await;
        Ok(())
    }

    /// Events of an applied commit. A surface the compositor focused before
    /// it had a tree (senders announce focus first) is activated once its
    /// first tree exists: its objects are announced, then Window:Activate,
    /// active and focused, the order Orca needs.
    fn commit_events(&self, state: &AppState, mut changes: ChangeSet) -> Vec<Message> {
        let fresh_tree = matches!(changes.kind, FrameKind::Created | FrameKind::Replaced);
        let focused = state
            .replica
            .surface(changes.surface)
            .is_some_and(|s| s.is_focused());
        if !(fresh_tree && focused) {
            return self.events_in(state, std::slice::from_ref(&changes));
        }
        changes.focus = None;
        let mut signals = self.events_in(state, std::slice::from_ref(&changes));
        signals.extend(self.context_in(state, |context| {
            newton_atspi_shim::events::focus_events(context, changes.surface, true)
        }));
        signals
    }

    /// Whether the sender must resend a full tree for the surface.
    pub async fn needs_resync(&self, surface: SurfaceId) -> bool {
        self.lock_async()
            .await
            .replica
            .surface(surface)
            .is_some_and(|s| s.awaiting_resync())
    }

    /// The compositor moved keyboard focus to `surface` (or away from this app).
    pub async fn set_focus(&self, surface: Option<SurfaceId>) -> Result<(), RejectError> {
        let signals = {
            let mut state = self.lock_async().await;
            let changes = state.replica.set_focused_surface(surface)?;
            // Window (de)activation, active and focused states, each once and in
            // the order Orca needs, plus the surfaces' other changes.
            self.context_in(&state, |context| {
                newton_atspi_shim::events::compositor_focus_events(context, &changes)
            })
        };
        self.emit(signals).await;
        Ok(())
    }

    pub async fn destroy_surface(&self, surface: SurfaceId) -> Result<(), RejectError> {
        let signals = {
            let mut state = self.lock_async().await;
            let changes =
                Self::change_replica(&mut state, |replica| replica.destroy_surface(surface))?;
            self.events_in(&state, std::slice::from_ref(&changes))
        };
        self.emit(signals).await;
        Ok(())
    }

    /// After a panic inside this application's handling: drops every tree
    /// (the replica may be half-updated), keeps the surfaces, the bus
    /// connection and the desktop registration, tells ATs the windows went
    /// away. Returns the surfaces, each of which now needs a full tree from
    /// the sender.
    pub async fn reset_after_panic(&self) -> Vec<SurfaceId> {
        let mut state = self.lock_async().await;
        let removed = catch_unwind(AssertUnwindSafe(|| {
            let changes = Self::change_replica(&mut state, AppReplica::reset);
            self.events_in(&state, &changes)
        }));
        drop(state);
        // `reset` swaps the surfaces before walking the old trees: even if
        // announcing the removal failed, the replica is empty and sound.
        let signals = removed.unwrap_or_else(|_| {
            error!(app = %self.info.name, "could not announce the reset windows' removal; ATs may hold stale objects until they ask again");
            Vec::new()
        });
        self.emit(signals).await;
        info!(app = %self.info.name, "application reset; waiting for full trees");
        let state = self.lock_async().await;
        state.replica.surfaces().map(|s| s.id()).collect()
    }

    /// The sender left: announce every object's removal, then leave the desktop.
    /// Once only: at shutdown the daemon removes the applications whose
    /// session did not get to it, which may be under way meanwhile.
    pub async fn shut_down(&self) {
        if self
            .bus_watch
            .closing
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        self.bus_watch.lost_tx.close();
        self.p2p.lock().unwrap_or_else(|p| p.into_inner()).take();
        let signals = {
            let mut state = self.lock_async().await;
            let changes = Self::change_replica(&mut state, AppReplica::clear);
            self.events_in(&state, &changes)
        };
        self.emit(signals).await;
        if let Err(e) = registry::unembed(&self.conn()).await {
            debug!("unembed failed (the registry drops us on disconnect anyway): {e}");
        }
        let serving = std::mem::take(&mut *self.serving.lock().unwrap_or_else(|p| p.into_inner()));
        drop(serving);
        if let Err(e) = self.conn().close().await {
            debug!("closing the bus connection: {e}");
        }
        info!(app = %self.info.name, "application removed");
    }
}

impl BridgedApp {
    /// Tells the sender, for every surface, whether updates are wanted.
    pub fn announce_wanted(&self, wanted: bool) {
        let surfaces: Vec<SurfaceId> = self.lock().replica.surfaces().map(|s| s.id()).collect();
        for surface in surfaces {
            self.notify_sender(wanted_message(surface, wanted));
        }
    }

    /// Queues a message for the sender without waiting; a full queue (a
    /// sender that stopped reading) drops it with a log line. A closed one
    /// means the sender's session is ending: its queue was flushed already.
    pub fn notify_sender(&self, message: BridgeMessage) {
        match self.to_sender.try_send(message) {
            Ok(()) => {}
            Err(async_channel::TrySendError::Closed(_)) => {
                debug!(app = %self.info.name, "message not delivered: the sender's session is ending");
            }
            Err(e) => warn!(app = %self.info.name, "message not delivered to the sender: {e}"),
        }
    }
}

/// `UpdatesWanted` or `UpdatesUnwanted` for a surface.
pub fn wanted_message(surface: SurfaceId, wanted: bool) -> BridgeMessage {
    if wanted {
        BridgeMessage::UpdatesWanted { surface }
    } else {
        BridgeMessage::UpdatesUnwanted { surface }
    }
}

/// A new bus connection and the stream that receives everything sent to it.
async fn open_bus(
    a11y_address: &str,
    executor: &async_executor::Executor<'static>,
) -> Result<(Bus, zbus::MessageStream), crate::a11y_bus::BusError> {
    let stream = crate::a11y_bus::connect_with_stream(a11y_address, executor).await?;
    let conn = zbus::Connection::from(&stream);
    let unique_name = conn
        .unique_name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    Ok((Bus { conn, unique_name }, stream))
}

/// What to log for one error reply.
#[derive(Debug, PartialEq, Eq)]
enum ErrorLogVerdict {
    /// The first error reply of this (interface, member, error): log it.
    First,
    /// The kinds are no longer tracked; this is the n-th untracked reply, n a power of two.
    Overflow(u64),
    /// Already logged, or an untracked reply whose count is not a power of two.
    Quiet,
}

/// Remembers which kinds of error reply — (interface, member, error name) — were logged, up to
/// [`ErrorReplyLog::MAX_KINDS`] kinds (member names come from the AT, so their number is not
/// the bridge's to bound otherwise); past that, replies of new kinds are counted and logged at
/// the 1st, 2nd, 4th, 8th, … one.
#[derive(Debug, Default)]
struct ErrorReplyLog {
    kinds: std::collections::HashSet<(String, String, String)>,
    untracked: u64,
}

impl ErrorReplyLog {
    const MAX_KINDS: usize = 128;

    fn note(&mut self, interface: &str, member: &str, error: &str) -> ErrorLogVerdict {
        let key = (interface.to_owned(), member.to_owned(), error.to_owned());
        if self.kinds.contains(&key) {
            return ErrorLogVerdict::Quiet;
        }
        if self.kinds.len() < Self::MAX_KINDS {
            self.kinds.insert(key);
            return ErrorLogVerdict::First;
        }
        self.untracked += 1;
        if self.untracked.is_power_of_two() {
            ErrorLogVerdict::Overflow(self.untracked)
        } else {
            ErrorLogVerdict::Quiet
        }
    }
}

/// The session locale and machine id the shim answers with, read once from
/// the daemon's environment and the machine-id files (the shim reads neither).
pub fn host_facts() -> &'static HostFacts {
    static HOST: std::sync::OnceLock<HostFacts> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        use newton_atspi_shim::host::{LOCALE_VARIABLES, MACHINE_ID_FILES};
        HostFacts::new(
            LOCALE_VARIABLES.iter().map(|var| std::env::var(var).ok()),
            MACHINE_ID_FILES
                .iter()
                .filter_map(|path| std::fs::read_to_string(path).ok()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{ErrorLogVerdict, ErrorReplyLog};

    /// Calls answered by a served application: how a call is routed.
    mod routing {
        use std::sync::Arc;
        use std::time::Duration;

        use async_executor::Executor;
        use futures::StreamExt;
        use newton_atspi_shim::paths::{CACHE_PATH, ROOT_PATH};
        use zbus::message::{Message, Type as MessageType};

        use super::super::{BridgedApp, Bus};

        /// Bound of every wait: nothing here should take more than a moment.
        const WAIT: Duration = Duration::from_secs(30);

        /// An application answering on one peer-to-peer connection (in place
        /// of its bus connection, served the same way), with a peer-to-peer
        /// socket of its own in `dir`, and a client connection to it.
        async fn served_app(
            executor: &Arc<Executor<'static>>,
            dir: &std::path::Path,
        ) -> (Arc<BridgedApp>, zbus::Connection) {
            served_app_within(executor, dir, &crate::p2p::P2pLimits::default()).await
        }

        /// [`served_app`] with its peer-to-peer clients admitted within `limits`.
        async fn served_app_within(
            executor: &Arc<Executor<'static>>,
            dir: &std::path::Path,
            limits: &crate::p2p::P2pLimits,
        ) -> (Arc<BridgedApp>, zbus::Connection) {
            let (incoming, client) = crate::driven::test_support::p2p_pair().await;
            let conn = zbus::Connection::from(&incoming);
            crate::driven::drive(&conn, executor);
            let bus = Bus {
                conn,
                unique_name: String::new(),
            };
            let app = BridgedApp::new(
                bus,
                incoming,
                super::super::Identity {
                    info: newton_push_protocol::AppInfo {
                        app_id: "routing.test".into(),
                        name: "Routing test".into(),
                        pid: None,
                        toolkit_name: None,
                        toolkit_version: None,
                    },
                    credentials: Default::default(),
                },
                newton_cache::Limits::default(),
                Arc::new(newton_cache::ByteBudget::default()),
                async_channel::bounded(8).0,
                crate::listeners::SharedListeners::default(),
            );
            app.start_serving(executor);
            app.offer_p2p(dir, 1, limits, executor);
            (app, client)
        }

        /// A call as a client may send it: without an interface field.
        fn without_interface(path: &str, member: &str) -> Message {
            Message::method_call(path, member)
                .expect("valid path and member")
                .build(&())
                .expect("the call builds")
        }

        async fn next_reply(replies: &mut zbus::MessageStream) -> Message {
            let reply = async {
                loop {
                    match replies.next().await {
                        Some(Ok(m)) if m.message_type() != MessageType::MethodCall => {
                            return Some(m)
                        }
                        Some(_) => continue,
                        None => return None,
                    }
                }
            };
            let timeout = async {
                async_io::Timer::after(WAIT).await;
                None
            };
            futures::future::select(std::pin::pin!(reply), std::pin::pin!(timeout))
                .await
                .factor_first()
                .0
                .expect("a reply within the wait")
        }

        fn answers(reply: &Message, call: &Message) -> bool {
            reply.header().reply_serial() == Some(call.primary_header().serial_num())
        }

        /// A temporary directory for the application's peer-to-peer socket.
        struct TempDir(std::path::PathBuf);

        impl TempDir {
            fn new(name: &str) -> Self {
                let dir = std::env::temp_dir()
                    .join(format!("newton-bridge-{name}-{}", std::process::id()));
                std::fs::create_dir_all(&dir).expect("a temporary directory");
                Self(dir)
            }
        }

        impl Drop for TempDir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }

        /// `Application.GetApplicationBusAddress` without an interface field
        /// is the bridge's to answer (the shim would say "").
        #[test]
        fn the_bus_address_query_without_an_interface_field_answers_the_p2p_address() {
            let dir = TempDir::new("bus-address");
            let executor = Arc::new(Executor::new());
            async_io::block_on(crate::driven::run(&executor, async {
                let (app, client) = served_app(&executor, &dir.0).await;
                let offered = app.p2p_address().expect("a peer-to-peer socket");
                let mut replies = zbus::MessageStream::from(&client);
                let ask = without_interface(ROOT_PATH, "GetApplicationBusAddress");
                client.send(&ask).await.expect("the call is sent");
                let reply = next_reply(&mut replies).await;
                assert!(answers(&reply, &ask));
                assert_eq!(reply.message_type(), MessageType::MethodReturn);
                let (address,): (String,) = reply.body().deserialize().expect("a string");
                assert_eq!(address, offered);
            }));
        }

        /// A process beyond its peer-to-peer limit is closed at accept, and
        /// a place comes back when one of its connections closes.
        #[test]
        fn a_process_beyond_its_peer_to_peer_limit_is_closed_until_a_place_is_free() {
            let dir = TempDir::new("p2p-limits");
            let executor = Arc::new(Executor::new());
            async_io::block_on(crate::driven::run(&executor, async {
                let limits = crate::p2p::P2pLimits::new(10, 10, 2);
                let (app, _client) = served_app_within(&executor, &dir.0, &limits).await;
                let address = app.p2p_address().expect("a peer-to-peer socket");
                let connect = || async {
                    zbus::connection::Builder::address(address.as_str())?
                        .p2p()
                        .build()
                        .await
                };
                let first = connect().await.expect("the first connection");
                let _second = connect().await.expect("the second connection");
                assert!(
                    connect().await.is_err(),
                    "a third connection of this process must be closed"
                );
                first.close().await.expect("the first connection closes");
                let deadline = std::time::Instant::now() + WAIT;
                while connect().await.is_err() {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the closed connection's place never came back"
                    );
                    async_io::Timer::after(Duration::from_millis(10)).await;
                }
            }));
        }

        /// `Cache.GetItems` without an interface field waits for the
        /// heavy-call thread: while a job holds that thread, a later cheap
        /// call on the same connection is answered first.
        #[test]
        fn a_heavy_call_without_an_interface_field_is_answered_on_the_heavy_call_thread() {
            let dir = TempDir::new("heavy-routing");
            let executor = Arc::new(Executor::new());
            async_io::block_on(crate::driven::run(&executor, async {
                let (_app, client) = served_app(&executor, &dir.0).await;
                let mut replies = zbus::MessageStream::from(&client);
                let (started_tx, started_rx) = async_channel::bounded(1);
                let (release_tx, release_rx) = async_channel::bounded::<()>(1);
                let holder = executor.spawn(crate::heavy::run(move || {
                    let _ = started_tx.send_blocking(());
                    let _ = release_rx.recv_blocking();
                }));
                started_rx
                    .recv()
                    .await
                    .expect("the heavy-call thread runs the holding job");

                let items = without_interface(CACHE_PATH, "GetItems");
                let role = without_interface(ROOT_PATH, "GetRole");
                client.send(&items).await.expect("GetItems is sent");
                client.send(&role).await.expect("GetRole is sent");
                let first = next_reply(&mut replies).await;
                assert!(
                    answers(&first, &role),
                    "GetItems without an interface field was answered before GetRole, \
                     although the heavy-call thread was held: it ran on the executor"
                );

                release_tx.send(()).await.expect("the holding job waits");
                holder.await;
                let second = next_reply(&mut replies).await;
                assert!(answers(&second, &items));
                assert_eq!(second.message_type(), MessageType::MethodReturn);
            }));
        }
    }

    #[test]
    fn each_kind_of_error_reply_is_logged_once() {
        let mut log = ErrorReplyLog::default();
        let unknown = "org.freedesktop.DBus.Error.UnknownMethod";
        assert_eq!(
            log.note("org.a11y.atspi.Text", "Nope", unknown),
            ErrorLogVerdict::First
        );
        assert_eq!(
            log.note("org.a11y.atspi.Text", "Nope", unknown),
            ErrorLogVerdict::Quiet
        );
        // Another member, interface or error is another kind.
        assert_eq!(
            log.note("org.a11y.atspi.Text", "Nah", unknown),
            ErrorLogVerdict::First
        );
        assert_eq!(
            log.note("org.a11y.atspi.Table", "Nope", unknown),
            ErrorLogVerdict::First
        );
        assert_eq!(
            log.note(
                "org.a11y.atspi.Text",
                "Nope",
                "org.freedesktop.DBus.Error.InvalidArgs"
            ),
            ErrorLogVerdict::First
        );
    }

    #[test]
    fn an_at_inventing_members_cannot_grow_the_log() {
        let mut log = ErrorReplyLog::default();
        let mut logged = 0;
        for i in 0..10_000u32 {
            let member = format!("Invented{i}");
            if log.note("org.a11y.atspi.Accessible", &member, "e") != ErrorLogVerdict::Quiet {
                logged += 1;
            }
        }
        // 128 kinds, then the 1st, 2nd, 4th, …, 8192nd of the 9872 untracked ones.
        assert_eq!(log.kinds.len(), ErrorReplyLog::MAX_KINDS);
        assert_eq!(logged, ErrorReplyLog::MAX_KINDS + 14);
        assert_eq!(
            log.note("org.a11y.atspi.Accessible", "Invented0", "e"),
            ErrorLogVerdict::Quiet
        );
    }
}
