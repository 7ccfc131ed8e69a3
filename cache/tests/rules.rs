//! One test per validation rule: the bad commit is rejected with exactly
//! that rule, the replica is unchanged, and a good commit still applies.
//! The hazard ids in comments (S4, C1, R9, …) are defined in docs/hazards.md.

mod common;

use common::*;
use newton_cache::accesskit::{Node, NodeId, Role, TreeId, TreeUpdate, Uuid};
use newton_cache::{AppReplica, Rule, SurfaceId};

/// Commits `updates` on the base app and asserts the rejection.
fn rejects(updates: Vec<TreeUpdate>, rule: Rule) {
    let mut app = base_app();
    rejects_on(&mut app, S, updates, rule);
}

fn rejects_on(app: &mut AppReplica, surface: SurfaceId, updates: Vec<TreeUpdate>, rule: Rule) {
    let before = app.dump();
    let error = app
        .commit(surface, updates, 100)
        .expect_err("must be rejected");
    assert_eq!(error.rule, rule, "wrong rule: {error}");
    assert_eq!(app.dump(), before, "a rejected commit changed the replica");
    // A good commit still applies afterwards (a rename of the button).
    if app.surface(surface).and_then(|s| s.tree()).is_some() {
        let good = app.commit(
            surface,
            vec![inc(vec![(1, labelled(Role::Button, "Fine"))], 1)],
            10,
        );
        assert!(good.is_ok(), "good commit after rejection failed: {good:?}");
    }
}

fn with<F: FnOnce(&mut Node)>(id: u64, f: F) -> (u64, Node) {
    let mut node = base_node(id);
    f(&mut node);
    (id, node)
}

#[test]
fn missing_tree_info() {
    let mut app = base_app();
    app.create_surface(SurfaceId(2), None).unwrap();
    rejects_on(
        &mut app,
        SurfaceId(2),
        vec![inc(vec![(0, n(Role::Window))], 0)],
        Rule::MissingTreeInfo,
    );
}

#[test]
fn subtree_tree_id_and_graft_nodes() {
    let mut update = inc(vec![(1, labelled(Role::Button, "x"))], 1);
    update.tree_id = TreeId(Uuid::from_u128(7));
    rejects(vec![update], Rule::SubtreeUnsupported);
    rejects(
        vec![inc(
            vec![with(1, |n| n.set_tree_id(TreeId(Uuid::from_u128(7))))],
            1,
        )],
        Rule::SubtreeUnsupported,
    );
    rejects(
        vec![inc(vec![with(1, |n| n.set_tree_id(TreeId::ROOT))], 1)],
        Rule::SubtreeUnsupported,
    );
}

#[test]
fn missing_root() {
    let mut app = base_app();
    app.create_surface(SurfaceId(2), None).unwrap();
    rejects_on(
        &mut app,
        SurfaceId(2),
        vec![full(7, vec![(0, n(Role::Window))], 0)],
        Rule::MissingRoot,
    );
}

#[test]
fn focus_unknown_or_removed() {
    rejects(
        vec![inc(vec![(1, labelled(Role::Button, "x"))], 99)],
        Rule::FocusNotInTree,
    );
    // S4: the focus names a node this very update removes.
    rejects(
        vec![inc(vec![with(3, |n| n.set_children(vec![NodeId(5)]))], 4)],
        Rule::FocusNotInTree,
    );
}

#[test]
fn dangling_child() {
    rejects(
        vec![inc(vec![with(0, |n| n.push_child(NodeId(99)))], 1)],
        Rule::DanglingChild,
    );
}

#[test]
fn duplicate_child_and_node() {
    rejects(
        vec![inc(vec![with(0, |n| n.push_child(NodeId(1)))], 1)],
        Rule::DuplicateChild,
    );
    rejects(
        vec![inc(
            vec![base_node_pair(0), with(3, |n| n.push_child(NodeId(1)))],
            1,
        )],
        Rule::DuplicateChild,
    );
    rejects(
        vec![inc(vec![base_node_pair(1), base_node_pair(1)], 1)],
        Rule::DuplicateNode,
    );
}

fn base_node_pair(id: u64) -> (u64, Node) {
    (id, base_node(id))
}

