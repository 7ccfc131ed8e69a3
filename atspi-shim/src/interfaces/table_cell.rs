//! `org.a11y.atspi.TableCell` on cells inside a table (see `table.rs` for
//! how positions are computed).

use crate::model::context::NodeCtx;
use crate::model::error::CallError;
use crate::model::grid::{table_of, Grid};
use crate::model::index::to_i32;
use crate::model::names;
use crate::model::paths::ObjectRef;
use crate::surface::declare_interface;

declare_interface! {
    pub(crate) static TABLE_CELL = names::TABLE_CELL, on node {
        // `iiii`, not the `biiii` of xml/TableCell.xml: libatspi reads
        // "=>iiii" and atk-bridge sends four INT32, so a leading boolean makes
        // every libatspi client fail with a signature mismatch.
        fn GetRowColumnSpan() -> (row: i32, col: i32, row_extents: i32, col_extents: i32)
            = row_column_span;
        fn GetColumnHeaderCells() -> (cells: Vec<ObjectRef>) = column_header_cells;
        fn GetRowHeaderCells() -> (cells: Vec<ObjectRef>) = row_header_cells;
        property ColumnSpan: i32 = column_span;
        property RowSpan: i32 = row_span;
        property Position: (i32, i32) = position;
        property Table: ObjectRef = table;
        property version: u32 = crate::surface::interface_version;
    }
}

/// (row, column, row span, column span) of the cell, if it is placed.
fn placement(ctx: &NodeCtx) -> Option<(usize, usize, usize, usize)> {
    let table = table_of(&ctx.node)?;
    let grid = Grid::cached(&table, ctx.models());
    grid.cell_of(&ctx.node)
        .map(|c| (c.row, c.column, c.row_span, c.column_span))
}

/// (row, column, row span, column span), an unplaced cell at (0, 0) 1×1.
fn placed(ctx: &NodeCtx) -> (usize, usize, usize, usize) {
    placement(ctx).unwrap_or((0, 0, 1, 1))
}

fn column_span(ctx: &NodeCtx) -> Result<i32, CallError> {
    Ok(to_i32(placed(ctx).3))
}

fn row_span(ctx: &NodeCtx) -> Result<i32, CallError> {
    Ok(to_i32(placed(ctx).2))
}

fn position(ctx: &NodeCtx) -> Result<(i32, i32), CallError> {
    let (row, column, _, _) = placed(ctx);
    Ok((to_i32(row), to_i32(column)))
}

fn table(ctx: &NodeCtx) -> Result<ObjectRef, CallError> {
    let table = table_of(&ctx.node)
        .ok_or_else(|| CallError::Failed("this cell is in no table".to_owned()))?;
    Ok(ctx.ref_to(&table))
}

/// An unplaced cell answers (-1, -1, 0, 0).
fn row_column_span(ctx: &NodeCtx) -> Result<(i32, i32, i32, i32), CallError> {
    Ok(match placement(ctx) {
        Some((row, column, row_span, column_span)) => (
            to_i32(row),
            to_i32(column),
            to_i32(row_span),
            to_i32(column_span),
        ),
        None => (-1, -1, 0, 0),
    })
}

fn column_header_cells(ctx: &NodeCtx) -> Result<Vec<ObjectRef>, CallError> {
    Ok(header_cells(ctx, true))
}

fn row_header_cells(ctx: &NodeCtx) -> Result<Vec<ObjectRef>, CallError> {
    Ok(header_cells(ctx, false))
}

fn header_cells(ctx: &NodeCtx, columns: bool) -> Vec<ObjectRef> {
    let Some(table) = table_of(&ctx.node) else {
        return Vec::new();
    };
    let grid = Grid::cached(&table, ctx.models());
    let Some(cell) = grid.cell_of(&ctx.node) else {
        return Vec::new();
    };
    let headers: Vec<_> = if columns {
        (cell.column..cell.column + cell.column_span)
            .flat_map(|c| grid.column_headers(c))
            .collect()
    } else {
        (cell.row..cell.row + cell.row_span)
            .flat_map(|r| grid.row_headers(r))
            .collect()
    };
    let mut refs: Vec<ObjectRef> = Vec::new();
    for header in headers {
        let reference = ctx.ref_to(&header.node);
        if header.node.id() != ctx.node.id() && !refs.contains(&reference) {
            refs.push(reference);
        }
    }
    refs
}
