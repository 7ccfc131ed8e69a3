//! `record --out FILE`: a transparent recording proxy for bug reports and
//! fixtures. It listens on its own socket, accepts one sender, passes every
//! frame on to the real bridge and every bridge frame back, and writes each
//! decoded sender message with its arrival time as a [`RecordedLine`]
//! (JSON lines, whatever the wire encoding) — the format `replay` plays.
//!
//! With no bridge to pass the stream to, the recorder answers the sender
//! itself (Welcome, updates wanted, SyncDone), so recording works standalone.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Instant;

use newton_producer::write_recorded_line;
use newton_push_protocol::{
    decode_hello, decode_sender_message, encode_bridge_payload, encode_frame, BridgeMessage,
    Encoding, FrameDecoder, RecordedLine, SenderMessage, DEFAULT_MAX_FRAME_BYTES, PROTOCOL_VERSION,
};

use crate::cli::RecordArgs;

const READ_CHUNK: usize = 64 * 1024;
/// The recorder's socket, beside the bridge's.
const RECORD_SOCKET_NAME: &str = "record.sock";

/// Why recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot write the recording {path}: {source}")]
    Output { path: PathBuf, source: io::Error },
    #[error("the sender connection failed: {0}")]
    Sender(io::Error),
    #[error("refused a sender: {0}")]
    Refused(String),
}

/// What one recording captured.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RecordSummary {
    /// Lines written (the hello included).
    pub lines: usize,
    /// Whether the stream went on to a bridge (false: answered standalone).
    pub forwarded: bool,
    /// Frames that could not be recorded (still passed on), with why.
    pub warnings: Vec<String>,
}

/// `record`: binds the recorder socket, records one sender, prints a summary.
pub fn run(args: RecordArgs) -> Result<(), Box<dyn std::error::Error>> {
    let upstream = match args.upstream {
        Some(path) => path,
        None => newton_push_protocol::default_socket_path()?,
    };
    let listen = args
        .socket
        .unwrap_or_else(|| upstream.with_file_name(RECORD_SOCKET_NAME));
    let bound = crate::socket::bind(&listen)?;
    eprintln!(
        "record: waiting for one sender on {0}\n        (e.g. NEWTON_ATSPI_SOCKET={0} your-app, or `newton-atspi-bridge replay --socket {0} FILE`)",
        listen.display()
    );
    let summary = record_one(&bound.listener, &upstream, &args.out)?;
    for warning in &summary.warnings {
        eprintln!("record: {warning}");
    }
    eprintln!(
        "record: wrote {} lines to {}{}",
        summary.lines,
        args.out.display(),
        if summary.forwarded {
            ""
        } else {
            " (no bridge was running; the recorder answered the sender)"
        }
    );
    Ok(())
}

/// Accepts one sender on `listener` and records it into `out`, passing the
/// stream on to `upstream` when a bridge listens there.
pub fn record_one(
    listener: &UnixListener,
    upstream: &Path,
    out: &Path,
) -> Result<RecordSummary, RecordError> {
    let output_error = |source| RecordError::Output {
        path: out.to_owned(),
        source,
    };
    let mut writer = BufWriter::new(File::create(out).map_err(output_error)?);
    let (sender, _) = listener.accept().map_err(RecordError::Sender)?;
    crate::socket::check_same_user(&sender).map_err(|r| RecordError::Refused(r.to_string()))?;
    let bridge = UnixStream::connect(upstream).ok();
    if bridge.is_none() {
        eprintln!(
            "record: no bridge at {}; recording standalone",
            upstream.display()
        );
    }
    let back = match &bridge {
        Some(bridge) => Some(copy_back(bridge, &sender).map_err(RecordError::Sender)?),
        None => None,
    };
    let mut summary = RecordSummary {
        forwarded: bridge.is_some(),
        ..RecordSummary::default()
    };
    let result = pump(&sender, bridge.as_ref(), &mut writer, &mut summary);
    if let Some(bridge) = &bridge {
        let _ = bridge.shutdown(Shutdown::Both);
    }
    if let Some(back) = back {
        let _ = back.join();
    }
    let _ = sender.shutdown(Shutdown::Both);
    result?;
    writer.flush().map_err(output_error)?;
    Ok(summary)
}

