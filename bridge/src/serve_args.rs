//! The daemon's settings: the `serve` subcommand's flags and environment
//! variables. The CLI (tools/) parses them; the daemon only reads them.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Sender socket (default: $XDG_RUNTIME_DIR/newton-atspi/bridge.sock, or $NEWTON_ATSPI_SOCKET).
    /// Under socket activation (newton-atspi-bridge.socket, LISTEN_FDS) the passed socket is
    /// served; it must be bound to this path.
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// Also accept one sender on stdin/stdout (for ssh channels and pipes).
    #[arg(long)]
    pub stdio: bool,
    /// Accessibility bus address (default: as libatspi finds it).
    #[arg(long, env = "AT_SPI_BUS_ADDRESS", hide_env_values = true)]
    pub a11y_bus: Option<String>,
    /// Largest frame a sender may send, in bytes.
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_FRAME_BYTES",
        default_value_t = newton_push_protocol::DEFAULT_MAX_FRAME_BYTES
    )]
    pub max_frame_bytes: u32,
    /// Largest number of nodes one application may push (all its windows together).
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_NODES",
        default_value_t = newton_cache::Limits::default().max_nodes
    )]
    pub max_nodes: usize,
    /// Deepest tree one application may push.
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_DEPTH",
        default_value_t = newton_cache::Limits::default().max_depth
    )]
    pub max_depth: usize,
    /// Frames (commits) per second one application may have applied; commits
    /// beyond it are coalesced and the latest state is applied at that rate.
    /// 0 disables the limit.
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_FPS",
        default_value_t = newton_push_protocol::DEFAULT_MAX_FRAMES_PER_SECOND
    )]
    pub max_fps: u32,
    /// Commits one application may have applied at once after a quiet spell,
    /// before --max-fps coalesces them.
    #[arg(
        long,
        env = "NEWTON_ATSPI_FPS_BURST",
        default_value_t = newton_push_protocol::DEFAULT_FRAME_BURST,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub fps_burst: u32,
    /// Bytes one application may have queued (updates received but not yet
    /// applied, all its windows); beyond it the window's queued updates are
    /// dropped and the sender is asked for a full tree (rule queued-bytes).
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_QUEUED_BYTES",
        default_value_t = newton_push_protocol::DEFAULT_MAX_QUEUED_BYTES
    )]
    pub max_queued_bytes: usize,
    /// Bytes one application's replica may take, as the allocator sees them
    /// (its nodes in both of the consumer's copies, their maps, and the text
    /// models an AT may have built; docs/robustness.md, "Memory budgets"). A
    /// commit that would pass it is rejected before it is applied (rule
    /// app-bytes).
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_APP_BYTES",
        default_value_t = newton_cache::limits::DEFAULT_MAX_APP_BYTES
    )]
    pub max_app_bytes: usize,
    /// Bytes every application's replica may take together, counted as for
    /// --max-app-bytes, plus the frames being received; a commit that would
    /// pass it is rejected (rule total-bytes).
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_TOTAL_BYTES",
        default_value_t = newton_cache::limits::DEFAULT_MAX_TOTAL_BYTES
    )]
    pub max_total_bytes: usize,
    /// Accept senders only when their executable (/proc/PID/exe of the
    /// connecting process) is PATH; repeat for several. Default: any
    /// executable of this user. In the environment, paths are separated by ':'.
    #[arg(
        long = "allow-exe",
        value_name = "PATH",
        env = "NEWTON_ATSPI_ALLOW_EXE",
        value_delimiter = ':'
    )]
    pub allow_exe: Vec<PathBuf>,
    /// Also accept senders running as UID (besides this user's own uid,
    /// always accepted); repeat for several. The socket directory is private
    /// (0700), so in practice only root can reach it. In the environment,
    /// uids are separated by ','.
    #[arg(
        long = "allow-uid",
        value_name = "UID",
        env = "NEWTON_ATSPI_ALLOW_UID",
        value_delimiter = ','
    )]
    pub allow_uid: Vec<u32>,
    /// Sender connections served at once (counted from accept, before the
    /// hello); beyond it a sender gets an error naming rule max-senders.
    /// 0 (the default) derives it from the file-descriptor limit, which the
    /// bridge raises to its hard limit at start: (limit − 64) / 4, between
    /// 8 and 4096 (240 under a limit of 1024).
    #[arg(long, env = "NEWTON_ATSPI_MAX_SENDERS", default_value_t = 0)]
    pub max_senders: usize,
    /// Sender connections one uid may have at once (matters with
    /// --allow-uid); 0 (the default) means the same as --max-senders.
    #[arg(long, env = "NEWTON_ATSPI_MAX_SENDERS_PER_UID", default_value_t = 0)]
    pub max_senders_per_uid: usize,
    /// Peer-to-peer AT connections served at once, over all applications
    /// (counted from accept, through the handshake, to close); beyond it a
    /// client is closed and the refusal logged (rule max-p2p-clients). 0
    /// (the default) derives it from the file-descriptor limit as
    /// --max-senders does: one client per sender fits the 4 descriptors
    /// each sender is given (240 under a limit of 1024).
    #[arg(long, env = "NEWTON_ATSPI_MAX_P2P_CLIENTS", default_value_t = 0)]
    pub max_p2p_clients: usize,
    /// Peer-to-peer connections to one application (rule
    /// max-p2p-clients-per-app); an AT opens one per application.
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_P2P_CLIENTS_PER_APP",
        default_value_t = crate::p2p::DEFAULT_MAX_PER_APP
    )]
    pub max_p2p_clients_per_app: usize,
    /// Peer-to-peer connections one process may have to one application
    /// (rule max-p2p-clients-per-process), so that one process cannot take
    /// an application's every place.
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_P2P_CLIENTS_PER_PROCESS",
        default_value_t = crate::p2p::DEFAULT_MAX_PER_PROCESS
    )]
    pub max_p2p_clients_per_process: usize,
    /// Seconds a new sender connection has to send its complete hello;
    /// then it is closed with an error naming rule hello-timeout. 0 waits
    /// for ever.
    #[arg(
        long,
        env = "NEWTON_ATSPI_HELLO_TIMEOUT",
        default_value_t = newton_push_protocol::DEFAULT_HELLO_TIMEOUT.as_secs()
    )]
    pub hello_timeout: u64,
    /// Bytes of answers (rejected, syncDone, actions) one sender may leave
    /// unread. Answers are never dropped: a sender over it is disconnected
    /// with an error naming rule unread-replies.
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_UNREAD_BYTES",
        default_value_t = newton_push_protocol::DEFAULT_MAX_UNREAD_REPLY_BYTES
    )]
    pub max_unread_bytes: usize,
    /// Print the settings `serve` would use, each with where it came from
    /// (command line, environment, configuration file and line, built-in
    /// default), and exit.
    #[arg(long)]
    pub print_config: bool,
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
            max_fps: newton_push_protocol::DEFAULT_MAX_FRAMES_PER_SECOND,
            fps_burst: newton_push_protocol::DEFAULT_FRAME_BURST,
            max_queued_bytes: newton_push_protocol::DEFAULT_MAX_QUEUED_BYTES,
            max_app_bytes: newton_cache::limits::DEFAULT_MAX_APP_BYTES,
            max_total_bytes: newton_cache::limits::DEFAULT_MAX_TOTAL_BYTES,
            allow_exe: Vec::new(),
            allow_uid: Vec::new(),
            max_senders: 0,
            max_senders_per_uid: 0,
            max_p2p_clients: 0,
            max_p2p_clients_per_app: crate::p2p::DEFAULT_MAX_PER_APP,
            max_p2p_clients_per_process: crate::p2p::DEFAULT_MAX_PER_PROCESS,
            hello_timeout: newton_push_protocol::DEFAULT_HELLO_TIMEOUT.as_secs(),
            max_unread_bytes: newton_push_protocol::DEFAULT_MAX_UNREAD_REPLY_BYTES,
            print_config: false,
        }
    }
}
