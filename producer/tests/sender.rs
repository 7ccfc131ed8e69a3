//! Sender against an in-process bridge over a socketpair: real bytes.

mod support;

use std::os::unix::net::UnixListener;

use accesskit::{Action, ActionRequest, NodeId, TreeId};
use newton_producer::{ConnectError, RecvError, SendError, Sender};
use newton_push_protocol::{BridgeMessage, Encoding, Geometry, SurfaceId};
use support::*;

fn connect_pair(encoding: Encoding) -> (Sender, TestBridge) {
    let (read, write, bridge) = socket_pair();
    let sender = Sender::from_stream(read, write, hello(encoding)).unwrap();
    (sender, bridge)
}

#[test]
fn full_flow_in_both_encodings() {
    for encoding in [Encoding::Json, Encoding::Postcard] {
        let (sender, bridge) = connect_pair(encoding);
        let surface = SurfaceId(1);
        sender.create_surface(surface, Some("Main")).unwrap();
        assert_eq!(
            sender.recv_timeout(PATIENCE).unwrap(),
            BridgeMessage::UpdatesWanted { surface }
        );
        assert!(sender.is_wanted(surface));
        sender.update(surface, full_tree("OK")).unwrap();
        let first = sender.commit(surface).unwrap();
        sender.update(surface, relabel("Yes")).unwrap();
        sender.update(surface, relabel("No")).unwrap();
        let second = sender.commit(surface).unwrap();
        sender.focus(Some(surface)).unwrap();
        sender
            .geometry(
                surface,
                Geometry {
                    x: 1,
                    y: 2,
                    width: 3,
                    height: 4,
                    scale: 1.0,
                },
            )
            .unwrap();
        let sync = sender.sync(PATIENCE).unwrap();
        assert!(first < second && second < sync, "serials increase");
        sender.destroy_surface(surface).unwrap();
        sender.goodbye().unwrap();
        let seen = bridge.join();
        assert_eq!(
            seen,
            vec![
                Seen::Hello(hello(encoding).app, encoding),
                Seen::Created(surface),
                Seen::Applied {
                    surface,
                    serial: first,
                    updates: vec![full_tree("OK")]
                },
                Seen::Applied {
                    surface,
                    serial: second,
                    updates: vec![relabel("Yes"), relabel("No")]
                },
                Seen::Focus(Some(surface)),
                Seen::Sync(sync),
                Seen::Destroyed(surface),
                Seen::Goodbye,
            ],
            "{encoding:?}"
        );
    }
}

#[test]
fn rejections_and_unknown_surfaces_come_back() {
    let (sender, _bridge) = connect_pair(Encoding::Postcard);
    let surface = SurfaceId(2);
    sender.create_surface(surface, None).unwrap();
    sender.update(surface, relabel("no tree yet")).unwrap();
    let bad = sender.commit(surface).unwrap();
    let ghost = sender.commit(SurfaceId(99)).unwrap();
    sender.sync(PATIENCE).unwrap();
    let mut rules = Vec::new();
    while let Some(message) = sender.try_recv().unwrap() {
        if let BridgeMessage::Rejected { serial, rule, .. } = message {
            rules.push((serial, rule));
        }
    }
    assert_eq!(
        rules,
        vec![
            (bad, "first-update-without-tree".to_owned()),
            (ghost, "unknown-surface".to_owned())
        ]
    );
}

#[test]
fn actions_and_unwanted_reach_the_producer() {
    let (sender, bridge) = connect_pair(Encoding::Json);
    let surface = SurfaceId(3);
    sender.create_surface(surface, None).unwrap();
    assert_eq!(
        sender.recv_timeout(PATIENCE).unwrap(),
        BridgeMessage::UpdatesWanted { surface }
    );
    let request = ActionRequest {
        action: Action::Click,
        target_tree: TreeId::ROOT,
        target_node: NodeId(1),
        data: None,
    };
    bridge.send(&BridgeMessage::Action {
        surface,
        request: request.clone(),
    });
    bridge.send(&BridgeMessage::UpdatesUnwanted { surface });
    assert_eq!(
        sender.recv_timeout(PATIENCE).unwrap(),
        BridgeMessage::Action { surface, request }
    );
    assert_eq!(
        sender.recv_timeout(PATIENCE).unwrap(),
        BridgeMessage::UpdatesUnwanted { surface }
    );
    assert!(!sender.is_wanted(surface));
    assert_eq!(sender.try_recv(), Ok(None));
}

