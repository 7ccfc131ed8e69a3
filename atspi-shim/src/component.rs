//! `org.a11y.atspi.Component`: geometry, hit testing, focus and scrolling.
//!
//! Tree bounds are surface-relative. SCREEN adds the compositor's surface
//! origin and scale (coords.rs); WINDOW is the surface-relative box; PARENT
//! is relative to the exposed parent's box (the window for a surface root).

use accesskit::{Action, ActionData, ActionRequest, Point, Rect, Role, ScrollHint, TreeId};
use accesskit_consumer::NodeRef;
use zbus::message::Message;
use zvariant::OwnedValue;

use crate::accessible::no_args;
use crate::context::NodeCtx;
use crate::coords::{screen_to_surface, surface_to_screen, to_xywh, CoordType};
use crate::objects::{self, exposure_filter, Parent};
use crate::paths;
use crate::reply::{args, method_return};
use crate::{CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Component";

/// AT-SPI layers.
const LAYER_WIDGET: u32 = 3;
const LAYER_POPUP: u32 = 5;
const LAYER_WINDOW: u32 = 7;

/// Every exposed object is a Component, as GTK and atk-bridge make every
/// object one: Orca's flat review (`isOnScreen`) and hit testing descend only
/// through objects whose extents they can read, so a bound-less container
/// without Component would hide everything inside it.
pub(crate) fn supported(_ctx: &NodeCtx) -> bool {
    true
}

/// How many descendants a bound-less node may visit to find its extents;
/// beyond it the box is what was found so far. Bound-less wrappers are
/// shallow in practice (a row or group around boxed widgets); the cap keeps a
/// hostile tree of bound-less nodes from making one call O(tree).
const UNION_VISIT_BUDGET: usize = 4096;

pub(crate) fn property(_ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    Err(CallError::UnknownProperty(name.to_owned()))
}

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
    for child in objects::exposed_children(node) {
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
fn to_surface_point(ctx: &NodeCtx, x: i32, y: i32, coord: CoordType) -> Point {
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

pub(crate) fn call(ctx: &NodeCtx, member: &str, call: &Message) -> Result<Handled, CallError> {
    let reply = match member {
        "GetExtents" => {
            let (coord,): (u32,) = args(call)?;
            method_return(call, &(to_xywh(extents(ctx, CoordType::from_u32(coord)?)),))?
        }
        "GetPosition" => {
            let (coord,): (u32,) = args(call)?;
            let (x, y, _, _) = to_xywh(extents(ctx, CoordType::from_u32(coord)?));
            method_return(call, &(x, y))?
        }
        "GetSize" => {
            no_args(call)?;
            let (_, _, w, h) = to_xywh(extents(ctx, CoordType::Screen));
            method_return(call, &(w, h))?
        }
        "Contains" => {
            let (x, y, coord): (i32, i32, u32) = args(call)?;
            let point = to_surface_point(ctx, x, y, CoordType::from_u32(coord)?);
            method_return(call, &(surface_rect(ctx).contains(point),))?
        }
        "GetAccessibleAtPoint" => {
            let (x, y, coord): (i32, i32, u32) = args(call)?;
            let point = to_surface_point(ctx, x, y, CoordType::from_u32(coord)?);
            method_return(call, &(accessible_at_point(ctx, point),))?
        }
        "GetLayer" => {
            no_args(call)?;
            method_return(call, &(layer(ctx),))?
        }
        "GetMDIZOrder" => {
            no_args(call)?;
            let order: i16 = if ctx.node.is_root() { 0 } else { -1 };
            method_return(call, &(order,))?
        }
        "GetAlpha" => {
            no_args(call)?;
            method_return(call, &(1.0f64,))?
        }
        "GrabFocus" => {
            no_args(call)?;
            let reply = method_return(call, &(true,))?;
            return Ok(Handled::with_action(
                reply,
                request(ctx, Action::Focus, None),
            ));
        }
        "ScrollTo" => {
            let (kind,): (u32,) = args(call)?;
            let hint = scroll_hint(kind)?;
            let reply = method_return(call, &(true,))?;
            return Ok(Handled::with_action(
                reply,
                request(
                    ctx,
                    Action::ScrollIntoView,
                    hint.map(ActionData::ScrollHint),
                ),
            ));
        }
        "ScrollToPoint" => {
            let (coord, x, y): (u32, i32, i32) = args(call)?;
            let point = to_surface_point(ctx, x, y, CoordType::from_u32(coord)?);
            let reply = method_return(call, &(true,))?;
            return Ok(Handled::with_action(
                reply,
                request(
                    ctx,
                    Action::ScrollToPoint,
                    Some(ActionData::ScrollToPoint(point)),
                ),
            ));
        }
        "SetExtents" => {
            let _: (i32, i32, i32, i32, u32) = args(call)?;
            method_return(call, &(false,))?
        }
        "SetPosition" => {
            let _: (i32, i32, u32) = args(call)?;
            method_return(call, &(false,))?
        }
        "SetSize" => {
            let _: (i32, i32) = args(call)?;
            method_return(call, &(false,))?
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

/// An action request aimed at the node.
pub(crate) fn request(ctx: &NodeCtx, action: Action, data: Option<ActionData>) -> ActionRequest {
    ActionRequest {
        action,
        target_tree: TreeId::ROOT,
        target_node: ctx.id(),
        data,
    }
}

/// The deepest exposed descendant containing the surface point, searching
/// later children first (they paint on top); null when no descendant does.
fn accessible_at_point(ctx: &NodeCtx, point: Point) -> paths::ObjectRef {
    // Hit testing works in the node's own coordinate space.
    let local = ctx.node.transform().inverse() * point;
    match ctx.node.node_at_point(local, &exposure_filter) {
        Some(hit) if hit.id() != ctx.node.id() => ctx.ref_to(&hit),
        _ => paths::null_ref(),
    }
}

fn layer(ctx: &NodeCtx) -> u32 {
    if ctx.node.is_root() {
        return LAYER_WINDOW;
    }
    match ctx.node.role() {
        Role::Menu | Role::MenuListPopup | Role::Tooltip => LAYER_POPUP,
        _ => LAYER_WIDGET,
    }
}

/// AT-SPI `ScrollType` → AccessKit hint (ANYWHERE = no hint).
fn scroll_hint(kind: u32) -> Result<Option<ScrollHint>, CallError> {
    Ok(match kind {
        0 => Some(ScrollHint::TopLeft),
        1 => Some(ScrollHint::BottomRight),
        2 => Some(ScrollHint::TopEdge),
        3 => Some(ScrollHint::BottomEdge),
        4 => Some(ScrollHint::LeftEdge),
        5 => Some(ScrollHint::RightEdge),
        6 => None,
        other => {
            return Err(CallError::InvalidArgs(format!(
                "scroll type {other} is not one of 0..=6"
            )))
        }
    })
}
