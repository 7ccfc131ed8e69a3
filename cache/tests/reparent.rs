//! Moving a node out of a container that leaves the tree in the same update
//! (what egui does after a layout change) is accepted; moving it while the
//! old parent stays and still lists it is not.

use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_cache::{AppReplica, Limits, Rule, SurfaceId};

fn node(role: Role, children: &[u64]) -> Node {
    let mut node = Node::new(role);
    node.set_children(children.iter().copied().map(NodeId).collect::<Vec<_>>());
    node
}

fn update(nodes: Vec<(u64, Node)>, with_tree: bool) -> TreeUpdate {
    TreeUpdate {
        nodes: nodes.into_iter().map(|(id, n)| (NodeId(id), n)).collect(),
        tree: with_tree.then(|| TreeInfo::new(NodeId(1))),
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    }
}

fn replica_with_container() -> (AppReplica, SurfaceId) {
    let surface = SurfaceId(1);
    let mut app = AppReplica::new(Limits::default());
    app.create_surface(surface, None).expect("surface");
    // 1 → [2 (old container) → [4], 3 (new container)]
    let first = update(
        vec![
            (1, node(Role::Window, &[2, 3])),
            (2, node(Role::GenericContainer, &[4])),
            (3, node(Role::GenericContainer, &[])),
            (4, node(Role::Button, &[])),
        ],
        true,
    );
    app.commit(surface, vec![first], 0).expect("first tree");
    (app, surface)
}

#[test]
fn moving_out_of_a_removed_container_is_accepted() {
    let (mut app, surface) = replica_with_container();
    let moved = update(
        vec![
            (1, node(Role::Window, &[3])),
            (3, node(Role::GenericContainer, &[4])),
        ],
        false,
    );
    let changes = app.commit(surface, vec![moved], 0).expect("accepted");
    assert!(
        changes.removed.iter().any(|r| r.id == NodeId(2)),
        "the old container is removed"
    );
    assert!(
        !changes.removed.iter().any(|r| r.id == NodeId(4)),
        "the moved button stays"
    );
    let tree = app.surface(surface).and_then(|s| s.tree()).expect("tree");
    let button = tree
        .state()
        .node_by_tree_local_id(NodeId(4), TreeId::ROOT)
        .expect("button");
    assert_eq!(button.parent().map(|p| p.locate().0), Some(NodeId(3)));
    assert_eq!(app.node_count(), 3);
}

#[test]
fn moving_while_the_old_parent_stays_is_rejected() {
    let (mut app, surface) = replica_with_container();
    let moved = update(vec![(3, node(Role::GenericContainer, &[4]))], false);
    let error = app.commit(surface, vec![moved], 0).expect_err("rejected");
    assert_eq!(error.rule, Rule::ReparentWithoutRemoval);
    assert_eq!(error.node, Some(NodeId(4)));
}
