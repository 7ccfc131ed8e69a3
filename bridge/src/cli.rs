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
    /// Record what a sender pushes (JSON lines) for bug reports and fixtures,
    /// passing it on to the running bridge.
    Record(RecordArgs),
    /// Compare two AT-SPI applications' trees (exit 1 when they differ).
    Diff(DiffArgs),
    /// Show the running bridge's applications, nodes, updates and rejections.
    Status(StatusArgs),
    /// Write the man pages into a directory (for packaging).
    #[command(hide = true)]
    GenerateManpages(GenerateArgs),
    /// Write bash, zsh and fish completions into a directory (for packaging).
    #[command(hide = true)]
    GenerateCompletions(GenerateArgs),
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
    /// Estimated bytes one application's replica may take (its nodes, labels
    /// and text; docs/robustness.md, "Memory budgets"). A commit that would
    /// pass it is rejected before it is applied (rule app-bytes).
    #[arg(
        long,
        env = "NEWTON_ATSPI_MAX_APP_BYTES",
        default_value_t = newton_cache::limits::DEFAULT_MAX_APP_BYTES
    )]
    pub max_app_bytes: usize,
    /// Estimated bytes every application's replica may take together; a
    /// commit that would pass it is rejected (rule total-bytes).
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
}

impl ServeArgs {
    /// `serve` as if given with no flags, but reading its `NEWTON_ATSPI_*`
    /// environment variables (what a bare `newton-atspi-bridge` runs). Exits
    /// with clap's message when one of them is invalid.
    pub fn from_environment() -> Self {
        match Cli::parse_from(["newton-atspi-bridge", "serve"]).command {
            Some(Command::Serve(args)) => args,
            _ => Self::default_limits(),
        }
    }

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
            hello_timeout: newton_push_protocol::DEFAULT_HELLO_TIMEOUT.as_secs(),
            max_unread_bytes: newton_push_protocol::DEFAULT_MAX_UNREAD_REPLY_BYTES,
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
    /// Do not run Orca (on private buses the demo runs a headless Orca when
    /// it is installed and prints what it says).
    #[arg(long)]
    pub no_orca: bool,
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

#[derive(Debug, Args)]
#[command(
    after_help = "Point the sender at the printed socket; the recording ends when it disconnects.\n\
Example: newton-atspi-bridge record --out bug.jsonl"
)]
pub struct RecordArgs {
    /// Where to write the recording (JSON lines, first line the hello; `replay` plays it back).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Socket to listen on for the sender (default: record.sock beside the bridge socket).
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// The bridge to pass the stream on to (default: the bridge socket). When no
    /// bridge listens there, the recorder answers the sender itself.
    #[arg(long)]
    pub upstream: Option<PathBuf>,
}

/// Output formats of `diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// One line per difference.
    Text,
    /// A JSON document listing every difference.
    Json,
    /// JUnit XML: one test case per object, one failure per differing property.
    Junit,
}

/// How `diff` reads the two trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffWalk {
    /// Every property of every object, with ordinary calls.
    Calls,
    /// One Cache.GetItems call per application (fewer properties).
    Cache,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 when the trees are identical or every difference is allowed by an \