#[test]
fn orphans_new_and_resent() {
    // S6: a new node nobody lists.
    rejects(vec![inc(vec![(50, n(Role::Button))], 1)], Rule::OrphanNode);
    // S15: node 4 re-sent after its parent dropped it.
    rejects(
        vec![inc(
            vec![
                with(3, |n| n.set_children(vec![NodeId(5)])),
                base_node_pair(4),
                with(5, |n| n.clear_labelled_by()),
            ],
            1,
        )],
        Rule::OrphanNode,
    );
    // Re-sent below a dropped node.
    rejects(
        vec![inc(
            vec![
                with(0, |n| n.set_children(vec![NodeId(1), NodeId(2)])),
                base_node_pair(4),
            ],
            1,
        )],
        Rule::OrphanNode,
    );
}

#[test]
fn reparent_without_removal() {
    // S14: node 1 newly listed by 3 while 0 (not in the update) still lists it.
    rejects(
        vec![inc(vec![with(3, |n| n.push_child(NodeId(1)))], 1)],
        Rule::ReparentWithoutRemoval,
    );
}

#[test]
fn cycles() {
    // C1: root lists itself.
    rejects(
        vec![inc(vec![with(0, |n| n.push_child(NodeId(0)))], 1)],
        Rule::Cycle,
    );
    // C2: a child lists the root.
    rejects(
        vec![inc(vec![with(1, |n| n.push_child(NodeId(0)))], 1)],
        Rule::Cycle,
    );
    // A loop detached from the root: 0 drops 3, 3 → [4, 5, 6], 6 → [3].
    rejects(
        vec![inc(
            vec![
                with(0, |n| n.set_children(vec![NodeId(1), NodeId(2)])),
                with(3, |n| n.push_child(NodeId(6))),
                (6, kids(Role::Group, &[3])),
            ],
            1,
        )],
        Rule::Cycle,
    );
}

#[test]
fn too_deep() {
    // Limit 8: a chain hung under the root reaching depth 9.
    let mut nodes = vec![with(0, |n| n.push_child(NodeId(100)))];
    for i in 100..108u64 {
        nodes.push((i, kids(Role::Group, &[i + 1])));
    }
    nodes.push((108, n(Role::Group)));
    rejects(vec![inc(nodes, 1)], Rule::TooDeep);
}

#[test]
fn too_deep_by_moving_a_subtree() {
    let mut app = base_app();
    // Chain of depth 7 under 3 (depth 2): 3 → 100 → … → 104 (depth 7).
    let mut nodes = vec![with(3, |n| n.push_child(NodeId(100)))];
    for i in 100..104u64 {
        nodes.push((i, kids(Role::Group, &[i + 1])));
    }
    nodes.push((104, kids(Role::Group, &[])));
    app.commit(S, vec![inc(nodes, 1)], 10)
        .expect("depth 7 is fine");
    // Moving group 3 (with its chain) under 104 would need depth 7 + 6.
    let update = inc(
        vec![
            with(0, |n| {
                n.set_children(vec![NodeId(1), NodeId(2), NodeId(200)])
            }),
            (200, kids(Role::Group, &[3])),
        ],
        1,
    );
    let moved_ok = app.commit(S, vec![update], 10);
    assert!(moved_ok.is_ok(), "depth 8 is allowed: {moved_ok:?}");
    let update = inc(
        vec![
            (200, kids(Role::Group, &[201])),
            (201, kids(Role::Group, &[3])),
        ],
        1,
    );
    rejects_on(&mut app, S, vec![update], Rule::TooDeep);
}

#[test]
fn dangling_relations() {
    rejects(
        vec![inc(
            vec![with(5, |n| n.set_labelled_by(vec![NodeId(99)]))],
            1,
        )],
        Rule::DanglingRelation,
    );
    rejects(
        vec![inc(vec![with(5, |n| n.set_controls(vec![NodeId(99)]))], 1)],
        Rule::DanglingRelation,
    );
    rejects(
        vec![inc(
            vec![with(5, |n| n.set_described_by(vec![NodeId(99)]))],
            1,
        )],
        Rule::DanglingRelation,
    );
    // Removing label 4 while untouched checkbox 5 is labelled by it.
    rejects(
        vec![inc(vec![with(3, |n| n.set_children(vec![NodeId(5)]))], 1)],
        Rule::DanglingRelation,
    );
}

