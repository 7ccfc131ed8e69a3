//! `serve`: accept senders on the socket and keep every application on the
//! accessibility bus until its sender leaves or the bridge is stopped.

use std::collections::BTreeMap;
use std::error::Error;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_executor::Executor;
use async_io::Async;
use async_signal::{Signal, Signals};
use futures::{AsyncReadExt, AsyncWriteExt, FutureExt, StreamExt};
use newton_cache::Limits;
use newton_push_protocol::{BridgeMessage, Encoding};
use tracing::{debug, info, warn};

use crate::app::BridgedApp;
use crate::listeners::{self, SharedListeners};
use crate::serve_args::ServeArgs;
use crate::{a11y_bus, accept, sender, socket};

/// Settings and the live applications, shared by every sender task.
pub struct Daemon {
    /// Explicit `--a11y-bus` address; otherwise found as libatspi does.
    explicit_address: Option<String>,
    a11y_address: Mutex<String>,
    pub limits: Limits,
    /// What every application's replica draws from (`--max-total-bytes`).
    pub replica_budget: Arc<newton_cache::ByteBudget>,
    pub max_frame_bytes: u32,
    /// Per-application frame-rate limit (`--max-fps`, `--fps-burst`).
    pub max_fps: u32,
    pub fps_burst: u32,
    /// Per-application queued bytes (`--max-queued-bytes`).
    pub max_queued_bytes: usize,
    /// Who may connect (`--allow-uid`, `--allow-exe`).
    pub admission: socket::Admission,
    /// Open sender connections against `--max-senders` and
    /// `--max-senders-per-uid` (rule `max-senders`).
    pub connections: accept::Connections,
    /// Time a sender has for its hello (`--hello-timeout`; `None`: no limit).
    pub hello_timeout: Option<Duration>,
    /// Answer bytes a sender may leave unread (`--max-unread-bytes`).
    pub max_unread_bytes: usize,
    /// Rate limit of the warnings every connection may repeat: accept
    /// failures, refusals, protocol violations (one line per cause per
    /// interval, with counts).
    pub log_limiter: accept::AcceptLog,
    /// Refused senders whose connection stays open while they read why.
    lingering: std::sync::atomic::AtomicUsize,
    pub executor: Arc<Executor<'static>>,
    pub listeners: SharedListeners,
    /// `org.a11y.Status.IsEnabled` on the session bus.
    enabled: AtomicBool,
    /// Whether an AT is present (listeners registered or IsEnabled): senders
    /// are told their updates are wanted only then.
    at_present: AtomicBool,
    apps: Mutex<BTreeMap<u64, Arc<BridgedApp>>>,
    next_app: AtomicU64,
    /// Counters for `status` (see control.rs).
    pub stats: Arc<crate::control::Stats>,
    /// Peer-to-peer clients against `--max-p2p-clients*` (see `p2p`).
    pub p2p_limits: crate::p2p::P2pLimits,
    /// Where applications' peer-to-peer sockets go (the sender socket's
    /// private directory); `None` disables peer-to-peer.
    pub p2p_dir: Option<PathBuf>,
    /// The live sender sessions, ended and awaited at shutdown.
    pub sessions: crate::shutdown::Sessions,
}

impl Daemon {
    /// Remembers a live application (for shutdown and status); returns its key.
    pub fn add_app(&self, app: Arc<BridgedApp>) -> u64 {
        let key = self.next_app.fetch_add(1, Ordering::Relaxed);
        self.lock_apps().insert(key, app);
        key
    }

    pub fn remove_app(&self, key: u64) {
        let removed = self.lock_apps().remove(&key);
        if let Some(app) = removed {
            self.stats.app_departed(&app);
        }
    }

