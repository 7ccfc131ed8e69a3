//! The daemon run in-process, for the subcommands that bring their own
//! session (`demo`, `session`): started on a thread, ready once its socket
//! exists, stopped through a channel.

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::ServeArgs;

/// How long the bridge may take to bind its socket.
const BRIDGE_READY: Duration = Duration::from_secs(20);

/// The daemon on a thread of this process, serving `socket` on the given
/// accessibility bus until stopped.
pub(crate) struct InProcessBridge {
    stop: async_channel::Sender<()>,
    thread: std::thread::JoinHandle<Result<(), String>>,
}

impl InProcessBridge {
    /// Starts the daemon and waits (at most [`BRIDGE_READY`]) until its
    /// socket exists.
    pub(crate) fn start(socket: &Path, a11y_address: &str) -> Result<Self, Box<dyn Error>> {
        let serve_args = ServeArgs {
            socket: Some(socket.to_owned()),
            a11y_bus: Some(a11y_address.to_owned()),
            ..ServeArgs::default_limits()
        };
        let (stop, stop_rx) = async_channel::bounded::<()>(1);
        let thread = std::thread::Builder::new()
            .name("bridge".into())
            .spawn(move || {
                newton_atspi_daemon::daemon::run_until(serve_args, Some(stop_rx))
                    .map_err(|e| e.to_string())
            })?;
        let bridge = InProcessBridge { stop, thread };
        let deadline = Instant::now() + BRIDGE_READY;
        while !socket.exists() {
            if bridge.thread.is_finished() || Instant::now() >= deadline {
                let why = bridge.stop().err().map(|e| e.to_string());
                return Err(format!(
                    "the bridge did not start: {}",
                    why.unwrap_or_else(|| format!(
                        "no socket at {} after {BRIDGE_READY:?}",
                        socket.display()
                    ))
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(bridge)
    }

    /// Stops the daemon and returns how it ended.
    pub(crate) fn stop(self) -> Result<(), Box<dyn Error>> {
        self.stop.close();
        let result = self
            .thread
            .join()
            .map_err(|_| "the bridge thread panicked")?;
        result.map_err(Into::into)
    }
}
