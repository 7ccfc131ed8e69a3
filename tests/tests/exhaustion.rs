//! Exhaustion, as a hostile same-uid process would try it against a running bridge with a
//! healthy application beside it (issue 14): file descriptors, stalled peer-to-peer handshakes
//! (held and reopened, issue 30) and peer-to-peer connections, forged and flooding log lines, a sender that writes thousands of bad commits before reading,
//! connections that never send their hello or announce a huge one.
//!
//! Every wait is bounded by `WAIT`; the only numeric assertions are resource bounds (CPU time
//! against wall time while connections are held, log bytes, RSS), never speed. Figures are
//! printed (`exhaustion/...` lines) and recorded in docs/robustness.md ("Exhaustion").
//!
//! Run with `cargo test -p newton-e2e --test exhaustion -- --nocapture --test-threads 1` after
//! `cargo build -p newton-atspi-bridge`. No Xvfb, no Orca.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use newton_e2e::raw_sender::{frame, hello};
use newton_e2e::{py_script, python, wait_until, TestSession};
use newton_push_protocol::{SenderMessage, SurfaceId};
use serde_json::{json, Value};

/// Bound for every wait: generous, the machine is shared.
const WAIT: Duration = Duration::from_secs(60);
/// Repetitions of the query mix per pass.
const ROUNDS: usize = 5;
/// Connection attempts in the descriptor tests.
const ATTEMPTS: usize = 2000;

mod support;
use support::*;

// ---------------------------------------------------------------------------------------------
// Helpers: the bridge under its own descriptor limit, raw connections, /proc figures.
// ---------------------------------------------------------------------------------------------

/// Starts the bridge with `RLIMIT_NOFILE` soft = hard = `nofile` (set in the child before exec,
/// so the bridge cannot raise it) and `extra` arguments.
fn start_bridge_with_nofile(
    session: &mut TestSession,
    nofile: Option<u64>,
    extra: &[&str],
) -> (u32, PathBuf) {
    start_bridge_configured(session, extra, |cmd| {
        if let Some(nofile) = nofile {
            let limit = rustix::process::Rlimit {
                current: Some(nofile),
                maximum: Some(nofile),
            };
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)
                        .map_err(std::io::Error::from)
                });
            }
        }
    })
}

/// This test process needs a descriptor per held connection: soft limit to the hard one.
fn raise_own_fd_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if let Some(hard) = limit.maximum {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(hard),
                maximum: Some(hard),
            },
        );
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// A non-blocking connection attempt: `None` when the listen backlog is full (the bridge is
/// not accepting) or the connect fails otherwise. Never blocks.
fn try_connect(socket: &Path) -> Option<UnixStream> {
    use rustix::net::{
        connect, socket_with, AddressFamily, SocketAddrUnix, SocketFlags, SocketType,
    };
    let fd: OwnedFd = socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )
    .ok()?;
    let address = SocketAddrUnix::new(socket).ok()?;
    connect(&fd, &address).ok()?;
    Some(UnixStream::from(fd))
}

fn hello_frame(name: &str) -> Vec<u8> {
    let mut hello = hello(name);
    hello.app.app_id = "org.newton.exhaustion".into();
    frame(&serde_json::to_vec(&hello).expect("JSON"))
}

/// One protocol message as a wire frame, for tests that write many before reading.
fn message_frame(message: &SenderMessage) -> Vec<u8> {
    frame(&serde_json::to_vec(message).expect("JSON"))
}

/// Whatever the bridge wrote to a non-blocking stream so far, and whether it closed.
fn read_available(stream: &mut UnixStream) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return (bytes, true),
            Ok(n) => bytes.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return (bytes, false),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return (bytes, true),
        }
    }
}

/// The JSON messages in `bytes` (complete frames only).
fn messages(bytes: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(prefix) = rest.get(..4) {
        let len = u32::from_le_bytes(prefix.try_into().unwrap_or_default()) as usize;
        let Some(payload) = rest.get(4..4 + len) else {
            break;
        };
        out.push(serde_json::from_slice(payload).expect("bridge frames are JSON"));
        rest = rest.get(4 + len..).unwrap_or_default();
    }
    out
}

/// Reads until the bridge closes the stream (bounded by `WAIT`); returns the messages.
fn read_until_closed(stream: &mut UnixStream) -> Vec<Value> {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(WAIT));
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    messages(&bytes)
}

fn error_reason(message: &Value) -> Option<&str> {
    message.get("error")?.get("reason")?.as_str()
}

/// Reads until the bridge closes `stream`; the reason of its first (error) message and all the
/// messages, for the failure text.
fn closing_reason(stream: &mut UnixStream) -> (String, Vec<Value>) {
    let replies = read_until_closed(stream);
    let reason = replies
        .first()
        .and_then(error_reason)
        .unwrap_or_default()
        .to_owned();
    (reason, replies)
}

/// The calm application, a client on the a11y bus, its target objects and a first clean pass
/// of the query mix.
fn calm_and_measured(session: &TestSession, socket: &Path) -> (RawSender, Client, Target, Pass) {
    let calm_sender = calm_app(socket);
    let client = Client::connect(&a11y_address(session));
    let calm = Target::find(&client, CALM_APP);
    let before = run_mix(&client, &calm, ROUNDS);
    (calm_sender, client, calm, before)
}

