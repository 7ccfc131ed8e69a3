//! Peer-to-peer AT-SPI: like GTK's atk-bridge, each application offers a
//! private socket through `Application.GetApplicationBusAddress`; libatspi
//! then sends its method calls there directly, skipping the bus daemon (one
//! hop instead of two). Events still go over the bus. The socket sits in the
//! bridge's private directory and only the same user may connect.
//!
//! Admission is the sender socket's (`accept.rs`): the same-user check
//! (`SO_PEERCRED`), connections counted from accept to close against a
//! bridge-wide limit per uid (rule `max-p2p-clients`, by default what the
//! descriptors leave room for) and, per application, against a total (rule
//! `max-p2p-clients-per-app`) and a per-process limit (rule
//! `max-p2p-clients-per-process`), accept pausing when descriptors run out,
//! and each refusal logged once per rule per interval. A refused client is
//! closed at once.
//!
//! Handshakes run concurrently, each in its own task bounded by
//! [`HANDSHAKE_TIMEOUT`], at most [`MAX_HANDSHAKES`] at once per
//! application. A stalled handshake cannot keep anyone out: when they are
//! all taken, a new client takes the place of the oldest handshake of the
//! process holding the most (rule `p2p-handshakes`), so an attacker that
//! keeps handshakes stalled and reopens them only closes its own, while an
//! honest client's handshake (a millisecond) completes.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_executor::{Executor, Task};
use async_io::Async;
use tracing::debug;
use zbus::message::Message;

use crate::accept::{
    accept_with_backoff, warn_limited, AcceptLog, Admitted, Backoff, Connections, Counted,
};
use crate::app::BridgedApp;

/// Time a peer-to-peer client has for the D-Bus authentication handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Handshakes in progress at once per application; a client beyond them
/// takes the place of a stalled one ([`victim`]).
pub const MAX_HANDSHAKES: usize = 8;
/// Default connections per application (`--max-p2p-clients-per-app`): an
/// AT (libatspi) opens one per application, so 64 leaves room for every AT,
/// inspector and script of a session.
pub const DEFAULT_MAX_PER_APP: usize = 64;
/// Default connections per application from one process
/// (`--max-p2p-clients-per-process`): libatspi needs one; test and bench
/// clients open up to 11 from one process.
pub const DEFAULT_MAX_PER_PROCESS: usize = 16;

/// Peer-to-peer connections bridge-wide, per uid (only this user's uid can
/// reach the sockets, so the per-uid limit is the total).
pub const CLIENTS: Counted = Counted {
    whole: "the bridge",
    noun: "peer-to-peer connections",
    key: "uid",
    total_rule: "max-p2p-clients",
    total_advice: "close unused AT clients, or raise --max-p2p-clients (and the unit's \
                   LimitNOFILE); the client may call over the bus meanwhile",
    key_rule: "max-p2p-clients",
    key_advice: "close unused AT clients, or raise --max-p2p-clients",
};

/// Peer-to-peer connections of one application, in all and per process.
pub const CLIENTS_OF_APP: Counted = Counted {
    whole: "this application",
    noun: "peer-to-peer connections",
    key: "process",
    total_rule: "max-p2p-clients-per-app",
    total_advice: "close unused AT clients, or raise --max-p2p-clients-per-app",
    key_rule: "max-p2p-clients-per-process",
    key_advice: "a client needs one connection per application; raise \
                 --max-p2p-clients-per-process if it really needs more",
};

/// The peer-to-peer limits (`--max-p2p-clients*`); the bridge-wide count is
/// shared by every application's socket.
#[derive(Clone)]
pub struct P2pLimits {
    pub clients: Connections,
    pub per_app: usize,
    pub per_process: usize,
}

impl P2pLimits {
    /// `max_clients` bridge-wide (and per uid), `per_app` and `per_process`
    /// for each application.
    pub fn new(max_clients: usize, per_app: usize, per_process: usize) -> Self {
        Self {
            clients: Connections::new(CLIENTS, max_clients, max_clients),
            per_app,
            per_process,
        }
    }
}

impl Default for P2pLimits {
    fn default() -> Self {
        Self::new(
            crate::accept::default_max_senders(1024),
            DEFAULT_MAX_PER_APP,
            DEFAULT_MAX_PER_PROCESS,
        )
    }
}

/// One rate limit for every application's peer-to-peer warnings.
fn p2p_log() -> &'static AcceptLog {
    static LOG: OnceLock<AcceptLog> = OnceLock::new();
    LOG.get_or_init(AcceptLog::default)
}

/// An application's peer-to-peer socket; dropping it stops accepting and
/// removes the socket file (open connections end with their clients).
pub struct P2pEndpoint {
    pub address: String,
    path: PathBuf,
    _accepting: Task<()>,
}

