//! `newton-legacy-reference`: plays a recorded Newton stream (the same
//! `RecordedLine` JSONL the bridge replays) *inside this process* through
//! accesskit_unix 0.24.1 — the way an AccessKit application speaks AT-SPI
//! directly — so CI can compare that "legacy" tree with the bridged one.
//!
//! Stdout protocol (for tests): `connected` with `--connect-first` once the
//! application is on the desktop without a window (then `start` on stdin
//! goes on), `applied SERIAL` once each commit is visible on the bus, `ready`
//! once after the first, `idle` when a non-stepped run
//! has applied what it was asked to; in `--step` mode every command line on
//! stdin gets exactly one reply line (`applied SERIAL`, `rejected SERIAL:
//! reason`, `end` or `error: …`). A commit the bridge's validator rejects
//! is skipped, as the bridge skips it. Action requests from ATs go to
//! stderr as JSON lines.

#![forbid(unsafe_code)]

mod naming;
mod recording;
mod snapshot;
mod surfaces;

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use recording::{Playbook, Step};
use surfaces::Application;

/// Expose a recorded Newton stream through accesskit_unix, in-process.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// The recording (RecordedLine JSONL, as `newton-atspi-bridge replay` reads).
    recording: PathBuf,
    /// Apply only the first N commits, then stay.
    #[arg(long, value_name = "N", conflicts_with = "step")]
    frames: Option<usize>,
    /// Apply the first commit, then read commands on stdin: `next`,
    /// `goto SERIAL`, `quit`.
    #[arg(long)]
    step: bool,
    /// The application's AT-SPI Name (default: the hello's app name). The
    /// process re-executes itself under this file name, because
    /// accesskit_unix names the application after its executable.
    #[arg(long, value_name = "NAME")]
    app_name: Option<String>,
    /// Keep the executable's own name ("newton-legacy-reference"), as
    /// accesskit_unix would on its own.
    #[arg(long, conflicts_with = "app_name")]
    keep_exe_name: bool,
    /// Register with the desktop first (accesskit_unix connects to the
    /// accessibility bus, still without a window), say `connected`, and wait
    /// for a `start` line on stdin before the first commit. A screen reader
    /// started in between meets an application whose connection is already
    /// serving: accesskit_unix's object server starts listening for method
    /// calls only after the registry announced the application, and a call
    /// arriving in between is never answered (libatspi then waits up to 15 s).
    #[arg(long, requires = "step")]
    connect_first: bool,
}

fn main() -> ExitCode {
    exit_on_any_panic();
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("newton-legacy-reference: {message}");
            ExitCode::FAILURE
        }
    }
}

/// accesskit_unix panics on its own thread when its event loop fails; the
/// reference is useless then, so the whole process ends instead of waiting
/// forever.
fn exit_on_any_panic() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        eprintln!("newton-legacy-reference: a thread panicked; exiting");
        std::process::exit(101);
    }));
}

fn run(args: Args) -> Result<(), String> {
    if args.frames == Some(0) {
        return Err(
            "--frames must be at least 1: the first commit is the tree accesskit_unix starts from"
                .into(),
        );
    }
    let book = recording::load(&args.recording)?;
    check_session_bus()?;
    if !args.keep_exe_name {
        let name = args.app_name.as_deref().unwrap_or(&book.hello.app.name);
        if let Err(e) = naming::ensure_named(name) {
            eprintln!("newton-legacy-reference: {e}; the application keeps the executable's name");
        }
    }
    let mut player = Player::new(book);
    if args.connect_first {
        player.app.settle()?;
        say("connected");
        wait_for_start()?;
    }
    player.apply_and_say()?;
    if !player.app.has_surfaces() {
        return Err("the first commit was rejected, so there is no tree to expose".into());
    }
    naming::remove_link();
    say("ready");
    if args.step {
        return player.serve_commands();
    }
    let wanted = args.frames.unwrap_or(usize::MAX);
    while player.applied < wanted && player.apply_and_say()? {}
    say("idle");
    loop {
        std::thread::park();
    }
}

/// accesskit_unix needs the session bus (it watches org.a11y.Status there
/// and asks org.a11y.Bus for the accessibility bus unless
/// AT_SPI_BUS_ADDRESS is set); without one it silently does nothing.
fn check_session_bus() -> Result<(), String> {
    let has_address = std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|a| !a.is_empty());
    let has_default = std::env::var_os("XDG_RUNTIME_DIR")
        .is_some_and(|dir| PathBuf::from(dir).join("bus").exists());
    if has_address || has_default {
        Ok(())
    } else {
        Err(
            "no session bus: set DBUS_SESSION_BUS_ADDRESS (accesskit_unix finds the \
             accessibility bus through the session bus)"
                .into(),
        )
    }
}

