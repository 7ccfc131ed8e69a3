//! The kept models: shared across threads, per surface, dropped with the
//! surface state they were built for.

use std::sync::Arc;

use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_cache::{AppReplica, Limits};
use newton_push_protocol::SurfaceId;

use super::DerivedModels;
use crate::model::fixtures::{node, tree};
use crate::model::grid::Grid;
use crate::model::text::{TextLayout, TextModel};

/// A window with a label (node 1, text `label`) and a one-cell table
/// (node 2, its row 3, its cell 4).
fn window(label: &str) -> Vec<(u64, Node)> {
    let mut root = Node::new(Role::Window);
    root.set_children(vec![NodeId(1), NodeId(2)]);
    let mut text = Node::new(Role::Label);
    text.set_value(label);
    let mut table = Node::new(Role::Table);
    table.set_children(vec![NodeId(3)]);
    let mut row = Node::new(Role::Row);
    row.set_children(vec![NodeId(4)]);
    let mut cell = Node::new(Role::Cell);
    cell.set_label("cell");
    vec![(0, root), (1, text), (2, table), (3, row), (4, cell)]
}

fn update(label: &str) -> TreeUpdate {
    TreeUpdate {
        nodes: window(label)
            .into_iter()
            .map(|(id, node)| (NodeId(id), node))
            .collect(),
        tree: Some(TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(0),
    }
}

#[test]
fn a_model_built_on_one_thread_is_found_on_another() {
    let tree = tree(window("hello"));
    let models = DerivedModels::new();
    let at = models.at(SurfaceId(1), 7);
    let (text, grid) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let text = TextModel::cached(node(&tree, 1), TextLayout::Inline, at)
                    .expect("a label has text");
                let grid = Grid::cached(&node(&tree, 2), at);
                (Arc::clone(text.data()), Arc::clone(grid.data()))
            })
            .join()
            .expect("the other thread answers")
    });
    let again =
        TextModel::cached(node(&tree, 1), TextLayout::Inline, at).expect("a label has text");
    assert!(Arc::ptr_eq(&text, again.data()), "the text model is reused");
    assert_eq!(again.text, "hello");
    let again = Grid::cached(&node(&tree, 2), at);
    assert!(Arc::ptr_eq(&grid, again.data()), "the grid is reused");
}

#[test]
fn an_applied_frame_drops_the_surfaces_models() {
    let mut replica = AppReplica::new(Limits::default());
    replica
        .create_surface(SurfaceId(1), None)
        .expect("new surface");
    replica
        .commit(SurfaceId(1), vec![update("before")], 0)
        .expect("first tree accepted");
    let models = DerivedModels::new();
    let surface = replica.surface(SurfaceId(1)).expect("surface exists");
    let first = surface.tree().expect("a tree");
    let before = models.at(SurfaceId(1), surface.generation());
    let label = node(first, 1);
    let built = TextModel::cached(label, TextLayout::Inline, before).expect("a label has text");
    let built = Arc::clone(built.data());
    models.retain_current(&replica);
    assert_eq!(models.surfaces_kept(), 1, "no frame yet: the model stays");

    replica
        .commit(SurfaceId(1), vec![update("after")], 0)
        .expect("second frame accepted");
    models.retain_current(&replica);
    assert_eq!(models.surfaces_kept(), 0, "the frame made the model stale");

    let surface = replica.surface(SurfaceId(1)).expect("surface exists");
    let after = models.at(SurfaceId(1), surface.generation());
    let model = TextModel::cached(
        node(surface.tree().expect("a tree"), 1),
        TextLayout::Inline,
        after,
    )
    .expect("a label has text");
    assert!(!Arc::ptr_eq(&built, model.data()));
    assert_eq!(model.text, "after");
}

#[test]
fn a_stale_model_is_never_served_even_before_it_is_dropped() {
    let old = tree(window("old"));
    let new = tree(window("new"));
    let models = DerivedModels::new();
    let _ = TextModel::cached(
        node(&old, 1),
        TextLayout::Inline,
        models.at(SurfaceId(1), 10),
    );
    let model = TextModel::cached(
        node(&new, 1),
        TextLayout::Inline,
        models.at(SurfaceId(1), 11),
    )
    .expect("a label has text");
    assert_eq!(model.text, "new");
    // The older state's grid is not kept beside the newer state's text.
    let grid = Grid::cached(&node(&old, 2), models.at(SurfaceId(1), 10));
    let again = Grid::cached(&node(&old, 2), models.at(SurfaceId(1), 10));
    assert!(!Arc::ptr_eq(grid.data(), again.data()));
}

