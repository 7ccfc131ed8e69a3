//! Calls on a node with many children: what each costs, and which the
//! bridge answers off its executor. Correctness always runs, on 19,998
//! children (ten times the inline-work limit, so `cargo test --workspace`
//! stays quick); the timing printout is a measurement, not an assertion, and
//! the width is asked for with `NEWTON_WIDE_ITEMS`:
//! `NEWTON_WIDE_ITEMS=199998 cargo test -p newton-atspi-shim --release --test wide -- --nocapture`.

mod common;

use std::time::{Duration, Instant};

use accesskit::{NodeId, Role};
use common::*;

/// Children of the wide list: `NEWTON_WIDE_ITEMS`, else 19,998.
fn items() -> u64 {
    std::env::var("NEWTON_WIDE_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(19_998)
}
const LIST: u64 = 2;
const FIRST_ITEM: u64 = 1_000_000;

/// A window → a list of `items()` selectable list items (every 1000th
/// selected), the list `controls` every item (a relation of `items()`
/// targets). With `hidden_item`, item 0 is hidden, so the list has a child
/// that is not exposed and indices are counted, not looked up.
fn wide_tree(hidden_item: bool) -> Harness {
    let ids: Vec<NodeId> = (0..items()).map(|i| NodeId(FIRST_ITEM + i)).collect();
    let mut window = make(Role::Window, Some("Wide"), (0.0, 0.0, 800.0, 600.0));
    window.set_children(vec![NodeId(LIST)]);
    let mut list = make(Role::ListBox, Some("List"), (0.0, 0.0, 800.0, 600.0));
    list.set_children(ids.clone());
    list.set_controls(ids.clone());
    let mut nodes = vec![(NodeId(1), window), (NodeId(LIST), list)];
    for (i, id) in ids.into_iter().enumerate() {
        let mut item = make(
            Role::ListBoxOption,
            Some(&format!("Item {i}")),
            (0.0, i as f64 * 20.0, 800.0, 20.0),
        );
        item.set_selected(i % 1000 == 0);
        item.add_action(accesskit::Action::Click);
        if hidden_item && i == 0 {
            item.set_hidden();
        }
        nodes.push((id, item));
    }
    Harness::custom(full_tree(nodes, NodeId(1)))
}

fn timed<R>(what: &str, f: impl FnOnce() -> R) -> (R, Duration) {
    let started = Instant::now();
    let r = f();
    let elapsed = started.elapsed();
    println!("wide: {what}: {elapsed:?}");
    (r, elapsed)
}

#[test]
fn calls_on_a_wide_node() {
    for hidden in [false, true] {
        println!("wide: --- one hidden child: {hidden}");
        let h = wide_tree(hidden);
        let list = node(LIST);
        let exposed = if hidden { items() - 1 } else { items() };
        let last = node(FIRST_ITEM + items() - 1);

        timed("GetChildren, answer only", || {
            h.handle(&list, ACCESSIBLE, "GetChildren", &())
        });
        timed("GetRelationSet (list), answer only", || {
            h.handle(&list, ACCESSIBLE, "GetRelationSet", &())
        });
        let (children, _) = timed("GetChildren", || {
            h.ok::<Vec<Ref>, _>(&list, ACCESSIBLE, "GetChildren", &())
        });
        assert_eq!(children.len() as u64, exposed);
        let (count, _) = timed("ChildCount", || {
            h.prop::<i32>(&list, ACCESSIBLE, "ChildCount")
        });
        assert_eq!(count as u64, exposed);
        let (at, _) = timed("GetChildAtIndex(last)", || {
            h.ok::<Ref, _>(
                &list,
                ACCESSIBLE,
                "GetChildAtIndex",
                &((exposed - 1) as i32,),
            )
        });
        assert_eq!(at.1.as_str(), last);
        let (index, _) = timed("GetIndexInParent(last)", || {
            h.ok::<i32, _>(&last, ACCESSIBLE, "GetIndexInParent", &())
        });
        assert_eq!(index as u64, exposed - 1);
        timed("GetAll(Accessible) on the list", || {
            h.ok::<std::collections::HashMap<String, zvariant::OwnedValue>, _>(
                &list,
                "org.freedesktop.DBus.Properties",
                "GetAll",
                &(ACCESSIBLE,),
            )
        });
        let (relations, _) = timed("GetRelationSet (list: controls every item)", || {
            h.ok::<Vec<(u32, Vec<Ref>)>, _>(&list, ACCESSIBLE, "GetRelationSet", &())
        });
        assert_eq!(
            relations.iter().map(|(_, t)| t.len()).max(),
            Some(exposed as usize)
        );
        timed("GetRelationSet (an item: controlled by the list)", || {
            h.ok::<Vec<(u32, Vec<Ref>)>, _>(&last, ACCESSIBLE, "GetRelationSet", &())
        });
        timed("GetRole (list)", || {
            h.ok::<u32, _>(&list, ACCESSIBLE, "GetRole", &())
        });
        timed("GetState (list)", || {
            h.ok::<atspi_common::StateSet, _>(&list, ACCESSIBLE, "GetState", &())
        });
        timed("GetInterfaces (list)", || {
            h.ok::<Vec<String>, _>(&list, ACCESSIBLE, "GetInterfaces", &())
        });
        const SELECTION: &str = "org.a11y.atspi.Selection";
        let (n, _) = timed("Selection.NSelectedChildren", || {
            h.prop::<i32>(&list, SELECTION, "NSelectedChildren")
        });
        assert_eq!(n as u64, items().div_ceil(1000) - u64::from(hidden));
        timed("Selection.GetSelectedChild(last)", || {
            h.ok::<Ref, _>(&list, SELECTION, "GetSelectedChild", &(n - 1,))
        });
        timed("Selection.IsChildSelected(last)", || {
            h.ok::<bool, _>(
                &list,
                SELECTION,
                "IsChildSelected",
                &((exposed - 1) as i32,),
            )
        });
        timed("Component.GetAccessibleAtPoint (list, last row)", || {
            h.ok::<Ref, _>(
                &list,
                "org.a11y.atspi.Component",
                "GetAccessibleAtPoint",
                &(110_i32, 50 + (items() as i32 - 1) * 20 + 5, 0_u32),
            )
        });
        timed("Cache.GetItems", || {
            h.handle(CACHE, "org.a11y.atspi.Cache", "GetItems", &())
        });
    }
}

/// Whether the bridge answers `call` off its executor on this replica.
fn heavy_here(h: &Harness, call: &zbus::message::Message) -> bool {
    newton_atspi_shim::dispatch::is_heavy_here(&h.ctx(), call)
}

/// Members whose cost grows with the node's children, relation targets or
/// tree are heavy on the wide list and its items, with or without the
/// interface field; the same members on small objects, and cheap members
/// on the wide list, are answered where they arrive.
#[test]
fn members_over_the_inline_work_are_heavy_here() {
    for hidden in [false, true] {
        let h = wide_tree(hidden);
        let list = node(LIST);
        let window = node(1);
        let last = node(FIRST_ITEM + items() - 1);
        const SELECTION: &str = "org.a11y.atspi.Selection";
        const COMPONENT: &str = "org.a11y.atspi.Component";
        for interface in [Some(ACCESSIBLE), None] {
            let call = |path: &str, member: &str| method_call(path, interface, member, &(), false);
            assert!(heavy_here(&h, &call(&list, "GetChildren")), "{interface:?}");
            assert!(!heavy_here(&h, &call(&window, "GetChildren")));
            assert!(heavy_here(&h, &call(&list, "GetRelationSet")));
            assert!(!heavy_here(&h, &call(&window, "GetRelationSet")));
            assert!(!heavy_here(&h, &call(&list, "GetRole")));
            assert!(!heavy_here(&h, &call(&list, "GetState")));
            // Looked up while every child is exposed, counted otherwise.
            let at = method_call(&list, interface, "GetChildAtIndex", &(5_i32,), false);
            assert_eq!(heavy_here(&h, &at), hidden, "GetChildAtIndex");
            assert_eq!(
                heavy_here(&h, &call(&last, "GetIndexInParent")),
                hidden,
                "GetIndexInParent"
            );
            assert!(!heavy_here(&h, &call(&window, "GetIndexInParent")));
        }
        let get = |path: &str, interface: &str, name: &str| {
            method_call(
                path,
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(interface, name),
                false,
            )
        };
        assert_eq!(
            heavy_here(&h, &get(&list, ACCESSIBLE, "ChildCount")),
            hidden
        );
        assert!(!heavy_here(&h, &get(&list, ACCESSIBLE, "Name")));
        let get_all = method_call(
            &list,
            Some("org.freedesktop.DBus.Properties"),
            "GetAll",
            &(ACCESSIBLE,),
            false,
        );
        assert_eq!(heavy_here(&h, &get_all), hidden, "GetAll");
        assert!(heavy_here(&h, &get(&list, SELECTION, "NSelectedChildren")));
        let selected = method_call(&list, Some(SELECTION), "GetSelectedChild", &(0_i32,), false);
        assert!(heavy_here(&h, &selected));
        let point = method_call(
            &list,
            Some(COMPONENT),
            "GetAccessibleAtPoint",
            &(110_i32, 60_i32, 0_u32),
            false,
        );
        assert!(heavy_here(&h, &point));
        let items = method_call(CACHE, Some("org.a11y.atspi.Cache"), "GetItems", &(), false);
        assert!(heavy_here(&h, &items));
        // An unknown object is not heavy: its error is cheap.
        let gone = method_call(&node(999), Some(ACCESSIBLE), "GetChildren", &(), false);
        assert!(!heavy_here(&h, &gone));
    }
}

/// On a small tree nothing but the always-heavy members leaves the executor.
#[test]
fn on_a_small_tree_only_always_heavy_members_are_heavy() {
    let h = Harness::basic();
    let root = node(1);
    for member in [
        "GetChildren",
        "GetRelationSet",
        "GetIndexInParent",
        "GetRole",
    ] {
        let call = method_call(&root, Some(ACCESSIBLE), member, &(), false);
        assert!(!heavy_here(&h, &call), "{member}");
    }
    let items = method_call(CACHE, Some("org.a11y.atspi.Cache"), "GetItems", &(), false);
    assert!(heavy_here(&h, &items));
}