impl Drop for P2pEndpoint {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl P2pEndpoint {
    /// Binds `dir/app-<key>.sock` and serves `app` on every connection
    /// `limits` admit.
    pub fn bind(
        dir: &Path,
        key: u64,
        app: Arc<BridgedApp>,
        limits: &P2pLimits,
        executor: &Arc<Executor<'static>>,
    ) -> std::io::Result<Self> {
        let path = dir.join(format!("app-{key}.sock"));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        let listener = Async::new(listener)?;
        let address = format!("unix:path={}", path.display());
        let accepting =
            executor.spawn(accept_loop(listener, app, limits.clone(), executor.clone()));
        Ok(Self {
            address,
            path,
            _accepting: accepting,
        })
    }
}

/// One client's places in the connection limits, held until its
/// connection closes.
struct Held {
    pid: u32,
    _bridge_wide: Admitted,
    _of_app: Admitted,
}

async fn accept_loop(
    listener: Async<UnixListener>,
    app: Arc<BridgedApp>,
    limits: P2pLimits,
    executor: Arc<Executor<'static>>,
) {
    let of_app = Connections::new(CLIENTS_OF_APP, limits.per_app, limits.per_process);
    let handshakes = Arc::new(Mutex::new(Handshakes::default()));
    let mut backoff = Backoff::default();
    loop {
        let stream =
            accept_with_backoff(&listener, &mut backoff, p2p_log(), "peer-to-peer socket").await;
        let Some(held) = admit(&stream, &app, &limits, &of_app) else {
            continue;
        };
        let handshake = Handshake::start(&handshakes, held.pid, &app);
        let app = app.clone();
        let serving = executor.clone();
        executor
            .spawn(async move { serve_peer(stream, &app, &serving, handshake, held).await })
            .detach();
    }
}

/// The sender socket's admission for a peer-to-peer client: same user,
/// then the bridge-wide and the application's limits. A refusal is logged
/// (once per rule per interval) and the client closed.
fn admit(
    stream: &UnixStream,
    app: &BridgedApp,
    limits: &P2pLimits,
    of_app: &Connections,
) -> Option<Held> {
    let refused = |cause: &'static str, why: &dyn std::fmt::Display| {
        warn_limited(
            p2p_log(),
            cause,
            &format!("refused a peer-to-peer client of {}: {why}", app.info.name),
        )
    };
    let peer = crate::socket::check_same_user(stream)
        .map_err(|why| refused("p2p-refused", &why))
        .ok()?;
    let bridge_wide = limits
        .clients
        .admit(peer.uid)
        .map_err(|limit| refused(limit.rule(), &limit))
        .ok()?;
    let app_wide = of_app
        .admit(peer.pid)
        .map_err(|limit| refused(limit.rule(), &limit))
        .ok()?;
    Some(Held {
        pid: peer.pid,
        _bridge_wide: bridge_wide,
        _of_app: app_wide,
    })
}

/// The handshakes in progress on one application's socket, oldest first.
/// Each holds the sender half of its channel: dropping it closes that
/// handshake.
#[derive(Default)]
struct Handshakes {
    next_id: u64,
    running: Vec<(u64, u32, async_channel::Sender<()>)>,
}

/// Which of the handshakes in progress (their pids, oldest first) gives way
/// to a new one: the oldest of the process that holds the most. A stalled
/// attacker's handshakes go before an honest client's single one, and
/// among equals the longest stalled goes first.
fn victim(pids_oldest_first: &[u32]) -> Option<usize> {
    let held = |pid: u32| pids_oldest_first.iter().filter(|&&p| p == pid).count();
    let most = pids_oldest_first.iter().map(|&pid| held(pid)).max()?;
    pids_oldest_first.iter().position(|&pid| held(pid) == most)
}

/// One handshake's place among the application's handshakes in progress;
/// dropping it (done, failed or timed out) frees the place.
struct Handshake {
    id: u64,
    table: Arc<Mutex<Handshakes>>,
    /// Closed when a newer client took this handshake's place.
    evicted: async_channel::Receiver<()>,
}

impl Handshake {
    /// Takes a place for `pid`'s handshake; when all [`MAX_HANDSHAKES`] are
    /// taken, the [`victim`]'s handshake is closed to make room (logged
    /// once per interval).
    fn start(table: &Arc<Mutex<Handshakes>>, pid: u32, app: &BridgedApp) -> Self {
        let (cancel, evicted) = async_channel::bounded(1);
        let mut handshakes = table.lock().unwrap_or_else(|p| p.into_inner());
        if handshakes.running.len() >= MAX_HANDSHAKES {
            let pids: Vec<u32> = handshakes.running.iter().map(|h| h.1).collect();
            if let Some(index) = victim(&pids) {
                let (_, stalled_pid, _) = handshakes.running.remove(index);
                warn_limited(
                    p2p_log(),
                    "p2p-handshakes",
                    &format!(
                        "{MAX_HANDSHAKES} peer-to-peer handshakes with {} in progress, the limit \
                         (rule p2p-handshakes): closed the oldest of process {stalled_pid}, \
                         which held the most, to let a new client in",
                        app.info.name
                    ),
                );
            }
        }
        let id = handshakes.next_id;
        handshakes.next_id += 1;
        handshakes.running.push((id, pid, cancel));
        drop(handshakes);
        Self {
            id,
            table: table.clone(),
            evicted,
        }
    }

