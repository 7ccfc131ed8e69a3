//! `newton-atspi-bridge`: the Newton → AT-SPI bridge daemon and its CLI.
//!
//! Applications (through their compositor, a test producer, a replay file or
//! a remote stream) push accessibility trees; the bridge keeps a validated
//! replica of each and serves it on the AT-SPI bus so unmodified screen
//! readers work. See ARCHITECTURE.md for the data flow.

mod a11y_bus;
mod accept;
mod activation;
mod allow;
mod app;
mod cli;
mod control;
mod daemon;
mod demo;
mod demo_orca;
mod diff;
mod dump;
mod fault;
mod keys;
mod listeners;
mod logging;
mod manpages;
mod p2p;
mod private_session;
mod record;
mod registry;
mod sender;
mod socket;
mod status;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ServeArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The demo's output is the tree; keep routine log lines out of it.
    let quiet_demo = matches!(cli.command, Some(Command::Demo(_))) && cli.log_level == "info";
    logging::init(if quiet_demo { "warn" } else { &cli.log_level });
    let result = match cli
        .command
        .unwrap_or_else(|| Command::Serve(ServeArgs::from_environment()))
    {
        Command::Serve(args) => daemon::run(args),
        Command::Replay(args) => sender::replay(args),
        Command::Dump(args) => dump::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Record(args) => record::run(args),
        Command::Diff(args) => return diff_exit_code(diff::run(args)),
        Command::Status(args) => status::run(args),
        Command::GenerateManpages(args) => manpages::write_manpages(&args.dir),
        Command::GenerateCompletions(args) => manpages::write_completions(&args.dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("newton-atspi-bridge: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `diff` exit status: 0 identical, 1 different, 2 when it could not compare.
fn diff_exit_code(result: Result<bool, Box<dyn std::error::Error>>) -> ExitCode {
    match result {
        Ok(false) => ExitCode::SUCCESS,
        Ok(true) => ExitCode::from(1),
        Err(error) => {
            eprintln!("newton-atspi-bridge diff: {error}");
            ExitCode::from(2)
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
