//! Peer-to-peer AT-SPI: like GTK's atk-bridge, each application offers a
//! private socket through `Application.GetApplicationBusAddress`; libatspi
//! then sends its method calls there directly, skipping the bus daemon (one
//! hop instead of two). Events still go over the bus. The socket sits in the
//! bridge's private directory and only the same user may connect.
//!
//! Handshakes run concurrently, each in its own task bounded by
//! [`HANDSHAKE_TIMEOUT`], at most [`MAX_HANDSHAKES`] at once per
//! application: a client that connects and stalls (sends one byte and
//! waits) never delays another client, and is closed after the timeout.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_executor::{Executor, Task};
use async_io::Async;
use tracing::debug;
use zbus::message::Message;

use crate::accept::{accept_with_backoff, warn_limited, AcceptLog, Backoff};
use crate::app::BridgedApp;

/// Time a peer-to-peer client has for the D-Bus authentication handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Handshakes in progress at once per application; a client beyond them is
/// closed at once (a real client retries or uses the bus).
pub const MAX_HANDSHAKES: usize = 8;

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
    /// Binds `dir/app-<key>.sock` and serves `app` on every connection.
    pub fn bind(
        dir: &Path,
        key: u64,
        app: Arc<BridgedApp>,
        executor: &Arc<Executor<'static>>,
    ) -> std::io::Result<Self> {
        let path = dir.join(format!("app-{key}.sock"));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        let listener = Async::new(listener)?;
        let address = format!("unix:path={}", path.display());
        let accepting = executor.spawn(accept_loop(listener, app, executor.clone()));
        Ok(Self {
            address,
            path,
            _accepting: accepting,
        })
    }
}

async fn accept_loop(
    listener: Async<UnixListener>,
    app: Arc<BridgedApp>,
    executor: Arc<Executor<'static>>,
) {
    let handshaking = Arc::new(AtomicUsize::new(0));
    let mut backoff = Backoff::default();
    loop {
        let stream =
            accept_with_backoff(&listener, &mut backoff, p2p_log(), "peer-to-peer socket").await;
        if let Err(why) = crate::socket::check_same_user(&stream) {
            warn_limited(
                p2p_log(),
                "p2p-refused",
                &format!("refused a peer-to-peer client of {}: {why}", app.info.name),
            );
            continue;
        }
        if handshaking.fetch_add(1, Ordering::Relaxed) >= MAX_HANDSHAKES {
            handshaking.fetch_sub(1, Ordering::Relaxed);
            warn_limited(
                p2p_log(),
                "p2p-handshakes",
                &format!(
                    "{} peer-to-peer handshakes with {} in progress, the limit: a new client \
                     was closed (it may retry, or call over the bus)",
                    MAX_HANDSHAKES, app.info.name
                ),
            );
            continue;
        }
        let app = app.clone();
        let serving = executor.clone();
        let handshaking = handshaking.clone();
        executor
            .spawn(async move {
                serve_peer(stream, &app, &serving).await;
                handshaking.fetch_sub(1, Ordering::Relaxed);
            })
            .detach();
    }
}

/// Authenticates one client, within [`HANDSHAKE_TIMEOUT`], and has the
/// application answer it as one of its serving tasks.
async fn serve_peer(stream: UnixStream, app: &Arc<BridgedApp>, executor: &Executor<'static>) {
    let guid = zbus::Guid::generate();
    // The stream must exist before the connection reads anything: libatspi
    // sends its first call right after the handshake.
    let handshake = async {
        match zbus::connection::Builder::async_io_unix_stream(stream).server(guid) {
            Ok(builder) => builder
                .p2p()
                .internal_executor(false)
                .build_message_stream()
                .await
                .map(Some),
            Err(e) => Err(e),
        }
    };
    let timeout = async_io::Timer::after(HANDSHAKE_TIMEOUT);
    let outcome = match futures::future::select(std::pin::pin!(handshake), timeout).await {
        futures::future::Either::Left((built, _)) => built,
        futures::future::Either::Right(_) => Ok(None),
    };
    match outcome {
        Ok(Some(incoming)) => {
            debug!(app = %app.info.name, "peer-to-peer client connected");
            crate::driven::drive(&zbus::Connection::from(&incoming), executor);
            app.serve_on(incoming, executor);
        }
        Ok(None) => warn_limited(
            p2p_log(),
            "p2p-handshake-timeout",
            &format!(
                "a peer-to-peer client of {} did not finish its handshake within {} s; closed",
                app.info.name,
                HANDSHAKE_TIMEOUT.as_secs()
            ),
        ),
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
