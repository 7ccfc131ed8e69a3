//! `org.a11y.atspi.TableCell` on cells inside a table (see `table.rs` for
//! how positions are computed).

use zbus::message::Message;
use zvariant::OwnedValue;

use crate::accessible::no_args;
use crate::context::NodeCtx;
use crate::objects::to_i32;
use crate::paths::ObjectRef;
use crate::properties::{owned, owned_ref};
use crate::reply::method_return;
use crate::table::{is_cell, table_of, Grid};
use crate::{CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.TableCell";
pub(crate) const PROPERTIES: &[&str] = &["ColumnSpan", "RowSpan", "Position", "Table"];

pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    is_cell(&ctx.node) && table_of(&ctx.node).is_some()
}

/// (row, column, row span, column span) of the cell, if it is placed.
fn placement(ctx: &NodeCtx) -> Option<(usize, usize, usize, usize)> {
    let table = table_of(&ctx.node)?;
    let grid = Grid::cached(&table, ctx.surface.generation());
    grid.cell_of(&ctx.node)
        .map(|c| (c.row, c.column, c.row_span, c.column_span))
}

/// The cell's index in its table's `Table.GetIndexAt` numbering
/// (`row * NColumns + column`), if the table places it inside its grid.
pub(crate) fn table_index(ctx: &NodeCtx) -> Option<usize> {
    let table = table_of(&ctx.node)?;
    let grid = Grid::cached(&table, ctx.surface.generation());
    let cell = grid.cell_of(&ctx.node)?;
    (cell.row < grid.row_count && cell.column < grid.column_count).then(|| {
        cell.row
            .saturating_mul(grid.column_count)
            .saturating_add(cell.column)
    })
}

pub(crate) fn property(ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    let (row, column, row_span, column_span) = placement(ctx).unwrap_or((0, 0, 1, 1));
    match name {
        "ColumnSpan" => owned(to_i32(column_span)),
        "RowSpan" => owned(to_i32(row_span)),
        "Position" => owned(zvariant::Structure::from((to_i32(row), to_i32(column)))),
        "Table" => {
            let table = table_of(&ctx.node)
                .ok_or_else(|| CallError::Failed("this cell is in no table".to_owned()))?;
            owned_ref(ctx.ref_to(&table))
        }
        "version" => owned(1u32),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}

pub(crate) fn call(ctx: &NodeCtx, member: &str, call: &Message) -> Result<Handled, CallError> {
    let reply = match member {
        // `(iiii)`, not the `(biiii)` of xml/TableCell.xml: libatspi reads
        // "=>iiii" and atk-bridge sends four INT32, so a leading boolean makes
        // every libatspi client fail with a signature mismatch.
        "GetRowColumnSpan" => {
            no_args(call)?;
            let (row, column, row_span, column_span) = match placement(ctx) {
                Some((row, column, row_span, column_span)) => (
                    to_i32(row),
                    to_i32(column),
                    to_i32(row_span),
                    to_i32(column_span),
                ),
                None => (-1, -1, 0, 0),
            };
            method_return(call, &(row, column, row_span, column_span))?
        }
        "GetColumnHeaderCells" | "GetRowHeaderCells" => {
            no_args(call)?;
            method_return(
                call,
                &(header_cells(ctx, member == "GetColumnHeaderCells"),),
            )?
        }
        _ => {
            return Err(CallError::UnknownMethod {
                interface: INTERFACE.to_owned(),
                member: member.to_owned(),
            })
        }
    };
    Ok(Handled::reply(reply))
}

fn header_cells(ctx: &NodeCtx, columns: bool) -> Vec<ObjectRef> {
    let Some(table) = table_of(&ctx.node) else {
        return Vec::new();
    };
    let grid = Grid::cached(&table, ctx.surface.generation());
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