#[test]
fn two_surfaces_do_not_evict_each_other() {
    let one = tree(window("one"));
    let two = tree(window("two"));
    let models = DerivedModels::new();
    let at_one = models.at(SurfaceId(1), 20);
    let at_two = models.at(SurfaceId(2), 21);
    let first = TextModel::cached(node(&one, 1), TextLayout::Inline, at_one).expect("text");
    let second = TextModel::cached(node(&two, 1), TextLayout::Inline, at_two).expect("text");
    let grid_one = Grid::cached(&node(&one, 2), at_one);
    let grid_two = Grid::cached(&node(&two, 2), at_two);
    for _ in 0..3 {
        let again = TextModel::cached(node(&one, 1), TextLayout::Inline, at_one).expect("text");
        assert!(Arc::ptr_eq(first.data(), again.data()));
        let again = TextModel::cached(node(&two, 1), TextLayout::Inline, at_two).expect("text");
        assert!(Arc::ptr_eq(second.data(), again.data()));
        assert!(Arc::ptr_eq(
            grid_one.data(),
            Grid::cached(&node(&one, 2), at_one).data()
        ));
        assert!(Arc::ptr_eq(
            grid_two.data(),
            Grid::cached(&node(&two, 2), at_two).data()
        ));
    }
    assert_eq!(models.surfaces_kept(), 2);
}

#[test]
fn gone_surfaces_are_dropped_and_the_map_is_bounded() {
    let replica = AppReplica::new(Limits::default());
    let tree = tree(window("x"));
    let models = DerivedModels::new();
    for surface in 0..(super::MAX_SURFACES as u32 + 10) {
        let _ = TextModel::cached(
            node(&tree, 1),
            TextLayout::Inline,
            models.at(SurfaceId(surface), 30),
        );
    }
    assert_eq!(models.surfaces_kept(), super::MAX_SURFACES);
    models.retain_current(&replica);
    assert_eq!(models.surfaces_kept(), 0, "the replica has no surface");
}

/// Grids of one table across generations.
mod grids {
    use accesskit::{Node, NodeId, Role};

    use crate::model::derived::DerivedModels;
    use crate::model::fixtures::{node, tree};
    use crate::model::grid::{Grid, BUILDS};
    use newton_push_protocol::SurfaceId;

    fn builds() -> usize {
        BUILDS.with(std::cell::Cell::get)
    }

    /// A 2 × 3 table: a header row ("A", "B", "C" column headers) and one
    /// row of cells, the middle one with `label`.
    fn table(label: &str) -> accesskit_consumer::Tree {
        let mut root = Node::new(Role::Window);
        root.set_children(vec![NodeId(1)]);
        let mut table = Node::new(Role::Table);
        table.set_children(vec![NodeId(2), NodeId(3)]);
        let mut header = Node::new(Role::Row);
        header.set_children(vec![NodeId(10), NodeId(11), NodeId(12)]);
        let mut row = Node::new(Role::Row);
        row.set_children(vec![NodeId(20), NodeId(21), NodeId(22)]);
        let mut nodes = vec![(0, root), (1, table), (2, header), (3, row)];
        for (id, name) in [(10, "A"), (11, "B"), (12, "C")] {
            let mut cell = Node::new(Role::ColumnHeader);
            cell.set_label(name);
            nodes.push((id, cell));
        }
        for (id, name) in [(20, "a1"), (21, label), (22, "c1")] {
            let mut cell = Node::new(Role::Cell);
            cell.set_label(name);
            nodes.push((id, cell));
        }
        tree(nodes)
    }

    #[test]
    fn a_grid_is_built_once_per_generation_and_table() {
        let first = table("b1");
        let t = node(&first, 1);
        let models = DerivedModels::new();
        let before = builds();
        let grid = Grid::cached(&t, models.at(SurfaceId(1), 1_000_001));
        assert_eq!((grid.row_count, grid.column_count), (2, 3));
        let again = Grid::cached(&t, models.at(SurfaceId(1), 1_000_001));
        let b1 = again.cell_at(1, 1).expect("a cell at (1, 1)");
        assert_eq!(b1.node.label().as_deref(), Some("b1"));
        assert_eq!(builds(), before + 1, "the second call reuses the grid");
        // Another generation (a commit was applied): built again, and the
        // answers are the new tree's.
        let second = table("b1 (edited)");
        let t2 = node(&second, 1);
        let grid = Grid::cached(&t2, models.at(SurfaceId(1), 1_000_002));
        let edited = grid.cell_at(1, 1).expect("a cell at (1, 1)");
        assert_eq!(edited.node.label().as_deref(), Some("b1 (edited)"));
        assert_eq!(builds(), before + 2);
    }

    #[test]
    fn cached_answers_equal_fresh_ones() {
        let t = table("b1");
        let table = node(&t, 1);
        let fresh = Grid::of(&table);
        let models = DerivedModels::new();
        let cached = Grid::cached(&table, models.at(SurfaceId(1), 2_000_001));
        for row in 0..3 {
            for column in 0..4 {
                let a = fresh.cell_at(row, column).map(|c| c.node.id());
                let b = cached.cell_at(row, column).map(|c| c.node.id());
                assert_eq!(a, b, "cell at ({row}, {column})");
            }
        }
        let b1 = node(&t, 21);
        let placed = cached.cell_of(&b1).expect("b1 is placed");
        assert_eq!((placed.row, placed.column), (1, 1));
        let headers: Vec<_> = cached
            .column_headers(1)
            .map(|h| h.node.label().unwrap_or_default())
            .collect();
        assert_eq!(headers, vec!["B".to_string()]);
    }
}