    fn lock_apps(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<BridgedApp>>> {
        self.apps
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The accessibility bus's current address.
    pub fn a11y_address(&self) -> String {
        self.a11y_address
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// After the accessibility bus went away: waits for it to come back,
    /// then reconnects and re-embeds every application. Returns the new
    /// control connection.
    pub async fn reconnect_bus(&self) -> zbus::Connection {
        let mut delay = std::time::Duration::from_millis(100);
        loop {
            // A restarted bus keeps its path but gets a new GUID: an explicit
            // address is retried without its guid= part.
            let address = match &self.explicit_address {
                Some(address) => Ok(a11y_bus::without_guid(address)),
                None => a11y_bus::find_address_on(&self.executor).await,
            };
            let connected = match address {
                Ok(address) => a11y_bus::connect_on(&address, &self.executor)
                    .await
                    .map(|conn| (address, conn)),
                Err(error) => Err(error),
            };
            match connected {
                Ok((address, control)) => {
                    info!(%address, "accessibility bus is back; reconnecting every application");
                    *self.a11y_address.lock().unwrap_or_else(|p| p.into_inner()) = address.clone();
                    for app in self.all_apps() {
                        if let Err(e) = app.reconnect(&address, &self.executor).await {
                            warn!(app = %app.info.name, "could not reconnect: {e}");
                        }
                    }
                    return control;
                }
                Err(error) => {
                    warn!("{error}; retrying in {} ms", delay.as_millis());
                    async_io::Timer::after(delay).await;
                    delay = (delay * 2).min(std::time::Duration::from_secs(5));
                }
            }
        }
    }

    /// Whether senders should build and push updates now.
    pub fn at_present(&self) -> bool {
        self.at_present.load(Ordering::Relaxed)
    }

    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
        self.update_presence();
    }

    /// Recomputes AT presence; when it changes, every sender hears it for
    /// every surface (Newton: no AT, no cost).
    pub fn update_presence(&self) {
        let present = self.enabled.load(Ordering::Relaxed) || self.listeners.any();
        if self.at_present.swap(present, Ordering::Relaxed) == present {
            return;
        }
        if present {
            info!("an assistive technology is listening; senders are asked for their trees");
        } else {
            info!("no assistive technology listens; senders are told to build nothing");
        }
        for app in self.all_apps() {
            app.announce_wanted(present);
        }
    }

    pub fn all_apps(&self) -> Vec<Arc<BridgedApp>> {
        self.lock_apps().values().cloned().collect()
    }
}

/// Watches one application's bus connection for as long as it lives: a
/// connection the bus daemon drops (a message it refused, a kick) is
/// reported at WARN at once and replaced by a new one, embedded again, so
/// the application comes back to the desktop; `status` shows
/// `busConnected: false` meanwhile. A bus that went away as a whole is the
/// control connection's business ([`Daemon::reconnect_bus`]); the two take
/// turns on the application's reconnection lock.
pub async fn keep_on_bus(daemon: Arc<Daemon>, app: Arc<BridgedApp>) {
    while let Some(generation) = app.lost_bus().await {
        let lost_name = app.unique_name();
        warn!(app = %app.info.name, bus = %lost_name, "the application's accessibility-bus connection was closed by the bus; ATs no longer see it; connecting again");
        daemon.stats.bus_connection_lost();
        let address = || daemon.a11y_address();
        if let Some(bus) = app.recover_bus(generation, address, &daemon.executor).await {
            warn!(app = %app.info.name, lost = %lost_name, %bus, "the application is back on the accessibility bus under a new name");
        }
    }
}

/// Runs the daemon until SIGTERM or SIGINT.
pub fn run(args: ServeArgs) -> Result<(), Box<dyn Error>> {
    run_until(args, None)
}

/// Runs the daemon until a signal, or until `stop` receives (or closes) when
/// given — how the demo runs it in-process.
pub fn run_until(
    args: ServeArgs,
    stop: Option<async_channel::Receiver<()>>,
) -> Result<(), Box<dyn Error>> {
    crate::memory::limit_arenas();
    run_mode(args, stop, Mode::Session)
}

/// Runs the daemon inside an application, for that application alone, until
/// `stop` receives (or closes): what `newton-accesskit` runs when no bridge
/// answers (docs/adoption.md). It serves `args.socket` (required) like
/// `serve`, but leaves the process as it found it: no signal handlers
/// (SIGTERM and SIGINT stay the application's), no file-descriptor limit
/// raised, no glibc arena limit, no socket passed by a service manager taken
/// (`LISTEN_FDS` belongs to the application), no status socket and no bus
/// name (those are the session bridge's; `status` never sees an in-process
/// bridge). Returns once every application it served has left the
/// accessibility bus.
pub fn run_embedded(
    args: ServeArgs,
    stop: async_channel::Receiver<()>,
) -> Result<(), Box<dyn Error>> {
    if args.socket.is_none() {
        return Err("an in-process bridge needs its own socket path (ServeArgs::socket)".into());
    }
    run_mode(args, Some(stop), Mode::Embedded)
}

/// Whether the daemon is the session's bridge or runs inside one application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Session,
    Embedded,
}

fn run_mode(
    args: ServeArgs,
    stop: Option<async_channel::Receiver<()>>,
    mode: Mode,
) -> Result<(), Box<dyn Error>> {
    let executor = Arc::new(Executor::new());
    // The main thread is the executor's only thread and drives async-io's
    // reactor while idle: the thread whose `epoll_wait` sees a call is the one
    // that reads and answers it, with no other thread woken. Work whose cost
    // grows with a tree runs elsewhere (whole trees on `blocking`'s threads,
    // `app.rs`; `GetItems`/`GetMatches*` on the heavy-call thread, `heavy.rs`).
    //
    // `serve` (its listeners, signals and accept loops) is a task of its own,
    // polled only when one of them wakes it: as the top-level future of the
    // main thread it would be polled, with a syscall per listener, every time
    // the executor woke the main thread to answer a call.
    let main_tasks = async_executor::LocalExecutor::new();
    let serving = main_tasks.spawn(serve(args, executor.clone(), stop, mode));
    async_io::block_on(crate::driven::run(&executor, main_tasks.run(serving)))
}

async fn serve(
    args: ServeArgs,
    executor: Arc<Executor<'static>>,
    stop: Option<async_channel::Receiver<()>>,
    mode: Mode,
) -> Result<(), Box<dyn Error>> {
    // Signals and the descriptor limit are the process's: an embedded daemon
    // touches neither (the application's own Ctrl+C must still end it).
    let mut signals = match mode {
        Mode::Session => Some(Signals::new([Signal::Term, Signal::Int])?),
        Mode::Embedded => None,
    };
    let fd_limit = match mode {
        Mode::Session => accept::raise_fd_limit(),
        Mode::Embedded => accept::fd_limit(),
    };
    let max_senders = match args.max_senders {
        0 => accept::default_max_senders(fd_limit),
        n => n,
    };
    let max_senders_per_uid = match args.max_senders_per_uid {
        0 => max_senders,
        n => n,
    };
    // One peer-to-peer client per sender is what the descriptors budget
    // (`accept::FDS_PER_SENDER`), whatever --max-senders says.
    let max_p2p_clients = match args.max_p2p_clients {
        0 => accept::default_max_senders(fd_limit),
        n => n,
    };
    // The socket (and its instance lock) first: a second bridge must say so
    // at once, even while the accessibility bus is not up yet.
    let path = socket_path(args.socket.clone())?;
    let bound = match mode {
        Mode::Session => socket::listen(&path)?,
        Mode::Embedded => socket::bind(&path)?,
    };
    let a11y_address = match args.a11y_bus.clone().filter(|a| !a.is_empty()) {
        Some(address) => address,
        None => a11y_bus::wait_for_address(None, &executor).await?,
    };
    let limits = Limits {
        max_nodes: args.max_nodes,
        max_depth: args.max_depth,
        max_frame_bytes: args.max_frame_bytes as usize,
        max_app_bytes: args.max_app_bytes,
        ..Limits::default()
    };
    let daemon = Arc::new(Daemon {
        explicit_address: args.a11y_bus.clone().filter(|a| !a.is_empty()),
        a11y_address: Mutex::new(a11y_address),
        limits,
        replica_budget: Arc::new(newton_cache::ByteBudget::new(args.max_total_bytes)),
        max_frame_bytes: args.max_frame_bytes,
        max_fps: args.max_fps,
        fps_burst: args.fps_burst,
        max_queued_bytes: args.max_queued_bytes,
        admission: socket::Admission {
            extra_uids: args.allow_uid.clone(),
            // An empty entry (`NEWTON_ATSPI_ALLOW_EXE=` or a stray ':') allows
            // nothing; it must not turn the allow-list on and refuse everyone.
            executables: args
                .allow_exe
                .iter()
                .filter(|path| !path.as_os_str().is_empty())
                .map(|path| socket::canonical_executable(path))
                .collect(),
        },
        connections: accept::Connections::new(accept::SENDERS, max_senders, max_senders_per_uid),
        hello_timeout: (args.hello_timeout > 0).then(|| Duration::from_secs(args.hello_timeout)),
        max_unread_bytes: args.max_unread_bytes,
        log_limiter: accept::AcceptLog::default(),
        executor: executor.clone(),
        listeners: SharedListeners::default(),
        enabled: AtomicBool::new(false),
        at_present: AtomicBool::new(false),
        apps: Mutex::new(BTreeMap::new()),
        next_app: AtomicU64::new(1),
        stats: Arc::default(),
        p2p_limits: crate::p2p::P2pLimits::new(
            max_p2p_clients,
            args.max_p2p_clients_per_app,
            args.max_p2p_clients_per_process,
        ),
        p2p_dir: p2p_dir(&path),
        lingering: std::sync::atomic::AtomicUsize::new(0),
        sessions: crate::shutdown::Sessions::default(),
    });
    let control = a11y_bus::connect_on(&daemon.a11y_address(), &executor).await?;
    executor
        .spawn(listeners::watch_bus(daemon.clone(), control))
        .detach();
    executor
        .spawn(listeners::watch_enabled(daemon.clone()))
        .detach();
    let listener = Async::new(bound.listener.try_clone()?)?;
    let status = match mode {
        Mode::Session => crate::control::start(&daemon, &path),
        Mode::Embedded => None,
    };
    info!(
        max_fps = daemon.max_fps,
        fps_burst = daemon.fps_burst,
        max_queued_bytes = daemon.max_queued_bytes,
        max_app_bytes = daemon.limits.max_app_bytes,
        max_total_bytes = daemon.replica_budget.max(),
        allow_uid = ?daemon.admission.extra_uids,
        allow_exe = ?daemon.admission.executables,
        "per-application limits and admission"
    );
    info!(
        fd_limit,
        max_senders,
        max_senders_per_uid,
        max_p2p_clients,
        max_p2p_clients_per_app = args.max_p2p_clients_per_app,
        max_p2p_clients_per_process = args.max_p2p_clients_per_process,
        hello_timeout_s = args.hello_timeout,
        max_unread_bytes = daemon.max_unread_bytes,
        "connection limits"
    );
    info!(
        socket = %path.display(),
        passed_by_service_manager = bound.passed,
        "ready: waiting for senders"
    );
    if args.stdio {
        let counted = daemon.stats.sender_connected();
        let stdio = sender::serve_stdio(daemon.clone());
        executor
            .spawn(async move {
                stdio.await;
                drop(counted);
            })
            .detach();
    }
    let mut backoff = accept::Backoff::default();
    loop {
        let next = accept::accept_with_backoff(
            &listener,
            &mut backoff,
            &daemon.log_limiter,
            "sender socket",
        );
        futures::select! {
            stream = next.fuse() => accept(&daemon, stream),
            signal = next_signal(&mut signals).fuse() => {
                info!("received {:?}; shutting down", signal);
                break;
            }
            _ = stopped(&stop).fuse() => {
                info!("stop requested; shutting down");
                break;
            }
        }
    }
    shut_down(&daemon).await;
    drop(status);
    drop(bound);
    Ok(())
}

/// Admits or refuses one sender: the peer's uid and executable
/// (`socket::check_peer`), then the connection limits (`max-senders`).
fn accept(daemon: &Arc<Daemon>, stream: UnixStream) {
    let peer = match socket::check_peer(&stream, &daemon.admission) {
        Ok(peer) => peer,
        Err(refusal) => {
            let tell = refusal.tell_sender();
            refuse(daemon, stream, "refused-sender", refusal.to_string(), tell);
            return;
        }
    };
    let admitted = match daemon.connections.admit(peer.uid) {
        Ok(admitted) => admitted,
        Err(limit) => {
            refuse(daemon, stream, limit.rule(), limit.to_string(), true);
            return;
        }
    };
    let stream = match Async::new(stream) {
        Ok(stream) => stream,
        Err(e) => {
            accept::warn_limited(
                &daemon.log_limiter,
                "sender-socket",
                &format!("sender socket unusable: {e}"),
            );
            return;
        }
    };
    let counted = daemon.stats.sender_connected();
    let connection = sender::serve_connection(daemon.clone(), stream, peer);
    daemon
        .executor
        .spawn(async move {
            connection.await;
            drop(counted);
            drop(admitted);
        })
        .detach();
}

/// Counts and logs (one line per cause per interval, with the count) a
/// refused sender, and tells it why when `tell` (same user).
fn refuse(
    daemon: &Arc<Daemon>,
    stream: UnixStream,
    cause: &'static str,
    reason: String,
    tell: bool,
) {
    daemon.stats.sender_refused();
    accept::warn_limited(
        &daemon.log_limiter,
        cause,
        &format!("refused a sender: {reason}"),
    );
    if !tell {
        return;
    }
    match Async::new(stream) {
        Ok(stream) => tell_refused(daemon, stream, reason),
        Err(e) => debug!("cannot tell a refused sender why: {e}"),
    }
}

/// Refused senders being told why at once, at most.
const MAX_LINGERING_REFUSALS: usize = 16;
/// How long a refused sender's connection stays open for it to read why.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);

/// Writes the `error` reply (JSON, as every reply to a hello) to a sender
/// refused at accept, then keeps reading (and discarding) what it sends for
/// a moment: a sender writing its hello after an immediate close would get
/// EPIPE and never read the reason. Beyond [`MAX_LINGERING_REFUSALS`] at once
/// the connection is closed right after the reply.
fn tell_refused(daemon: &Arc<Daemon>, stream: Async<UnixStream>, reason: String) {
    let message = BridgeMessage::Error { reason };
    let Some(frame) = newton_push_protocol::encode_bridge_payload(&message, Encoding::Json)
        .ok()
        .and_then(|payload| newton_push_protocol::encode_frame(&payload).ok())
    else {
        return;
    };
    if daemon.lingering.fetch_add(1, Ordering::Relaxed) >= MAX_LINGERING_REFUSALS {
        daemon.lingering.fetch_sub(1, Ordering::Relaxed);
        // A fresh socket's buffer takes the small reply without waiting.
        let _ = std::io::Write::write(&mut stream.get_ref(), &frame);
        let _ = stream.get_ref().shutdown(std::net::Shutdown::Both);
        return;
    }
    let daemon = daemon.clone();
    daemon
        .executor
        .clone()
        .spawn(async move {
            let mut stream = stream;
            if stream.write_all(&frame).await.is_ok() {
                let _ = stream.get_ref().shutdown(std::net::Shutdown::Write);
                let drain = async {
                    let mut buffer = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut buffer).await {
                        if n == 0 {
                            break;
                        }
                    }
                };
                let timeout = async_io::Timer::after(REFUSAL_LINGER);
                futures::future::select(std::pin::pin!(drain), timeout).await;
            }
            daemon.lingering.fetch_sub(1, Ordering::Relaxed);
        })
        .detach();
}

