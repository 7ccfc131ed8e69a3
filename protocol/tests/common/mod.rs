//! Builders shared by the protocol's integration tests.
#![allow(dead_code)]

use accesskit::{Action, Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_push_protocol::{
    encode_frame, encode_hello, encode_sender_message, AppInfo, Encoding, Hello, SenderMessage,
    SurfaceId, PROTOCOL_VERSION,
};

pub fn hello(encoding: Encoding) -> Hello {
    Hello {
        protocol: PROTOCOL_VERSION,
        encoding,
        app: AppInfo {
            app_id: "org.example.Test".into(),
            name: "Test".into(),
            pid: Some(42),
            toolkit_name: Some("test-kit".into()),
            toolkit_version: Some("1.0".into()),
        },
        accesskit_version: None,
    }
}

/// A full tree: a window holding one button labelled `label`.
pub fn full_tree(label: &str) -> TreeUpdate {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(1)]);
    let mut button = Node::new(Role::Button);
    button.set_label(label);
    button.add_action(Action::Click);
    TreeUpdate {
        nodes: vec![(NodeId(0), window), (NodeId(1), button)],
        tree: Some(TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    }
}

/// An incremental update relabelling the button.
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

pub fn hello_frame(encoding: Encoding) -> Vec<u8> {
    encode_frame(&encode_hello(&hello(encoding)).unwrap()).unwrap()
}

pub fn message_frame(message: &SenderMessage, encoding: Encoding) -> Vec<u8> {
    encode_frame(&encode_sender_message(message, encoding).unwrap()).unwrap()
}

/// A realistic stream: hello, surface 1 with a full tree, two committed
/// frames, focus, geometry, sync, destroy, goodbye.
pub fn sample_stream(encoding: Encoding) -> Vec<u8> {
    let surface = SurfaceId(1);
    let messages = [
        SenderMessage::CreateSurface {
            surface,
            title: Some("Main".into()),
        },
        SenderMessage::Update {
            surface,
            update: full_tree("OK"),
        },
        SenderMessage::Commit { surface, serial: 1 },
        SenderMessage::Update {
            surface,
            update: relabel("Yes"),
        },
        SenderMessage::Update {
            surface,
            update: relabel("No"),
        },
        SenderMessage::Commit { surface, serial: 2 },
        SenderMessage::Focus {
            surface: Some(surface),
        },
        SenderMessage::Geometry {
            surface,
            geometry: newton_push_protocol::Geometry {
                x: 10,
                y: 20,
                width: 300,
                height: 200,
                scale: 1.5,
            },
        },
        SenderMessage::Sync { serial: 3 },
        SenderMessage::DestroySurface { surface },
        SenderMessage::Goodbye,
    ];
    let mut stream = hello_frame(encoding);
    for message in &messages {
        stream.extend(message_frame(message, encoding));
    }
    stream
}
