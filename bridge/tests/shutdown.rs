//! A graceful shutdown (SIGTERM, SIGINT, or `run_until`'s stop as here): every sender gets
//! what was already queued for it, then the `error` saying the bridge is shutting down, then
//! the end of the stream; a sender that does not read holds the shutdown no longer than its
//! bound. The daemon runs in-process on a thread, on a private session and accessibility bus
//! (dbus-daemon and at-spi2-core: scripts/install-deps.sh).
//!
//! Both tests make the bridge's writer wait: the sender asks for many answers (`sync`) without
//! reading, so the socket buffer is full and answers wait in the bridge when it is stopped.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use newton_atspi_client::private_session::PrivateSession;
use newton_atspi_daemon::ServeArgs;
use newton_push_protocol::{
    decode_bridge_message, encode_frame, encode_hello, encode_sender_message, AppInfo,
    BridgeMessage, Encoding, FrameDecoder, Hello, SenderMessage, PROTOCOL_VERSION,
};

/// `sync`s sent unread: their answers overflow the socket buffer (each small write costs the
/// buffer far more than its bytes), so most of them wait in the bridge's outbox.
const UNREAD_SYNCS: u64 = 3000;
/// The daemon's bound on a graceful shutdown (`SHUTDOWN_TIMEOUT` in daemon.rs).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a bridge may take to start, and a reader to see the end of the stream.
const WAIT: Duration = Duration::from_secs(20);

/// One private session at a time: `PrivateSession` names its directory after the process.
static SESSION: Mutex<()> = Mutex::new(());

/// The daemon on a thread of this process.
struct Bridge {
    stop: async_channel::Sender<()>,
    thread: JoinHandle<Result<(), String>>,
}