/// Once only the calm application is connected, a new application connects and reaches the
/// desktop: returns its sender and bus name.
fn newcomer_after_recovery(client: &Client, socket: &Path, buttons: u64) -> (RawSender, String) {
    wait_until("the bridge to take new senders again", WAIT, || {
        Ok(status(socket).is_ok_and(|s| s["senders"] == 1))
    })
    .expect("only the calm app stays and status answers");
    let mut newcomer = RawSender::connect(socket, "Newcomer");
    newcomer.show_window(1, "Newcomer window", "New", buttons);
    let bus = client.app_bus("Newcomer");
    (newcomer, bus)
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the state field.
    field(11) + field(12)
}

/// USER_HZ: 100 on every Linux architecture Debian builds for.
fn ticks_per_second() -> u64 {
    100
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn log_path(session: &TestSession) -> PathBuf {
    session.dir().join("logs").join("bridge.err")
}

fn log_len(session: &TestSession) -> u64 {
    std::fs::metadata(log_path(session)).map_or(0, |m| m.len())
}

/// The log written after byte `from`.
fn log_since(session: &TestSession, from: u64) -> String {
    let bytes = std::fs::read(log_path(session)).unwrap_or_default();
    let start = usize::try_from(from).unwrap_or(0).min(bytes.len());
    String::from_utf8_lossy(bytes.get(start..).unwrap_or_default()).into_owned()
}

/// The status document, straight from the status socket (a new descriptor in the bridge).
fn status(socket: &Path) -> Result<Value, String> {
    let path = PathBuf::from(format!("{}.status", socket.display()));
    let mut stream = UnixStream::connect(&path).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .map_err(|e| format!("read: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{e}: {text:?}"))
}

/// Opens `attempts` connections without waiting for anything; every `hello_every`th sends a
/// hello (a well-formed application). Returns the connections made and the attempts the
/// backlog refused (connect would block).
fn storm(socket: &Path, attempts: usize, hello_every: usize) -> (Vec<UnixStream>, usize) {
    let mut held = Vec::new();
    let mut backlog_full = 0;
    for attempt in 0..attempts {
        match try_connect(socket) {
            Some(mut stream) => {
                if attempt % hello_every == 0 {
                    let _ = stream.write(&hello_frame(&format!("Storm {attempt}")));
                }
                held.push(stream);
            }
            None => backlog_full += 1,
        }
    }
    (held, backlog_full)
}

/// What the held connections got: (refused with an error naming `rule`, welcomed, still
/// waiting, closed without a message).
fn tally(held: &mut [UnixStream], rule: &str) -> (usize, usize, usize, usize) {
    let (mut refused, mut welcomed, mut waiting, mut closed) = (0, 0, 0, 0);
    for stream in held.iter_mut() {
        let (bytes, eof) = read_available(stream);
        let got = messages(&bytes);
        if got
            .iter()
            .any(|m| error_reason(m).is_some_and(|r| r.contains(rule)))
        {
            refused += 1;
        } else if got.iter().any(|m| m.get("welcome").is_some()) {
            welcomed += 1;
        } else if eof {
            closed += 1;
        } else {
            waiting += 1;
        }
    }
    (refused, welcomed, waiting, closed)
}

/// The healthy application answers the same as before, over the bus.
fn healthy_answers(client: &Client, target: &Target, before: &Pass, label: &str) {
    let now = run_mix(client, target, ROUNDS);
    assert_same(before, &now, label);
}

// ---------------------------------------------------------------------------------------------
// (1) Descriptors: the connection limit refuses clearly, well below the descriptor limit.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_connection_storm_is_refused_by_rule_and_the_bridge_recovers() {
    let own_limit = raise_own_fd_limit();
    let attempts = ATTEMPTS.min(
        usize::try_from(own_limit)
            .unwrap_or(ATTEMPTS)
            .saturating_sub(200),
    );
    // The case: `ulimit -n 1024` (a common desktop limit) and 2,000 attempts; the
    // default sender limit is then (1024 - 64) / 4 = 240. About 5 s. NEWTON_EXHAUSTION_NOFILE
    // runs another limit.
    let nofile: u64 = std::env::var("NEWTON_EXHAUSTION_NOFILE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let max_senders = usize::try_from(nofile.saturating_sub(64) / 4).unwrap_or(usize::MAX);
    let mut session = start_session();
    let (bridge, socket) =
        start_bridge_with_nofile(&mut session, Some(nofile), &["--hello-timeout", "5"]);
    let (_calm, client, calm, before) = calm_and_measured(&session, &socket);
    let log_start = log_len(&session);
    let fds_before = open_fds(bridge);

    let (mut held, backlog_full) = storm(&socket, attempts, 10);
    // Hold every connection for a while: the bridge must sleep, not spin.
    let ticks_start = cpu_ticks(bridge);
    let hold_start = Instant::now();
    healthy_answers(&client, &calm, &before, "calm app during the storm");
    let during = status(&socket).expect("status answers during the storm");
    std::thread::sleep(Duration::from_secs(3));
    let held_for = hold_start.elapsed();
    let cpu = (cpu_ticks(bridge) - ticks_start) as f64 / ticks_per_second() as f64;
    let fds_during = open_fds(bridge);
    let (refused, welcomed, waiting, closed) = tally(&mut held, "rule max-senders");
    let log = log_since(&session, log_start);
    let log_bytes = log.len();
    let limit_lines = log
        .lines()
        .filter(|l| l.contains("rule max-senders"))
        .count();
    println!(
        "exhaustion/storm: {attempts} attempts ({backlog_full} found the backlog full), \
         {} held; refused by rule max-senders {refused}, welcomed {welcomed}, waiting {waiting}, \
         closed {closed}; status during: senders {} refused {}; bridge fds {fds_before} → \
         {fds_during} (limit {nofile}); CPU {cpu:.2} s over {:.1} s held; log +{log_bytes} bytes, \
         {limit_lines} max-senders lines",
        held.len(),
        during["senders"],
        during["sendersRefused"],
        held_for.as_secs_f64()
    );
    assert!(
        refused >= held.len().saturating_sub(max_senders),
        "most attempts must be refused by rule"
    );
    assert!(during["senders"].as_u64().unwrap_or(0) <= max_senders as u64);
    assert!(
        fds_during < nofile as usize,
        "the limit keeps descriptors free: {fds_during}"
    );
    assert!(
        cpu < held_for.as_secs_f64() * 0.5,
        "the bridge spun: {cpu:.2} s of CPU in {held_for:?}"
    );
    assert!(
        limit_lines <= 8,
        "refusals are rate-limited: {limit_lines} lines"
    );
    assert!(log_bytes < 512 * 1024, "log grew by {log_bytes} bytes");
    healthy_answers(&client, &calm, &before, "calm app after the hold");

    // The peers leave; the bridge gives everything back and takes new applications.
    drop(held);
    let (newcomer, bus) = newcomer_after_recovery(&client, &socket, 3);
    let (_, labels) = client.window_and_labels(&bus);
    assert_eq!(labels, ["New 2", "New 3", "New 4"]);
    healthy_answers(&client, &calm, &before, "calm app after the storm");
    println!(
        "exhaustion/storm: after the storm bridge fds {}, a new app connected and is on the desktop",
        open_fds(bridge)
    );
    drop(newcomer);
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (1b) Descriptors run out anyway (limit set above them): accept pauses, never spins.
// ---------------------------------------------------------------------------------------------

#[test]
fn running_out_of_descriptors_pauses_accepting_and_recovers() {
    raise_own_fd_limit();
    let mut session = start_session();
    // A sender limit the descriptors cannot honour: accept itself fails (EMFILE).
    let (bridge, socket) = start_bridge_with_nofile(
        &mut session,
        Some(128),
        &["--max-senders", "5000", "--hello-timeout", "30"],
    );
    let (_calm, client, calm, before) = calm_and_measured(&session, &socket);
    let log_start = log_len(&session);

    let (held, backlog_full) = storm(&socket, ATTEMPTS, 10);
    let ticks_start = cpu_ticks(bridge);
    let hold_start = Instant::now();
    healthy_answers(
        &client,
        &calm,
        &before,
        "calm app while descriptors are exhausted",
    );
    std::thread::sleep(Duration::from_secs(3));
    let held_for = hold_start.elapsed();
    let cpu = (cpu_ticks(bridge) - ticks_start) as f64 / ticks_per_second() as f64;
    let fds = open_fds(bridge);
    let log = log_since(&session, log_start);
    let exhausted_lines = log.lines().filter(|l| l.contains("accept failed")).count();
    println!(
        "exhaustion/emfile: {ATTEMPTS} attempts, {} connected, {backlog_full} found the backlog \
         full; bridge fds {fds} (limit 128); CPU {cpu:.2} s over {:.1} s held; log +{} bytes, \
         {exhausted_lines} accept-failure lines",
        held.len(),
        held_for.as_secs_f64(),
        log.len()
    );
    assert!(
        log.contains("Too many open files") || log.contains("No file descriptors"),
        "the test must really exhaust descriptors; log: {}",
        log.lines().take(20).collect::<Vec<_>>().join("\n")
    );
    assert!(
        cpu < held_for.as_secs_f64() * 0.5,
        "the bridge spun: {cpu:.2} s of CPU in {held_for:?}"
    );
    assert!(
        exhausted_lines <= 8,
        "accept failures are rate-limited: {exhausted_lines}"
    );
    assert!(log.len() < 512 * 1024, "log grew by {} bytes", log.len());
    healthy_answers(&client, &calm, &before, "calm app after the hold");

    drop(held);
    let (newcomer, _) = newcomer_after_recovery(&client, &socket, 2);
    healthy_answers(&client, &calm, &before, "calm app after recovery");
    drop(newcomer);
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (1c) At start the bridge raises its soft descriptor limit to the hard one.
// ---------------------------------------------------------------------------------------------

/// `Max open files` (soft, hard) from /proc/PID/limits.
fn nofile_limits(pid: u32) -> (String, String) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("/proc/PID/limits");
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let mut fields = line["Max open files".len()..].split_whitespace();
    let soft = fields.next().unwrap_or_default().to_owned();
    let hard = fields.next().unwrap_or_default().to_owned();
    (soft, hard)
}

#[test]
fn the_bridge_raises_its_soft_descriptor_limit_to_the_hard_limit() {
    let own_hard = raise_own_fd_limit();
    // Soft 256 under a hard limit of 1024 (or this process's own, if lower).
    let hard = own_hard.min(1024);
    assert!(
        hard > 256,
        "this test needs a hard descriptor limit above 256, not {hard}"
    );
    let mut session = start_session();
    let (bridge, _socket) = start_bridge_configured(&mut session, &[], |cmd| {
        let limit = rustix::process::Rlimit {
            current: Some(256),
            maximum: Some(hard),
        };
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)
                    .map_err(std::io::Error::from)
            });
        }
    });
    let (soft_now, hard_now) = nofile_limits(bridge);
    let log = log_since(&session, 0);
    println!("exhaustion/nofile: started with soft 256, hard {hard}; now soft {soft_now}, hard {hard_now}");
    assert_eq!(
        (soft_now.as_str(), hard_now.as_str()),
        (hard.to_string().as_str(), hard.to_string().as_str()),
        "the soft limit must be raised to the hard one"
    );
    assert!(
        log.contains("raised the soft file-descriptor limit to the hard limit"),
        "the raise is logged"
    );
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (4) Peer-to-peer: a stalled handshake delays nobody.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_stalled_peer_to_peer_client_does_not_hide_the_application() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge_with_nofile(&mut session, None, &[]);
    let (app, _client, path) = show_p2p_app(&session, &socket);
    // Two stalled clients: one byte of a handshake each, then silence.
    let mut stalled: Vec<UnixStream> = (0..2)
        .map(|_| {
            let mut stream = UnixStream::connect(&path).expect("connect to the P2P socket");
            stream.write_all(b"\0").expect("one byte");
            stream
        })
        .collect();
    let log_start = log_len(&session);

    // A zbus client: handshake and a call over peer-to-peer.
    let direct = async_io::block_on(async {
        let stream = UnixStream::connect(&path)?;
        let conn = zbus::connection::Builder::async_io_unix_stream(stream)
            .p2p()
            .build()
            .await
            .map_err(std::io::Error::other)?;
        accessible::NAME
            .get(&conn, "", ROOT)
            .await
            .map_err(std::io::Error::other)
    })
    .expect("a peer-to-peer call is answered while clients stall");
    assert_eq!(direct, "P2P app");

    // libatspi (pyatspi) finds the app and walks it, over peer-to-peer.
    let mut dump = session.command(python());
    dump.arg(py_script("atspi_dump.py"))
        .args(["--app", "P2P app", "--format", "json"]);
    let out = session
        .run_ok("atspi-dump", dump, WAIT)
        .expect("pyatspi finds the app while clients stall");
    let tree: Value = serde_json::from_str(&out).expect("atspi_dump.py prints JSON");
    assert!(tree.to_string().contains("Peer 2"), "{tree}");

    // Both were answered while the stalled clients still held their connections.
    for stream in &mut stalled {
        stream.set_nonblocking(true).expect("nonblocking");
        let (_, eof) = read_available(stream);
        assert!(
            !eof,
            "the stalled client was closed before the others were served"
        );
    }
    let log = log_since(&session, log_start);
    let p2p_clients = log.matches("peer-to-peer client connected").count();
    assert!(
        p2p_clients >= 2,
        "zbus and libatspi went peer-to-peer: {p2p_clients}"
    );
    // The stalled clients are closed after the handshake timeout.
    let stall_start = Instant::now();
    for stream in &mut stalled {
        read_until_closed(stream);
    }
    println!(
        "exhaustion/p2p: zbus and pyatspi answered with 2 stalled handshakes held \
         ({p2p_clients} peer-to-peer clients connected); stalled clients closed {:.1} s later",
        stall_start.elapsed().as_secs_f64()
    );
    let log = log_since(&session, log_start);
    assert!(log.contains("did not finish its handshake"), "{log}");
    drop(app);
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (4b) Peer-to-peer under attack (issue 30): stalled handshakes held and reopened, connections
// opened until descriptors run out.
// ---------------------------------------------------------------------------------------------

