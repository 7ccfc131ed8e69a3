//! Byte budgets: a commit that would take an application's replica over
//! `max_app_bytes`, or every application together over the shared budget,
//! is rejected before it is applied with rule `app-bytes` / `total-bytes`;
//! the replica keeps its last good state, and bytes come back when nodes,
//! surfaces and applications go.

mod common;

use std::sync::Arc;

use common::*;
use newton_cache::accesskit::Role;
use newton_cache::budget::{node_cost, tree_bytes};
use newton_cache::{AppReplica, ByteBudget, Limits, Rule, SurfaceId};

fn limits(max_app_bytes: usize) -> Limits {
    Limits {
        max_nodes: 10_000,
        max_children: 10_000,
        max_frame_bytes: 1 << 30,
        max_app_bytes,
        ..small_limits()
    }
}

/// A window with `count` labels of `label_len` bytes each.
fn window(count: u64, label_len: usize) -> newton_cache::accesskit::TreeUpdate {
    let ids: Vec<u64> = (1..=count).collect();
    let mut nodes = vec![(0, kids(Role::Window, &ids))];
    nodes.extend(
        ids.iter()
            .map(|id| (*id, labelled(Role::Label, &"x".repeat(label_len)))),
    );
    full(0, nodes, 0)
}

fn app(max_app_bytes: usize, shared: &Arc<ByteBudget>) -> AppReplica {
    let mut app = AppReplica::with_shared_budget(limits(max_app_bytes), shared.clone());
    app.create_surface(S, None).expect("create");
    app
}

#[test]
fn bytes_follow_the_tree_exactly() {
    let shared = Arc::new(ByteBudget::default());
    let mut a = app(usize::MAX, &shared);
    let tree = window(10, 100);
    // The nodes, and the tree's own maps sized for its 11 nodes.
    let expected: usize =
        tree.nodes.iter().map(|(_, n)| node_cost(n)).sum::<usize>() + tree_bytes(11);
    a.commit(S, vec![tree], 0).expect("applies");
    assert_eq!(a.bytes(), expected);
    assert_eq!(shared.used(), expected);
    // Relabel one node with a longer label: grows by the difference only
    // (1,000 more bytes in each of the consumer's two copies).
    let longer = labelled(Role::Label, &"y".repeat(1100));
    let grown = node_cost(&longer) - node_cost(&labelled(Role::Label, &"x".repeat(100)));
    assert_eq!(grown, 2000);
    a.commit(S, vec![inc(vec![(3, longer.clone())], 0)], 0)
        .expect("applies");
    assert_eq!(a.bytes(), expected + grown);
    assert_eq!(shared.used(), expected + grown);
    // Remove nine labels: their bytes come back, the maps keep their size
    // (they never shrink).
    a.commit(S, vec![inc(vec![(0, kids(Role::Window, &[3]))], 0)], 0)
        .expect("applies");
    let left = node_cost(&kids(Role::Window, &[3])) + node_cost(&longer) + tree_bytes(11);
    assert_eq!(a.bytes(), left);
    assert_eq!(shared.used(), left);
    a.clear();
    assert_eq!((a.bytes(), shared.used()), (0, 0));
}

#[test]
fn an_application_over_its_budget_is_refused_and_keeps_its_tree() {
    let shared = Arc::new(ByteBudget::default());
    let mut a = app(100_000, &shared);
    a.commit(S, vec![window(10, 100)], 0)
        .expect("a small tree fits");
    let before = a.bytes();
    // A 1 MB label in one incremental commit.
    let error = a
        .commit(
            S,
            vec![inc(
                vec![(4, labelled(Role::Label, &"z".repeat(1_000_000)))],
                0,
            )],
            0,
        )
        .expect_err("over the budget");
    assert_eq!(error.rule, Rule::AppBytes);
    assert!(error.detail.contains("--max-app-bytes"), "{}", error.detail);
    assert_eq!(a.bytes(), before);
    assert_eq!(shared.used(), before);
    let label = a
        .surface(S)
        .and_then(|s| s.tree())
        .and_then(|t| {
            t.state().node_by_tree_local_id(
                newton_cache::accesskit::NodeId(4),
                newton_cache::accesskit::TreeId::ROOT,
            )
        })
        .and_then(|n| n.label());
    assert_eq!(label, Some("x".repeat(100)));
    // A whole new tree over the budget, built off the lock, is refused before it is built.
    let error = newton_cache::prepare_full_tree(&limits(100_000), S, vec![window(1000, 100)], 0)
        .expect_err("over the budget");
    assert_eq!(error.rule, Rule::AppBytes);
    // Through commit (a new root replaces the tree): refused too, old tree kept.
    let error = a
        .commit(S, vec![window(1000, 100)], 0)
        .expect_err("over the budget");
    assert_eq!(error.rule, Rule::AppBytes);
    assert_eq!(a.bytes(), before);
}

#[test]
fn the_shared_budget_refuses_the_application_that_would_pass_it() {
    let one_app = window(100, 1000);
    let cost: usize = one_app
        .nodes
        .iter()
        .map(|(_, n)| node_cost(n))
        .sum::<usize>()
        + tree_bytes(one_app.nodes.len());
    // Room for two such applications, not three.
    let shared = Arc::new(ByteBudget::new(cost * 2 + cost / 2));
    let mut a = app(usize::MAX, &shared);
    let mut b = app(usize::MAX, &shared);
    let mut c = app(usize::MAX, &shared);
    a.commit(S, vec![one_app.clone()], 0).expect("first fits");
    b.commit(S, vec![one_app.clone()], 0).expect("second fits");
    let error = c
        .commit(S, vec![one_app.clone()], 0)
        .expect_err("third does not");
    assert_eq!(error.rule, Rule::TotalBytes);
    assert!(
        error.detail.contains("--max-total-bytes"),
        "{}",
        error.detail
    );
    assert_eq!(c.bytes(), 0);
    assert_eq!(shared.used(), cost * 2);
    // An application leaving gives its bytes back; the third now fits.
    drop(a);
    assert_eq!(shared.used(), cost);
    c.commit(S, vec![one_app], 0)
        .expect("fits after the first left");
    assert_eq!(shared.used(), cost * 2);
    b.destroy_surface(S).expect("destroy");
    assert_eq!(shared.used(), cost);
    let _ = SurfaceId(0);
}
