//! `org.a11y.atspi.Table` on tables and grids, and the grid model shared
//! with `TableCell`.
//!
//! Model: rows are the table's Row descendants (through row groups and
//! other containers, never into a nested table); cells are a row's exposed
//! cell-like children. A cell's position is its `row_index`/`column_index`
//! when the producer sends them, else the next free slot (row and column
//! spans occupy slots). NRows/NColumns are the producer's counts when set,
//! else what the cells cover. Linear indices are row-major
//! (`row * columns + column`). Building the model costs O(cells); it is kept
//! with the surface's other derived models (see [`Grid::cached`]).
//! AccessKit has no column selection: selected columns are always empty and
//! selection changes answer false.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::model::context::NodeCtx;
use crate::model::derived::ModelsAt;
use crate::model::error::CallError;
use crate::model::objects::{exposed_children, to_i32};
use crate::model::paths::{self, ObjectRef};
use crate::surface::declare_interface;
use accesskit::Role;
use accesskit_consumer::{FullNodeId, NodeRef};

declare_interface! {
    // libatspi asks for "NRows"; older interface definitions spell "nRows".
    pub(crate) static TABLE = "org.a11y.atspi.Table", on node, property names in any case {
        fn GetAccessibleAt(row: i32, column: i32) -> (cell: ObjectRef) = accessible_at;
        fn GetIndexAt(row: i32, column: i32) -> (index: i32) = index_at;
        fn GetRowAtIndex(index: i32) -> (row: i32) = row_at_index;
        fn GetColumnAtIndex(index: i32) -> (column: i32) = column_at_index;
        fn GetRowDescription(row: i32) -> (description: String) = no_description;
        fn GetColumnDescription(column: i32) -> (description: String) = no_description;
        fn GetRowExtentAt(row: i32, column: i32) -> (extent: i32) = row_extent_at;
        fn GetColumnExtentAt(row: i32, column: i32) -> (extent: i32) = column_extent_at;
        fn GetRowHeader(row: i32) -> (header: ObjectRef) = row_header;
        fn GetColumnHeader(column: i32) -> (header: ObjectRef) = column_header;
        fn GetSelectedRows() -> (rows: Vec<i32>) = selected_rows;
        fn GetSelectedColumns() -> (columns: Vec<i32>) = selected_columns;
        fn IsRowSelected(row: i32) -> (selected: bool) = is_row_selected;
        fn IsColumnSelected(column: i32) -> (selected: bool) = is_column_selected;
        fn IsSelected(row: i32, column: i32) -> (selected: bool) = is_selected;
        fn AddRowSelection(row: i32) -> (success: bool) = change_selection;
        fn AddColumnSelection(column: i32) -> (success: bool) = change_selection;
        fn RemoveRowSelection(row: i32) -> (success: bool) = change_selection;
        fn RemoveColumnSelection(column: i32) -> (success: bool) = change_selection;
        fn GetRowColumnExtentsAtIndex(index: i32) -> (
            found: bool,
            row: i32,
            col: i32,
            row_extents: i32,
            col_extents: i32,
            is_selected: bool,
        ) = row_column_extents_at_index;
        property version: u32 = crate::surface::interface_version;
        property NRows: i32 = n_rows;
        property NColumns: i32 = n_columns;
        property Caption: ObjectRef = caption_of;
        property Summary: ObjectRef = summary;
        property NSelectedRows: i32 = n_selected_rows;
        property NSelectedColumns: i32 = n_selected_columns;
    }
}

pub(crate) fn is_table(node: &NodeRef) -> bool {
    matches!(
        node.role(),
        Role::Table | Role::Grid | Role::TreeGrid | Role::LayoutTable | Role::ListGrid
    )
}

fn is_row(node: &NodeRef) -> bool {
    matches!(node.role(), Role::Row | Role::LayoutTableRow)
}

pub(crate) fn is_cell(node: &NodeRef) -> bool {
    matches!(
        node.role(),
        Role::Cell | Role::GridCell | Role::ColumnHeader | Role::RowHeader | Role::LayoutTableCell
    )
}

pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    is_table(&ctx.node)
}

/// One cell placed on the grid.
pub(crate) struct Cell<'a> {
    pub node: NodeRef<'a>,
    pub row: usize,
    pub column: usize,
    pub row_span: usize,
    pub column_span: usize,
}

/// A cell's place, owned (by node id) so a grid can be kept between calls.
#[derive(Clone, Copy)]
struct Placed {
    id: FullNodeId,
    role: Role,
    row: usize,
    column: usize,
    row_span: usize,
    column_span: usize,
}

impl Placed {
    fn covers(&self, row: usize, column: usize) -> bool {
        (self.row..self.row + self.row_span).contains(&row)
            && (self.column..self.column + self.column_span).contains(&column)
    }
}

/// The node-independent part of a [`Grid`]: building it is O(cells), and
/// Orca asks many questions of one table in a row (a focus move in a grid
/// reads the row's cells, their headers and positions one call each).
pub(crate) struct GridData {
    rows: Vec<FullNodeId>,
    cells: Vec<Placed>,
    row_count: usize,
    column_count: usize,
    /// Cell index by node.
    by_node: HashMap<FullNodeId, usize>,
    /// Cell index by the slot a cell starts at (the first cell wins).
    by_start: HashMap<(usize, usize), usize>,
    /// Some cell spans more than one slot: a slot may be covered by a cell
    /// starting elsewhere.
    spanning: bool,
}

#[cfg(test)]
thread_local! {
    /// How many grids this thread built (tests of the cache).
    static BUILDS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A table's rows and placed cells.
pub(crate) struct Grid<'a> {
    table: NodeRef<'a>,
    data: Arc<GridData>,
    pub row_count: usize,
    pub column_count: usize,
}

/// Spans and indices are clamped, and slot bookkeeping is budgeted, so a
/// hostile producer can neither overflow positions nor make a call slow.
const MAX_SPAN: usize = 1000;
const MAX_INDEX: usize = 1 << 24;
const MAX_MARKED_SLOTS: usize = 1 << 16;

impl<'a> Grid<'a> {
    /// The grid of `table` in the surface state `models` stands for,
    /// reusing the one kept there (by any thread) when this table's grid
    /// was built already (see `crate::model::derived`).
    pub(crate) fn cached(table: &NodeRef<'a>, models: ModelsAt<'_>) -> Self {
        let data = models.grid(table.id(), || Arc::new(GridData::of(table)));
        Grid::with(table, data)
    }

    /// The grid of `table`, built now.
    #[cfg(test)]
    pub(crate) fn of(table: &NodeRef<'a>) -> Self {
        Grid::with(table, Arc::new(GridData::of(table)))
    }

    /// The shared model itself (tests of the cache).
    #[cfg(test)]
    pub(crate) fn data(&self) -> &Arc<GridData> {
        &self.data
    }

    fn with(table: &NodeRef<'a>, data: Arc<GridData>) -> Self {
        Grid {
            table: *table,
            row_count: data.row_count,
            column_count: data.column_count,
            data,
        }
    }

