//! A toolkit that answers the activation request from its UI thread (accesskit_winit's pattern:
//! the handler posts an event and returns `None`, the UI thread then pushes the full tree) can
//! push that full tree before the handler has returned, or while the adapter records the
//! handler's `None`. Either way the full tree must reach the bridge; dropping it leaves the window
//! waiting for a full tree the toolkit already gave, and the application without a tree for good.
//!
//! Window A pushes its full tree while its handler is still running; window B's full tree is
//! built across the handler's return. One test function: the adapter's connection is per process.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use accesskit::{
    ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, Node, NodeId, Role,
    TreeId, TreeInfo, TreeUpdate,
};
use newton_accesskit::Adapter;
use newton_push_protocol::{BridgeMessage, ReceiverConfig, ReceiverEvent, ReceiverSession};

const WAIT: Duration = Duration::from_secs(15);

fn full_tree(label: &str) -> TreeUpdate {
    let mut window = Node::new(Role::Window);
    window.set_label(label);
    TreeUpdate {
        nodes: vec![(NodeId(0), window)],
        tree: Some(TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(0),
    }
}

/// Tells the test it was asked, then holds the adapter's thread until the test says so, and
/// returns `None` (the UI thread will push the full tree).
struct PostsToUiThread {
    label: &'static str,
    asked: mpsc::Sender<&'static str>,
    resume: mpsc::Receiver<()>,
}
impl ActivationHandler for PostsToUiThread {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        let _ = self.asked.send(self.label);
        let _ = self.resume.recv_timeout(WAIT);
        None
    }
}
struct NoActions;
impl ActionHandler for NoActions {
    fn do_action(&mut self, _: ActionRequest) {}
}
struct NoDeactivation;
impl DeactivationHandler for NoDeactivation {
    fn deactivate_accessibility(&mut self) {}
}

/// A bridge that wants every surface and reports the root label of each full tree committed.
fn fake_bridge(listener: UnixListener) -> mpsc::Receiver<String> {
    let (tx, full_trees) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = stream.try_clone().expect("clone the stream");
        let mut writer = stream;
        let mut session = ReceiverSession::new(ReceiverConfig::default());
        let mut buffer = vec![0u8; 65536];
        while let Ok(n) = reader.read(&mut buffer) {
            if n == 0 {
                break;
            }
            for event in session.feed(&buffer[..n]) {
                match event {
                    ReceiverEvent::HelloAccepted { welcome, .. } => {
                        let _ = writer.write_all(&welcome);
                    }
                    ReceiverEvent::SurfaceCreated { surface, .. } => {
                        let wanted = BridgeMessage::UpdatesWanted { surface };
                        let frame = session.encode_bridge_message(&wanted).expect("encode");
                        let _ = writer.write_all(&frame);
                    }
                    ReceiverEvent::Commit { updates, .. } => {
                        for update in updates.into_iter().filter(|u| u.tree.is_some()) {
                            let root = update.tree.as_ref().map(|t| t.root);
                            let label = update
                                .nodes
                                .iter()
                                .find(|(id, _)| Some(*id) == root)
                                .and_then(|(_, node)| node.label().map(str::to_owned))
                                .unwrap_or_default();
                            let _ = tx.send(label);
                        }
                    }
                    _ => {}
                }
            }
        }
    });
    full_trees
}

#[test]
fn a_full_tree_pushed_while_the_activation_handler_runs_reaches_the_bridge() {
    let dir = std::env::temp_dir().join(format!("newton-accesskit-race-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let socket = dir.join("bridge.sock");
    let _ = std::fs::remove_file(&socket);
    std::env::set_var("NEWTON_ATSPI_SOCKET", &socket);
    let full_trees = fake_bridge(UnixListener::bind(&socket).expect("bind the fake bridge"));

    let (asked, asked_rx) = mpsc::channel();
    let (resume_a, resume_a_rx) = mpsc::channel();
    let (resume_b, resume_b_rx) = mpsc::channel();
    let handler = |label, resume| PostsToUiThread {
        label,
        asked: asked.clone(),
        resume,
    };
    let mut a = Adapter::new(handler("A", resume_a_rx), NoActions, NoDeactivation);
    let mut b = Adapter::new(handler("B", resume_b_rx), NoActions, NoDeactivation);

    for _ in 0..2 {
        match asked_rx
            .recv_timeout(WAIT)
            .expect("the adapter asks for a full tree")
        {
            // The UI thread's full tree arrives while the handler is still running.
            "A" => {
                a.update_if_active(|| full_tree("A"));
                resume_a.send(()).expect("resume handler A");
            }
            // The handler returns `None` while the UI thread builds the full tree.
            _ => b.update_if_active(|| {
                resume_b.send(()).expect("resume handler B");
                std::thread::sleep(Duration::from_millis(300));
                full_tree("B")
            }),
        }
    }

    let mut seen = Vec::new();
    let deadline = Instant::now() + WAIT;
    while seen.len() < 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match full_trees.recv_timeout(left) {
            Ok(label) => seen.push(label),
            Err(_) => panic!("the bridge got full trees {seen:?}, not both A and B"),
        }
    }
    seen.sort();
    assert_eq!(seen, ["A", "B"]);
    assert!(a.is_active() && b.is_active(), "both windows are active");

    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}