/// Honest peer-to-peer clients tried while the attacker holds its handshakes.
const HONEST_CLIENTS: usize = 20;
/// Stalled handshakes the attacker keeps open (the bridge's old per-application handshake cap).
const STALLED: usize = 8;

/// A sender showing one window as "P2P app", an a11y-bus client, and the application's
/// peer-to-peer socket; the sender must stay alive for the application to stay.
fn show_p2p_app(session: &TestSession, socket: &Path) -> (RawSender, Client, PathBuf) {
    let mut app = RawSender::connect(socket, "P2P app");
    app.show_window(1, "P2P window", "Peer", 3);
    let client = Client::connect(&a11y_address(session));
    let path = p2p_path(&client, "P2P app");
    (app, client, path)
}

/// The application's peer-to-peer socket, as libatspi learns it.
fn p2p_path(client: &Client, app: &str) -> PathBuf {
    let bus = client.app_bus(app);
    let address: String = client
        .call(
            &calls::application::GET_APPLICATION_BUS_ADDRESS,
            &bus,
            ROOT,
            &(),
        )
        .expect("the app offers a peer-to-peer address");
    let path = address
        .strip_prefix("unix:path=")
        .expect("a unix:path address");
    PathBuf::from(path)
}

/// One honest client, as libatspi is one: connects, authenticates and reads the application's
/// name over peer-to-peer, within `within`.
fn honest_p2p_name(path: &Path, within: Duration) -> Result<String, String> {
    let call = async {
        let stream = UnixStream::connect(path).map_err(|e| format!("connect: {e}"))?;
        let conn = zbus::connection::Builder::async_io_unix_stream(stream)
            .p2p()
            .build()
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        accessible::NAME
            .get(&conn, "", ROOT)
            .await
            .map_err(|e| format!("Name: {e}"))
    };
    let timeout = async_io::Timer::after(within);
    async_io::block_on(async {
        match futures::future::select(std::pin::pin!(call), timeout).await {
            futures::future::Either::Left((answer, _)) => answer,
            futures::future::Either::Right(_) => Err(format!("no answer within {within:?}")),
        }
    })
}

