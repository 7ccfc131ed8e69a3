//! The daemon's status socket: a second Unix socket beside the sender
//! socket (`bridge.sock.status`, mode 0600, in the same private directory)
//! that answers every connection with one JSON document — the live
//! applications, their surfaces and nodes, commits applied and rejected, the
//! last rejection and the connected senders — and closes. `status` prints it.
//!
//! The counters here are the only statistics the daemon keeps beyond what
//! each application's replica already counts.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_io::Async;
use futures::AsyncWriteExt;
use serde::{Deserialize, Serialize};
use tracing::{debug, info, warn};

use crate::app::BridgedApp;
use crate::daemon::Daemon;

/// The status socket's path for a sender socket: its name plus `.status`.
pub fn status_socket_path(sender_socket: &Path) -> PathBuf {
    let mut name = sender_socket
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".status");
    sender_socket.with_file_name(name)
}

/// Daemon-wide counters (per-application ones live in each replica).
#[derive(Debug)]
pub struct Stats {
    started: Instant,
    senders_connected: AtomicU64,
    senders_total: AtomicU64,
    /// Commits of applications that have left (live ones are in their replicas).
    departed_applied: AtomicU64,
    departed_rejected: AtomicU64,
    /// Connections refused at accept (uid or `--allow-exe`).
    senders_refused: AtomicU64,
    /// Commits the frame-rate limit held back and coalesced.
    commits_held_back: AtomicU64,
    /// Application bus connections the bus closed (see `daemon::keep_on_bus`).
    bus_connections_lost: AtomicU64,
    last_rejection: Mutex<Option<LastRejection>>,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            senders_connected: AtomicU64::new(0),
            senders_total: AtomicU64::new(0),
            departed_applied: AtomicU64::new(0),
            departed_rejected: AtomicU64::new(0),
            senders_refused: AtomicU64::new(0),
            commits_held_back: AtomicU64::new(0),
            bus_connections_lost: AtomicU64::new(0),
            last_rejection: Mutex::new(None),
        }
    }
}

impl Stats {
    /// A sender connected; the returned guard counts it until dropped.
    pub fn sender_connected(self: &Arc<Self>) -> SenderGuard {
        self.senders_connected.fetch_add(1, Ordering::Relaxed);
        self.senders_total.fetch_add(1, Ordering::Relaxed);
        SenderGuard(self.clone())
    }

    /// An application leaves: keep its commit counts in the totals.
    pub fn app_departed(&self, app: &BridgedApp) {
        let state = app.lock();
        self.departed_applied
            .fetch_add(state.replica.commits_applied(), Ordering::Relaxed);
        self.departed_rejected
            .fetch_add(state.replica.commits_rejected(), Ordering::Relaxed);
    }

