//! The process's one connection to the bridge: the windows' state behind
//! one lock, a writer thread that owns the socket's writes (so only it can
//! block on a bridge that does not read), and a reader thread that turns
//! bridge messages into handler calls.
//!
//! Handlers are never called with the lock held: a handler may call back
//! into the adapter.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use accesskit::{ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, TreeUpdate};
use newton_producer::{Backoff, RecvError, SendError, Sender};
use newton_push_protocol::{
    default_socket_path, BridgeMessage, Encoding, Geometry, Hello, KeyEvent, SenderMessage,
    SurfaceId, PROTOCOL_VERSION,
};

use crate::{AdapterStats, KEY_WAIT, MAX_QUEUED_UPDATES, MAX_RECONNECT_DELAY};

/// First backoff bound: the first retry waits 50–100 ms (jittered).
const MIN_RECONNECT_DELAY: Duration = Duration::from_millis(100);
/// Keys waiting to be written; beyond it a key is not forwarded.
const MAX_QUEUED_KEYS: usize = 64;
/// How often a connection to the in-process bridge checks whether the
/// session's bridge listens (and the longest the writer waits idle): half of
/// it is the average delay before an application moves to a bridge that
/// started.
const LEAVE_CHECK_INTERVAL: Duration = Duration::from_millis(500);
/// Longest wait between two checks of a session bridge that listens but did
/// not take this application.
#[cfg(feature = "in-process-bridge")]
const MAX_LEAVE_CHECK_DELAY: Duration = Duration::from_secs(30);

/// A window's three handlers, each behind its own lock.
pub(crate) struct Handlers {
    activation: Mutex<Box<dyn ActivationHandler + Send>>,
    action: Mutex<Box<dyn ActionHandler + Send>>,
    deactivation: Mutex<Box<dyn DeactivationHandler + Send>>,
}

impl Handlers {
    pub(crate) fn new(
        activation: impl 'static + ActivationHandler + Send,
        action: impl 'static + ActionHandler + Send,
        deactivation: impl 'static + DeactivationHandler + Send,
    ) -> Arc<Self> {
        Arc::new(Self {
            activation: Mutex::new(Box::new(activation)),
            action: Mutex::new(Box::new(action)),
            deactivation: Mutex::new(Box::new(deactivation)),
        })
    }
}

/// Where a window stands with the bridge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activity {
    /// No AT wants the tree (or no bridge): build nothing.
    Inactive,
    /// A full tree is due: the writer thread asks the activation handler.
    /// Updates are not built meanwhile.
    NeedsInitialTree,
    /// The activation handler is being asked.
    Requesting,
    /// The activation handler returned `None`: the next factory's update
    /// is the full tree.
    Pending,
    /// Updates flow.
    Active,
}

struct Window {
    title: Option<String>,
    handlers: Arc<Handlers>,
    activity: Activity,
    /// Bumped at every change of `activity`, so work done off the lock can
    /// tell whether it is still current.
    epoch: u64,
    queue: Vec<TreeUpdate>,
    on_bridge: bool,
    geometry: Option<Geometry>,
    geometry_dirty: bool,
    removed: bool,
    stats: AdapterStats,
}

impl Window {
    fn set_activity(&mut self, activity: Activity) {
        self.activity = activity;
        self.epoch += 1;
    }
}

#[derive(Default)]
struct Shared {
    windows: BTreeMap<SurfaceId, Window>,
    next_surface: u32,
    focused: Option<SurfaceId>,
    focus_dirty: bool,
    connected: Option<Arc<Sender>>,
    key_events: bool,
    keys: VecDeque<(u64, KeyEvent)>,
    key_waiters: HashMap<u64, mpsc::SyncSender<bool>>,
    next_key_serial: u64,
    /// A key went unanswered: do not wait for the next ones until an
    /// answer arrives.
    keys_unanswered: bool,
}

/// What the writer thread does next, taken from `Shared` under the lock
/// and done without it.
enum Work {
    Create(SurfaceId, Option<String>),
    Destroy(SurfaceId),
    Geometry(SurfaceId, Geometry),
    Focus(Option<SurfaceId>),
    Updates(SurfaceId, Vec<TreeUpdate>),
    Key(u64, KeyEvent),
    Activate(SurfaceId, u64, Arc<Handlers>),
}

pub(crate) struct Process {
    shared: Mutex<Shared>,
    wake: Condvar,
}