    fn resolve(&self, placed: &Placed) -> Option<Cell<'a>> {
        let node = self.table.tree_state.node_by_id(placed.id)?;
        Some(Cell {
            node,
            row: placed.row,
            column: placed.column,
            row_span: placed.row_span,
            column_span: placed.column_span,
        })
    }

    pub(crate) fn cell_at(&self, row: usize, column: usize) -> Option<Cell<'a>> {
        let placed = match self.data.by_start.get(&(row, column)) {
            Some(&i) => self.data.cells.get(i),
            None if self.data.spanning => {
                self.data.cells.iter().find(|cell| cell.covers(row, column))
            }
            None => None,
        }?;
        self.resolve(placed)
    }

    pub(crate) fn cell_of(&self, node: &NodeRef) -> Option<Cell<'a>> {
        let &i = self.data.by_node.get(&node.id())?;
        self.resolve(self.data.cells.get(i)?)
    }

    pub(crate) fn column_headers(&self, column: usize) -> impl Iterator<Item = Cell<'a>> + '_ {
        self.data
            .cells
            .iter()
            .filter(move |c| {
                c.role == Role::ColumnHeader
                    && (c.column..c.column + c.column_span).contains(&column)
            })
            .filter_map(|c| self.resolve(c))
    }

    pub(crate) fn row_headers(&self, row: usize) -> impl Iterator<Item = Cell<'a>> + '_ {
        self.data
            .cells
            .iter()
            .filter(move |c| {
                c.role == Role::RowHeader && (c.row..c.row + c.row_span).contains(&row)
            })
            .filter_map(|c| self.resolve(c))
    }

    fn rows(&self) -> impl Iterator<Item = (usize, NodeRef<'a>)> + '_ {
        self.data
            .rows
            .iter()
            .enumerate()
            .filter_map(|(sequential, id)| {
                Some((sequential, self.table.tree_state.node_by_id(*id)?))
            })
    }

    fn row_selected(&self, row: usize) -> bool {
        self.rows().any(|(sequential, node)| {
            node.data().row_index().unwrap_or(sequential) == row && node.is_selected() == Some(true)
        })
    }

    fn selected_rows(&self) -> Vec<i32> {
        self.rows()
            .filter(|(_, node)| node.is_selected() == Some(true))
            .map(|(sequential, node)| to_i32(node.data().row_index().unwrap_or(sequential)))
            .collect()
    }

    fn is_selected(&self, row: usize, column: usize) -> bool {
        self.row_selected(row)
            || self
                .cell_at(row, column)
                .is_some_and(|c| c.node.is_selected() == Some(true))
    }
}

impl GridData {
    fn of(table: &NodeRef) -> Self {
        #[cfg(test)]
        BUILDS.with(|b| b.set(b.get() + 1));
        let rows = table_rows(table);
        let mut cells: Vec<Placed> = Vec::new();
        let mut occupied: HashSet<(usize, usize)> = HashSet::new();
        let mut marks_left = MAX_MARKED_SLOTS;
        for (sequential, row) in rows.iter().enumerate() {
            let row_index = row.data().row_index().unwrap_or(sequential).min(MAX_INDEX);
            let mut next_column = 0;
            for node in exposed_children(row).filter(is_cell) {
                let data = node.data();
                let row_index = data.row_index().unwrap_or(row_index).min(MAX_INDEX);
                let row_span = data.row_span().unwrap_or(1).clamp(1, MAX_SPAN);
                let column_span = data.column_span().unwrap_or(1).clamp(1, MAX_SPAN);
                let column = match data.column_index() {
                    Some(column) => column.min(MAX_INDEX),
                    None => {
                        while occupied.contains(&(row_index, next_column)) {
                            next_column += 1;
                        }
                        next_column
                    }
                };
                'mark: for r in row_index..row_index + row_span {
                    for c in column..column + column_span {
                        if marks_left == 0 {
                            break 'mark;
                        }
                        marks_left -= 1;
                        occupied.insert((r, c));
                    }
                }
                next_column = column + column_span;
                cells.push(Placed {
                    id: node.id(),
                    role: node.role(),
                    row: row_index,
                    column,
                    row_span,
                    column_span,
                });
            }
        }
        let covered_rows = cells
            .iter()
            .map(|c| c.row + c.row_span)
            .max()
            .unwrap_or(0)
            .max(rows.len());
        let covered_columns = cells
            .iter()
            .map(|c| c.column + c.column_span)
            .max()
            .unwrap_or(0);
        let mut by_node = HashMap::with_capacity(cells.len());
        let mut by_start = HashMap::with_capacity(cells.len());
        for (i, cell) in cells.iter().enumerate() {
            by_node.entry(cell.id).or_insert(i);
            by_start.entry((cell.row, cell.column)).or_insert(i);
        }
        GridData {
            row_count: table.data().row_count().unwrap_or(covered_rows),
            column_count: table.data().column_count().unwrap_or(covered_columns),
            spanning: cells.iter().any(|c| c.row_span > 1 || c.column_span > 1),
            rows: rows.iter().map(NodeRef::id).collect(),
            cells,
            by_node,
            by_start,
        }
    }
}

