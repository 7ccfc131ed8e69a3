//! The per-parent count of non-structural children (text runs, hidden
//! nodes) follows every kind of commit, so AT-SPI child counts and indices
//! can be answered in O(1) for parents that have none.

use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_cache::{AppReplica, Limits, SurfaceId};

fn node(role: Role, children: &[u64], hidden: bool) -> Node {
    let mut node = Node::new(role);
    node.set_children(children.iter().copied().map(NodeId).collect::<Vec<_>>());
    if hidden {
        node.set_hidden();
    }
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

fn count(app: &AppReplica, surface: SurfaceId, parent: u64) -> usize {
    app.surface(surface)
        .expect("surface")
        .non_structural_children(NodeId(parent))
}

#[test]
fn counts_follow_created_updated_and_replaced_trees() {
    let surface = SurfaceId(1);
    let mut app = AppReplica::new(Limits::default());
    app.create_surface(surface, None).expect("surface");
    let first = update(
        vec![
            (1, node(Role::Window, &[2, 3], false)),
            (2, node(Role::Button, &[], false)),
            (3, node(Role::Button, &[], true)),
        ],
        true,
    );
    app.commit(surface, vec![first], 0).expect("first tree");
    assert_eq!(
        count(&app, surface, 1),
        1,
        "one hidden child in the first tree"
    );

    let unhide = update(vec![(3, node(Role::Button, &[], false))], false);
    app.commit(surface, vec![unhide], 0).expect("unhide");
    assert_eq!(count(&app, surface, 1), 0, "nothing hidden any more");

    let add_hidden = update(
        vec![
            (1, node(Role::Window, &[2, 3, 4], false)),
            (4, node(Role::Button, &[], true)),
        ],
        false,
    );
    app.commit(surface, vec![add_hidden], 0)
        .expect("add a hidden child");
    assert_eq!(count(&app, surface, 1), 1);

    let remove_it = update(vec![(1, node(Role::Window, &[2, 3], false))], false);
    app.commit(surface, vec![remove_it], 0).expect("remove it");
    assert_eq!(count(&app, surface, 1), 0);

    let replaced = TreeUpdate {
        nodes: vec![
            (NodeId(10), node(Role::Window, &[11, 12], false)),
            (NodeId(11), node(Role::Button, &[], true)),
            (NodeId(12), node(Role::Button, &[], true)),
        ],
        tree: Some(TreeInfo::new(NodeId(10))),
        tree_id: TreeId::ROOT,
        focus: NodeId(10),
    };
    app.commit(surface, vec![replaced], 0)
        .expect("replacement tree");
    assert_eq!(
        count(&app, surface, 10),
        2,
        "a replacement is counted in full"
    );
    assert_eq!(count(&app, surface, 1), 0, "the old tree's counts are gone");
}

#[test]
fn referrers_follow_relations_anywhere_in_the_tree() {
    let surface = SurfaceId(1);
    let mut app = AppReplica::new(Limits::default());
    app.create_surface(surface, None).expect("surface");
    // A label far from what it labels: 1 → [2 → [3 (label)], 4 → [5 → [6 (input)]]]
    let mut input = node(Role::TextInput, &[], false);
    input.set_labelled_by(vec![NodeId(3)]);
    let first = update(
        vec![
            (1, node(Role::Window, &[2, 4], false)),
            (2, node(Role::GenericContainer, &[3], false)),
            (3, node(Role::Label, &[], false)),
            (4, node(Role::GenericContainer, &[5], false)),
            (5, node(Role::GenericContainer, &[6], false)),
            (6, input),
        ],
        true,
    );
    app.commit(surface, vec![first], 0).expect("first tree");
    let replica = app.surface(surface).expect("surface");
    assert_eq!(replica.referrers(NodeId(3)), &[NodeId(6)]);
    assert!(replica.referrers(NodeId(6)).is_empty());

    let unlabelled = update(vec![(6, node(Role::TextInput, &[], false))], false);
    app.commit(surface, vec![unlabelled], 0)
        .expect("drop the relation");
    assert!(app
        .surface(surface)
        .expect("surface")
        .referrers(NodeId(3))
        .is_empty());
}

#[test]
fn every_applied_commit_gives_the_surface_a_new_generation() {
    let surface = SurfaceId(1);
    let mut app = AppReplica::new(Limits::default());
    app.create_surface(surface, None).expect("surface");
    let mut other = AppReplica::new(Limits::default());
    other
        .create_surface(surface, None)
        .expect("same id, other application");
    let generation = |app: &AppReplica| app.surface(surface).expect("surface").generation();
    assert_ne!(
        generation(&app),
        generation(&other),
        "generations are unique across applications"
    );

    let first = update(
        vec![
            (1, node(Role::Window, &[2], false)),
            (2, node(Role::Button, &[], false)),
        ],
        true,
    );
    let before = generation(&app);
    app.commit(surface, vec![first], 0).expect("first tree");
    let after_first = generation(&app);
    assert_ne!(before, after_first);

    let relabel = update(vec![(2, node(Role::CheckBox, &[], false))], false);
    app.commit(surface, vec![relabel], 0).expect("update");
    assert_ne!(after_first, generation(&app));

    let rejected = update(vec![(2, node(Role::Button, &[99], false))], false);
    let unchanged = generation(&app);
    app.commit(surface, vec![rejected], 0)
        .expect_err("dangling child");
    assert_eq!(
        unchanged,
        generation(&app),
        "a rejected commit changes nothing"
    );
}
