//! `session -- COMMAND`: runs a command inside private session and
//! accessibility buses with the AT-SPI registry and `IsEnabled=true` (as
//! after a screen reader was turned on, so producers that honour "no AT, no
//! cost" push their trees), plus a bridge unless `--no-bridge`. For toolkit
//! CI jobs: the command is typically a script that starts the application
//! and runs `newton-atspi-bridge diff`.
//!
//! The buses come from newton-atspi-client's one launcher
//! ([`PrivateSession`]), the same one `demo` uses and whose steps the
//! end-to-end harness runs. Everything started here is stopped when the
//! command ends; SIGTERM, SIGINT and SIGHUP are passed on to the command,
//! so an interrupted CI job still tears the session down.

use std::error::Error;
use std::path::Path;
use std::process::{Command, ExitStatus};

use futures::StreamExt;
use newton_atspi_client::private_session::PrivateSession;

use crate::cli::SessionArgs;
use crate::in_process_bridge::InProcessBridge;

/// How long the bridge may take to bind its socket.
/// Runs the command; its exit status is the result (128 + N when it was
/// killed by signal N, as a shell reports it).
pub fn run(args: SessionArgs) -> Result<u8, Box<dyn Error>> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or("session: give the command to run after `--`")?;
    // Starts with IsEnabled true, whatever the launcher's release.
    let session = PrivateSession::start()?;
    let socket = session.runtime_dir.join("newton-atspi").join("bridge.sock");
    let bridge = match args.no_bridge {
        true => None,
        false => Some(InProcessBridge::start(&socket, &session.a11y_address)?),
    };
    let mut command = Command::new(program);
    command
        .args(rest)
        .env("DBUS_SESSION_BUS_ADDRESS", &session.session_address)
        .env("AT_SPI_BUS_ADDRESS", &session.a11y_address)
        .env("XDG_RUNTIME_DIR", &session.runtime_dir)
        .env("NEWTON_ATSPI_SOCKET", &socket);
    let status = spawn_and_wait(command, program.as_ref());
    if let Some(bridge) = bridge {
        bridge.stop()?;
    }
    drop(session);
    Ok(exit_code(status?))
}

/// Starts the command and waits for it, passing SIGTERM, SIGINT and SIGHUP
/// on to it meanwhile (this process then outlives it and cleans up).
fn spawn_and_wait(mut command: Command, program: &Path) -> Result<ExitStatus, Box<dyn Error>> {
    use async_signal::{Signal, Signals};
    let mut signals = Signals::new([Signal::Term, Signal::Int, Signal::Hup])?;
    let mut child = command
        .spawn()
        .map_err(|e| format!("session: cannot run {}: {e}", program.display()))?;
    let pid = rustix::process::Pid::from_child(&child);
    let forward = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            async_io::block_on(async {
                while let Some(Ok(signal)) = signals.next().await {
                    let signal = match signal {
                        Signal::Int => rustix::process::Signal::INT,
                        Signal::Hup => rustix::process::Signal::HUP,
                        _ => rustix::process::Signal::TERM,
                    };
                    // The child may have exited meanwhile; then nothing to tell.
                    let _ = rustix::process::kill_process(pid, signal);
                }
            })
        })?;
    let status = child.wait()?;
    // The forwarding thread blocks on the next signal; it ends with the process.
    drop(forward);
    Ok(status)
}

/// The shell's convention: the exit code, else 128 + the signal number.
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
        (None, None) => 1,
    }
}
