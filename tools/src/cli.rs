//! Command-line interface.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use newton_atspi_daemon::ServeArgs;

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
    /// Run a command inside private session and accessibility buses with the
    /// AT-SPI registry, IsEnabled=true and a bridge (for toolkit CI jobs).
    Session(SessionArgs),
    /// Write the man pages into a directory (for packaging).
    #[command(hide = true)]
    GenerateManpages(GenerateArgs),
    /// Write bash, zsh and fish completions into a directory (for packaging).
    #[command(hide = true)]
    GenerateCompletions(GenerateArgs),
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
    /// Survive bridge restarts: when the connection ends or no bridge
    /// listens yet, retry with backoff and bring the application back with
    /// its latest trees, geometry and focus (docs/protocol.md §2.3). Most
    /// useful with --stay.
    #[arg(long)]
    pub reconnect: bool,
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
    /// First application (name as for `dump`: exact, else a unique
    /// substring; or a unique bus name such as `:1.42`), or a snapshot: a
    /// file ending in `.json` written by `dump --json APP`.
    pub a: String,
    /// Second application or snapshot.
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
    /// Before comparing, wait until an application named APP (as for the
    /// operands) is on the desktop and has at least one child (its window),
    /// for at most --timeout seconds; for CI jobs that start the
    /// application just before. Repeat for several.
    #[arg(long, value_name = "APP")]
    pub wait_for: Vec<String>,
    /// Seconds --wait-for waits before giving up (exit status 2).
    #[arg(long, value_name = "S", default_value_t = 30, requires = "wait_for")]
    pub timeout: u64,
    /// Accessibility bus address (default: as libatspi finds it).
    #[arg(long, env = "AT_SPI_BUS_ADDRESS", hide_env_values = true)]
    pub a11y_bus: Option<String>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "The command sees DBUS_SESSION_BUS_ADDRESS, AT_SPI_BUS_ADDRESS, XDG_RUNTIME_DIR and \
NEWTON_ATSPI_SOCKET of the private session; everything started is stopped when it ends. Exit \
status: the command's (128 + N when killed by signal N); 1 when the session could not start.\n\
Example: newton-atspi-bridge session -- sh -c 'my-app & newton-atspi-bridge diff --wait-for \"My App\" expected.json \"My App\"'"
)]
pub struct SessionArgs {
    /// Do not run a bridge in the session (the buses and the registry only;
    /// e.g. for an application through accesskit_unix alone).
    #[arg(long)]
    pub no_bridge: bool,
    /// The command and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
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

    /// The daemon's configuration tests use a copy of this CLI's shape;
    /// this keeps the copy honest: the real definition offers the same
    /// file keys (the global log level and every serve limit).
    #[test]
    fn the_configuration_files_can_set_the_log_level_and_every_limit() {
        let mut cli = command();
        cli.build();
        let keys: Vec<String> = newton_atspi_daemon::config::settable(&cli)
            .into_iter()
            .map(|s| s.key)
            .collect();
        for key in [
            "log-level",
            "max-nodes",
            "max-depth",
            "max-frame-bytes",
            "max-fps",
        ] {
            assert!(keys.iter().any(|k| k == key), "{key} missing from {keys:?}");
        }
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