static PROCESS: OnceLock<Arc<Process>> = OnceLock::new();

impl Process {
    /// The process's connection, started at first use.
    pub(crate) fn get() -> Arc<Process> {
        PROCESS
            .get_or_init(|| {
                let process = Arc::new(Process {
                    shared: Mutex::new(Shared {
                        next_surface: 1,
                        next_key_serial: 1,
                        ..Shared::default()
                    }),
                    wake: Condvar::new(),
                });
                let writer = process.clone();
                let spawned = std::thread::Builder::new()
                    .name("newton-accesskit".into())
                    .spawn(move || writer.run());
                if let Err(error) = spawned {
                    eprintln!(
                        "newton-accesskit: cannot start the adapter thread ({error}); \
                         this application stays invisible to screen readers"
                    );
                }
                process
            })
            .clone()
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn add_window(&self, title: Option<String>, handlers: Arc<Handlers>) -> SurfaceId {
        let mut shared = self.lock();
        let surface = SurfaceId(shared.next_surface);
        shared.next_surface += 1;
        shared.windows.insert(
            surface,
            Window {
                title,
                handlers,
                activity: Activity::Inactive,
                epoch: 0,
                queue: Vec::new(),
                on_bridge: false,
                geometry: None,
                geometry_dirty: false,
                removed: false,
                stats: AdapterStats::default(),
            },
        );
        self.wake.notify_all();
        surface
    }

    pub(crate) fn remove_window(&self, surface: SurfaceId) {
        let mut shared = self.lock();
        if shared.focused == Some(surface) {
            shared.focused = None;
            shared.focus_dirty = true;
        }
        let Some(window) = shared.windows.get_mut(&surface) else {
            return;
        };
        if window.on_bridge {
            window.removed = true;
            window.queue.clear();
        } else {
            shared.windows.remove(&surface);
        }
        self.wake.notify_all();
    }

    pub(crate) fn update_if_active(
        &self,
        surface: SurfaceId,
        update_factory: impl FnOnce() -> TreeUpdate,
    ) {
        let epoch = {
            let mut shared = self.lock();
            let Some(window) = shared.windows.get_mut(&surface) else {
                return;
            };
            // While the activation handler is being asked, the toolkit may
            // already answer it from its UI thread (accesskit_winit's handler
            // posts an event and returns `None`): that update is built too.
            if !matches!(
                window.activity,
                Activity::Active | Activity::Pending | Activity::Requesting
            ) {
                window.stats.updates_skipped += 1;
                return;
            }
            window.epoch
        };
        // Toolkit code runs without the lock.
        let update = update_factory();
        let mut shared = self.lock();
        let Some(window) = shared.windows.get_mut(&surface) else {
            return;
        };
        window.stats.updates_built += 1;
        let awaits_full_tree = matches!(window.activity, Activity::Pending | Activity::Requesting);
        if window.epoch != epoch && !(awaits_full_tree && update.tree.is_some()) {
            // Deactivated or resynced meanwhile: a full tree will be asked
            // for. (A full tree is never stale for a window awaiting one,
            // e.g. when the handler returned `None` while it was built.)
            return;
        }
        match window.activity {
            // The toolkit has not yet acted on the request for a full tree
            // (e.g. an update raced the activation event): a partial update
            // cannot start a tree, and the full tree will carry its change.
            Activity::Pending | Activity::Requesting if update.tree.is_none() => {}
            // A full tree while the handler is still being asked is the
            // toolkit's answer arriving first: it starts the tree, and the
            // handler's return (epoch moved on) is ignored. Waiting for the
            // handler to return `None` first would drop this tree for good.
            Activity::Pending | Activity::Requesting => {
                window.queue = vec![update];
                window.set_activity(Activity::Active);
            }
            Activity::Active if window.queue.len() >= MAX_QUEUED_UPDATES => {
                // The bridge is not reading: drop the backlog, build nothing
                // more, and send one full tree once it reads again.
                window.queue.clear();
                window.stats.collapses += 1;
                window.set_activity(Activity::NeedsInitialTree);
            }
            Activity::Active => {
                window.queue.push(update);
                window.stats.max_queued = window.stats.max_queued.max(window.queue.len());
            }
            _ => {}
        }
        self.wake.notify_all();
    }

    pub(crate) fn set_focus(&self, surface: SurfaceId, is_focused: bool) {
        let mut shared = self.lock();
        let focused = match (is_focused, shared.focused) {
            (true, _) => Some(surface),
            (false, Some(current)) if current == surface => None,
            (false, other) => other,
        };
        if focused != shared.focused {
            shared.focused = focused;
            shared.focus_dirty = true;
            self.wake.notify_all();
        }
    }

    pub(crate) fn set_geometry(&self, surface: SurfaceId, geometry: Geometry) {
        let mut shared = self.lock();
        if let Some(window) = shared.windows.get_mut(&surface) {
            if window.geometry != Some(geometry) {
                window.geometry = Some(geometry);
                window.geometry_dirty = true;
                self.wake.notify_all();
            }
        }
    }

    pub(crate) fn is_active(&self, surface: SurfaceId) -> bool {
        self.lock()
            .windows
            .get(&surface)
            .is_some_and(|w| w.activity != Activity::Inactive)
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.lock().connected.is_some()
    }

    pub(crate) fn stats(&self, surface: SurfaceId) -> AdapterStats {
        self.lock()
            .windows
            .get(&surface)
            .map(|w| w.stats)
            .unwrap_or_default()
    }

    pub(crate) fn total_stats(&self) -> AdapterStats {
        self.lock()
            .windows
            .values()
            .fold(AdapterStats::default(), |total, w| AdapterStats {
                updates_built: total.updates_built + w.stats.updates_built,
                updates_skipped: total.updates_skipped + w.stats.updates_skipped,
                max_queued: total.max_queued.max(w.stats.max_queued),
                collapses: total.collapses + w.stats.collapses,
                updates_sent: total.updates_sent + w.stats.updates_sent,
                initial_trees: total.initial_trees + w.stats.initial_trees,
            })
    }

    pub(crate) fn key_event(&self, event: KeyEvent) -> bool {
        let (answer, verdict) = mpsc::sync_channel(1);
        let serial = {
            let mut shared = self.lock();
            if shared.connected.is_none()
                || !shared.key_events
                || shared.keys.len() >= MAX_QUEUED_KEYS
            {
                return false;
            }
            let serial = shared.next_key_serial;
            shared.next_key_serial += 1;
            shared.keys.push_back((serial, event));
            self.wake.notify_all();
            if shared.keys_unanswered {
                return false;
            }
            shared.key_waiters.insert(serial, answer);
            serial
        };
        match verdict.recv_timeout(KEY_WAIT) {
            Ok(consumed) => consumed,
            Err(_) => {
                let mut shared = self.lock();
                shared.key_waiters.remove(&serial);
                shared.keys_unanswered = true;
                false
            }
        }
    }

    /// The writer thread: connect (with the producer crate's jittered
    /// [`Backoff`] while no bridge runs, docs/protocol.md §2.3), serve the
    /// connection until it ends, start again.
    ///
    /// What is sent again after a reconnect is not replayed from a copy
    /// (`newton_producer::ResendState`, which keeps every surface's merged
    /// tree): the windows' own state gives the surfaces, geometry and focus,
    /// and the toolkit's activation handler, which holds the authoritative
    /// tree, gives each full tree when the new bridge asks for it
    /// (`updatesWanted`), as accesskit_unix asks it when an AT appears. A
    /// second copy of every tree in the application would cost memory and
    /// a merge per update for nothing.
    ///
    /// With the in-process bridge on (`fallback`), a failed connect starts
    /// the daemon in this process and serves it instead, until the session's
    /// bridge listens on its socket: then the connection to the in-process
    /// daemon ends, the daemon is stopped (which takes the application off
    /// the accessibility bus) and only then does the adapter connect to the
    /// session's bridge, so the application is never on the bus twice.
    fn run(self: Arc<Self>) {
        let mut backoff = Backoff::new(MIN_RECONNECT_DELAY, MAX_RECONNECT_DELAY);
        #[cfg(feature = "in-process-bridge")]
        let mut in_process: Option<crate::fallback::InProcessBridge> = None;
        // A session bridge that listens but does not take this application
        // (its admission refuses it, it fails the hello) must not pull it off
        // the in-process bridge every check: after each such miss, the next
        // check waits longer.
        #[cfg(feature = "in-process-bridge")]
        let mut session_backoff = Backoff::new(LEAVE_CHECK_INTERVAL, MAX_LEAVE_CHECK_DELAY);
        #[cfg(feature = "in-process-bridge")]
        let mut next_session_check = Instant::now();
        #[cfg(feature = "in-process-bridge")]
        let mut just_moved = false;
        #[cfg(feature = "in-process-bridge")]
        let mut start_failure_said = false;
        loop {
            let session_socket = default_socket_path().ok();
            if let Some(sender) = session_socket.as_deref().and_then(connect) {
                #[cfg(feature = "in-process-bridge")]
                {
                    stop_in_process(&mut in_process);
                    session_backoff.reset();
                    just_moved = false;
                }
                backoff.reset();
                self.serve(Arc::new(sender), None);
                continue;
            }
            #[cfg(feature = "in-process-bridge")]
            if crate::fallback::enabled() {
                if std::mem::take(&mut just_moved) {
                    next_session_check = Instant::now() + session_backoff.next_delay();
                }
                if in_process
                    .as_ref()
                    .is_some_and(|bridge| !bridge.is_running())
                {
                    stop_in_process(&mut in_process);
                }
                if in_process.is_none() {
                    match crate::fallback::InProcessBridge::start() {
                        Ok(bridge) => in_process = Some(bridge),
                        // Said once: it is tried again on every round of the backoff.
                        Err(error) if !start_failure_said => {
                            start_failure_said = true;
                            eprintln!(
                                "newton-accesskit: {error}; this application reaches screen \
                                 readers only once a bridge runs"
                            );
                        }
                        Err(_) => {}
                    }
                }
                let sender = in_process
                    .as_ref()
                    .and_then(|bridge| connect(bridge.socket()));
                if let Some(sender) = sender {
                    backoff.reset();
                    let not_before = next_session_check;
                    let leave = session_socket.as_deref().map(|path| {
                        move || {
                            Instant::now() >= not_before
                                && crate::fallback::session_bridge_listens(path)
                        }
                    });
                    let moved = self.serve(
                        Arc::new(sender),
                        leave.as_ref().map(|f| f as &dyn Fn() -> bool),
                    );
                    if moved {
                        stop_in_process(&mut in_process);
                        just_moved = true;
                    }
                    continue;
                }
            }
            std::thread::sleep(backoff.next_delay());
        }
    }

    /// Serves one connection until it ends, or until `leave` (asked every
    /// [`LEAVE_CHECK_INTERVAL`]) says there is a better bridge to go to;
    /// returns true in that case.
    fn serve(self: &Arc<Self>, sender: Arc<Sender>, leave: Option<&dyn Fn() -> bool>) -> bool {
        let stop = Arc::new(AtomicBool::new(false));
        {
            let mut shared = self.lock();
            shared.key_events = sender.accepts_key_events();
            shared.connected = Some(sender.clone());
            shared.focus_dirty = true;
            shared.keys_unanswered = false;
            for window in shared.windows.values_mut() {
                window.on_bridge = false;
                window.geometry_dirty = window.geometry.is_some();
            }
        }
        let reader = {
            let process = self.clone();
            let sender = sender.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("newton-accesskit-reader".into())
                .spawn(move || process.read(&sender, &stop))
        };
        let mut left = false;
        let mut last_check = Instant::now();
        loop {
            // Idle waits end when the next check is due, so a check comes every interval.
            let wait = match leave {
                Some(_) => LEAVE_CHECK_INTERVAL.saturating_sub(last_check.elapsed()),
                None => LEAVE_CHECK_INTERVAL,
            };
            match self.next_work(&stop, wait) {
                Next::Ended => break,
                Next::Idle => {}
                Next::Work(work) => {
                    if let Err(error) = self.perform(&sender, work) {
                        if matches!(error, SendError::Io { .. }) {
                            break;
                        }
                        eprintln!("newton-accesskit: {error}");
                    }
                }
            }
            if let Some(leave) = &leave {
                if last_check.elapsed() >= LEAVE_CHECK_INTERVAL {
                    last_check = Instant::now();
                    if leave() {
                        left = true;
                        break;
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        if let Ok(reader) = reader {
            let _ = reader.join();
        }
        // Closed before the windows are deactivated: the bridge that served
        // them takes the application off the bus as soon as it reads the end.
        drop(sender);
        self.disconnected();
        left
    }

    /// Waits (at most `wait`) until there is something to write.
    fn next_work(&self, stop: &AtomicBool, wait: Duration) -> Next {
        let mut shared = self.lock();
        if stop.load(Ordering::Relaxed) {
            return Next::Ended;
        }
        let work = take_work(&mut shared);
        if !work.is_empty() {
            return Next::Work(work);
        }
        shared = self
            .wake
            .wait_timeout(shared, wait)
            .map(|(guard, _)| guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        if stop.load(Ordering::Relaxed) {
            return Next::Ended;
        }
        let work = take_work(&mut shared);
        if work.is_empty() {
            Next::Idle
        } else {
            Next::Work(work)
        }
    }

    fn perform(&self, sender: &Sender, work: Vec<Work>) -> Result<(), SendError> {
        for item in work {
            match item {
                Work::Create(surface, title) => sender.create_surface(surface, title.as_deref())?,
                Work::Destroy(surface) => sender.destroy_surface(surface)?,
                Work::Geometry(surface, geometry) => sender.geometry(surface, geometry)?,
                Work::Focus(surface) => sender.focus(surface)?,
                Work::Key(serial, event) => sender.send(&SenderMessage::Key { serial, event })?,
                Work::Updates(surface, updates) => self.send_updates(sender, surface, updates)?,
                Work::Activate(surface, epoch, handlers) => {
                    self.activate(surface, epoch, &handlers)
                }
            }
        }
        Ok(())
    }

    /// Writes a window's queued updates and commits them. An update too
    /// large for the bridge's frame limit is never sent, so the window then
    /// needs a full tree; only IO errors end the connection.
    fn send_updates(
        &self,
        sender: &Sender,
        surface: SurfaceId,
        updates: Vec<TreeUpdate>,
    ) -> Result<(), SendError> {
        let count = updates.len() as u64;
        for update in updates {
            match sender.update(surface, update) {
                Ok(()) => {}
                Err(SendError::Encode(error)) => {
                    eprintln!("newton-accesskit: an update was not sent: {error}");
                    self.with_window(surface, |w| {
                        w.queue.clear();
                        w.set_activity(Activity::NeedsInitialTree);
                    });
                    return Ok(());
                }
                Err(other) => return Err(other),
            }
        }
        sender.commit(surface)?;
        if let Some(window) = self.lock().windows.get_mut(&surface) {
            window.stats.updates_sent += count;
        }
        Ok(())
    }

    /// Asks the activation handler for the full tree (without the lock).
    fn activate(&self, surface: SurfaceId, epoch: u64, handlers: &Handlers) {
        let tree = lock_handler(&handlers.activation).request_initial_tree();
        let mut shared = self.lock();
        let Some(window) = shared.windows.get_mut(&surface) else {
            return;
        };
        if window.epoch != epoch {
            return;
        }
        match tree {
            Some(tree) => {
                window.stats.initial_trees += 1;
                window.queue = vec![tree];
                window.set_activity(Activity::Active);
            }
            None => window.set_activity(Activity::Pending),
        }
        self.wake.notify_all();
    }

    /// The reader thread: bridge messages to state changes and handler
    /// calls, until the connection ends or the writer stops.
    fn read(&self, sender: &Sender, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            match sender.recv_timeout(Duration::from_millis(250)) {
                Ok(message) => self.handle(message),
                Err(RecvError::Timeout) => {}
                Err(RecvError::Closed { .. }) => break,
            }
        }
        stop.store(true, Ordering::Relaxed);
        self.wake.notify_all();
    }

    fn handle(&self, message: BridgeMessage) {
        match message {
            BridgeMessage::UpdatesWanted { surface } => {
                self.with_window(surface, |w| {
                    if w.activity == Activity::Inactive {
                        w.set_activity(Activity::NeedsInitialTree);
                    }
                });
            }
            BridgeMessage::Rejected {
                surface,
                resync: true,
                ..
            } => {
                self.with_window(surface, |w| {
                    if w.activity != Activity::Inactive {
                        w.queue.clear();
                        w.set_activity(Activity::NeedsInitialTree);
                    }
                });
            }
            BridgeMessage::UpdatesUnwanted { surface } => {
                let handlers = self.with_window(surface, |w| {
                    w.queue.clear();
                    w.set_activity(Activity::Inactive);
                    w.handlers.clone()
                });
                if let Some(handlers) = handlers {
                    lock_handler(&handlers.deactivation).deactivate_accessibility();
                }
            }
            BridgeMessage::Action { surface, request } => self.do_action(surface, request),
            BridgeMessage::KeyHandled { serial, consumed } => {
                let mut shared = self.lock();
                shared.keys_unanswered = false;
                if let Some(waiter) = shared.key_waiters.remove(&serial) {
                    let _ = waiter.try_send(consumed);
                }
            }
            _ => {}
        }
    }

    fn do_action(&self, surface: SurfaceId, request: ActionRequest) {
        let handlers = self
            .lock()
            .windows
            .get(&surface)
            .filter(|w| !w.removed)
            .map(|w| w.handlers.clone());
        if let Some(handlers) = handlers {
            lock_handler(&handlers.action).do_action(request);
        }
    }

    fn with_window<R>(&self, surface: SurfaceId, f: impl FnOnce(&mut Window) -> R) -> Option<R> {
        let mut shared = self.lock();
        let result = shared
            .windows
            .get_mut(&surface)
            .filter(|w| !w.removed)
            .map(f);
        self.wake.notify_all();
        result
    }

    /// The connection ended: every window is inactive until a bridge wants
    /// it again; unanswered keys count as not consumed.
    fn disconnected(&self) {
        let deactivated: Vec<Arc<Handlers>> = {
            let mut shared = self.lock();
            shared.connected = None;
            shared.key_events = false;
            shared.keys.clear();
            for (_, waiter) in shared.key_waiters.drain() {
                let _ = waiter.try_send(false);
            }
            shared.windows.retain(|_, w| !w.removed);
            shared
                .windows
                .values_mut()
                .filter_map(|w| {
                    w.on_bridge = false;
                    w.queue.clear();
                    let was_active = w.activity != Activity::Inactive;
                    w.set_activity(Activity::Inactive);
                    was_active.then(|| w.handlers.clone())
                })
                .collect()
        };
        for handlers in deactivated {
            lock_handler(&handlers.deactivation).deactivate_accessibility();
        }
    }
}

/// Everything due, in the order the bridge needs it: keys first (a screen
/// reader waits on them), then new surfaces, facts, trees, removals.
fn take_work(shared: &mut Shared) -> Vec<Work> {
    let mut work: Vec<Work> = shared
        .keys
        .drain(..)
        .map(|(serial, event)| Work::Key(serial, event))
        .collect();
    for (surface, window) in shared.windows.iter_mut() {
        if window.removed {
            continue;
        }
        if !window.on_bridge {
            window.on_bridge = true;
            work.push(Work::Create(*surface, window.title.clone()));
        }
        if window.geometry_dirty {
            window.geometry_dirty = false;
            if let Some(geometry) = window.geometry {
                work.push(Work::Geometry(*surface, geometry));
            }
        }
    }
    if shared.focus_dirty {
        shared.focus_dirty = false;
        work.push(Work::Focus(shared.focused));
    }
    for (surface, window) in shared.windows.iter_mut() {
        if window.removed {
            continue;
        }
        if window.activity == Activity::NeedsInitialTree {
            window.set_activity(Activity::Requesting);
            work.push(Work::Activate(
                *surface,
                window.epoch,
                window.handlers.clone(),
            ));
        } else if !window.queue.is_empty() {
            work.push(Work::Updates(*surface, std::mem::take(&mut window.queue)));
        }
    }
    let removed: Vec<SurfaceId> = shared
        .windows
        .iter()
        .filter(|(_, w)| w.removed)
        .map(|(s, _)| *s)
        .collect();
    for surface in removed {
        shared.windows.remove(&surface);
        work.push(Work::Destroy(surface));
    }
    work
}

/// What the writer thread does after waiting.
enum Next {
    Work(Vec<Work>),
    /// Nothing to write yet.
    Idle,
    /// The connection ended.
    Ended,
}

/// Stops the in-process bridge, if one runs: the application leaves the
/// accessibility bus before it is put there by another bridge.
#[cfg(feature = "in-process-bridge")]
fn stop_in_process(in_process: &mut Option<crate::fallback::InProcessBridge>) {
    if let Some(bridge) = in_process.take() {
        if let Err(error) = bridge.stop() {
            eprintln!("newton-accesskit: the in-process bridge ended badly: {error}");
        }
    }
}

fn connect(path: &std::path::Path) -> Option<Sender> {
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        encoding: Encoding::Postcard,
        app: crate::identity::app_info(),
        accesskit_version: Some(newton_push_protocol::ACCESSKIT_VERSION.to_owned()),
    };
    Sender::connect(path, hello).ok()
}

fn lock_handler<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
