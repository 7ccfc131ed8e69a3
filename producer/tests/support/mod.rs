//! An in-process bridge for tests: a thread running the real
//! `ReceiverSession` on real bytes, answering like the bridge does for the
//! parts a producer sees (Welcome, UpdatesWanted, Rejected, SyncDone).
#![allow(dead_code)]

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_push_protocol::{
    encode_bridge_payload, encode_frame, AppInfo, BridgeMessage, Encoding, Hello, ReceiverConfig,
    ReceiverEvent, ReceiverSession, SurfaceId, PROTOCOL_VERSION,
};

/// Generous upper bound on waits, only to turn a hang into a failure.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// What the test bridge saw, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Seen {
    Hello(AppInfo, Encoding),
    Created(SurfaceId),
    Applied {
        surface: SurfaceId,
        serial: u64,
        updates: Vec<TreeUpdate>,
    },
    Rejected {
        surface: SurfaceId,
        serial: u64,
        rule: String,
    },
    Focus(Option<SurfaceId>),
    Destroyed(SurfaceId),
    Sync(u64),
    Goodbye,
    Fatal(String),
}

#[derive(Default)]
struct Shared {
    seen: Vec<Seen>,
    encoding: Option<Encoding>,
}

/// The running test bridge.
pub struct TestBridge {
    shared: Arc<Mutex<Shared>>,
    writer: Arc<Mutex<UnixStream>>,
    thread: Option<JoinHandle<()>>,
}

impl TestBridge {
    /// Serves one connection on `stream`.
    pub fn serve(stream: UnixStream) -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let writer = Arc::new(Mutex::new(stream.try_clone().unwrap()));
        let thread = {
            let (shared, writer) = (shared.clone(), writer.clone());
            thread::spawn(move || run(stream, &shared, &writer))
        };
        Self {
            shared,
            writer,
            thread: Some(thread),
        }
    }

    /// Everything seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.lock().unwrap().seen.clone()
    }

    /// Sends a bridge message in the session's encoding.
    pub fn send(&self, message: &BridgeMessage) {
        let encoding = self
            .shared
            .lock()
            .unwrap()
            .encoding
            .unwrap_or(Encoding::Json);
        let frame = encode_frame(&encode_bridge_payload(message, encoding).unwrap()).unwrap();
        self.writer.lock().unwrap().write_all(&frame).unwrap();
    }

    /// Closes the connection from the bridge side.
    pub fn hang_up(&self) {
        let _ = self.writer.lock().unwrap().shutdown(Shutdown::Both);
    }

    /// Waits for the serving thread to end (after goodbye or hang-up).
    pub fn join(mut self) -> Vec<Seen> {
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.seen()
    }
}

fn run(mut stream: UnixStream, shared: &Mutex<Shared>, writer: &Mutex<UnixStream>) {
    // A stand-in that never polls: no frame-rate limit (it would hold
    // commits until a poll that never comes).
    let mut session = ReceiverSession::new(ReceiverConfig {
        max_frames_per_second: 0,
        ..ReceiverConfig::default()
    });
    let mut with_tree: HashSet<SurfaceId> = HashSet::new();
    let mut buffer = [0u8; 4096];
    while !session.is_closed() {
        let count = match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(count) => count,
        };
        for event in session.feed(&buffer[..count]) {
            let replies = handle(event, &mut with_tree, shared);
            for reply in replies {
                let bytes = match reply {
                    Reply::Raw(bytes) => bytes,
                    Reply::Message(message) => session.encode_bridge_message(&message).unwrap(),
                };
                let _ = writer.lock().unwrap().write_all(&bytes);
            }
        }
    }
}

enum Reply {
    Raw(Vec<u8>),
    Message(BridgeMessage),
}

