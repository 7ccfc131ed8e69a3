//! Shared builders for the cache tests.
#![allow(dead_code)]

use newton_cache::accesskit::{
    Action, Node, NodeId, Role, TextPosition, TextSelection, TreeId, TreeInfo, TreeUpdate,
};
use newton_cache::{AppReplica, Limits, SurfaceId};

pub const S: SurfaceId = SurfaceId(1);

pub fn n(role: Role) -> Node {
    Node::new(role)
}

pub fn kids(role: Role, children: &[u64]) -> Node {
    let mut node = Node::new(role);
    node.set_children(children.iter().map(|c| NodeId(*c)).collect::<Vec<_>>());
    node
}

pub fn labelled(role: Role, label: &str) -> Node {
    let mut node = Node::new(role);
    node.set_label(label);
    node
}

pub fn run(text: &str) -> Node {
    let mut node = Node::new(Role::TextRun);
    node.set_value(text);
    let lengths: Vec<u8> = text.chars().map(|c| c.len_utf8() as u8).collect();
    node.set_character_lengths(lengths);
    node
}

pub fn selection(anchor: (u64, usize), focus: (u64, usize)) -> TextSelection {
    TextSelection {
        anchor: TextPosition {
            node: NodeId(anchor.0),
            character_index: anchor.1,
        },
        focus: TextPosition {
            node: NodeId(focus.0),
            character_index: focus.1,
        },
    }
}

pub fn full(root: u64, nodes: Vec<(u64, Node)>, focus: u64) -> TreeUpdate {
    TreeUpdate {
        nodes: nodes
            .into_iter()
            .map(|(id, node)| (NodeId(id), node))
            .collect(),
        tree: Some(TreeInfo::new(NodeId(root))),
        tree_id: TreeId::ROOT,
        focus: NodeId(focus),
    }
}

pub fn inc(nodes: Vec<(u64, Node)>, focus: u64) -> TreeUpdate {
    TreeUpdate {
        nodes: nodes
            .into_iter()
            .map(|(id, node)| (NodeId(id), node))
            .collect(),
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(focus),
    }
}

/// The base tree's nodes, for tests that re-send them.
pub fn base_node(id: u64) -> Node {
    match id {
        0 => {
            let mut node = kids(Role::Window, &[1, 2, 3]);
            node.set_label("Win");
            node
        }
        1 => {
            let mut node = labelled(Role::Button, "OK");
            node.add_action(Action::Click);
            node.add_action(Action::Focus);
            node
        }
        2 => {
            let mut node = kids(Role::TextInput, &[10, 11]);
            node.set_text_selection(selection((10, 1), (10, 1)));
            node
        }
        10 => {
            let mut node = run("hé");
            node.set_next_on_line(NodeId(11));
            node
        }
        11 => {
            let mut node = run("!");
            node.set_previous_on_line(NodeId(10));
            node
        }
        3 => kids(Role::Group, &[4, 5]),
        4 => labelled(Role::Label, "Name"),
        5 => {
            let mut node = n(Role::CheckBox);
            node.set_labelled_by(vec![NodeId(4)]);
            node.set_controls(vec![NodeId(1)]);
            node
        }
        _ => n(Role::Unknown),
    }
}

/// Window 0 → [button 1, text input 2 → [runs 10, 11], group 3 → [label 4, checkbox 5]].
pub fn base_tree() -> TreeUpdate {
    let ids = [0, 1, 2, 10, 11, 3, 4, 5];
    full(0, ids.iter().map(|id| (*id, base_node(*id))).collect(), 1)
}

pub fn small_limits() -> Limits {
    Limits {
        max_nodes: 100,
        max_depth: 8,
        max_children: 10,
        max_frame_bytes: 10_000,
        max_surfaces: 4,
        max_app_bytes: newton_cache::limits::DEFAULT_MAX_APP_BYTES,
    }
}

/// An app with surface 1 holding the base tree.
pub fn base_app() -> AppReplica {
    let mut app = AppReplica::new(small_limits());
    app.create_surface(S, Some("Main".into())).expect("create");
    app.commit(S, vec![base_tree()], 100)
        .expect("base tree applies");
    app
}
