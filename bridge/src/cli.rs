//! Command-line interface.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Serves applications that push their accessibility trees (Newton) on the
/// AT-SPI accessibility bus, so Orca and every libatspi client work unchanged.
#[derive(Debug, Parser)]
#[command(name = "newton-atspi-bridge", version, propagate_version = true)]
pub struct Cli {
    /// Log level (error, warn, info, debug, trace); RUST_LOG overrides it.
    #[arg(long, global = true, default_value = "info", env = "NEWTON_ATSPI_LOG")]
    pub log_level: String,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the bridge (the default): accept senders and serve them on the AT-SPI bus.
    Serve(ServeArgs),
    /// Push a recorded stream (JSON lines) into a running bridge.
    Replay(ReplayArgs),
    /// Print an AT-SPI application's tree as a client sees it (any toolkit).
    Dump(DumpArgs),
    /// Show what an AT sees: start private buses when no desktop is running,
    /// start the bridge, replay a bundled fixture and print the AT-SPI tree.
    Demo(DemoArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Sender socket (default: $XDG_RUNTIME_DIR/newton-atspi/bridge.sock, or $NEWTON_ATSPI_SOCKET).
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// Also accept one sender on stdin/stdout (for ssh channels and pipes).
    #[arg(long)]
    pub stdio: bool,
    /// Accessibility bus address (default: as libatspi finds it).
    #[arg(long, env = "AT_SPI_BUS_ADDRESS", hide_env_values = true)]
    pub a11y_bus: Option<String>,
    /// Largest frame a sender may send, in bytes.
    #[arg(long, default_value_t = newton_push_protocol::DEFAULT_MAX_FRAME_BYTES)]
    pub max_frame_bytes: u32,
    /// Largest number of nodes one application may push (all its windows together).
    #[arg(long, default_value_t = newton_cache::Limits::default().max_nodes)]
    pub max_nodes: usize,
    /// Deepest tree one application may push.
    #[arg(long, default_value_t = newton_cache::Limits::default().max_depth)]
    pub max_depth: usize,
}

impl ServeArgs {
    /// Every setting at its default (what `serve` with no flags uses).
    pub fn default_limits() -> Self {
        Self {
            socket: None,
            stdio: false,
            a11y_bus: None,
            max_frame_bytes: newton_push_protocol::DEFAULT_MAX_FRAME_BYTES,
            max_nodes: newton_cache::Limits::default().max_nodes,
            max_depth: newton_cache::Limits::default().max_depth,
        }
    }
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recorded stream (JSON lines, first line the hello).
    pub file: PathBuf,
    /// Bridge socket (default as for `serve`).
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// Send as fast as possible instead of with the recorded timing.
    #[arg(long)]
    pub fast: bool,
    /// Use the compact postcard encoding on the wire instead of JSON.
    #[arg(long)]
    pub postcard: bool,
    /// Stay connected after the last message (the application stays on the
    /// bus) until interrupted.
    #[arg(long)]
    pub stay: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Fixture to replay (default: the bundled one).
    #[arg(long)]
    pub fixture: Option<PathBuf>,
    /// Print the tree as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Always start private buses, even inside a desktop session.
    #[arg(long)]
    pub private: bool,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Application name (exact, else a unique substring); all applications when omitted.
    pub app: Option<String>,
    /// Print JSON instead of indented text.
    #[arg(long)]
    pub json: bool,
    /// Deepest level to walk.
    #[arg(long, default_value_t = 64)]
    pub max_depth: usize,
    /// Most objects to visit per application.
    #[arg(long, default_value_t = 20_000)]
    pub max_nodes: usize,
    /// Accessibility bus address (default: as libatspi finds it).
    #[arg(long, env = "AT_SPI_BUS_ADDRESS", hide_env_values = true)]
    pub a11y_bus: Option<String>,
}