    /// Resolves when a newer client took this place.
    async fn given_way(&self) {
        let _ = self.evicted.recv().await;
    }
}

impl Drop for Handshake {
    fn drop(&mut self) {
        let mut handshakes = self.table.lock().unwrap_or_else(|p| p.into_inner());
        handshakes.running.retain(|(id, _, _)| *id != self.id);
    }
}

/// How a handshake ended without a connection.
enum Unfinished {
    TimedOut,
    GaveWay,
}

/// Authenticates one client, within [`HANDSHAKE_TIMEOUT`] and unless a newer
/// client takes its place, and has the application answer it as one of its
/// serving tasks until it closes; `held` keeps its places in the limits
/// until then.
async fn serve_peer(
    stream: UnixStream,
    app: &Arc<BridgedApp>,
    executor: &Executor<'static>,
    handshake: Handshake,
    held: Held,
) {
    let guid = zbus::Guid::generate();
    // The stream must exist before the connection reads anything: libatspi
    // sends its first call right after the handshake.
    let authenticate = async {
        match zbus::connection::Builder::async_io_unix_stream(stream).server(guid) {
            Ok(builder) => builder
                .p2p()
                .internal_executor(false)
                .build_message_stream()
                .await
                .map(Ok),
            Err(e) => Err(e),
        }
    };
    let unfinished = async {
        let timeout = async {
            async_io::Timer::after(HANDSHAKE_TIMEOUT).await;
            Unfinished::TimedOut
        };
        let given_way = async {
            handshake.given_way().await;
            Unfinished::GaveWay
        };
        futures::future::select(std::pin::pin!(timeout), std::pin::pin!(given_way))
            .await
            .factor_first()
            .0
    };
    let outcome =
        match futures::future::select(std::pin::pin!(authenticate), std::pin::pin!(unfinished))
            .await
        {
            futures::future::Either::Left((built, _)) => built,
            futures::future::Either::Right((unfinished, _)) => Ok(Err(unfinished)),
        };
    drop(handshake);
    match outcome {
        Ok(Ok(incoming)) => {
            debug!(app = %app.info.name, "peer-to-peer client connected");
            crate::driven::drive(&zbus::Connection::from(&incoming), executor);
            app.serve_on(incoming, executor, held);
        }
        Ok(Err(Unfinished::TimedOut)) => warn_limited(
            p2p_log(),
            "p2p-handshake-timeout",
            &format!(
                "a peer-to-peer client of {} did not finish its handshake within {} s; closed",
                app.info.name,
                HANDSHAKE_TIMEOUT.as_secs()
            ),
        ),
        // Logged by the client that took its place.
        Ok(Err(Unfinished::GaveWay)) => {}
        Err(e) => debug!(app = %app.info.name, "peer-to-peer handshake failed: {e}"),
    }
}

/// `Application.GetApplicationBusAddress` on the app root: a transport fact
/// the bridge answers itself (the shim answers only from the replica). The
/// method is found as dispatch finds it, so a call without an interface
/// field (routed by member name to `Application`) is intercepted too.
pub fn is_bus_address_query(call: &Message) -> bool {
    let header = call.header();
    header
        .path()
        .is_some_and(|p| p.as_str() == crate::registry::ROOT_PATH)
        && newton_atspi_shim::dispatch::declared_method(&header).is_some_and(|declared| {
            declared.interface == "org.a11y.atspi.Application"
                && declared.method.name == "GetApplicationBusAddress"
        })
}

#[cfg(test)]
mod tests {
    use super::victim;

    #[test]
    fn the_process_holding_the_most_handshakes_gives_way_first() {
        // An attacker (pid 9) holding seven, an honest client (pid 2) one,
        // newest: the attacker's oldest goes, whatever the honest one's age.
        assert_eq!(victim(&[9, 9, 9, 2, 9, 9, 9, 9]), Some(0));
        assert_eq!(victim(&[2, 9, 9, 9, 9, 9, 9, 9]), Some(1));
        // Equal counts: the longest stalled goes.
        assert_eq!(victim(&[3, 4, 4, 3]), Some(0));
        assert_eq!(victim(&[5, 6, 7]), Some(0));
        assert_eq!(victim(&[]), None);
    }
}