/// Reads the sender until it leaves: forwards, records, answers standalone.
fn pump(
    mut sender: &UnixStream,
    mut bridge: Option<&UnixStream>,
    writer: &mut BufWriter<File>,
    summary: &mut RecordSummary,
) -> Result<(), RecordError> {
    let mut recorder = Recorder::new(bridge.is_none());
    let mut buffer = vec![0u8; READ_CHUNK];
    loop {
        let n = match sender.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(()),
            Err(e) => return Err(RecordError::Sender(e)),
        };
        let bytes = buffer.get(..n).unwrap_or_default();
        if let Some(upstream) = bridge.as_mut() {
            if let Err(e) = upstream.write_all(bytes) {
                summary.warnings.push(format!(
                    "the bridge closed the connection ({e}); recording standalone"
                ));
                bridge = None;
                recorder.answer_sender = true;
            }
        }
        let fed = recorder.feed(bytes, Instant::now());
        for line in &fed.lines {
            write_line(writer, line)?;
            summary.lines += 1;
        }
        summary.warnings.extend(fed.warnings);
        for reply in fed.replies {
            sender.write_all(&reply).map_err(RecordError::Sender)?;
        }
    }
}

fn write_line(writer: &mut BufWriter<File>, line: &RecordedLine) -> Result<(), RecordError> {
    // Flushed per line so an interrupted recording is still a valid file.
    write_recorded_line(writer, line)
        .and_then(|()| writer.flush())
        .map_err(|source| RecordError::Output {
            path: PathBuf::from("(recording)"),
            source,
        })
}

/// Copies the bridge's frames back to the sender on a thread.
fn copy_back(bridge: &UnixStream, sender: &UnixStream) -> io::Result<JoinHandle<()>> {
    let mut from = bridge.try_clone()?;
    let mut to = sender.try_clone()?;
    std::thread::Builder::new()
        .name("record-back".into())
        .spawn(move || {
            let _ = io::copy(&mut from, &mut to);
            // The bridge is done with the sender (goodbye, fatal error).
            let _ = to.shutdown(Shutdown::Write);
        })
}

/// What one chunk of sender bytes produced.
#[derive(Debug, Default)]
pub struct Fed {
    /// Lines to record.
    pub lines: Vec<RecordedLine>,
    /// Framed replies for the sender (standalone only).
    pub replies: Vec<Vec<u8>>,
    /// Frames that could not be recorded, and why.
    pub warnings: Vec<String>,
}

/// The sans-IO recorder: sender bytes in, recorded lines (and, standalone,
/// the bridge's minimal answers) out.
pub struct Recorder {
    decoder: FrameDecoder,
    /// The connection's encoding once the hello was read.
    encoding: Option<Encoding>,
    /// When the hello arrived: `atMs` counts from it.
    started: Option<Instant>,
    /// Set after a framing error: the rest of the stream cannot be split.
    lost_framing: bool,
    /// Standalone: answer the hello, surfaces and syncs like a bridge.
    pub answer_sender: bool,
}

impl Recorder {
    pub fn new(answer_sender: bool) -> Self {
        Self {
            decoder: FrameDecoder::new(DEFAULT_MAX_FRAME_BYTES),
            encoding: None,
            started: None,
            lost_framing: false,
            answer_sender,
        }
    }

    /// Feeds bytes read from the sender, received at `now`.
    pub fn feed(&mut self, bytes: &[u8], now: Instant) -> Fed {
        let mut fed = Fed::default();
        if self.lost_framing {
            return fed;
        }
        let mut payloads = Vec::new();
        let framing = self.decoder.feed(bytes, &mut payloads);
        for payload in payloads {
            self.frame(&payload, now, &mut fed);
        }
        if let Err(error) = framing {
            self.lost_framing = true;
            fed.warnings.push(format!(
                "{error}; the rest of the stream is passed on but not recorded"
            ));
        }
        fed
    }

    fn frame(&mut self, payload: &[u8], now: Instant, fed: &mut Fed) {
        let Some(encoding) = self.encoding else {
            return self.hello(payload, now, fed);
        };
        let at_ms = self.elapsed_ms(now);
        match decode_sender_message(payload, encoding) {
            Ok(message) => {
                self.answer(&message, encoding, fed);
                fed.lines.push(RecordedLine {
                    at_ms,
                    hello: None,
                    message: Some(message),
                });
            }
            Err(error) => fed.warnings.push(format!("frame not recorded: {error}")),
        }
    }

    fn hello(&mut self, payload: &[u8], now: Instant, fed: &mut Fed) {
        match decode_hello(payload) {
            Ok(hello) => {
                self.encoding = Some(hello.encoding);
                self.started = Some(now);
                if self.answer_sender {
                    let welcome = BridgeMessage::Welcome {
                        protocol: PROTOCOL_VERSION,
                        max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
                        // The recorder answers no key: it offers no feature.
                        features: Vec::new(),
                    };
                    // The Welcome is JSON, like the hello it answers.
                    push_reply(&welcome, Encoding::Json, fed);
                }
                fed.lines.push(RecordedLine {
                    at_ms: 0,
                    hello: Some(hello),
                    message: None,
                });
            }
            Err(error) => {
                self.lost_framing = true;
                fed.warnings.push(format!(
                    "the first frame is not a hello ({error}); nothing recorded"
                ));
            }
        }
    }

