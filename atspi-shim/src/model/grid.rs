//! A table's grid: its rows and the place of each cell (Table, TableCell,
//! the `table-cell-index` object attribute).
//!
//! Rows are the table's Row descendants (through row groups and other
//! containers, never into a nested table); cells are a row's exposed
//! cell-like children. A cell's position is its `row_index`/`column_index`
//! when the producer sends them, else the next free slot (row and column
//! spans occupy slots). NRows/NColumns are the producer's counts when set,
//! else what the cells cover. Building the grid costs O(cells); it is kept
//! with the surface's other derived models (`Grid::cached`, derived.rs).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use accesskit::Role;
use accesskit_consumer::{FullNodeId, NodeRef};

use crate::model::exposure::exposed_children;
use crate::model::index::to_i32;

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
    pub(crate) static BUILDS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
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

    pub(crate) fn with(table: &NodeRef<'a>, data: Arc<GridData>) -> Self {
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

    pub(crate) fn row_selected(&self, row: usize) -> bool {
        self.rows().any(|(sequential, node)| {
            node.data().row_index().unwrap_or(sequential) == row && node.is_selected() == Some(true)
        })
    }

    pub(crate) fn selected_rows(&self) -> Vec<i32> {
        self.rows()
            .filter(|(_, node)| node.is_selected() == Some(true))
            .map(|(sequential, node)| to_i32(node.data().row_index().unwrap_or(sequential)))
            .collect()
    }

    pub(crate) fn is_selected(&self, row: usize, column: usize) -> bool {
        self.row_selected(row)
            || self
                .cell_at(row, column)
                .is_some_and(|c| c.node.is_selected() == Some(true))
    }
}

impl GridData {
    pub(crate) fn of(table: &NodeRef) -> Self {
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

/// Whether `node` is a cell inside a table (TableCell).
pub(crate) fn in_table(node: &NodeRef) -> bool {
    is_cell(node) && table_of(node).is_some()
}
