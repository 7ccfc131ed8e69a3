//! Socket activation with `systemd-socket-activate` (Debian package `systemd`): the bridge takes
//! the listening socket it is passed (LISTEN_FDS), a sender that connects before the bridge
//! process exists is queued and served, the instance lock still refuses a second bridge, and a
//! socket held across a bridge restart (as systemd holds newton-atspi-bridge.socket) queues the
//! senders that connect while no bridge runs.
//!
//! One test in its own binary: part two hands the test's own listening socket to its children,
//! which must not leak into processes other tests would start in parallel.
//!
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use newton_e2e::{bridge_binary, fixture, wait_until, SessionOptions, TestSession};
use rustix::io::{fcntl_setfd, FdFlags};
use rustix::process::{kill_process, Pid, Signal};

const WAIT: Duration = Duration::from_secs(60);
const BASIC: &str = "generated-small/basic.jsonl";
const BASIC_NAME: &str = "Newton basic demo";
const DOC: &str = "generated-small/doc-small.jsonl";
const DOC_NAME: &str = "Newton small document";

#[test]
fn socket_activation_queues_senders_and_a_held_socket_survives_restarts() {
    let mut session = TestSession::start(SessionOptions {
        xvfb: false,
        atspi: true,
        ready_timeout: WAIT,
    })
    .expect("start the test session");
    // The default path, as the socket unit's %t/newton-atspi/bridge.sock; the private directory
    // as DirectoryMode=0700 makes it.
    let dir = session.dir().join("rt/newton-atspi");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .expect("create the socket directory");
    let socket = dir.join("bridge.sock");

    activated_on_first_connect(&mut session, &socket);
    held_socket_survives_a_restart(&mut session, &socket);

    let report = session.shutdown();
    assert!(report.is_clean(), "teardown left processes: {report:?}");
}

/// Part one: `systemd-socket-activate -l SOCKET bridge serve` binds the socket and starts the
/// bridge only when the first sender connects.
fn activated_on_first_connect(session: &mut TestSession, socket: &Path) {
    let mut activate = session.command("systemd-socket-activate");
    activate
        .args(passed_environment(session))
        .arg("-l")
        .arg(socket)
        .arg(bridge_binary().expect("cargo build -p newton-atspi-bridge"))
        .args(["serve", "--log-level", "debug"]);
    let pid = session
        .spawn("bridge-activated", activate)
        .expect("start systemd-socket-activate");
    wait_until("systemd-socket-activate to listen", WAIT, || {
        session.ensure_running(pid)?;
        Ok(is_socket(socket))
    })
    .expect("the socket is bound");
    assert_eq!(
        command_name(pid),
        "systemd-socket-",
        "no bridge may run before a sender connects"
    );

    // This replay connects before any bridge process exists: it must be served.
    let replay = start_replay(session, "replay-first", BASIC, socket, false);
    session
        .wait_for_app(BASIC_NAME, replay)
        .expect("the first sender is served by the activated bridge");
    assert_eq!(
        command_name(pid),
        "newton-atspi-br",
        "systemd-socket-activate execs the bridge in place"
    );
    let log = without_ansi(&session.stderr_of("bridge-activated"));
    assert!(
        log.contains("passed_by_service_manager=true"),
        "the bridge must serve the passed socket:\n{log}"
    );

    // The instance lock still refuses a second bridge on the same socket.
    let mut second = session.command(bridge_binary().expect("the bridge binary"));
    second.args(["serve", "--log-level", "debug"]);
    let (status, _) = session
        .run("bridge-second", second, WAIT)
        .expect("the second bridge exits");
    assert!(!status.success(), "a second bridge must refuse to run");
    let refusal = session.stderr_of("bridge-second");
    assert!(
        refusal.contains("another bridge already serves"),
        "the refusal names the running bridge: {refusal}"
    );
    assert_eq!(session.apps_named(BASIC_NAME).expect("read the desktop"), 1);

    session.stop(replay, Duration::from_secs(10));
    session.stop(pid, Duration::from_secs(20));
    // The bridge leaves a passed socket's file alone (systemd owns it; RemoveOnStop removes it).
    assert!(
        is_socket(socket),
        "the bridge must not unlink a passed socket"
    );
}

