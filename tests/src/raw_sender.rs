//! The one raw sender of the e2e tests: the push protocol in JSON frames over the bridge's
//! socket, so a test controls every byte. Protocol messages are built with the protocol crate's
//! own types ([`RawSender::send_message`]); [`RawSender::send`] (any JSON value) and
//! [`RawSender::send_raw`] / [`RawSender::write_bytes`] exist only for deliberately malformed or
//! hostile input, and each caller says why in a comment.
//!
//! It lives here, in the test-support crate, rather than in newton-producer: it panics on every
//! failure (a test's assertion), which the producer library must never do, and it answers in
//! untyped JSON so a test can see exactly what the bridge sent. Also the small button trees the
//! tests push.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use accesskit::{Action, Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_push_protocol::{
    AppInfo, BridgeMessage, Encoding, Hello, SenderMessage, SurfaceId, PROTOCOL_VERSION,
};
use serde_json::Value;

/// What one bounded read brought.
#[derive(Debug)]
pub enum Received {
    /// One whole bridge frame, as JSON.
    Message(Value),
    /// Nothing within the bound.
    Timeout,
    /// The bridge closed the connection (or the socket failed).
    Closed,
}

/// One application's raw connection to the bridge.
pub struct RawSender {
    /// The socket, for tests that stall or half-close it.
    pub stream: UnixStream,
    /// Bytes read but not yet taken as a frame.
    pub pending: Vec<u8>,
    /// The last serial handed out by [`RawSender::next_serial`].
    pub serial: u64,
    /// The bound of every wait ([`RawSender::recv`], [`RawSender::sync`]).
    pub wait: Duration,
}

impl RawSender {
    /// The default bound of every wait.
    pub const WAIT: Duration = Duration::from_secs(60);

    /// Connects as the application `name`, sends the hello and waits for the welcome.
    pub fn connect(socket: &Path, name: &str) -> RawSender {
        RawSender::connect_within(socket, name, RawSender::WAIT)
    }

    /// [`RawSender::connect`] with every wait bounded by `wait`.
    pub fn connect_within(socket: &Path, name: &str, wait: Duration) -> RawSender {
        RawSender::connect_with_hello_within(socket, &hello(name), wait)
    }

    /// [`RawSender::connect`] with another hello than [`hello`]'s (another identity).
    pub fn connect_with_hello(socket: &Path, hello: &Hello) -> RawSender {
        RawSender::connect_with_hello_within(socket, hello, RawSender::WAIT)
    }

    fn connect_with_hello_within(socket: &Path, hello: &Hello, wait: Duration) -> RawSender {
        let stream = UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("connect to {}: {e}", socket.display()));
        let mut sender = RawSender {
            stream,
            pending: Vec::new(),
            serial: 0,
            wait,
        };
        sender.send_hello(hello);
        match sender.recv_within(wait) {
            Received::Message(m) if m.get("welcome").is_some() => sender,
            Received::Message(m) => panic!("expected the welcome, got {m}"),
            Received::Timeout => panic!("no welcome within {wait:?}"),
            Received::Closed => panic!("the bridge closed the connection instead of welcoming"),
        }
    }

    /// Sends a hello (the first frame); [`RawSender::connect`] sends the usual one.
    pub fn send_hello(&mut self, hello: &Hello) {
        let payload = serde_json::to_vec(hello).expect("the hello encodes");
        self.send_raw(&payload);
    }

    /// Sends one protocol message.
    pub fn send_message(&mut self, message: &SenderMessage) {
        let payload = serde_json::to_vec(message).expect("JSON encodes");
        self.send_raw(&payload);
    }

    /// Sends any JSON value as one frame: for malformed or hostile messages only.
    pub fn send(&mut self, message: &Value) {
        let payload = serde_json::to_vec(message).expect("JSON encodes");
        self.send_raw(&payload);
    }

    /// Writes one frame (length prefix + payload) without looking at the payload.
    pub fn send_raw(&mut self, payload: &[u8]) {
        self.write_bytes(&frame(payload));
    }

    /// Writes bytes as they are (a torn frame, a forged length prefix).
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to the bridge");
    }

    /// A fresh serial for a commit or a sync.
    pub fn next_serial(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }

    /// The next bridge message (bounded by the sender's wait); None when the bridge closed.
    /// Panics when nothing came.
    pub fn recv(&mut self) -> Option<Value> {
        match self.recv_within(self.wait) {
            Received::Message(m) => Some(m),
            Received::Closed => None,
            Received::Timeout => panic!("no bridge message within {:?}", self.wait),
        }
    }

    /// The next bridge message, waiting at most `timeout`.
    pub fn recv_within(&mut self, timeout: Duration) -> Received {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(payload) = self.take_frame() {
                let message = serde_json::from_slice(&payload)
                    .unwrap_or_else(|e| panic!("bridge frame is not JSON ({e})"));
                return Received::Message(message);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Received::Timeout;
            }
            let _ = self.stream.set_read_timeout(Some(left));
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Received::Closed,
                Ok(n) => self
                    .pending
                    .extend_from_slice(chunk.get(..n).unwrap_or_default()),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(_) => return Received::Closed,
            }
        }
    }

    fn take_frame(&mut self) -> Option<Vec<u8>> {
        let prefix: [u8; 4] = self.pending.get(..4)?.try_into().ok()?;
        let end = 4 + u32::from_le_bytes(prefix) as usize;
        let payload = self.pending.get(4..end)?.to_vec();
        self.pending.drain(..end);
        Some(payload)
    }

    /// Waits until everything sent was processed; returns the messages that came before.
    pub fn sync(&mut self) -> Vec<Value> {
        let serial = self.next_serial();
        self.send_message(&SenderMessage::Sync { serial });
        let mut before = Vec::new();
        loop {
            let message = self.recv().expect("the bridge answers the sync");
            if message["syncDone"]["serial"] == serial {
                return before;
            }
            before.push(message);
        }
    }

    /// Every message until the bridge closes the connection; panics when it stays open.
    pub fn drain_until_closed(&mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            match self.recv_within(self.wait) {
                Received::Message(m) => messages.push(m),
                Received::Closed => return messages,
                Received::Timeout => {
                    panic!("the bridge kept the connection open; got {messages:?}")
                }
            }
        }
    }

    /// Creates `surface` titled `title` (no wait).
    pub fn create_surface(&mut self, surface: u32, title: &str) {
        self.send_message(&SenderMessage::CreateSurface {
            surface: SurfaceId(surface),
            title: Some(title.to_owned()),
        });
    }

    /// Buffers `update` for `surface` and commits it (no wait); returns the commit's serial.
    pub fn commit(&mut self, surface: u32, update: TreeUpdate) -> u64 {
        let surface = SurfaceId(surface);
        self.send_message(&SenderMessage::Update { surface, update });
        let serial = self.next_serial();
        self.send_message(&SenderMessage::Commit { surface, serial });
        serial
    }

    /// Creates `surface` holding `window(title, label, buttons)` and waits until it landed
    /// cleanly; returns the bridge messages that came meanwhile (`updatesWanted`/`updatesUnwanted`).
    pub fn show_window(
        &mut self,
        surface: u32,
        title: &str,
        label: &str,
        buttons: u64,
    ) -> Vec<Value> {
        self.show_tree(surface, title, window(title, label, buttons))
    }

    /// Creates `surface` holding `tree`, focuses it and waits until it landed cleanly; returns
    /// the bridge messages that came meanwhile.
    pub fn show_tree(&mut self, surface: u32, title: &str, tree: TreeUpdate) -> Vec<Value> {
        self.create_surface(surface, title);
        self.commit(surface, tree);
        self.send_message(&SenderMessage::Focus {
            surface: Some(SurfaceId(surface)),
        });
        let replies = self.sync();
        assert!(
            replies
                .iter()
                .all(|m| m.get("rejected").is_none() && m.get("error").is_none()),
            "the bridge refused the window: {replies:?}"
        );
        replies
    }
}