impl Bridge {
    fn start(session: &PrivateSession, socket: &Path) -> Bridge {
        let args = ServeArgs {
            socket: Some(socket.to_owned()),
            a11y_bus: Some(session.a11y_address.clone()),
            ..ServeArgs::default_limits()
        };
        let (stop, stop_rx) = async_channel::bounded::<()>(1);
        let thread = std::thread::spawn(move || {
            newton_atspi_daemon::run_until(args, Some(stop_rx)).map_err(|e| e.to_string())
        });
        let deadline = Instant::now() + WAIT;
        while !socket.exists() {
            assert!(!thread.is_finished(), "the bridge exited before serving");
            assert!(Instant::now() < deadline, "no socket within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Bridge { stop, thread }
    }

    /// Asks the daemon to shut down (as SIGTERM does).
    fn request_stop(&self) {
        self.stop.close();
    }

    /// Waits (at most `wait`) for `run_until` to return; true when it did.
    fn wait_returned(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        while !self.thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.thread.is_finished()
    }

    fn join(self) {
        let result = self
            .thread
            .join()
            .expect("the bridge thread does not panic");
        assert_eq!(result, Ok(()), "the bridge ends cleanly");
    }
}

fn socket_in(session: &PrivateSession) -> PathBuf {
    session.runtime_dir.join("newton-atspi/bridge.sock")
}

fn frame(payload: &[u8]) -> Vec<u8> {
    encode_frame(payload).expect("a small frame")
}

/// Connects, says hello and reads the welcome.
fn connect(socket: &Path, name: &str) -> (UnixStream, FrameDecoder) {
    let mut stream = UnixStream::connect(socket).expect("connect to the bridge");
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        encoding: Encoding::Json,
        app: AppInfo {
            app_id: format!("org.newton.test.{name}"),
            name: name.to_owned(),
            ..AppInfo::default()
        },
        accesskit_version: None,
    };
    let payload = encode_hello(&hello).expect("the hello encodes");
    stream.write_all(&frame(&payload)).expect("send the hello");
    let mut decoder = FrameDecoder::new(u32::MAX);
    let (welcome, _) = read_messages(&mut stream, &mut decoder, Some(1));
    assert!(
        matches!(welcome.as_slice(), [BridgeMessage::Welcome { .. }]),
        "welcomed: {welcome:?}"
    );
    (stream, decoder)
}

/// Sends `sync` 1..=count in one write, reading nothing.
fn send_syncs(stream: &mut UnixStream, count: u64) {
    let mut bytes = Vec::new();
    for serial in 1..=count {
        let sync = encode_sender_message(&SenderMessage::Sync { serial }, Encoding::Json)
            .expect("a sync encodes");
        bytes.extend(frame(&sync));
    }
    stream.write_all(&bytes).expect("send the syncs");
}

/// Reads messages until the end of the stream (or `limit` of them); the flag says whether the
/// stream ended. Gives up after [`WAIT`] without a byte.
fn read_messages(
    stream: &mut UnixStream,
    decoder: &mut FrameDecoder,
    limit: Option<usize>,
) -> (Vec<BridgeMessage>, bool) {
    stream.set_read_timeout(Some(WAIT)).expect("a read timeout");
    let mut messages = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    while limit.is_none_or(|limit| messages.len() < limit) {
        let n = match stream.read(&mut buffer) {
            Ok(0) => return (messages, true),
            Ok(n) => n,
            Err(_) => return (messages, false),
        };
        let mut payloads = Vec::new();
        decoder
            .feed(&buffer[..n], &mut payloads)
            .expect("well-formed frames");
        for payload in payloads {
            let message = decode_bridge_message(&payload, Encoding::Json).expect("a message");
            messages.push(message);
        }
    }
    (messages, false)
}

/// Answers still queued in the bridge when it is stopped reach the sender, in order, followed
/// by the shutdown `error` and the end of the stream. The sender starts reading only once the
/// bridge has returned, or after a moment: a bridge that returned without flushing can never
/// write them (nothing runs its tasks any more), so the test fails whenever it does.
#[test]
fn shutdown_flushes_every_queued_answer_then_the_error() {
    let _one = SESSION.lock().unwrap_or_else(|p| p.into_inner());
    let session = PrivateSession::start().expect("a private session");
    let socket = socket_in(&session);
    let bridge = Bridge::start(&session, &socket);
    let (mut stream, mut decoder) = connect(&socket, "Flushed");
    send_syncs(&mut stream, UNREAD_SYNCS);
    // Time for the bridge to answer them; the socket buffer fills meanwhile.
    std::thread::sleep(Duration::from_millis(300));

    bridge.request_stop();
    let stopped = Instant::now();
    bridge.wait_returned(SHUTDOWN_TIMEOUT / 4);
    let (messages, ended) = read_messages(&mut stream, &mut decoder, None);

    let (last, answers) = messages.split_last().expect("some messages");
    assert!(
        matches!(last, BridgeMessage::Error { reason } if reason.contains("shutting down")),
        "the last message is the shutdown error; got {} messages ending with {:?}",
        messages.len(),
        messages.iter().rev().take(3).collect::<Vec<_>>()
    );
    for (expected, answer) in (1..).zip(answers) {
        assert_eq!(
            answer,
            &BridgeMessage::SyncDone { serial: expected },
            "every answer in order, none lost"
        );
    }
    assert!(ended, "the bridge ended the stream after the error");
    assert!(
        bridge.wait_returned(WAIT),
        "the bridge returns once flushed"
    );
    let took = stopped.elapsed();
    assert!(took < SHUTDOWN_TIMEOUT, "shutdown took {took:?}");
    bridge.join();
}

/// A sender that never reads is cut off at the bound: the bridge returns within about
/// [`SHUTDOWN_TIMEOUT`], well before its per-connection flush timeout (5 s).
#[test]
fn a_sender_that_never_reads_does_not_hold_the_shutdown() {
    let _one = SESSION.lock().unwrap_or_else(|p| p.into_inner());
    let session = PrivateSession::start().expect("a private session");
    let socket = socket_in(&session);
    let bridge = Bridge::start(&session, &socket);
    let (mut stalled, _) = connect(&socket, "Stalled");
    send_syncs(&mut stalled, UNREAD_SYNCS);
    std::thread::sleep(Duration::from_millis(300));

    bridge.request_stop();
    let stopped = Instant::now();
    assert!(
        bridge.wait_returned(WAIT),
        "the bridge returns despite the sender"
    );
    let took = stopped.elapsed();
    assert!(
        took >= SHUTDOWN_TIMEOUT - Duration::from_millis(100),
        "the bridge waited for the sender before cutting it off ({took:?})"
    );
    assert!(
        took < SHUTDOWN_TIMEOUT + Duration::from_millis(1500),
        "shutdown took {took:?}, over its bound"
    );
    bridge.join();
    drop(stalled);
}
