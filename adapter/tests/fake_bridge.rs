//! The adapter against a scripted bridge (the real sans-IO `ReceiverSession` on a Unix socket):
//! no bridge → inactive and nothing built; a bridge appearing → connected, activation for the
//! first full tree only when updates are wanted; actions on another thread; keys answered;
//! deactivation; the bridge going away and coming back → surfaces created again.
//!
//! One test function: the adapter's connection is per process.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use accesskit::{
    Action, ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, Node, NodeId,
    Role, TreeId, TreeInfo, TreeUpdate,
};
use newton_accesskit::{Adapter, KeyEvent, KeyEventKind};
use newton_push_protocol::{
    BridgeMessage, ReceiverConfig, ReceiverEvent, ReceiverSession, SurfaceId,
};

const WAIT: Duration = Duration::from_secs(15);

fn tree(label: &str, full: bool) -> TreeUpdate {
    let mut window = Node::new(Role::Window);
    window.set_label(label);
    TreeUpdate {
        nodes: vec![(NodeId(0), window)],
        tree: full.then(|| TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(0),
    }
}

#[derive(Default)]
struct Calls {
    activations: AtomicU64,
    deactivations: AtomicU64,
    actions: Mutex<Vec<(ActionRequest, ThreadId)>>,
}

struct Activation(Arc<Calls>);
impl ActivationHandler for Activation {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        self.0.activations.fetch_add(1, Ordering::SeqCst);
        Some(tree("initial", true))
    }
}
struct Actions(Arc<Calls>);
impl ActionHandler for Actions {
    fn do_action(&mut self, request: ActionRequest) {
        let thread = std::thread::current().id();
        self.0.actions.lock().unwrap().push((request, thread));
    }
}
struct Deactivation(Arc<Calls>);
impl DeactivationHandler for Deactivation {
    fn deactivate_accessibility(&mut self) {
        self.0.deactivations.fetch_add(1, Ordering::SeqCst);
    }
}

/// What the scripted bridge saw.
#[derive(Debug)]
enum Seen {
    Created(SurfaceId),
    Commit(Vec<TreeUpdate>),
    Focus(Option<SurfaceId>),
    Key(KeyEvent),
}

/// One accepted connection: a reader thread feeding a ReceiverSession, which answers the hello,
/// wants every surface and answers keys (consumed when the key's text is "q").
struct Connection {
    stream: UnixStream,
    seen: mpsc::Receiver<Seen>,
    encoding: Arc<Mutex<Option<newton_push_protocol::Encoding>>>,
}

impl Connection {
    fn accept(listener: &UnixListener) -> Connection {
        let (stream, _) = listener.accept().expect("the adapter connects");
        let (tx, seen) = mpsc::channel();
        let mut reader = stream.try_clone().unwrap();
        let mut writer = stream.try_clone().unwrap();
        let encoding = Arc::new(Mutex::new(None));
        let shared_encoding = encoding.clone();
        std::thread::spawn(move || {
            let mut session = ReceiverSession::new(ReceiverConfig::default());
            let mut buffer = vec![0u8; 65536];
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                for event in session.feed(&buffer[..n]) {
                    let reply = match event {
                        ReceiverEvent::HelloAccepted {
                            welcome, encoding, ..
                        } => {
                            *shared_encoding.lock().unwrap() = Some(encoding);
                            let _ = writer.write_all(&welcome);
                            None
                        }
                        ReceiverEvent::SurfaceCreated { surface, .. } => {
                            let _ = tx.send(Seen::Created(surface));
                            Some(BridgeMessage::UpdatesWanted { surface })
                        }
                        ReceiverEvent::Commit { updates, .. } => {
                            let _ = tx.send(Seen::Commit(updates));
                            None
                        }
                        ReceiverEvent::Focus { surface } => {
                            let _ = tx.send(Seen::Focus(surface));
                            None
                        }
                        ReceiverEvent::Key { serial, event } => {
                            let consumed = event.text.as_deref() == Some("q");
                            let _ = tx.send(Seen::Key(event));
                            Some(BridgeMessage::KeyHandled { serial, consumed })
                        }
                        _ => None,
                    };
                    if let Some(reply) = reply {
                        let frame = session.encode_bridge_message(&reply).unwrap();
                        let _ = writer.write_all(&frame);
                    }
                }
            }
        });
        Connection {
            stream,
            seen,
            encoding,
        }
    }

    fn send(&self, message: &BridgeMessage) {
        let encoding = self.encoding.lock().unwrap().expect("hello first");
        let payload = newton_push_protocol::encode_bridge_payload(message, encoding).unwrap();
        let frame = newton_push_protocol::encode_frame(&payload).unwrap();
        (&self.stream).write_all(&frame).unwrap();
    }

    /// The next seen item matching `pick`, skipping others.
    fn expect<T>(&self, what: &str, mut pick: impl FnMut(Seen) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.seen.recv_timeout(left) {
                Ok(seen) => {
                    if let Some(found) = pick(seen) {
                        return found;
                    }
                }
                Err(_) => panic!("the bridge never saw {what}"),
            }
        }
    }
}

