//! Peer-to-peer AT-SPI: like GTK's atk-bridge, each application offers a
//! private socket through `Application.GetApplicationBusAddress`; libatspi
//! then sends its method calls there directly, skipping the bus daemon (one
//! hop instead of two). Events still go over the bus. The socket sits in the
//! bridge's private directory and only the same user may connect.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_executor::{Executor, Task};
use async_io::Async;
use tracing::{debug, warn};
use zbus::message::Message;

use crate::app::BridgedApp;

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
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream.into_inner(),
            Err(e) => {
                warn!("peer-to-peer accept failed: {e}");
                return;
            }
        };
        let Ok(stream) = stream else { continue };
        if let Err(why) = crate::socket::check_same_user(&stream) {
            warn!(app = %app.info.name, "refused a peer-to-peer client: {why}");
            continue;
        }
        serve_peer(stream, &app, &executor).await;
    }
}

/// Authenticates one client and has the application answer it. The
/// handshake is awaited here (it is short and local); the answering runs as
/// one of the application's serving tasks.
async fn serve_peer(stream: UnixStream, app: &Arc<BridgedApp>, executor: &Executor<'static>) {
    let guid = zbus::Guid::generate();
    // The stream must exist before the connection reads anything: libatspi
    // sends its first call right after the handshake.
    let built = match zbus::connection::Builder::async_io_unix_stream(stream).server(guid) {
        Ok(builder) => builder.p2p().build_message_stream().await,
        Err(e) => Err(e),
    };
    match built {
        Ok(incoming) => {
            debug!(app = %app.info.name, "peer-to-peer client connected");
            app.serve_on(incoming, executor);
        }
        Err(e) => debug!(app = %app.info.name, "peer-to-peer handshake failed: {e}"),
    }
}

/// `Application.GetApplicationBusAddress` on the app root: a transport fact
/// the bridge answers itself (the shim answers only from the replica).
pub fn is_bus_address_query(call: &Message) -> bool {
    let header = call.header();
    header
        .interface()
        .is_some_and(|i| i.as_str() == "org.a11y.atspi.Application")
        && header
            .member()
            .is_some_and(|m| m.as_str() == "GetApplicationBusAddress")
        && header
            .path()
            .is_some_and(|p| p.as_str() == crate::registry::ROOT_PATH)
}
