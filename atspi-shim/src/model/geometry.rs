//! Where an object is: its box in surface coordinates and in the
//! coordinates a client asks for (Component, Image, bounds-changed events).
//!
//! Tree bounds are surface-relative. SCREEN adds the compositor's surface
//! origin and scale (coords.rs); WINDOW is the surface-relative box; PARENT
//! is relative to the exposed parent's box (the window for a surface root).

use accesskit::{Point, Rect};
use accesskit_consumer::NodeRef;

use crate::model::context::NodeCtx;
use crate::model::coords::{screen_to_surface, surface_to_screen};
use crate::model::exposure;
use crate::model::objects::{self, Parent};
use crate::model::wire::CoordType;

/// How many descendants a bound-less node may visit to find its extents;
/// beyond it the box is what was found so far. Bound-less wrappers are
/// shallow in practice (a row or group around boxed widgets); the cap keeps a
/// hostile tree of bound-less nodes from making one call O(tree).
const UNION_VISIT_BUDGET: usize = 4096;

/// The node's surface-relative box. A root without bounds covers the
/// surface; any other node without bounds encloses its exposed descendants'
/// boxes (as a toolkit container's allocation does), or is an empty box at
/// the surface origin when none of them has one.
pub(crate) fn surface_rect(ctx: &NodeCtx) -> Rect {
    if let Some(rect) = ctx.node.bounding_box() {
        return rect;
    }
    if ctx.node.is_root() {
        return surface_box(ctx);
    }
    let mut budget = UNION_VISIT_BUDGET;
    descendants_box(&ctx.node, &mut budget).unwrap_or(Rect::ZERO)
}

fn surface_box(ctx: &NodeCtx) -> Rect {
    let g = ctx.surface.geometry();
    let scale = if g.scale.is_finite() && g.scale > 0.0 {
        g.scale
    } else {
        1.0
    };
    Rect::new(
        0.0,
        0.0,
        f64::from(g.width) / scale,
        f64::from(g.height) / scale,
    )
}

/// The union of the boxes of `node`'s exposed descendants, descending only
/// through children that have no box of their own.
fn descendants_box(node: &NodeRef, budget: &mut usize) -> Option<Rect> {
    let mut union: Option<Rect> = None;
    for child in exposure::exposed_children(node) {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let child_box = child
            .bounding_box()
            .or_else(|| descendants_box(&child, budget));
        if let Some(rect) = child_box {
            union = Some(union.map_or(rect, |u| u.union(rect)));
        }
    }
    union
}

/// The origin PARENT coordinates are relative to, in surface coordinates.
fn parent_origin(ctx: &NodeCtx) -> (f64, f64) {
    match objects::parent(ctx) {
        Parent::Node(node) => {
            let rect = surface_rect(&ctx.with_node(node));
            (rect.x0, rect.y0)
        }
        Parent::AppRoot => (0.0, 0.0),
    }
}

/// The node's box in the requested coordinates.
pub(crate) fn extents(ctx: &NodeCtx, coord: CoordType) -> Rect {
    let rect = surface_rect(ctx);
    match coord {
        CoordType::Screen => surface_to_screen(rect, &ctx.surface.geometry()),
        CoordType::Window => rect,
        CoordType::Parent => {
            let (x, y) = parent_origin(ctx);
            Rect::new(rect.x0 - x, rect.y0 - y, rect.x1 - x, rect.y1 - y)
        }
    }
}

/// A client point converted to surface coordinates.
pub(crate) fn to_surface_point(ctx: &NodeCtx, x: i32, y: i32, coord: CoordType) -> Point {
    let (x, y) = (f64::from(x), f64::from(y));
    match coord {
        CoordType::Screen => {
            let (sx, sy) = screen_to_surface(x, y, &ctx.surface.geometry());
            Point::new(sx, sy)
        }
        CoordType::Window => Point::new(x, y),
        CoordType::Parent => {
            let (px, py) = parent_origin(ctx);
            Point::new(x + px, y + py)
        }
    }
}
