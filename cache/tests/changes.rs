//! Change-set semantics the AT-SPI layer relies on.

mod common;

use common::*;
use newton_cache::accesskit::{Live, NodeId, Role};
use newton_cache::{
    Change, FlagName, FocusChange, FrameKind, RemovedNode, SurfaceId, TextSelectionOffsets,
};

fn changes_of(set: &newton_cache::ChangeSet, id: u64) -> Vec<Change> {
    set.updated
        .iter()
        .filter(|u| u.id == NodeId(id))
        .flat_map(|u| u.changes.clone())
        .collect()
}

#[test]
fn first_tree_is_created_parents_first() {
    let mut app = newton_cache::AppReplica::new(small_limits());
    app.create_surface(S, None).unwrap();
    let set = app.commit(S, vec![base_tree()], 0).unwrap();
    assert_eq!(set.kind, FrameKind::Created);
    let ids: Vec<u64> = set.added.iter().map(|n| n.0).collect();
    assert_eq!(ids, vec![0, 1, 2, 10, 11, 3, 4, 5]);
    assert_eq!(app.node_count(), 8);
}

#[test]
fn rename_reports_name_and_live_region() {
    let mut app = base_app();
    let set = app
        .commit(
            S,
            vec![inc(vec![(1, labelled(Role::Button, "Cancel"))], 1)],
            0,
        )
        .unwrap();
    let changes = changes_of(&set, 1);
    assert!(
        changes.contains(&Change::Name {
            old: Some("OK".into()),
            new: Some("Cancel".into())
        }),
        "{changes:?}"
    );
    assert!(
        changes.contains(&Change::Actions { old: 0b11, new: 0 }),
        "{changes:?}"
    );
    let mut live = labelled(Role::Label, "Saved");
    live.set_live(Live::Polite);
    let set = app.commit(S, vec![inc(vec![(4, live)], 1)], 0).unwrap();
    assert!(changes_of(&set, 4).contains(&Change::LiveRegion {
        politeness: Live::Polite,
        text: "Saved".into()
    }));
}

#[test]
fn add_and_remove_subtrees() {
    let mut app = base_app();
    let mut group = kids(Role::Group, &[21]);
    group.set_label("g");
    let set = app
        .commit(
            S,
            vec![inc(
                vec![
                    (0, kids(Role::Window, &[1, 2, 3, 20])),
                    (21, n(Role::Button)),
                    (20, group),
                ],
                1,
            )],
            0,
        )
        .unwrap();
    assert_eq!(set.added, vec![NodeId(20), NodeId(21)]);
    // Remove group 3 (with 4 and 5): parents first, old positions.
    let set = app
        .commit(
            S,
            vec![inc(vec![(0, kids(Role::Window, &[1, 2, 20]))], 1)],
            0,
        )
        .unwrap();
    assert_eq!(
        set.removed,
        vec![
            RemovedNode {
                id: NodeId(3),
                role: Role::Group,
                parent: Some((NodeId(0), 2))
            },
            RemovedNode {
                id: NodeId(4),
                role: Role::Label,
                parent: Some((NodeId(3), 0))
            },
            RemovedNode {
                id: NodeId(5),
                role: Role::CheckBox,
                parent: Some((NodeId(3), 1))
            },
        ]
    );
    assert!(changes_of(&set, 0)
        .iter()
        .any(|c| matches!(c, Change::Children { .. })));
    assert_eq!(app.node_count(), 7);
}

#[test]
fn text_edit_reports_text_and_selection_on_the_text_input() {
    let mut app = base_app();
    let mut edited = run("héllo");
    edited.set_next_on_line(NodeId(11));
    let mut input = base_node(2);
    input.set_text_selection(selection((10, 5), (10, 5)));
    let set = app
        .commit(S, vec![inc(vec![(10, edited), (2, input)], 1)], 0)
        .unwrap();
    let changes = changes_of(&set, 2);
    assert!(
        changes.contains(&Change::Text {
            old: "hé!".into(),
            new: "héllo!".into()
        }),
        "{changes:?}"
    );
    assert!(changes.contains(&Change::TextSelection {
        old: Some(TextSelectionOffsets {
            anchor: 1,
            focus: 1
        }),
        new: Some(TextSelectionOffsets {
            anchor: 5,
            focus: 5
        }),
    }));
    // Only the run changed: the text is still reported on the input.
    let mut edited = run("hi");
    edited.set_next_on_line(NodeId(11));
    let set = app.commit(S, vec![inc(vec![(10, edited)], 1)], 0).unwrap();
    assert!(changes_of(&set, 2).contains(&Change::Text {
        old: "héllo!".into(),
        new: "hi!".into()
    }));
}