/// How long a graceful shutdown waits for the sender sessions to end: each
/// sender's queued messages and the `error` saying why written, each
/// application removed from the desktop. A sender that does not read must
/// not hold the shutdown; what it left unread is lost with the process.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// Ends every sender session (each tells its sender why, removes its
/// application and flushes) and waits for them, at most [`SHUTDOWN_TIMEOUT`].
async fn shut_down(daemon: &Daemon) {
    daemon.sessions.stop();
    if !daemon.sessions.ended_within(SHUTDOWN_TIMEOUT).await {
        warn!(
            unfinished = daemon.sessions.unfinished(),
            "senders did not take their last messages within {} s; cut off",
            SHUTDOWN_TIMEOUT.as_secs()
        );
    }
    // A session still busy (applying a commit, embedding) when the time ran
    // out has not removed its application yet: remove it here.
    for app in daemon.all_apps() {
        app.shut_down().await;
    }
}

fn socket_path(explicit: Option<PathBuf>) -> Result<PathBuf, Box<dyn Error>> {
    match explicit {
        Some(path) => Ok(path),
        None => Ok(newton_push_protocol::default_socket_path()?),
    }
}

/// The next stop signal; never, without signal handlers (embedded).
async fn next_signal(signals: &mut Option<Signals>) -> Option<std::io::Result<Signal>> {
    match signals {
        Some(signals) => signals.next().await,
        None => futures::future::pending().await,
    }
}

async fn stopped(stop: &Option<async_channel::Receiver<()>>) {
    match stop {
        Some(stop) => {
            let _ = stop.recv().await;
        }
        None => futures::future::pending::<()>().await,
    }
}

/// Peer-to-peer sockets live beside the sender socket, in its private
/// directory; `NEWTON_ATSPI_NO_P2P=1` keeps every call on the bus.
fn p2p_dir(socket: &std::path::Path) -> Option<PathBuf> {
    if std::env::var_os("NEWTON_ATSPI_NO_P2P").is_some_and(|v| v == "1") {
        return None;
    }
    socket.parent().map(|dir| dir.to_path_buf())
}