/// A stalled handshake: the D-Bus nul byte, then silence.
fn stalled_handshake(path: &Path) -> Option<UnixStream> {
    let mut stream = try_connect(path)?;
    stream.write_all(b"\0").ok()?;
    Some(stream)
}

/// The attacker of issue 30: keeps [`STALLED`] handshakes stalled and reopens each as soon as
/// the bridge closes it, until `stop`. Returns how many it opened in all.
fn hold_stalled_handshakes(
    path: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    opened: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let mut held: Vec<UnixStream> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            held.retain_mut(|stream| !read_available(stream).1);
            while held.len() < STALLED {
                let Some(stream) = stalled_handshake(&path) else {
                    break;
                };
                held.push(stream);
                opened.fetch_add(1, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    })
}

#[test]
fn honest_peer_to_peer_clients_are_served_while_an_attacker_holds_stalled_handshakes() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let mut session = start_session();
    let (_bridge, socket) = start_bridge_with_nofile(&mut session, None, &[]);
    let (app, _client, path) = show_p2p_app(&session, &socket);
    let log_start = log_len(&session);

    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicUsize::new(0));
    let attacker = hold_stalled_handshakes(path.clone(), stop.clone(), opened.clone());
    wait_until("the attacker to hold its handshakes", WAIT, || {
        Ok(opened.load(Ordering::Relaxed) >= STALLED)
    })
    .expect("the attacker connects");
    // Let the bridge accept them all before the first honest client.
    std::thread::sleep(Duration::from_millis(300));

    // Honest clients one after the other over 5 s (the handshake timeout), as ATs come.
    let attack_start = Instant::now();
    let mut served = 0;
    let mut failures = Vec::new();
    let mut slowest = Duration::ZERO;
    for _ in 0..HONEST_CLIENTS {
        let started = Instant::now();
        match honest_p2p_name(&path, Duration::from_secs(10)) {
            Ok(name) if name == "P2P app" => served += 1,
            Ok(name) => failures.push(format!("wrong name {name:?}")),
            Err(e) => failures.push(e),
        }
        slowest = slowest.max(started.elapsed());
        std::thread::sleep(Duration::from_millis(250));
    }
    // libatspi (pyatspi) finds the app and walks it while the attack goes on.
    let mut dump = session.command(python());
    dump.arg(py_script("atspi_dump.py"))
        .args(["--app", "P2P app", "--format", "json"]);
    let found = session
        .run_ok("atspi-dump", dump, WAIT)
        .map(|out| out.contains("Peer 2"));
    let attack_for = attack_start.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = attacker.join();
    let log = log_since(&session, log_start);
    let evicted_lines = log
        .lines()
        .filter(|l| l.contains("rule p2p-handshakes"))
        .count();
    println!(
        "exhaustion/p2p-held: {STALLED} stalled handshakes held and reopened ({} opened in \
         {:.1} s); honest clients served {served}/{HONEST_CLIENTS} (slowest {:.0} ms); pyatspi \
         found the app: {found:?}; {evicted_lines} p2p-handshakes log lines; failures: {:?}",
        opened.load(Ordering::Relaxed),
        attack_for.as_secs_f64(),
        slowest.as_secs_f64() * 1000.0,
        failures.iter().take(3).collect::<Vec<_>>()
    );
    assert_eq!(
        served, HONEST_CLIENTS,
        "every honest client must be served while handshakes are held: {failures:?}"
    );
    assert!(
        matches!(found, Ok(true)),
        "libatspi must find the app: {found:?}"
    );
    assert!(
        (1..=8).contains(&evicted_lines),
        "closing stalled handshakes is logged, rate-limited: {evicted_lines} lines"
    );
    drop(app);
    shutdown(session);
}