#[test]
fn focus_follows_the_focused_surface() {
    let mut app = base_app();
    let sets = app.set_focused_surface(Some(S)).unwrap();
    assert_eq!(sets.len(), 1);
    assert_eq!(
        sets[0].focus,
        Some(FocusChange {
            old: None,
            new: Some(NodeId(1))
        })
    );
    assert!(changes_of(&sets[0], 1).contains(&Change::Flag {
        flag: FlagName::Focused,
        old: false,
        new: true
    }));
    let set = app
        .commit(S, vec![inc(vec![(5, base_node(5))], 5)], 0)
        .unwrap();
    assert_eq!(
        set.focus,
        Some(FocusChange {
            old: Some(NodeId(1)),
            new: Some(NodeId(5))
        })
    );
    let sets = app.set_focused_surface(None).unwrap();
    assert_eq!(
        sets[0].focus,
        Some(FocusChange {
            old: Some(NodeId(5)),
            new: None
        })
    );
    assert_eq!(
        app.set_focused_surface(Some(SurfaceId(7)))
            .unwrap_err()
            .rule,
        newton_cache::Rule::UnknownSurface
    );
}

#[test]
fn replacement_destroy_and_clear() {
    let mut app = base_app();
    // A different root makes a full replacement.
    let set = app
        .commit(
            S,
            vec![full(
                100,
                vec![(100, kids(Role::Window, &[101])), (101, n(Role::Button))],
                101,
            )],
            0,
        )
        .unwrap();
    assert_eq!(set.kind, FrameKind::Replaced);
    assert_eq!(set.removed.len(), 8);
    assert_eq!(set.added, vec![NodeId(100), NodeId(101)]);
    assert_eq!(app.node_count(), 2);
    assert!(!app.is_full_replacement(S, &[inc(vec![], 101)]));
    assert!(app.is_full_replacement(S, &[full(7, vec![(7, n(Role::Window))], 7)]));
    // After a rejection the next `tree: Some` is a replacement even with the same root.
    assert!(app
        .commit(S, vec![inc(vec![(101, kids(Role::Button, &[5]))], 101)], 0)
        .is_err());
    assert!(app.surface(S).unwrap().awaiting_resync());
    assert!(app.is_full_replacement(S, &[full(100, vec![(100, kids(Role::Window, &[]))], 100)]));
    let set = app
        .commit(
            S,
            vec![full(100, vec![(100, kids(Role::Window, &[]))], 100)],
            0,
        )
        .unwrap();
    assert_eq!(set.kind, FrameKind::Replaced);
    assert!(!app.surface(S).unwrap().awaiting_resync());
    let set = app.destroy_surface(S).unwrap();
    assert_eq!(set.kind, FrameKind::Destroyed);
    assert_eq!(set.removed.len(), 1);
    assert_eq!(app.node_count(), 0);
    let mut app = base_app();
    app.create_surface(SurfaceId(2), None).unwrap();
    assert_eq!(app.clear().len(), 2);
    assert_eq!(app.node_count(), 0);
}

#[test]
fn prepare_off_the_replica_then_install() {
    let mut app = base_app();
    let prepared = std::thread::spawn(|| {
        newton_cache::prepare_full_tree(&small_limits(), S, vec![base_tree()], 0)
    })
    .join()
    .unwrap()
    .unwrap();
    let set = app.install(prepared).unwrap();
    assert_eq!(set.kind, FrameKind::Replaced);
    assert_eq!(app.node_count(), 8);
    let err =
        newton_cache::prepare_full_tree(&small_limits(), S, vec![inc(vec![], 0)], 0).unwrap_err();
    assert_eq!(err.rule, newton_cache::Rule::MissingTreeInfo);
}