#[test]
fn bad_text_runs() {
    let no_value = {
        let mut node = n(Role::TextRun);
        node.set_character_lengths(vec![1]);
        node
    };
    rejects(vec![inc(vec![(11, no_value)], 1)], Rule::BadTextRun);
    rejects(
        vec![inc(
            vec![with(11, |n| n.set_character_lengths(vec![1, 1]))],
            1,
        )],
        Rule::BadTextRun,
    );
    rejects(
        vec![inc(
            vec![with(10, |n| n.set_character_lengths(vec![1, 1, 1]))],
            1,
        )],
        Rule::BadTextRun,
    );
    rejects(
        vec![inc(
            vec![with(10, |n| n.set_character_lengths(Vec::<u8>::new()))],
            1,
        )],
        Rule::BadTextRun,
    );
    rejects(
        vec![inc(vec![with(10, |n| n.set_word_starts(vec![1, 0]))], 1)],
        Rule::BadTextRun,
    );
    rejects(
        vec![inc(vec![with(10, |n| n.set_word_starts(vec![2]))], 1)],
        Rule::BadTextRun,
    );
    rejects(
        vec![inc(
            vec![with(11, |n| n.set_character_widths(vec![1.0, 2.0]))],
            1,
        )],
        Rule::BadTextRun,
    );
}

#[test]
fn bad_line_links() {
    rejects(
        vec![inc(vec![with(10, |n| n.set_next_on_line(NodeId(99)))], 1)],
        Rule::BadLineLink,
    );
    rejects(
        vec![inc(vec![with(10, |n| n.set_next_on_line(NodeId(10)))], 1)],
        Rule::BadLineLink,
    );
    rejects(
        vec![inc(vec![with(10, |n| n.set_next_on_line(NodeId(1)))], 1)],
        Rule::BadLineLink,
    );
    // C3 across the update and the tree: 11 → next 10, and 10 → next 11 already.
    rejects(
        vec![inc(vec![with(11, |n| n.set_next_on_line(NodeId(10)))], 1)],
        Rule::BadLineLink,
    );
    // Removing run 11 while untouched run 10 still links to it (and the
    // text input's selection does not name it).
    rejects(
        vec![inc(vec![with(2, |n| n.set_children(vec![NodeId(10)]))], 1)],
        Rule::BadLineLink,
    );
    // Turning run 11 into a group while 10 links to it.
    rejects(vec![inc(vec![(11, n(Role::Group))], 1)], Rule::BadLineLink);
}

#[test]
fn bad_text_selections() {
    rejects(
        vec![inc(
            vec![with(2, |n| n.set_text_selection(selection((1, 0), (1, 0))))],
            1,
        )],
        Rule::BadTextSelection,
    );
    rejects(
        vec![inc(
            vec![with(2, |n| {
                n.set_text_selection(selection((10, 0), (99, 0)))
            })],
            1,
        )],
        Rule::BadTextSelection,
    );
    // R9: the checkbox selecting a run of the text input.
    rejects(
        vec![inc(
            vec![with(5, |n| {
                n.set_text_selection(selection((10, 0), (10, 1)))
            })],
            1,
        )],
        Rule::BadTextSelection,
    );
    // Moving run 10 out of the selecting text input 2 (into group 3).
    rejects(
        vec![inc(
            vec![
                with(2, |n| n.set_children(vec![NodeId(11)])),
                with(3, |n| n.push_child(NodeId(10))),
                with(11, |n| n.clear_previous_on_line()),
            ],
            1,
        )],
        Rule::BadTextSelection,
    );
}

#[test]
fn run_selected_from_above_cannot_be_nested_in_a_new_run() {
    // Group 3 becomes a text run holding a run; give the text input a
    // selection first so that the nesting matters: wrap run 10 in group 12.
    let mut app = base_app();
    let update = inc(
        vec![
            with(2, |n| n.set_children(vec![NodeId(12), NodeId(11)])),
            (12, kids(Role::Group, &[10])),
        ],
        1,
    );
    app.commit(S, vec![update], 0)
        .expect("a group between input and run is fine");
    // Turning group 12 into a text run hides run 10 from the input's runs.
    let mut as_run = run("x");
    as_run.set_children(vec![NodeId(10)]);
    rejects_on(
        &mut app,
        S,
        vec![inc(vec![(12, as_run)], 1)],
        Rule::BadTextSelection,
    );
}

