//! `AppReplica::reset`: the bridge's per-application reset after an internal
//! error drops every tree but keeps the surfaces and their compositor facts.

mod common;

use common::*;
use newton_cache::accesskit::Role;
use newton_cache::{FrameKind, Rule};
use newton_push_protocol::{Geometry, SurfaceId};

#[test]
fn reset_drops_trees_keeps_surfaces_and_facts_and_wants_a_full_tree() {
    let mut app = base_app();
    let other = SurfaceId(2);
    app.create_surface(other, Some("Empty".into()))
        .expect("create");
    let geometry = Geometry {
        x: 10,
        y: 20,
        width: 300,
        height: 200,
        scale: 2.0,
    };
    app.set_geometry(S, geometry).expect("geometry");
    app.set_focused_surface(Some(S)).expect("focus");
    assert_eq!(app.node_count(), 8);

    let changes = app.reset();

    // One Destroyed change set, for the surface that had a tree, listing
    // every node it had.
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].surface, S);
    assert_eq!(changes[0].kind, FrameKind::Destroyed);
    assert_eq!(changes[0].removed.len(), 8);
    assert_eq!(app.node_count(), 0);
    let surfaces: Vec<_> = app.surfaces().map(|s| s.id()).collect();
    assert_eq!(surfaces, vec![S, other]);
    let kept = app.surface(S).expect("surface kept");
    assert!(kept.tree().is_none());
    assert_eq!(kept.geometry(), geometry);
    assert!(kept.is_focused());
    assert_eq!(kept.title(), Some("Main"));

    // An incremental update is refused (no tree): the sender must resync.
    let error = app
        .commit(S, vec![inc(vec![(1, labelled(Role::Button, "x"))], 1)], 10)
        .expect_err("no tree to update");
    assert_eq!(error.rule, Rule::MissingTreeInfo);
    // A full tree is accepted and the app is whole again.
    let created = app.commit(S, vec![base_tree()], 100).expect("resync");
    assert_eq!(created.kind, FrameKind::Created);
    assert_eq!(app.node_count(), 8);
}

#[test]
fn resetting_an_app_without_trees_changes_nothing_visible() {
    let mut app = newton_cache::AppReplica::new(small_limits());
    app.create_surface(S, None).expect("create");
    assert!(app.reset().is_empty());
    assert_eq!(app.surfaces().count(), 1);
}