/// Row descendants in order, not entering rows, cells or nested tables.
fn table_rows<'a>(table: &NodeRef<'a>) -> Vec<NodeRef<'a>> {
    let mut rows = Vec::new();
    let mut stack: Vec<NodeRef<'a>> = exposed_children(table).rev().collect();
    while let Some(node) = stack.pop() {
        if is_row(&node) {
            rows.push(node);
        } else if !is_table(&node) && !is_cell(&node) {
            stack.extend(exposed_children(&node).rev());
        }
    }
    rows
}

/// The nearest table above a node.
pub(crate) fn table_of<'a>(node: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    let mut current = node.parent();
    while let Some(candidate) = current {
        if is_table(&candidate) {
            return Some(candidate);
        }
        current = candidate.parent();
    }
    None
}

fn caption(ctx: &NodeCtx) -> ObjectRef {
    exposed_children(&ctx.node)
        .find(|child| matches!(child.role(), Role::Caption | Role::FigureCaption))
        .map_or_else(paths::null_ref, |child| ctx.ref_to(&child))
}

fn n_rows(ctx: &NodeCtx) -> Result<i32, CallError> {
    Ok(to_i32(grid_of(ctx).row_count))
}

fn n_columns(ctx: &NodeCtx) -> Result<i32, CallError> {
    Ok(to_i32(grid_of(ctx).column_count))
}

fn caption_of(ctx: &NodeCtx) -> Result<ObjectRef, CallError> {
    Ok(caption(ctx))
}

fn summary(_ctx: &NodeCtx) -> Result<ObjectRef, CallError> {
    Ok(paths::null_ref())
}

fn n_selected_rows(ctx: &NodeCtx) -> Result<i32, CallError> {
    Ok(to_i32(grid_of(ctx).selected_rows().len()))
}

/// Only whole rows are selected (see the module doc).
fn n_selected_columns(_ctx: &NodeCtx) -> Result<i32, CallError> {
    Ok(0)
}

/// A (row, column) pair sent by a client; negatives are InvalidArgs.
fn position(row: i32, column: i32) -> Result<(usize, usize), CallError> {
    match (usize::try_from(row), usize::try_from(column)) {
        (Ok(r), Ok(c)) => Ok((r, c)),
        _ => Err(CallError::InvalidArgs(format!(
            "row {row}, column {column}: negative index"
        ))),
    }
}

fn out_of_range(row: usize, column: usize) -> CallError {
    CallError::InvalidArgs(format!("no cell at row {row}, column {column}"))
}

/// The grid of the table `ctx` is on.
fn grid_of<'a>(ctx: &NodeCtx<'a>) -> Grid<'a> {
    Grid::cached(&ctx.node, ctx.models())
}

fn accessible_at(ctx: &NodeCtx, row: i32, column: i32) -> Result<ObjectRef, CallError> {
    let (r, c) = position(row, column)?;
    let cell = grid_of(ctx)
        .cell_at(r, c)
        .ok_or_else(|| out_of_range(r, c))?;
    Ok(ctx.ref_to(&cell.node))
}

fn index_at(ctx: &NodeCtx, row: i32, column: i32) -> Result<i32, CallError> {
    let (r, c) = position(row, column)?;
    let grid = grid_of(ctx);
    Ok(if r < grid.row_count && c < grid.column_count {
        to_i32(r.saturating_mul(grid.column_count).saturating_add(c))
    } else {
        -1
    })
}

/// The (row, column) of cell index `index`, if the grid has it.
fn row_and_column(grid: &Grid, index: i32) -> Option<(usize, usize)> {
    let i = usize::try_from(index).ok()?;
    (grid.column_count > 0 && i < grid.row_count.saturating_mul(grid.column_count))
        .then(|| (i / grid.column_count, i % grid.column_count))
}