/// Records the event and decides the answer. Rule checked here, like the
/// bridge's validator: a surface's first commit must carry `tree`.
fn handle(
    event: ReceiverEvent,
    with_tree: &mut HashSet<SurfaceId>,
    shared: &Mutex<Shared>,
) -> Vec<Reply> {
    let mut shared = shared.lock().unwrap();
    match event {
        ReceiverEvent::HelloAccepted {
            app,
            encoding,
            welcome,
        } => {
            shared.encoding = Some(encoding);
            shared.seen.push(Seen::Hello(app, encoding));
            vec![Reply::Raw(welcome)]
        }
        ReceiverEvent::SurfaceCreated { surface, .. } => {
            shared.seen.push(Seen::Created(surface));
            vec![Reply::Message(BridgeMessage::UpdatesWanted { surface })]
        }
        ReceiverEvent::Commit {
            surface,
            serial,
            updates,
            ..
        } => {
            let has_tree =
                with_tree.contains(&surface) || updates.first().is_some_and(|u| u.tree.is_some());
            if !has_tree {
                let rule = "first-update-without-tree".to_owned();
                shared.seen.push(Seen::Rejected {
                    surface,
                    serial,
                    rule: rule.clone(),
                });
                let reason = "the first update must carry tree".to_owned();
                return vec![Reply::Message(BridgeMessage::Rejected {
                    surface,
                    serial,
                    rule,
                    reason,
                    resync: true,
                })];
            }
            with_tree.insert(surface);
            shared.seen.push(Seen::Applied {
                surface,
                serial,
                updates,
            });
            vec![]
        }
        ReceiverEvent::Focus { surface } => {
            shared.seen.push(Seen::Focus(surface));
            vec![]
        }
        ReceiverEvent::Geometry { .. } => vec![],
        ReceiverEvent::SurfaceDestroyed { surface } => {
            with_tree.remove(&surface);
            shared.seen.push(Seen::Destroyed(surface));
            vec![]
        }
        ReceiverEvent::Sync { serial } => {
            shared.seen.push(Seen::Sync(serial));
            vec![Reply::Message(BridgeMessage::SyncDone { serial })]
        }
        ReceiverEvent::Goodbye => {
            shared.seen.push(Seen::Goodbye);
            vec![]
        }
        // A key whose text is "consume" is consumed; any other is not.
        ReceiverEvent::Key { serial, event } => {
            let consumed = event.text.as_deref() == Some("consume");
            vec![Reply::Message(BridgeMessage::KeyHandled {
                serial,
                consumed,
            })]
        }
        ReceiverEvent::SurfaceError(error) => {
            let BridgeMessage::Rejected {
                surface,
                serial,
                ref rule,
                ..
            } = error.to_rejected()
            else {
                unreachable!()
            };
            shared.seen.push(Seen::Rejected {
                surface,
                serial,
                rule: rule.clone(),
            });
            vec![Reply::Message(error.to_rejected())]
        }
        ReceiverEvent::Fatal { error, reply } => {
            shared.seen.push(Seen::Fatal(error.to_string()));
            vec![Reply::Raw(reply)]
        }
    }
}

pub fn hello(encoding: Encoding) -> Hello {
    Hello {
        protocol: PROTOCOL_VERSION,
        encoding,
        app: AppInfo {
            app_id: "org.example.Producer".into(),
            name: "Producer test".into(),
            pid: Some(std::process::id()),
            toolkit_name: Some("test".into()),
            toolkit_version: Some("0".into()),
        },
        accesskit_version: None,
    }
}

/// A window with one button labelled `label`.
pub fn full_tree(label: &str) -> TreeUpdate {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(1)]);
    let mut button = Node::new(Role::Button);
    button.set_label(label);
    TreeUpdate {
        nodes: vec![(NodeId(0), window), (NodeId(1), button)],
        tree: Some(TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    }
}

/// Relabels the button only.
pub fn relabel(label: &str) -> TreeUpdate {
    let mut button = Node::new(Role::Button);
    button.set_label(label);
    TreeUpdate {
        nodes: vec![(NodeId(1), button)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    }
}

/// A connected pair: the producer's stream halves and a bridge on the other end.
pub fn socket_pair() -> (UnixStream, UnixStream, TestBridge) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let read = ours.try_clone().unwrap();
    (read, ours, TestBridge::serve(theirs))
}
