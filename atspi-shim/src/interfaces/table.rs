//! `org.a11y.atspi.Table` on tables and grids, answered from the table's
//! grid (`model/grid.rs`, shared with `TableCell`). Linear indices are
//! row-major (`row * columns + column`).
//! AccessKit has no column selection: selected columns are always empty and
//! selection changes answer false.

use crate::model::context::NodeCtx;
use crate::model::error::CallError;
use crate::model::exposure::exposed_children;
use crate::model::grid::Grid;
use crate::model::index::to_i32;
use crate::model::names;
use crate::model::paths::{self, ObjectRef};
use crate::surface::declare_interface;
use accesskit::Role;

declare_interface! {
    // libatspi asks for "NRows"; older interface definitions spell "nRows".
    pub(crate) static TABLE = names::TABLE, on node, property names in any case {
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