/// A completed raw peer-to-peer connection (SASL EXTERNAL, then BEGIN, as libdbus does it),
/// without a client library's threads: it stays open and idle. `None` when the bridge closed it
/// or did not answer within `within`; `Some(Err)` when the connect itself failed.
fn raw_p2p_connection(path: &Path, within: Duration) -> Result<Option<UnixStream>, String> {
    let mut stream = try_connect(path).ok_or("connect failed (backlog full?)")?;
    let uid = rustix::process::getuid().as_raw().to_string();
    let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(within));
    if stream
        .write_all(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes())
        .is_err()
    {
        return Ok(None);
    }
    let mut reply = [0u8; 256];
    match stream.read(&mut reply) {
        Ok(n) if reply.get(..n).is_some_and(|r| r.starts_with(b"OK ")) => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
            return Err(format!("no handshake answer within {within:?}"))
        }
        Err(_) => return Ok(None),
    }
    if stream.write_all(b"BEGIN\r\n").is_err() {
        return Ok(None);
    }
    let _ = stream.set_nonblocking(true);
    Ok(Some(stream))
}

/// A new application connects, shows a window and appears on the desktop, within `within`;
/// returns how long that took, or what failed.
fn newcomer_on_desktop(
    socket: &Path,
    client: &Client,
    within: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    // RawSender asserts on what it gets: a panic here is the finding, not the test's end.
    let shown = std::panic::catch_unwind(|| {
        let mut newcomer = RawSender::connect_within(socket, "Newcomer", within);
        newcomer.show_window(1, "Newcomer window", "New", 2);
        newcomer
    })
    .map_err(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
        format!("the sender failed: {}", why.unwrap_or_default())
    })?;
    let mut on_desktop = false;
    let _ = wait_until("the newcomer on the desktop", within, || {
        on_desktop = !async_io::block_on(calls::applications_named(&client.conn, "Newcomer"))
            .unwrap_or_default()
            .is_empty();
        Ok(on_desktop)
    });
    drop(shown);
    match on_desktop {
        true => Ok(started.elapsed()),
        false => Err(format!(
            "welcomed, but not on the desktop within {within:?}"
        )),
    }
}