/// Part two: the test holds the listening socket as systemd does for the socket unit and hands it
/// to `systemd-socket-activate` (LISTEN_FDS); the bridge is SIGKILLed and started again while a
/// reconnecting replay and a plain replay connect in between.
fn held_socket_survives_a_restart(session: &mut TestSession, socket: &Path) {
    std::fs::remove_file(socket).expect("remove the first part's socket file");
    let listener = UnixListener::bind(socket).expect("bind the held socket");
    let first = start_with_held_socket(session, "bridge-held-1", &listener);
    let survivor = start_replay(session, "replay-reconnecting", BASIC, socket, true);
    session
        .wait_for_app(BASIC_NAME, survivor)
        .expect("the reconnecting replay is served");

    kill(first);
    session.stop(first, Duration::from_secs(5));
    wait_until("the killed bridge's application to leave", WAIT, || {
        Ok(session.apps_named(BASIC_NAME)? == 0)
    })
    .expect("the registry drops the dead bridge's application");

    // No bridge runs now, but the socket is held: this sender is queued, not refused.
    let queued = start_replay(session, "replay-queued", DOC, socket, false);
    std::thread::sleep(Duration::from_millis(500));
    session
        .ensure_running(queued)
        .expect("a sender connecting while the bridge is down must not be refused");
    assert!(
        is_socket(socket),
        "the socket file stays while the bridge is down"
    );

    let second = start_with_held_socket(session, "bridge-held-2", &listener);
    session
        .wait_for_app(DOC_NAME, queued)
        .expect("the queued sender is served by the restarted bridge");
    session
        .wait_for_app(BASIC_NAME, survivor)
        .expect("the reconnecting replay comes back");
    assert_eq!(
        session.apps_named(BASIC_NAME).expect("read the desktop"),
        1,
        "no duplicate application"
    );
    assert_eq!(
        session.apps_named(DOC_NAME).expect("read the desktop"),
        1,
        "no duplicate application"
    );
    let status = session.bridge_status(socket).expect("status answers");
    let names: Vec<&str> = status["apps"]
        .as_array()
        .map(|apps| apps.iter().filter_map(|a| a["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names.len(),
        2,
        "status lists exactly the live senders: {status}"
    );
    assert!(
        names.contains(&BASIC_NAME) && names.contains(&DOC_NAME),
        "{status}"
    );

    session.stop(queued, Duration::from_secs(10));
    session.stop(survivor, Duration::from_secs(10));
    session.stop(second, Duration::from_secs(20));
    drop(listener);
}

/// Starts `systemd-socket-activate` with `listener` passed as fd 3 (LISTEN_FDS=1, LISTEN_PID set
/// by the shell to its own pid, which `exec` keeps), as a service manager does.
fn start_with_held_socket(session: &mut TestSession, name: &str, listener: &UnixListener) -> u32 {
    let fd = listener.as_raw_fd();
    let mut cmd = session.command("sh");
    cmd.arg("-c")
        .arg(
            "fd=$1; shift; [ \"$fd\" = 3 ] || eval \"exec 3<&$fd $fd<&-\"; \
             LISTEN_PID=$$ LISTEN_FDS=1 exec systemd-socket-activate \"$@\"",
        )
        .arg("sh")
        .arg(fd.to_string())
        .args(passed_environment(session))
        .arg(bridge_binary().expect("the bridge binary"))
        .args(["serve", "--log-level", "debug"]);
    // Inheritable only for this spawn; this binary runs no other test that could fork meanwhile.
    fcntl_setfd(listener, FdFlags::empty()).expect("clear close-on-exec");
    let spawned = session.spawn(name, cmd);
    fcntl_setfd(listener, FdFlags::CLOEXEC).expect("set close-on-exec again");
    spawned.expect("start the bridge with the held socket")
}

/// `-E NAME` for every session variable: systemd-socket-activate gives the daemon only the
/// variables it is told to (and LISTEN_*), as systemd gives a unit only its environment.
fn passed_environment(session: &TestSession) -> Vec<String> {
    session
        .env()
        .iter()
        .flat_map(|(name, _)| ["-E".to_string(), name.clone()])
        .collect()
}

fn start_replay(
    session: &mut TestSession,
    name: &str,
    recording: &str,
    socket: &Path,
    reconnect: bool,
) -> u32 {
    let mut cmd = session.command(bridge_binary().expect("the bridge binary"));
    cmd.arg("replay")
        .arg(fixture(recording))
        .arg("--socket")
        .arg(socket)
        .args(["--fast", "--stay"]);
    if reconnect {
        cmd.arg("--reconnect");
    }
    session.spawn(name, cmd).expect("start the replay")
}

/// The text without ANSI colour sequences (the bridge's log colours field names).
fn without_ansi(text: &str) -> String {
    let mut plain = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for end in chars.by_ref() {
                if end.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

fn kill(pid: u32) {
    let pid = Pid::from_raw(i32::try_from(pid).expect("a pid")).expect("a pid");
    kill_process(pid, Signal::KILL).expect("SIGKILL our own bridge");
}

fn is_socket(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// /proc/PID/comm (15 characters at most).
fn command_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}