#[test]
fn size_limits() {
    // 11 children > 10.
    let many: Vec<u64> = (100..111).collect();
    let mut nodes = vec![with(3, |n| {
        n.set_children(
            many.iter()
                .map(|i| NodeId(*i))
                .chain([NodeId(4), NodeId(5)])
                .collect::<Vec<_>>(),
        )
    })];
    nodes.extend(many.iter().map(|i| (*i, n(Role::Button))));
    rejects(vec![inc(nodes, 1)], Rule::TooManyChildren);
    // 100 nodes max: add 93 under a chain of groups of 9.
    let mut nodes = vec![with(0, |n| n.push_child(NodeId(1000)))];
    let groups: Vec<u64> = (1000..1010).collect();
    nodes.push((1000, kids(Role::Group, &groups[1..])));
    for g in &groups[1..] {
        let leaves: Vec<u64> = (0..10).map(|i| g * 100 + i).collect();
        nodes.push((*g, kids(Role::Group, &leaves)));
        nodes.extend(leaves.iter().map(|l| (*l, n(Role::Button))));
    }
    rejects(vec![inc(nodes, 1)], Rule::TooManyNodes);
    let mut app = base_app();
    let before = app.dump();
    let error = app
        .commit(S, vec![inc(vec![base_node_pair(1)], 1)], 10_001)
        .unwrap_err();
    assert_eq!(error.rule, Rule::FrameTooLarge);
    assert_eq!(app.dump(), before);
}

#[test]
fn surfaces() {
    let mut app = base_app();
    assert_eq!(
        app.create_surface(S, None).unwrap_err().rule,
        Rule::DuplicateSurface
    );
    assert_eq!(
        app.commit(SurfaceId(9), vec![base_tree()], 10)
            .unwrap_err()
            .rule,
        Rule::UnknownSurface
    );
    assert_eq!(
        app.destroy_surface(SurfaceId(9)).unwrap_err().rule,
        Rule::UnknownSurface
    );
    for i in 2..=4 {
        app.create_surface(SurfaceId(i), None).unwrap();
    }
    assert_eq!(
        app.create_surface(SurfaceId(5), None).unwrap_err().rule,
        Rule::TooManySurfaces
    );
}

#[test]
fn multi_update_commit_is_all_or_nothing() {
    let mut app = base_app();
    let before = app.dump();
    let good = inc(vec![(1, labelled(Role::Button, "Renamed"))], 1);
    let bad = inc(vec![with(0, |n| n.push_child(NodeId(99)))], 1);
    let error = app.commit(S, vec![good, bad], 10).unwrap_err();
    assert_eq!(error.rule, Rule::DanglingChild);
    assert_eq!(app.dump(), before);
    // The second update sees the first one's node: add 60 then label it.
    let first = inc(
        vec![with(0, |n| n.push_child(NodeId(60))), (60, n(Role::Button))],
        1,
    );
    let second = inc(vec![(60, labelled(Role::Button, "New"))], 60);
    let changes = app.commit(S, vec![first, second], 10).expect("valid pair");
    assert_eq!(changes.added, vec![NodeId(60)]);
    // Remove in one update, reference the removed node in the next: rejected.
    let drop4 = inc(
        vec![
            with(3, |n| n.set_children(vec![NodeId(5)])),
            with(5, |n| n.clear_labelled_by()),
        ],
        1,
    );
    let use4 = inc(vec![with(1, |n| n.set_described_by(vec![NodeId(4)]))], 1);
    assert_eq!(
        app.commit(S, vec![drop4, use4], 10).unwrap_err().rule,
        Rule::DanglingRelation
    );
}

/// Found by the `atspi_calls` fuzz target (input
/// `fuzz/regressions/atspi_calls/nul-in-string`): D-Bus strings cannot hold
/// NUL, and a producer string with one made the shim build invalid
/// messages (which cost the bridge its bus connection). Strings are
/// accepted with every NUL turned into a space, keeping byte lengths, so
/// text runs stay consistent.
#[test]
fn nul_in_strings_becomes_a_space() {
    let mut app = base_app();
    let mut button = labelled(Role::Button, "O\0K");
    button.set_description("\0");
    button.set_custom_actions(vec![newton_cache::accesskit::CustomAction {
        id: 1,
        description: "go\0".into(),
    }]);
    app.commit(S, vec![inc(vec![(1, button)], 1)], 10)
        .expect("accepted");
    let state = app.surface(S).and_then(|s| s.tree()).expect("tree").state();
    let node = state.node_by_id(state.root_id()).expect("root");
    let button = node.children().next().expect("the button");
    assert_eq!(button.label().as_deref(), Some("O K"));
    assert_eq!(button.description().as_deref(), Some(" "));
    assert_eq!(button.data().custom_actions()[0].description, "go ");
    app.create_surface(SurfaceId(9), Some("T\0".into()))
        .expect("surface");
    assert_eq!(
        app.surface(SurfaceId(9)).and_then(|s| s.title()),
        Some("T ")
    );
}