#[test]
fn peer_to_peer_connections_are_capped_below_the_descriptor_limit() {
    raise_own_fd_limit();
    let nofile: u64 = 1024;
    let mut session = start_session();
    // The per-application and per-process caps raised out of the way: the bridge-wide cap (what
    // the descriptors leave room for) is the one this tries. An older bridge ignores these.
    let (bridge, socket) = start_bridge_configured(&mut session, &[], |cmd| {
        cmd.env("NEWTON_ATSPI_MAX_P2P_CLIENTS_PER_APP", "5000")
            .env("NEWTON_ATSPI_MAX_P2P_CLIENTS_PER_PROCESS", "5000");
        let limit = rustix::process::Rlimit {
            current: Some(nofile),
            maximum: Some(nofile),
        };
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)
                    .map_err(std::io::Error::from)
            });
        }
    });
    let (app, client, path) = show_p2p_app(&session, &socket);
    let log_start = log_len(&session);

    let (mut held, mut refused, mut unanswered) = (Vec::new(), 0, 0);
    for _ in 0..1100 {
        match raw_p2p_connection(&path, Duration::from_secs(2)) {
            Ok(Some(stream)) => held.push(stream),
            Ok(None) => refused += 1,
            // The bridge stopped accepting (out of descriptors): no use going on.
            Err(_) => {
                unanswered += 1;
                if unanswered >= 3 {
                    break;
                }
            }
        }
    }
    let fds = open_fds(bridge);
    let newcomer = newcomer_on_desktop(&socket, &client, Duration::from_secs(10));
    let log = log_since(&session, log_start);
    let cap_lines = log.lines().filter(|l| l.contains("rule max-p2p")).count();
    let status_now = status(&socket);
    println!(
        "exhaustion/p2p-cap: {} peer-to-peer connections completed, {refused} refused, \
         {unanswered} unanswered; bridge fds {fds} (limit {nofile}); a new sender: {newcomer:?}; \
         {cap_lines} max-p2p log lines; status answers: {}",
        held.len(),
        status_now.is_ok()
    );
    assert!(
        fds < nofile as usize - 16,
        "peer-to-peer clients took the descriptors: {fds} of {nofile}"
    );
    assert!(refused > 0, "nothing was refused beyond the cap");
    assert!(
        newcomer.is_ok(),
        "a new application must reach the desktop: {newcomer:?}"
    );
    assert!(
        (1..=8).contains(&cap_lines),
        "refusals are logged by rule, rate-limited: {cap_lines} lines\n{}",
        log.lines().take(20).collect::<Vec<_>>().join("\n")
    );

    // The connections leave: a new client is served again.
    drop(held);
    let mut served = Err(String::new());
    wait_until("a peer-to-peer client to be served again", WAIT, || {
        served = honest_p2p_name(&path, Duration::from_secs(5));
        Ok(served.is_ok())
    })
    .unwrap_or_else(|_| panic!("no peer-to-peer client served after the others left: {served:?}"));
    drop(app);
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (5) Logs: producer strings escaped and bounded, repeated warnings rate-limited.
// ---------------------------------------------------------------------------------------------

#[test]
fn producer_strings_cannot_forge_or_flood_the_log() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge_with_nofile(&mut session, None, &[]);
    let log_start = log_len(&session);

    // A name with a forged log line and ANSI escapes, 20 KB long (the hello stays under 64 KiB).
    let forged = format!(
        "Evil\n1999-01-01T00:00:00.000000Z  INFO forged: application connected\u{1b}[2J\u{1b}[31m{}",
        "x".repeat(20_000)
    );
    let mut evil = RawSender::connect(&socket, &forged);
    evil.show_window(1, "Evil window", "Evil", 2);
    // 50 bad commits, one warning line each before: now one line per rule per interval.
    for serial in 1..=50u64 {
        evil.send_message(&SenderMessage::Commit {
            surface: SurfaceId(99),
            serial,
        });
    }
    let answers = evil.sync();
    let rejected = answers
        .iter()
        .filter(|m| m.get("rejected").is_some())
        .count();
    assert_eq!(rejected, 50, "every bad commit is answered");
    drop(evil);

    // A 10 MB hello: refused before it is buffered, not echoed, not logged.
    let mut big = UnixStream::connect(&socket).expect("connect");
    let name = "\u{1b}]0;pwned\u{7}\n".repeat(10 * 1024 * 1024 / 12);
    let payload = serde_json::to_vec(&hello(&name)).expect("JSON");
    // The bridge may close before all is written: ignore the write's result.
    let _ = big.write_all(&frame(&payload));
    let (reason, replies) = closing_reason(&mut big);
    assert!(reason.contains("rule `hello-too-large`"), "{replies:?}");
    assert!(reason.len() < 1024, "reason of {} bytes", reason.len());

    // A small hello whose bad field quotes a big, hostile value.
    let mut bad = UnixStream::connect(&socket).expect("connect");
    let value = "\u{1b}[31m\nINFO forged\n".repeat(2000);
    // Deliberately malformed (a string where the pid number goes): the protocol's types
    // cannot express it, so the raw JSON.
    let hello = json!({"protocol": 1, "app": {"appId": "a", "name": "A", "pid": value}});
    bad.write_all(&frame(&serde_json::to_vec(&hello).expect("JSON")))
        .expect("write");
    let (reason, replies) = closing_reason(&mut bad);
    assert!(reason.contains("rule `hello`"), "{replies:?}");
    assert!(reason.len() <= 2100 && !reason.contains('\n') && !reason.contains('\u{1b}'));

    wait_until("the evil app to leave", WAIT, || {
        Ok(status(&socket).is_ok_and(|s| s["senders"] == 0))
    })
    .expect("all senders gone");
    let log = log_since(&session, log_start);
    let forged_lines: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("1999-01-01"))
        .collect();
    let rejection_lines = log
        .lines()
        .filter(|l| l.contains("unknown-surface"))
        .count();
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    println!(
        "exhaustion/logs: log +{} bytes for a 20 KB forged name, 50 bad commits, a 10 MB hello \
         and a hostile 30 KB hello field; {rejection_lines} unknown-surface lines; longest line \
         {longest} bytes; forged lines {}",
        log.len(),
        forged_lines.len()
    );
    assert!(forged_lines.is_empty(), "forged lines: {forged_lines:?}");
    assert!(
        !log.contains('\u{1b}') && !log.contains('\u{7}'),
        "raw escapes in the log"
    );
    assert!(
        log.contains("Evil\\n1999-01-01"),
        "the name is logged escaped"
    );
    assert!(
        (1..=3).contains(&rejection_lines),
        "one line per rule per interval (plus the count at close): {rejection_lines}"
    );
    assert!(
        log.contains("49 more rejections (rule unknown-surface)"),
        "{log}"
    );
    assert!(longest < 8 * 1024, "longest log line {longest} bytes");
    assert!(log.len() < 128 * 1024, "log grew by {} bytes", log.len());
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (6) The sync barrier: every rejection and the syncDone, or a rule-named close.
// ---------------------------------------------------------------------------------------------