    /// Standalone: the answers a sender waits for.
    fn answer(&self, message: &SenderMessage, encoding: Encoding, fed: &mut Fed) {
        if !self.answer_sender {
            return;
        }
        let reply = match message {
            SenderMessage::CreateSurface { surface, .. } => {
                BridgeMessage::UpdatesWanted { surface: *surface }
            }
            SenderMessage::Sync { serial } => BridgeMessage::SyncDone { serial: *serial },
            _ => return,
        };
        push_reply(&reply, encoding, fed);
    }

    fn elapsed_ms(&self, now: Instant) -> u64 {
        self.started
            .map(|started| now.saturating_duration_since(started).as_millis())
            .and_then(|ms| u64::try_from(ms).ok())
            .unwrap_or(0)
    }
}

fn push_reply(message: &BridgeMessage, encoding: Encoding, fed: &mut Fed) {
    match encode_bridge_payload(message, encoding)
        .ok()
        .and_then(|payload| encode_frame(&payload).ok())
    {
        Some(frame) => fed.replies.push(frame),
        None => fed
            .warnings
            .push("cannot encode an answer for the sender".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
    use newton_producer::Sender;
    use newton_push_protocol::{
        AppInfo, Hello, ReceiverConfig, ReceiverEvent, ReceiverSession, SurfaceId,
    };

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("newton-record-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
        fn path(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn hello(encoding: Encoding) -> Hello {
        Hello {
            protocol: 1,
            encoding,
            app: AppInfo {
                app_id: "org.example.Recorded".into(),
                name: "Recorded".into(),
                ..Default::default()
            },
        }
    }

    fn full_tree() -> TreeUpdate {
        let mut root = Node::new(Role::Window);
        root.set_label("Main");
        root.set_children(vec![NodeId(2)]);
        let mut button = Node::new(Role::Button);
        button.set_label("OK");
        TreeUpdate {
            nodes: vec![(NodeId(1), root), (NodeId(2), button)],
            tree: Some(TreeInfo::new(NodeId(1))),
            tree_id: TreeId::ROOT,
            focus: NodeId(1),
        }
    }

    /// Starts the recorder on `listen` in a thread.
    fn start_recorder(
        listen: PathBuf,
        upstream: PathBuf,
        out: PathBuf,
    ) -> std::thread::JoinHandle<Result<RecordSummary, RecordError>> {
        let listener = UnixListener::bind(&listen).unwrap();
        std::thread::spawn(move || record_one(&listener, &upstream, &out))
    }

    /// Pushes one surface, one commit and a sync, then says goodbye.
    fn push_session(socket: &Path, encoding: Encoding) -> Vec<BridgeMessage> {
        let sender = Sender::connect(socket, hello(encoding)).unwrap();
        sender.create_surface(SurfaceId(1), Some("Main")).unwrap();
        sender.update(SurfaceId(1), full_tree()).unwrap();
        sender.commit(SurfaceId(1)).unwrap();
        sender.sync(Duration::from_secs(30)).unwrap();
        let mut received = Vec::new();
        while let Ok(Some(message)) = sender.try_recv() {
            received.push(message);
        }
        sender.goodbye().unwrap();
        drop(sender);
        received
    }

    fn recorded(out: &Path) -> Vec<RecordedLine> {
        newton_producer::load_recording(out).unwrap()
    }

    fn message_kinds(lines: &[RecordedLine]) -> Vec<&'static str> {
        lines
            .iter()
            .map(|line| match (&line.hello, &line.message) {
                (Some(_), _) => "hello",
                (_, Some(SenderMessage::CreateSurface { .. })) => "create",
                (_, Some(SenderMessage::Update { .. })) => "update",
                (_, Some(SenderMessage::Commit { .. })) => "commit",
                (_, Some(SenderMessage::Sync { .. })) => "sync",
                (_, Some(SenderMessage::Goodbye)) => "goodbye",
                _ => "other",
            })
            .collect()
    }

    #[test]
    fn records_standalone_and_answers_the_sender() {
        let dir = Scratch::new("standalone");
        let out = dir.path("out.jsonl");
        let recorder = start_recorder(
            dir.path("record.sock"),
            dir.path("no-bridge.sock"),
            out.clone(),
        );
        let received = push_session(&dir.path("record.sock"), Encoding::Postcard);
        let summary = recorder.join().unwrap().unwrap();
        assert!(!summary.forwarded);
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
        assert!(received.contains(&BridgeMessage::UpdatesWanted {
            surface: SurfaceId(1)
        }));
        let lines = recorded(&out);
        assert_eq!(summary.lines, lines.len());
        assert_eq!(
            message_kinds(&lines),
            ["hello", "create", "update", "commit", "sync", "goodbye"]
        );
        assert_eq!(lines[0].at_ms, 0);
        assert!(lines.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        let Some(SenderMessage::Update { update, .. }) = &lines[2].message else {
            panic!("line 2 is the update");
        };
        assert_eq!(
            update,
            &full_tree(),
            "postcard on the wire, same tree in JSON"
        );
        assert_eq!(lines[0].hello.as_ref().unwrap().app.name, "Recorded");
    }

    /// A bridge stand-in built on the real receiver session: answers the
    /// hello and syncs, rejects every commit, and reports what it decoded.
    fn start_upstream(path: &Path) -> mpsc::Receiver<Vec<String>> {
        let listener = UnixListener::bind(path).unwrap();
        let (report, reported) = mpsc::channel();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            // A stand-in that never polls: no frame-rate limit (it would hold
            // commits until a poll that never comes).
            let mut session = ReceiverSession::new(ReceiverConfig {
                max_frames_per_second: 0,
                ..ReceiverConfig::default()
            });
            let mut seen = Vec::new();
            let mut buffer = vec![0u8; 4096];
            'read: while let Ok(n) = stream.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                for event in session.feed(&buffer[..n]) {
                    let reply = match event {
                        ReceiverEvent::HelloAccepted { app, welcome, .. } => {
                            seen.push(format!("hello {}", app.app_id));
                            welcome
                        }
                        ReceiverEvent::Commit {
                            surface,
                            serial,
                            updates,
                            ..
                        } => {
                            seen.push(format!("commit {} updates", updates.len()));
                            let rejected = BridgeMessage::Rejected {
                                surface,
                                serial,
                                rule: "test-rule".into(),
                                reason: "rejected by the test bridge".into(),
                                resync: false,
                            };
                            session.encode_bridge_message(&rejected).unwrap()
                        }
                        ReceiverEvent::Sync { serial } => session
                            .encode_bridge_message(&BridgeMessage::SyncDone { serial })
                            .unwrap(),
                        ReceiverEvent::Goodbye => {
                            seen.push("goodbye".into());
                            break 'read;
                        }
                        other => {
                            seen.push(format!("{other:?}").chars().take(20).collect());
                            continue;
                        }
                    };
                    stream.write_all(&reply).unwrap();
                }
            }
            report.send(seen).unwrap();
        });
        reported
    }

    #[test]
    fn passes_the_stream_through_to_the_bridge_and_back() {
        let dir = Scratch::new("proxy");
        let out = dir.path("out.jsonl");
        let upstream = dir.path("bridge.sock");
        let seen_by_bridge = start_upstream(&upstream);
        let recorder = start_recorder(dir.path("record.sock"), upstream, out.clone());
        let received = push_session(&dir.path("record.sock"), Encoding::Json);
        let summary = recorder.join().unwrap().unwrap();
        assert!(summary.forwarded);
        let seen = seen_by_bridge
            .recv_timeout(Duration::from_secs(30))
            .unwrap();
        assert_eq!(
            seen.first().map(String::as_str),
            Some("hello org.example.Recorded")
        );
        assert!(seen.contains(&"commit 1 updates".to_string()), "{seen:?}");
        assert_eq!(seen.last().map(String::as_str), Some("goodbye"));
        assert!(
            received
                .iter()
                .any(|m| matches!(m, BridgeMessage::Rejected { rule, .. } if rule == "test-rule")),
            "the bridge's answers reach the sender: {received:?}"
        );
        assert!(
            !received
                .iter()
                .any(|m| matches!(m, BridgeMessage::UpdatesWanted { .. })),
            "the recorder does not answer when a bridge does"
        );
        assert_eq!(
            message_kinds(&recorded(&out)),
            ["hello", "create", "update", "commit", "sync", "goodbye"]
        );
    }

    #[test]
    fn a_stream_without_hello_is_not_recorded() {
        let mut recorder = Recorder::new(true);
        let frame = encode_frame(br#"{"goodbye":null}"#).unwrap();
        let fed = recorder.feed(&frame, Instant::now());
        assert!(fed.lines.is_empty());
        assert!(fed.replies.is_empty());
        assert_eq!(fed.warnings.len(), 1, "{:?}", fed.warnings);
        assert!(recorder.feed(&frame, Instant::now()).lines.is_empty());
    }

    #[test]
    fn an_oversized_frame_stops_recording_with_a_warning() {
        let mut recorder = Recorder::new(false);
        let fed = recorder.feed(&u32::MAX.to_le_bytes(), Instant::now());
        assert_eq!(fed.warnings.len(), 1);
        assert!(
            fed.warnings[0].contains("not recorded"),
            "{:?}",
            fed.warnings
        );
    }
}
