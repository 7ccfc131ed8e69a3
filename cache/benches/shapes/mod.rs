#![allow(dead_code)]
//! Tree shapes shared by the benches: a document of sections of list items,
//! each item with a label, bounds and two actions (the shape of the size
//! table in the protocol notes).

use newton_cache::accesskit::{Action, Node, NodeId, Rect, Role, TreeId, TreeInfo, TreeUpdate};

/// Items per section.
pub const SECTION: u64 = 100;

fn item(i: u64) -> Node {
    let mut node = Node::new(Role::ListItem);
    node.set_label(format!("Item {i}"));
    let y = (i % 1000) as f64 * 20.0;
    node.set_bounds(Rect {
        x0: 0.0,
        y0: y,
        x1: 300.0,
        y1: y + 20.0,
    });
    node.add_action(Action::Click);
    node.add_action(Action::Focus);
    node
}

/// Id of item `i` (items are numbered from 0).
pub fn item_id(i: u64) -> NodeId {
    NodeId(1_000_000 + i)
}

/// A full tree with `items` list items (plus one list per `SECTION` items
/// and the root window).
pub fn document(items: u64) -> TreeUpdate {
    let sections = items.div_ceil(SECTION);
    let mut nodes = Vec::with_capacity((items + sections + 1) as usize);
    let mut root = Node::new(Role::Window);
    root.set_children((0..sections).map(|s| NodeId(1 + s)).collect::<Vec<_>>());
    root.set_label("Bench");
    nodes.push((NodeId(0), root));
    for s in 0..sections {
        let mut list = Node::new(Role::List);
        let first = s * SECTION;
        let last = (first + SECTION).min(items);
        list.set_children((first..last).map(item_id).collect::<Vec<_>>());
        nodes.push((NodeId(1 + s), list));
        for i in first..last {
            nodes.push((item_id(i), item(i)));
        }
    }
    TreeUpdate {
        nodes,
        tree: Some(TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(0),
    }
}

/// An incremental update relabelling item `i` (`round` varies the label).
pub fn relabel(i: u64, round: u64) -> TreeUpdate {
    let mut node = item(i);
    node.set_label(format!("Item {i} v{round}"));
    TreeUpdate {
        nodes: vec![(item_id(i), node)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(0),
    }
}