#[test]
fn hang_up_is_reported_to_sync_and_recv() {
    let (sender, bridge) = connect_pair(Encoding::Json);
    bridge.hang_up();
    let error = sender.recv_timeout(PATIENCE).unwrap_err();
    assert!(matches!(error, RecvError::Closed { .. }), "{error}");
    match sender.sync(PATIENCE) {
        Err(SendError::Io { .. } | SendError::ClosedDuringSync { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn connects_through_a_unix_socket_path() {
    let dir = std::env::temp_dir().join(format!("newton-producer-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bridge.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let accepting = std::thread::spawn(move || TestBridge::serve(listener.accept().unwrap().0));
    let sender = Sender::connect(&path, hello(Encoding::Postcard)).unwrap();
    let bridge = accepting.join().unwrap();
    assert_eq!(
        sender.max_frame_bytes(),
        newton_push_protocol::DEFAULT_MAX_FRAME_BYTES
    );
    sender.goodbye().unwrap();
    assert_eq!(bridge.join().last(), Some(&Seen::Goodbye));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_bridge_tells_the_user_what_to_do() {
    let error = Sender::connect(
        "/nonexistent/newton-atspi/bridge.sock",
        hello(Encoding::Json),
    )
    .unwrap_err();
    assert!(matches!(error, ConnectError::NoBridge { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("start `newton-atspi-bridge serve`"),
        "{error}"
    );
}

#[test]
fn refused_hello_is_a_connect_error() {
    let (read, write, _bridge) = socket_pair();
    let mut bad = hello(Encoding::Json);
    bad.protocol = 2;
    let error = Sender::from_stream(read, write, bad).unwrap_err();
    let ConnectError::Refused { reason } = &error else {
        panic!("{error:?}")
    };
    assert!(reason.contains("version 2"), "{reason}");
}

#[test]
fn sync_keeps_other_messages_for_recv() {
    let (sender, bridge) = connect_pair(Encoding::Postcard);
    bridge.send(&BridgeMessage::UpdatesWanted {
        surface: SurfaceId(8),
    });
    sender.sync(PATIENCE).unwrap();
    assert_eq!(
        sender.try_recv(),
        Ok(Some(BridgeMessage::UpdatesWanted {
            surface: SurfaceId(8)
        }))
    );
}

#[test]
fn one_sender_serves_a_pushing_thread_and_an_action_thread() {
    let (sender, bridge) = connect_pair(Encoding::Postcard);
    let sender = std::sync::Arc::new(sender);
    let surface = SurfaceId(5);
    sender.create_surface(surface, None).unwrap();
    let actions = {
        let sender = sender.clone();
        std::thread::spawn(move || {
            let mut clicks = 0;
            while clicks < 3 {
                match sender.recv_timeout(PATIENCE) {
                    Ok(BridgeMessage::Action { .. }) => clicks += 1,
                    Ok(_) => {}
                    Err(error) => panic!("{error}"),
                }
            }
            clicks
        })
    };
    sender.update(surface, full_tree("0")).unwrap();
    sender.commit(surface).unwrap();
    let request = ActionRequest {
        action: Action::Click,
        target_tree: TreeId::ROOT,
        target_node: NodeId(1),
        data: None,
    };
    for label in ["1", "2", "3"] {
        bridge.send(&BridgeMessage::Action {
            surface,
            request: request.clone(),
        });
        sender.update(surface, relabel(label)).unwrap();
        sender.commit(surface).unwrap();
    }
    assert_eq!(actions.join().unwrap(), 3);
    sender.goodbye().unwrap();
    let applied = bridge
        .join()
        .iter()
        .filter(|seen| matches!(seen, Seen::Applied { .. }))
        .count();
    assert_eq!(applied, 4);
}