/// Writes a hello, a window, `bad` commits to an unknown surface and a `sync`, all before
/// reading anything; returns what the bridge answered, in order, until it closed or synced.
fn bad_commits_then_sync(socket: &Path, name: &str, bad: u64) -> Vec<Value> {
    let mut stream = UnixStream::connect(socket).expect("connect");
    let mut bytes = hello_frame(name);
    for serial in 1..=bad {
        bytes.extend(message_frame(&SenderMessage::Commit {
            surface: SurfaceId(7),
            serial,
        }));
    }
    bytes.extend(message_frame(&SenderMessage::Sync { serial: 424242 }));
    let writer = stream.try_clone().expect("clone");
    let writing = std::thread::spawn(move || {
        let mut writer = writer;
        // The bridge may close first (rule unread-replies): a failed write is expected then.
        let _ = writer.write_all(&bytes);
    });
    // Let the answers pile up unread while everything is written.
    std::thread::sleep(Duration::from_secs(2));
    let _ = writing.join();
    let mut got = Vec::new();
    let _ = stream.set_read_timeout(Some(WAIT));
    let mut pending = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let complete = messages(&pending);
        if complete
            .last()
            .is_some_and(|m| m["syncDone"]["serial"] == 424242 || m.get("error").is_some())
        {
            got = complete;
            break;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => {
                got.extend(messages(&pending));
                break;
            }
            Ok(n) => pending.extend_from_slice(chunk.get(..n).unwrap_or_default()),
        }
    }
    got
}

#[test]
fn every_rejection_and_the_sync_done_reach_a_sender_that_reads_late() {
    let mut session = start_session();
    let (_bridge, socket) = start_bridge_with_nofile(&mut session, None, &[]);
    let got = bad_commits_then_sync(&socket, "Late reader", 3000);
    let serials: Vec<u64> = got
        .iter()
        .filter_map(|m| m["rejected"]["serial"].as_u64())
        .collect();
    let last = got.last().cloned().unwrap_or_default();
    println!(
        "exhaustion/sync: 3,000 bad commits then sync, read late: {} rejections, last {last}",
        serials.len()
    );
    assert_eq!(
        serials,
        (1..=3000).collect::<Vec<u64>>(),
        "every rejection, in order"
    );
    assert_eq!(
        last["syncDone"]["serial"], 424242,
        "the syncDone comes last"
    );

    // A bound lower than what the sender lets pile up: a rule-named close, nothing silently lost.
    shutdown(session);
    let mut session = start_session();
    let (_bridge, socket) =
        start_bridge_with_nofile(&mut session, None, &["--max-unread-bytes", "100000"]);
    let got = bad_commits_then_sync(&socket, "Never reads", 3000);
    let serials: Vec<u64> = got
        .iter()
        .filter_map(|m| m["rejected"]["serial"].as_u64())
        .collect();
    let last = got.last().cloned().unwrap_or_default();
    println!(
        "exhaustion/sync: with --max-unread-bytes 100000: {} rejections then {last}",
        serials.len()
    );
    assert_eq!(
        serials,
        (1..=serials.len() as u64).collect::<Vec<u64>>(),
        "answers up to the close are all there, in order"
    );
    assert!(
        error_reason(&last).is_some_and(|r| r.contains("rule `unread-replies`")),
        "the close names its rule: {last}"
    );
    shutdown(session);
}

// ---------------------------------------------------------------------------------------------
// (3, part) Before the hello: a time bound and a size bound.
// ---------------------------------------------------------------------------------------------