impl Drop for Connection {
    /// The bridge goes away: both directions close (the reader thread holds clones).
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

fn wait(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn key(text: &str) -> KeyEvent {
    KeyEvent {
        kind: KeyEventKind::Press,
        keysym: u32::from(text.chars().next().unwrap_or(' ')),
        keycode: 24,
        modifiers: 0,
        text: Some(text.into()),
        timestamp_ms: 1,
    }
}

#[test]
fn adapter_life_with_a_bridge_that_comes_goes_and_comes_back() {
    let dir = std::env::temp_dir().join(format!("newton-accesskit-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("bridge.sock");
    let _ = std::fs::remove_file(&socket);
    std::env::set_var("NEWTON_ATSPI_SOCKET", &socket);

    // No bridge: inactive, nothing built, keys not waited for.
    let calls = Arc::new(Calls::default());
    let mut adapter = Adapter::new(
        Activation(calls.clone()),
        Actions(calls.clone()),
        Deactivation(calls.clone()),
    );
    adapter.update_window_focus_state(true);
    let built = AtomicU64::new(0);
    for _ in 0..10 {
        adapter.update_if_active(|| {
            built.fetch_add(1, Ordering::SeqCst);
            tree("never", false)
        });
    }
    assert_eq!(
        built.load(Ordering::SeqCst),
        0,
        "built a tree with no bridge"
    );
    assert_eq!(adapter.stats().updates_skipped, 10);
    assert!(!adapter.is_connected() && !adapter.is_active());
    assert!(
        !adapter.key_event(key("q")),
        "no bridge: nobody consumed it"
    );
    assert_eq!(calls.activations.load(Ordering::SeqCst), 0);

    // A bridge appears: the adapter connects, creates its surface, is wanted, and the
    // activation handler's full tree goes out.
    let listener = UnixListener::bind(&socket).unwrap();
    let bridge = Connection::accept(&listener);
    let surface = bridge.expect("createSurface", |s| match s {
        Seen::Created(surface) => Some(surface),
        _ => None,
    });
    bridge.expect("focus on the surface", |s| {
        matches!(s, Seen::Focus(Some(f)) if f == surface).then_some(())
    });
    let first = bridge.expect("the first commit", |s| match s {
        Seen::Commit(updates) => Some(updates),
        _ => None,
    });
    assert!(first[0].tree.is_some(), "the first commit is the full tree");
    assert_eq!(calls.activations.load(Ordering::SeqCst), 1);
    wait("the adapter to be active", || adapter.is_active());

    // Updates flow while wanted.
    adapter.update_if_active(|| tree("second", false));
    let second = bridge.expect("the second commit", |s| match s {
        Seen::Commit(updates) => Some(updates),
        _ => None,
    });
    assert!(second[0].tree.is_none());

    // Actions reach the handler on the adapter's thread.
    let request = ActionRequest {
        action: Action::Click,
        target_tree: TreeId::ROOT,
        target_node: NodeId(0),
        data: None,
    };
    bridge.send(&BridgeMessage::Action {
        surface,
        request: request.clone(),
    });
    wait("the action", || !calls.actions.lock().unwrap().is_empty());
    let (got, thread) = calls.actions.lock().unwrap()[0].clone();
    assert_eq!(got, request);
    assert_ne!(
        thread,
        std::thread::current().id(),
        "handlers run off the UI thread"
    );

    // Keys: the bridge's verdict comes back.
    assert!(adapter.key_event(key("q")), "consumed by the AT");
    assert!(!adapter.key_event(key("w")), "not consumed");
    let forwarded = bridge.expect("the key", |s| match s {
        Seen::Key(event) => Some(event),
        _ => None,
    });
    assert_eq!(forwarded, key("q"), "the key reaches the bridge as given");

    // Unwanted: deactivation, nothing built.
    bridge.send(&BridgeMessage::UpdatesUnwanted { surface });
    wait("deactivation", || {
        calls.deactivations.load(Ordering::SeqCst) == 1
    });
    let before = built.load(Ordering::SeqCst);
    adapter.update_if_active(|| {
        built.fetch_add(1, Ordering::SeqCst);
        tree("unwanted", false)
    });
    assert_eq!(built.load(Ordering::SeqCst), before, "built while unwanted");

    // The bridge goes away and comes back: the surface is created again, wanted again, and
    // a full tree is asked for again.
    drop(bridge);
    wait("the adapter to notice", || !adapter.is_connected());
    let bridge = Connection::accept(&listener);
    let again = bridge.expect("createSurface again", |s| match s {
        Seen::Created(surface) => Some(surface),
        _ => None,
    });
    assert_eq!(again, surface);
    let resent = bridge.expect("a full tree again", |s| match s {
        Seen::Commit(updates) => Some(updates),
        _ => None,
    });
    assert!(resent[0].tree.is_some());
    assert_eq!(calls.activations.load(Ordering::SeqCst), 2);

    drop(adapter);
    let _ = std::fs::remove_dir_all(&dir);
}