fn row_at_index(ctx: &NodeCtx, index: i32) -> Result<i32, CallError> {
    Ok(row_and_column(&grid_of(ctx), index).map_or(-1, |(row, _)| to_i32(row)))
}

fn column_at_index(ctx: &NodeCtx, index: i32) -> Result<i32, CallError> {
    Ok(row_and_column(&grid_of(ctx), index).map_or(-1, |(_, column)| to_i32(column)))
}

/// AccessKit has no row or column descriptions.
fn no_description(_ctx: &NodeCtx, _index: i32) -> Result<String, CallError> {
    Ok(String::new())
}

fn row_extent_at(ctx: &NodeCtx, row: i32, column: i32) -> Result<i32, CallError> {
    let (r, c) = position(row, column)?;
    Ok(to_i32(
        grid_of(ctx).cell_at(r, c).map_or(0, |cell| cell.row_span),
    ))
}

fn column_extent_at(ctx: &NodeCtx, row: i32, column: i32) -> Result<i32, CallError> {
    let (r, c) = position(row, column)?;
    Ok(to_i32(
        grid_of(ctx)
            .cell_at(r, c)
            .map_or(0, |cell| cell.column_span),
    ))
}

fn row_header(ctx: &NodeCtx, row: i32) -> Result<ObjectRef, CallError> {
    let grid = grid_of(ctx);
    let header = usize::try_from(row)
        .ok()
        .and_then(|r| grid.row_headers(r).next());
    Ok(header.map_or_else(paths::null_ref, |h| ctx.ref_to(&h.node)))
}

fn column_header(ctx: &NodeCtx, column: i32) -> Result<ObjectRef, CallError> {
    let grid = grid_of(ctx);
    let header = usize::try_from(column)
        .ok()
        .and_then(|c| grid.column_headers(c).next());
    Ok(header.map_or_else(paths::null_ref, |h| ctx.ref_to(&h.node)))
}

fn selected_rows(ctx: &NodeCtx) -> Result<Vec<i32>, CallError> {
    Ok(grid_of(ctx).selected_rows())
}

fn selected_columns(_ctx: &NodeCtx) -> Result<Vec<i32>, CallError> {
    Ok(Vec::new())
}

fn is_row_selected(ctx: &NodeCtx, row: i32) -> Result<bool, CallError> {
    Ok(usize::try_from(row).is_ok_and(|r| grid_of(ctx).row_selected(r)))
}

fn is_column_selected(_ctx: &NodeCtx, _column: i32) -> Result<bool, CallError> {
    Ok(false)
}

fn is_selected(ctx: &NodeCtx, row: i32, column: i32) -> Result<bool, CallError> {
    let (r, c) = position(row, column)?;
    Ok(grid_of(ctx).is_selected(r, c))
}

/// Selecting rows or columns has no AccessKit action: false.
fn change_selection(_ctx: &NodeCtx, _index: i32) -> Result<bool, CallError> {
    Ok(false)
}

/// (found, row, column, row span, column span, selected); (false, -1, -1,
/// 0, 0, false) for an index outside the grid.
fn row_column_extents_at_index(
    ctx: &NodeCtx,
    index: i32,
) -> Result<(bool, i32, i32, i32, i32, bool), CallError> {
    let grid = grid_of(ctx);
    let cell = usize::try_from(index)
        .ok()
        .filter(|_| grid.column_count > 0)
        .and_then(|i| grid.cell_at(i / grid.column_count, i % grid.column_count));
    Ok(match cell {
        Some(cell) => (
            true,
            to_i32(cell.row),
            to_i32(cell.column),
            to_i32(cell.row_span),
            to_i32(cell.column_span),
            grid.is_selected(cell.row, cell.column),
        ),
        None => (false, -1, -1, 0, 0, false),
    })
}

#[cfg(test)]
mod tests {
    use accesskit::{Node, NodeId, Role};

    use super::{Grid, BUILDS};
    use crate::interfaces::text::tests::{node, tree};
    use crate::model::derived::DerivedModels;
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