#[test]
fn connections_without_a_hello_are_bounded_in_time_and_memory() {
    let mut session = start_session();
    let (bridge, socket) = start_bridge_with_nofile(&mut session, None, &["--hello-timeout", "2"]);
    let _calm = calm_app(&socket);
    let rss_start = rss_kb(bridge);

    // 25 connections each announcing a 60 MB first frame and sending 1 MB of it.
    let mut partial: Vec<UnixStream> = Vec::new();
    let chunk = vec![b'{'; 1024 * 1024];
    for _ in 0..25 {
        let mut stream = UnixStream::connect(&socket).expect("connect");
        let _ = stream.write_all(&(60u32 * 1024 * 1024).to_le_bytes());
        let _ = stream.write_all(&chunk);
        partial.push(stream);
    }
    let rss_after = rss_kb(bridge);
    let mut reasons = Vec::new();
    for stream in &mut partial {
        reasons.push(closing_reason(stream).0);
    }
    assert!(
        reasons.iter().all(|r| r.contains("rule `hello-too-large`")),
        "{reasons:?}"
    );

    // A connection that sends half a hello, and one that sends nothing: closed by rule.
    let hello = hello_frame("Slow");
    let mut half = UnixStream::connect(&socket).expect("connect");
    half.write_all(hello.get(..hello.len() / 2).unwrap_or_default())
        .expect("half a hello");
    let mut silent = UnixStream::connect(&socket).expect("connect");
    let start = Instant::now();
    for stream in [&mut half, &mut silent] {
        let (reason, replies) = closing_reason(stream);
        assert!(reason.contains("rule `hello-timeout`"), "{replies:?}");
    }
    println!(
        "exhaustion/pre-hello: 25 × (60 MB announced, 1 MB sent) refused by hello-too-large; \
         VmRSS {rss_start} → {rss_after} kB; silent and half-hello connections closed by \
         hello-timeout after {:.1} s (--hello-timeout 2)",
        start.elapsed().as_secs_f64()
    );
    assert!(
        rss_after < rss_start + 64 * 1024,
        "pre-hello bytes were held: VmRSS {rss_start} → {rss_after} kB"
    );
    let _ = status(&socket).expect("status answers");
    shutdown(session);
}

/// Connects, sends a hello and starts one frame announcing `announced` bytes, of which it sends
/// `sent` (the rest never comes): a partial frame the bridge holds while the sender stalls.
fn partial_frame_after_hello(socket: &Path, name: &str, announced: u32, sent: usize) -> UnixStream {
    let mut stream = UnixStream::connect(socket).expect("connect");
    stream.write_all(&hello_frame(name)).expect("hello");
    let _ = stream.write_all(&announced.to_le_bytes());
    // The bridge may close the connection while this is written (rule total-bytes).
    let _ = stream.write_all(&vec![b' '; sent]);
    let _ = stream.set_nonblocking(true);
    stream
}

/// Whether the bridge closed `stream` within `within`; the messages it wrote before.
fn closed_within(stream: &mut UnixStream, within: Duration) -> (bool, Vec<Value>) {
    let deadline = Instant::now() + within;
    let mut bytes = Vec::new();
    loop {
        let (more, closed) = read_available(stream);
        bytes.extend_from_slice(&more);
        if closed || Instant::now() >= deadline {
            return (closed, messages(&bytes));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn pending_frames_count_in_the_total_byte_budget() {
    const MIB: usize = 1024 * 1024;
    let mut session = start_session();
    let budget = (8 * MIB).to_string();
    let (_bridge, socket) =
        start_bridge_with_nofile(&mut session, None, &["--max-total-bytes", &budget]);
    let _calm = calm_app(&socket);
    let client = Client::connect(&a11y_address(&session));
    let calm = Target::find(&client, CALM_APP);
    let before = run_mix(&client, &calm, ROUNDS);

    // A holds 5 MiB of a 6 MiB frame: within the 8 MiB budget, so it is kept.
    let mut a = partial_frame_after_hello(&socket, "Holder A", 6 * MIB as u32, 5 * MIB);
    let (closed, replies) = closed_within(&mut a, Duration::from_secs(2));
    assert!(
        !closed,
        "A's 5 MiB partial frame fits the budget: {replies:?}"
    );

    // B wants 4 MiB more: A's 5 MiB + B's 4 MiB > 8 MiB, so B is closed by rule total-bytes
    // before the bridge buffers what does not fit.
    let mut b = partial_frame_after_hello(&socket, "Holder B", 6 * MIB as u32, 4 * MIB);
    let (closed, replies) = closed_within(&mut b, WAIT);
    let reason = replies
        .iter()
        .find_map(error_reason)
        .unwrap_or_default()
        .to_owned();
    assert!(closed, "B was not closed: {replies:?}");
    assert!(reason.contains("rule `total-bytes`"), "{replies:?}");

    // The healthy application still answers, and A is still held.
    healthy_answers(&client, &calm, &before, "calm app beside a refused holder");
    let (closed, _) = closed_within(&mut a, Duration::from_millis(200));
    assert!(!closed, "A was closed although its frame fitted");

    // A leaves: its charge goes back to the budget, and the same 4 MiB now fits.
    drop(a);
    std::thread::sleep(Duration::from_secs(1));
    let mut c = partial_frame_after_hello(&socket, "Holder C", 6 * MIB as u32, 4 * MIB);
    let (closed, replies) = closed_within(&mut c, Duration::from_secs(2));
    assert!(!closed, "C's frame fits once A left: {replies:?}");
    println!(
        "exhaustion/pending-budget: --max-total-bytes 8 MiB; A holding 5 MiB of a partial frame \
         kept, B sending 4 MiB more closed with: {reason}; C's 4 MiB accepted after A left"
    );
    drop(c);
    shutdown(session);
}
