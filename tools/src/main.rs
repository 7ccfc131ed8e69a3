//! `newton-atspi-bridge`: the Newton → AT-SPI bridge daemon and its CLI.
//!
//! Applications (through their compositor, a test producer, a replay file or
//! a remote stream) push accessibility trees; the bridge keeps a validated
//! replica of each and serves it on the AT-SPI bus so unmodified screen
//! readers work. See ARCHITECTURE.md for the data flow.
//!
//! This crate is the installed program: `serve` (the default) runs the
//! daemon library (newton-atspi-daemon, bridge/); every other subcommand is
//! a tool that observes or feeds a bridge (dump, diff, record, replay,
//! status, demo) and lives here, next to the CLI definition.

#![forbid(unsafe_code)]

mod allow;
mod cli;
mod demo;
mod demo_orca;
mod diff;
mod dump_command;
mod exit_status;
mod in_process_bridge;
mod manpages;
mod progress;
mod record;
mod replay;
mod session_command;
mod status;

use std::process::ExitCode;

use clap::{FromArgMatches, Parser};

use cli::{Cli, Command};

fn main() -> ExitCode {
    let (cli, config) = match parse() {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    // The demo's output is the tree, a session's the command's: keep routine
    // log lines out of them.
    let quiet_demo = matches!(cli.command, Some(Command::Demo(_) | Command::Session(_)))
        && cli.log_level == "info";
    newton_atspi_daemon::logging::init(if quiet_demo { "warn" } else { &cli.log_level });
    for path in &config.files_read {
        tracing::info!("configuration read from {}", path.display());
    }
    let Some(command) = cli.command else {
        unreachable!("parse() makes a bare invocation `serve`")
    };
    let result = match command {
        Command::Serve(args) => newton_atspi_daemon::run(args),
        Command::Replay(args) => replay::replay(args),
        Command::Dump(args) => dump_command::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Record(args) => record::run(args),
        Command::Diff(args) => return diff_exit_code(diff::run(args)),
        Command::Status(args) => status::run(args),
        Command::Session(args) => {
            return match session_command::run(args) {
                Ok(code) => ExitCode::from(code),
                Err(error) => {
                    eprintln!("newton-atspi-bridge session: {error}");
                    ExitCode::from(exit_status::FAILURE)
                }
            }
        }
        Command::GenerateManpages(args) => manpages::write_manpages(&args.dir),
        Command::GenerateCompletions(args) => manpages::write_completions(&args.dir),
    };
    match result {
        Ok(()) => ExitCode::from(exit_status::SUCCESS),
        Err(error) => {
            eprintln!("newton-atspi-bridge: {error}");
            ExitCode::from(exit_status::FAILURE)
        }
    }
}

/// Parses the command line. `serve` (which a bare `newton-atspi-bridge`
/// runs) is parsed again with the configuration files applied as defaults;
/// `--print-config` is answered here. Usage errors exit through clap (2);
/// an unusable configuration file returns [`exit_status::USAGE`].
fn parse() -> Result<(Cli, newton_atspi_daemon::config::Config), ExitCode> {
    let plain = Cli::parse();
    if !matches!(plain.command, None | Some(Command::Serve(_))) {
        return Ok((plain, newton_atspi_daemon::config::Config::default()));
    }
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if plain.command.is_none() {
        argv.push(newton_atspi_daemon::config::CONFIGURED_SUBCOMMAND.into());
    }
    let configured =
        newton_atspi_daemon::config::Config::load(&newton_atspi_daemon::config::default_paths())
            .and_then(|config| {
                let command = config.apply(cli::command())?;
                Ok((config, command))
            });
    let (config, command) = configured.map_err(|error| {
        eprintln!("newton-atspi-bridge: {error}");
        ExitCode::from(exit_status::USAGE)
    })?;
    let matches = command.clone().get_matches_from(argv);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Some(Command::Serve(args)) = &cli.command {
        if args.print_config {
            let text = newton_atspi_daemon::config::describe(cli::command(), &matches, &config);
            return Err(match print_out(&text) {
                Ok(()) => ExitCode::from(exit_status::SUCCESS),
                Err(_) => ExitCode::from(exit_status::FAILURE),
            });
        }
    }
    Ok((cli, config))
}

/// `diff` exit status: 0 identical, 1 different, 2 when it could not compare.
fn diff_exit_code(result: Result<bool, Box<dyn std::error::Error>>) -> ExitCode {
    match result {
        Ok(false) => ExitCode::from(exit_status::SUCCESS),
        Ok(true) => ExitCode::from(exit_status::DIFF_DIFFERENT),
        Err(error) => {
            eprintln!("newton-atspi-bridge diff: {error}");
            ExitCode::from(exit_status::DIFF_ERROR)
        }
    }
}

/// Writes command output to stdout. A reader that went away (`| head`) is
/// not an error: the output simply stops, as with any Unix tool.
pub fn print_out(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