/// The hello [`RawSender::connect`] sends for the application `name`.
pub fn hello(name: &str) -> Hello {
    Hello {
        protocol: PROTOCOL_VERSION,
        encoding: Encoding::Json,
        app: AppInfo {
            app_id: format!("org.newton.e2e.{}", name.replace(' ', "-")),
            name: name.to_owned(),
            pid: None,
            toolkit_name: Some("newton-e2e".into()),
            toolkit_version: Some("1".into()),
        },
        accesskit_version: None,
    }
}

/// `payload` with its little-endian length prefix: one wire frame.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).expect("frame under 4 GiB");
    let mut bytes = length.to_le_bytes().to_vec();
    bytes.extend_from_slice(payload);
    bytes
}

/// A bridge message as the JSON a [`RawSender`] receives, to compare with.
pub fn as_received(message: &BridgeMessage) -> Value {
    serde_json::to_value(message).expect("a bridge message encodes")
}

/// A full tree: a window (id 1) whose children are `buttons` buttons (ids 2..) labelled
/// "`label` <n>".
pub fn window(title: &str, label: &str, buttons: u64) -> TreeUpdate {
    window_rooted_at(1, title, label, buttons)
}

/// [`window`] with the window's id `root` and its buttons `root + 1 ..` (labelled from 2 as in
/// [`window`]): a tree with another root replaces the surface's tree wholesale.
pub fn window_rooted_at(root: u64, title: &str, label: &str, buttons: u64) -> TreeUpdate {
    let ids = root + 1..root + 1 + buttons;
    let mut window = Node::new(Role::Window);
    window.set_children(ids.clone().map(NodeId).collect::<Vec<_>>());
    window.set_label(title);
    let mut nodes = vec![(NodeId(root), window)];
    nodes.extend(ids.map(|id| (NodeId(id), button(&format!("{label} {}", id - root + 1)))));
    tree_update(root, nodes, true)
}

/// An incremental update relabelling button `id`.
pub fn relabel(id: u64, label: &str) -> TreeUpdate {
    relabel_under(1, id, label)
}

/// [`relabel`] in a tree rooted at `root` (focus stays on the root).
pub fn relabel_under(root: u64, id: u64, label: &str) -> TreeUpdate {
    tree_update(root, vec![(NodeId(id), button(label))], false)
}

/// An update of `nodes` with the focus on `root`; `full` carries the tree (a first or
/// replacing update).
pub fn tree_update(root: u64, nodes: Vec<(NodeId, Node)>, full: bool) -> TreeUpdate {
    TreeUpdate {
        nodes,
        tree: full.then(|| TreeInfo::new(NodeId(root))),
        tree_id: TreeId::ROOT,
        focus: NodeId(root),
    }
}

/// A clickable button labelled `label`.
pub fn button(label: &str) -> Node {
    let mut node = Node::new(Role::Button);
    node.add_action(Action::Click);
    node.set_label(label);
    node
}