--allow rule, 1 when any other difference remains, 2 on errors (including a refused rules file).\n\
Examples:\n  newton-atspi-bridge diff gtk4-demo-legacy gtk4-demo --format junit --ignore extents > report.xml\n  \
newton-atspi-bridge diff \"my-app (legacy)\" my-app --allow docs/compat-rules.json --format junit > report.xml"
)]
pub struct DiffArgs {
    /// First application (name as for `dump`: exact, else a unique substring).
    pub a: String,
    /// Second application.
    pub b: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Properties to ignore, comma-separated: role, name, description, states,
    /// interfaces, text, caret, actions, value, minimum, maximum, extents,
    /// relations, children, errors (calls that failed during the walk);
    /// `states:NAME` ignores one state only (e.g. `extents,states:focused`).
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Intentional differences (a JSON rules file): each difference a rule
    /// covers is reported as "allowed (RULE-ID)" and does not fail the exit
    /// status; any other still does. A rule names a property, the direction
    /// (`a`/`b` value patterns, or list items `added` only in B / `removed`
    /// only in A, or extents `tolerance`, or `flatten` a role out of both
    /// trees) and conditions (`path`, `aRole`/`bRole`, `aHas`/`bHas`/`aLacks`/
    /// `bLacks` with `state:NAME` or `interface:NAME`). The project's list for
    /// accesskit_unix (A) against the bridge (B) is docs/compat-rules.json,
    /// explained in docs/compat.md. In JUnit output allowed differences leave
    /// the object's case passed with an `allowed (RULE-ID): …` note in its
    /// system-out.
    #[arg(long, value_name = "FILE")]
    pub allow: Option<std::path::PathBuf>,
    /// How to read the trees: `calls` asks every object for every property
    /// (about 9 calls per object); `cache` reads each application with one
    /// `Cache.GetItems` call — structure, role, name, description, states and
    /// interfaces only (text, caret, actions, value, extents and relations
    /// are not compared) — for trees too large to walk.
    #[arg(long, value_enum, default_value_t = DiffWalk::Calls)]
    pub walk: DiffWalk,
    /// Deepest level to walk.
    #[arg(long, default_value_t = 64)]
    pub max_depth: usize,
    /// Most objects to visit per application.
    #[arg(long, default_value_t = 20_000)]
    pub max_nodes: usize,
    /// Compare only the subtree at this index path on both sides (`/0/0/3`:
    /// child 3 of child 0 of the application's child 0), as `diff` reports
    /// paths; reported paths stay whole. For trees too large to walk, with
    /// `--walk calls` only.
    #[arg(long, value_name = "INDEX-PATH")]
    pub under: Option<String>,
    /// Accessibility bus address (default: as libatspi finds it).
    #[arg(long, env = "AT_SPI_BUS_ADDRESS", hide_env_values = true)]
    pub a11y_bus: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print the daemon's JSON document instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// Bridge socket (default as for `serve`); the status socket is beside it.
    #[arg(long)]
    pub socket: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Directory to write into (created if missing).
    pub dir: PathBuf,
}

/// The command definition, for man pages and completions.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn every_subcommand_renders_its_help() {
        let mut cli = command();
        let names: Vec<String> = cli
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        assert!(names.len() >= 9, "{names:?}");
        for name in names {
            let sub = cli.find_subcommand_mut(&name).expect("listed above");
            let help = sub.render_long_help().to_string();
            assert!(help.contains("Usage:"), "{name}: {help}");
        }
        let error = Cli::try_parse_from(["newton-atspi-bridge", "record", "--help"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::DisplayHelp);
    }

    #[test]
    fn parses_record_diff_and_status() {
        let cli = Cli::try_parse_from([
            "newton-atspi-bridge",
            "record",
            "--out",
            "x.jsonl",
            "--upstream",
            "/tmp/b.sock",
        ])
        .unwrap();
        let Some(Command::Record(args)) = cli.command else {
            panic!("not record");
        };
        assert_eq!(args.out, PathBuf::from("x.jsonl"));
        assert_eq!(args.upstream, Some(PathBuf::from("/tmp/b.sock")));
        assert_eq!(args.socket, None);

        let cli = Cli::try_parse_from([
            "newton-atspi-bridge",
            "diff",
            "a",
            "b",
            "--format",
            "junit",
            "--ignore",
            "extents,states:focused",
        ])
        .unwrap();
        let Some(Command::Diff(args)) = cli.command else {
            panic!("not diff");
        };
        assert_eq!(args.format, DiffFormat::Junit);
        assert_eq!(args.ignore, vec!["extents", "states:focused"]);

        let cli = Cli::try_parse_from(["newton-atspi-bridge", "status", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Status(StatusArgs { json: true, .. }))
        ));
    }

    #[test]
    fn parses_the_sender_limits_and_allow_lists() {
        let cli = Cli::try_parse_from([
            "newton-atspi-bridge",
            "serve",
            "--max-fps",
            "30",
            "--fps-burst",
            "5",
            "--max-queued-bytes",
            "1000",
            "--allow-exe",
            "/usr/bin/a",
            "--allow-exe",
            "/usr/bin/b",
            "--allow-uid",
            "0",
        ])
        .unwrap();
        let Some(Command::Serve(args)) = cli.command else {
            panic!("not serve");
        };
        assert_eq!(
            (args.max_fps, args.fps_burst, args.max_queued_bytes),
            (30, 5, 1000)
        );
        assert_eq!(
            args.allow_exe,
            vec![PathBuf::from("/usr/bin/a"), PathBuf::from("/usr/bin/b")]
        );
        assert_eq!(args.allow_uid, vec![0]);
        assert!(Cli::try_parse_from(["newton-atspi-bridge", "serve", "--fps-burst", "0"]).is_err());
    }

    #[test]
    fn record_needs_an_output_file() {
        assert!(Cli::try_parse_from(["newton-atspi-bridge", "record"]).is_err());
    }
}