/// Waits for the `start` line that `--connect-first` asks for.
fn wait_for_start() -> Result<(), String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("read the start line on stdin: {e}"))?;
    match line.trim() {
        "start" => Ok(()),
        other => Err(format!("expected `start` on stdin, got {other:?}")),
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// What became of one step's commit.
enum StepOutcome {
    Applied(u64),
    Rejected(u64, String),
}

impl StepOutcome {
    fn line(&self) -> String {
        match self {
            StepOutcome::Applied(serial) => format!("applied {serial}"),
            StepOutcome::Rejected(serial, reason) => format!("rejected {serial}: {reason}"),
        }
    }
}

struct Player {
    steps: std::vec::IntoIter<Step>,
    app: Application,
    applied: usize,
    last_serial: Option<u64>,
}

impl Player {
    fn new(book: Playbook) -> Self {
        Self {
            steps: book.steps.into_iter(),
            app: Application::new(),
            applied: 0,
            last_serial: None,
        }
    }

    /// Applies the next step and waits until it is visible on the bus.
    /// Returns what happened to its commit, or `None` when there is none
    /// left. Like the bridge, a rejected event is reported and skipped: the
    /// surface keeps its last good tree (and, for a rejected commit, waits
    /// for a full tree, which the validator enforces).
    fn apply_next(&mut self) -> Result<Option<StepOutcome>, String> {
        let Some(step) = self.steps.next() else {
            return Ok(None);
        };
        let mut rejection = None;
        for event in step.events {
            let is_commit = matches!(event, recording::Event::Commit { .. });
            if let Err(reason) = self.app.apply(event) {
                eprintln!("newton-legacy-reference: rejected: {reason}");
                if is_commit {
                    rejection = Some(reason);
                }
            }
        }
        self.app.settle()?;
        self.applied += 1;
        self.last_serial = Some(step.serial);
        Ok(Some(match rejection {
            None => StepOutcome::Applied(step.serial),
            Some(reason) => StepOutcome::Rejected(step.serial, reason),
        }))
    }

    /// [`Self::apply_next`], saying `applied SERIAL` (or `rejected SERIAL:
    /// reason`); false at the end.
    fn apply_and_say(&mut self) -> Result<bool, String> {
        let outcome = self.apply_next()?;
        if let Some(outcome) = &outcome {
            say(&outcome.line());
        }
        Ok(outcome.is_some())
    }

    fn serve_commands(&mut self) -> Result<(), String> {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let line = line.map_err(|e| format!("cannot read commands on stdin: {e}"))?;
            let mut words = line.split_whitespace();
            match (words.next(), words.next()) {
                (None, _) => continue,
                (Some("quit"), None) => return Ok(()),
                (Some("next"), None) => {
                    if !self.apply_and_say()? {
                        say("end");
                    }
                }
                (Some("goto"), Some(serial)) => self.goto(serial)?,
                _ => say(&format!(
                    "error: unknown command \u{201c}{line}\u{201d}; use next, goto SERIAL or quit"
                )),
            }
        }
        Ok(())
    }

    /// Applies commits until the one with `serial` (forwards only:
    /// accesskit_unix cannot undo a commit).
    fn goto(&mut self, serial: &str) -> Result<(), String> {
        let Ok(serial) = serial.parse::<u64>() else {
            say(&format!(
                "error: \u{201c}{serial}\u{201d} is not a commit serial"
            ));
            return Ok(());
        };
        if self.last_serial == Some(serial) {
            say(&format!("applied {serial}"));
            return Ok(());
        }
        let ahead = self.steps.as_slice().iter().any(|s| s.serial == serial);
        if !ahead {
            say(&format!(
                "error: commit {serial} is not ahead (at {:?}); restart to go back",
                self.last_serial
            ));
            return Ok(());
        }
        let mut last = None;
        while self.last_serial != Some(serial) {
            match self.apply_next()? {
                Some(outcome) => last = Some(outcome),
                None => break,
            }
        }
        if let Some(outcome) = last {
            say(&outcome.line());
        }
        Ok(())
    }
}
