//! GetItems and common calls on a 100,000-node replica. Correctness always
//! runs; the timing printout is a measurement, not an assertion:
//! `cargo test -p newton-atspi-shim --release --test scale -- --nocapture`.

mod common;

use std::time::Instant;

use accesskit::{Action, NodeId, Role};
use common::*;

const GROUPS: u64 = 100;
const ITEMS_PER_GROUP: u64 = 1000;

fn big_tree() -> Harness {
    tree_with_labels("")
}

/// The 100k tree; every item's label ends with `padding`.
fn tree_with_labels(padding: &str) -> Harness {
    let mut nodes = Vec::with_capacity((GROUPS * (ITEMS_PER_GROUP + 1) + 1) as usize);
    let mut window = make(Role::Window, Some("Big"), (0.0, 0.0, 800.0, 600.0));
    window.set_children((0..GROUPS).map(|g| NodeId(10 + g)).collect::<Vec<_>>());
    nodes.push((NodeId(1), window));
    for g in 0..GROUPS {
        let mut group = make(
            Role::List,
            Some(&format!("Group {g}")),
            (0.0, g as f64 * 20.0, 800.0, 20.0),
        );
        let items: Vec<NodeId> = (0..ITEMS_PER_GROUP)
            .map(|i| NodeId(1_000_000 + g * ITEMS_PER_GROUP + i))
            .collect();
        group.set_children(items.clone());
        nodes.push((NodeId(10 + g), group));
        for (i, id) in items.into_iter().enumerate() {
            let mut item = make(
                Role::ListItem,
                Some(&format!("Item {g}.{i}{padding}")),
                (0.0, i as f64 * 20.0, 800.0, 20.0),
            );
            item.add_action(Action::Click);
            item.add_action(Action::Focus);
            nodes.push((id, item));
        }
    }
    Harness::custom(full_tree(nodes, NodeId(1)))
}

#[test]
fn get_items_covers_100k_nodes() {
    let h = big_tree();
    let started = Instant::now();
    let reply = h
        .handle(CACHE, "org.a11y.atspi.Cache", "GetItems", &())
        .reply;
    let elapsed = started.elapsed();
    let bytes = reply.data().len();
    let items: Vec<CacheItem> = reply.body().deserialize().expect("items");
    let expected = 1 + 1 + GROUPS * (ITEMS_PER_GROUP + 1);
    assert_eq!(items.len() as u64, expected);
    let last = items.last().expect("an item");
    assert_eq!(last.3, (ITEMS_PER_GROUP - 1) as i32, "index in parent");
    assert_eq!(
        last.6,
        format!("Item {}.{}", GROUPS - 1, ITEMS_PER_GROUP - 1)
    );
    println!(
        "GetItems: {} items, {} bytes, built in {:?}",
        items.len(),
        bytes,
        elapsed
    );

    let item = node(1_000_000 + 50 * ITEMS_PER_GROUP + 999);
    let started = Instant::now();
    let index: i32 = h.ok(&item, ACCESSIBLE, "GetIndexInParent", &());
    let name: String = h.prop(&item, ACCESSIBLE, "Name");
    let _: atspi_common::StateSet = h.ok(&item, ACCESSIBLE, "GetState", &());
    println!(
        "GetIndexInParent + Name + GetState on a last sibling of 1000: {:?}",
        started.elapsed()
    );
    assert_eq!((index, name.as_str()), (999, "Item 50.999"));
}

/// Items of 1 KiB labels: 100 MB in all, over D-Bus's 64 MiB array cap.
/// GetItems lists the app root, the window, the groups, then items level by
/// level until its budget; every listed item's parent comes before it, so
/// libatspi's children arrays are sized before the slots it fills, and the
/// items left out are the deepest ones (fetched by libatspi on demand).
#[test]
fn get_items_of_a_tree_over_the_budget_is_a_breadth_first_prefix() {
    let padding = "-".repeat(1024);
    let h = tree_with_labels(&padding);
    let reply = h
        .handle(CACHE, "org.a11y.atspi.Cache", "GetItems", &())
        .reply;
    let bytes = reply.data().len();
    let items: Vec<CacheItem> = reply.body().deserialize().expect("items");
    println!("GetItems over budget: {} items, {bytes} bytes", items.len());
    assert!(bytes <= newton_atspi_shim::budgets::GET_ITEMS_BUDGET_BYTES + 4096);
    let total = 2 + GROUPS * (ITEMS_PER_GROUP + 1);
    assert!(
        (items.len() as u64) < total && items.len() > 30_000,
        "{}",
        items.len()
    );
    // Root, window, the groups, then items.
    assert_eq!(items[0].7, atspi_common::Role::Application as u32);
    assert_eq!(items[1].6, "Big");
    for (g, item) in items[2..2 + GROUPS as usize].iter().enumerate() {
        assert_eq!(item.6, format!("Group {g}"));
        assert_eq!(item.4, ITEMS_PER_GROUP as i32, "child count of a group");
    }
    let mut seen = std::collections::HashSet::new();
    for item in &items {
        let parent = item.2 .1.as_str();
        if item.7 != atspi_common::Role::Application as u32 {
            assert!(
                seen.contains(parent),
                "parent {parent} listed after its child"
            );
        }
        seen.insert(item.0 .1.as_str().to_owned());
    }
    // An item left out is still answered on demand.
    let last = node(1_000_000 + (GROUPS - 1) * ITEMS_PER_GROUP + ITEMS_PER_GROUP - 1);
    assert!(!seen.contains(&last));
    let name: String = h.prop(&last, ACCESSIBLE, "Name");
    assert_eq!(
        name,
        format!("Item {}.{}{padding}", GROUPS - 1, ITEMS_PER_GROUP - 1)
    );
}