    /// A connecting sender was refused; returns how many so far.
    pub fn sender_refused(&self) -> u64 {
        self.senders_refused.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The frame-rate limit held back `commits` more commits.
    pub fn held_back(&self, commits: u64) {
        self.commits_held_back.fetch_add(commits, Ordering::Relaxed);
    }

    /// An application's bus connection was closed under it.
    pub fn bus_connection_lost(&self) {
        self.bus_connections_lost.fetch_add(1, Ordering::Relaxed);
    }

    /// A commit or message was rejected: remember the rule it broke.
    pub fn note_rejection(&self, app: &str, rule: &str, reason: &str) {
        *self
            .last_rejection
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(LastRejection {
            app: app.to_owned(),
            rule: rule.to_owned(),
            reason: reason.to_owned(),
        });
    }
}

/// Counts one connected sender while alive.
pub struct SenderGuard(Arc<Stats>);

impl Drop for SenderGuard {
    fn drop(&mut self) {
        self.0.senders_connected.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The status document (`status --json` prints it as is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDocument {
    /// The bridge's version.
    pub version: String,
    pub pid: u32,
    pub uptime_seconds: u64,
    /// The sender socket.
    pub socket: String,
    pub a11y_bus: String,
    /// Whether an AT listens (senders are asked for trees only then).
    pub at_present: bool,
    /// Sender connections open now (including ones before their hello).
    pub senders: u64,
    /// Sender connections since the bridge started.
    pub senders_total: u64,
    /// Sender connections refused at accept (uid, `--allow-exe`).
    #[serde(default)]
    pub senders_refused: u64,
    /// Commits the frame-rate limit held back and coalesced (`--max-fps`).
    #[serde(default)]
    pub commits_held_back: u64,
    /// Application bus connections the bus closed (each reconnected).
    #[serde(default)]
    pub bus_connections_lost: u64,
    pub totals: Totals,
    /// The most recent rejection, with the rule it broke.
    pub last_rejection: Option<LastRejection>,
    pub apps: Vec<AppStatus>,
}

/// Sums over live applications; commit counts include departed ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub apps: usize,
    pub surfaces: usize,
    pub nodes: usize,
    pub commits_applied: u64,
    pub commits_rejected: u64,
}

/// One live application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    pub name: String,
    pub app_id: String,
    /// The sender's pid as the kernel reports it (SO_PEERCRED, in the
    /// bridge's pid namespace); `None` on `--stdio`. A compositor sending for
    /// the application is the sender.
    pub pid: Option<u32>,
    /// The sender's uid as the kernel reports it; `None` on `--stdio`.
    #[serde(default)]
    pub uid: Option<u32>,
    /// The pid the hello claims (`app.pid`), unverified: a sandboxed
    /// sender's pid in its own namespace, or the application a compositor
    /// sends for.
    #[serde(default)]
    pub claimed_pid: Option<u32>,
    /// Its unique name on the accessibility bus (empty while not connected).
    pub bus_name: String,
    /// Whether its bus connection serves; false from a loss until the new
    /// connection is embedded.
    #[serde(default = "connected_by_default")]
    pub bus_connected: bool,
    pub surfaces: usize,
    pub nodes: usize,
    pub commits_applied: u64,
    pub commits_rejected: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastRejection {
    pub app: String,
    pub rule: String,
    pub reason: String,
}

fn connected_by_default() -> bool {
    true
}

impl AppStatus {
    fn of(app: &BridgedApp) -> Self {
        let bus_connected = app.bus_connected();
        let bus_name = if bus_connected {
            app.unique_name()
        } else {
            String::new()
        };
        let state = app.lock();
        Self {
            name: app.info.name.clone(),
            app_id: app.info.app_id.clone(),
            pid: app.credentials.pid(),
            uid: app.credentials.uid(),
            claimed_pid: app.credentials.claimed_pid,
            bus_name,
            bus_connected,
            surfaces: state.replica.surfaces().count(),
            nodes: state.replica.node_count(),
            commits_applied: state.replica.commits_applied(),
            commits_rejected: state.replica.commits_rejected(),
        }
    }
}

/// Builds the document from the applications' snapshots and the counters.
pub fn document(
    apps: Vec<AppStatus>,
    stats: &Stats,
    socket: &Path,
    a11y_bus: String,
    at_present: bool,
) -> StatusDocument {
    let totals = Totals {
        apps: apps.len(),
        surfaces: apps.iter().map(|a| a.surfaces).sum(),
        nodes: apps.iter().map(|a| a.nodes).sum(),
        commits_applied: stats.departed_applied.load(Ordering::Relaxed)
            + apps.iter().map(|a| a.commits_applied).sum::<u64>(),
        commits_rejected: stats.departed_rejected.load(Ordering::Relaxed)
            + apps.iter().map(|a| a.commits_rejected).sum::<u64>(),
    };
    StatusDocument {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pid: std::process::id(),
        uptime_seconds: stats.started.elapsed().as_secs(),
        socket: socket.display().to_string(),
        a11y_bus,
        at_present,
        senders: stats.senders_connected.load(Ordering::Relaxed),
        senders_total: stats.senders_total.load(Ordering::Relaxed),
        senders_refused: stats.senders_refused.load(Ordering::Relaxed),
        commits_held_back: stats.commits_held_back.load(Ordering::Relaxed),
        bus_connections_lost: stats.bus_connections_lost.load(Ordering::Relaxed),
        totals,
        last_rejection: stats
            .last_rejection
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone(),
        apps,
    }
}

/// The bound status socket; dropping it removes the file.
pub struct StatusSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl StatusSocket {
    /// A handle on the listening socket for the serving task.
    pub fn listener(&self) -> std::io::Result<UnixListener> {
        self.listener.try_clone()
    }
}

impl Drop for StatusSocket {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Binds the status socket beside the sender socket. Call after the sender
/// socket is bound: its instance lock makes removing a stale file safe.
pub fn bind(sender_socket: &Path) -> std::io::Result<StatusSocket> {
    let path = status_socket_path(sender_socket);
    match fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(&path)?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
    Ok(StatusSocket { listener, path })
}

/// Well-known name the daemon owns on the session bus, so the D-Bus
/// session service file (packaging/) can start it on demand.
pub const BUS_NAME: &str = "org.freedesktop.a11y.NewtonBridge";

/// Starts the status socket and claims [`BUS_NAME`]; both best effort (a
/// warning, and the bridge serves on). Keep the returned guard until
/// shutdown: dropping it removes the status socket.
pub fn start(daemon: &Arc<Daemon>, sender_socket: &Path) -> Option<StatusSocket> {
    daemon
        .executor
        .spawn(own_bus_name(daemon.executor.clone()))
        .detach();
    let status = bind(sender_socket)
        .map_err(|e| warn!("no status socket ({e}); `status` will not work"))
        .ok()?;
    match status.listener() {
        Ok(listener) => daemon
            .executor
            .spawn(serve(daemon.clone(), listener, sender_socket.to_owned()))
            .detach(),
        Err(e) => warn!("status socket unusable ({e}); `status` will not work"),
    }
    Some(status)
}

/// Owns [`BUS_NAME`] on the session bus for as long as the daemon runs.
/// Without a session bus (or with the name taken) the bridge still works;
/// only activation by name does not.
async fn own_bus_name(executor: Arc<async_executor::Executor<'static>>) {
    let conn = match crate::driven::session(&executor).await {
        Ok(conn) => conn,
        Err(e) => {
            debug!("no session bus ({e}); not claiming {BUS_NAME}");
            return;
        }
    };
    // An (empty) object server first: calls to the name then get proper
    // D-Bus errors instead of being ignored.
    let _ = conn.object_server();
    let flags = zbus::fdo::RequestNameFlags::DoNotQueue.into();
    match conn.request_name_with_flags(BUS_NAME, flags).await {
        Ok(_) => {
            debug!("owning {BUS_NAME} on the session bus");
            futures::future::pending::<()>().await;
        }
        // Usually another bridge (e.g. the session's, while `demo` runs) owns it.
        Err(e) => info!("not owning {BUS_NAME} on the session bus ({e}); D-Bus activation will not find this bridge"),
    }
}

/// Answers status requests until the daemon stops (the task is dropped).
pub async fn serve(daemon: Arc<Daemon>, listener: UnixListener, sender_socket: PathBuf) {
    let listener = match Async::new(listener) {
        Ok(listener) => listener,
        Err(e) => {
            warn!("status socket unusable: {e}; `status` will not work");
            return;
        }
    };
    // Out of descriptors, accept pauses (accept.rs) instead of spinning.
    let mut backoff = crate::accept::Backoff::default();
    loop {
        let stream = crate::accept::accept_with_backoff(
            &listener,
            &mut backoff,
            &daemon.log_limiter,
            "status socket",
        )
        .await;
        match Async::new(stream) {
            Ok(stream) => answer(&daemon, stream, &sender_socket).await,
            Err(e) => debug!("status connection unusable: {e}"),
        }
    }
}

async fn answer(daemon: &Daemon, mut stream: Async<UnixStream>, sender_socket: &Path) {
    if let Err(why) = crate::socket::check_same_user(stream.get_ref()) {
        warn!("refused a status request: {why}");
        return;
    }
    let apps = daemon.all_apps().iter().map(|a| AppStatus::of(a)).collect();
    let document = document(
        apps,
        &daemon.stats,
        sender_socket,
        daemon.a11y_address(),
        daemon.at_present(),
    );
    let Ok(mut json) = serde_json::to_vec(&document) else {
        return;
    };
    json.push(b'\n');
    if let Err(e) = stream.write_all(&json).await {
        debug!("status client left early: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_apps() -> Vec<AppStatus> {
        vec![
            AppStatus {
                bus_connected: true,
                name: "Editor".into(),
                app_id: "org.example.Editor".into(),
                pid: Some(40123),
                uid: Some(1000),
                claimed_pid: Some(2),
                bus_name: ":1.7".into(),
                surfaces: 2,
                nodes: 120,
                commits_applied: 30,
                commits_rejected: 1,
            },
            AppStatus {
                bus_connected: true,
                name: "Viewer".into(),
                app_id: "org.example.Viewer".into(),
                pid: None,
                uid: None,
                claimed_pid: Some(7),
                bus_name: ":1.9".into(),
                surfaces: 1,
                nodes: 5,
                commits_applied: 3,
                commits_rejected: 0,
            },
        ]
    }

    #[test]
    fn the_status_document_has_a_stable_shape() {
        let stats = Arc::new(Stats::default());
        let _one = stats.sender_connected();
        drop(stats.sender_connected());
        stats.departed_applied.store(7, Ordering::Relaxed);
        stats.note_rejection("Editor", "unknown-node", "node 9 is not in the tree");
        let document = document(
            sample_apps(),
            &stats,
            Path::new("/run/user/1000/newton-atspi/bridge.sock"),
            "unix:path=/tmp/a11y".into(),
            true,
        );
        let json = serde_json::to_value(&document).unwrap();
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "a11yBus",
                "apps",
                "atPresent",
                "busConnectionsLost",
                "commitsHeldBack",
                "lastRejection",
                "pid",
                "senders",
                "sendersRefused",
                "sendersTotal",
                "socket",
                "totals",
                "uptimeSeconds",
                "version"
            ]
        );
        assert_eq!(json["senders"], 1);
        assert_eq!(json["sendersTotal"], 2);
        assert_eq!(
            json["totals"],
            serde_json::json!({"apps": 2, "surfaces": 3, "nodes": 125,
                "commitsApplied": 40, "commitsRejected": 1})
        );
        assert_eq!(json["lastRejection"]["rule"], "unknown-node");
        assert_eq!(json["apps"][0]["appId"], "org.example.Editor");
        assert_eq!(json["apps"][0]["busName"], ":1.7");
        assert_eq!(json["apps"][0]["busConnected"], true);
        assert_eq!(json["apps"][0]["pid"], 40123);
        assert_eq!(json["apps"][0]["uid"], 1000);
        assert_eq!(json["apps"][0]["claimedPid"], 2);
        assert_eq!(json["apps"][1]["pid"], serde_json::Value::Null);
        assert_eq!(json["apps"][1]["claimedPid"], 7);
        let back: StatusDocument = serde_json::from_value(json).unwrap();
        assert_eq!(back, document);
    }

    #[test]
    fn the_status_socket_sits_beside_the_sender_socket() {
        assert_eq!(
            status_socket_path(Path::new("/run/user/1000/newton-atspi/bridge.sock")),
            Path::new("/run/user/1000/newton-atspi/bridge.sock.status")
        );
    }
}
