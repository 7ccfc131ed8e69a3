//! `org.a11y.atspi.Component`: geometry, hit testing, focus and scrolling.
//!
//! Tree bounds are surface-relative. SCREEN adds the compositor's surface
//! origin and scale (coords.rs); WINDOW is the surface-relative box; PARENT
//! is relative to the exposed parent's box (the window for a surface root).

use crate::model::actions::request;
use crate::model::context::NodeCtx;
use crate::model::coords::to_xywh;
use crate::model::error::CallError;
use crate::model::exposure::exposure_filter;
use crate::model::geometry::{extents, surface_rect, to_surface_point};
use crate::model::names;
use crate::model::paths::{self, ObjectRef};
use crate::model::wire::{CoordType, Layer, ScrollType};
use crate::surface::{declare_interface, Acted};
use accesskit::{Action, ActionData, Point, Role};
use accesskit_consumer::NodeRef;

declare_interface! {
    pub(crate) static COMPONENT = names::COMPONENT, on node {
        fn Contains(x: i32, y: i32, coord_type: u32 as CoordType) -> (contains: bool) = contains;
        fn GetAccessibleAtPoint(x: i32, y: i32, coord_type: u32 as CoordType) -> (object: ObjectRef)
            = object_at_point, heavy over crate::model::objects::tree_work;
        fn GetExtents(coord_type: u32 as CoordType) -> (extents: (i32, i32, i32, i32))
            = extents_in;
        fn GetPosition(coord_type: u32 as CoordType) -> (x: i32, y: i32) = position;
        fn GetSize() -> (width: i32, height: i32) = size;
        fn GetLayer() -> (layer: u32) = layer;
        fn GetMDIZOrder() -> (order: i16) = mdi_z_order;
        fn GrabFocus() -> (success: bool) = grab_focus, acting;
        fn GetAlpha() -> (alpha: f64) = alpha;
        fn SetExtents(
            x: i32,
            y: i32,
            width: i32,
            height: i32,
            coord_type: u32 as CoordType,
        ) -> (success: bool) = set_extents;
        fn SetPosition(x: i32, y: i32, coord_type: u32 as CoordType) -> (success: bool)
            = set_position;
        fn SetSize(width: i32, height: i32) -> (success: bool) = set_size;
        fn ScrollTo(kind: u32 as ScrollType) -> (success: bool) = scroll_to, acting;
        fn ScrollToPoint(coord_type: u32 as CoordType, x: i32, y: i32) -> (success: bool)
            = scroll_to_point, acting;
        property version: u32 = crate::surface::interface_version;
    }
}

fn extents_in(ctx: &NodeCtx, coord: CoordType) -> Result<(i32, i32, i32, i32), CallError> {
    Ok(to_xywh(extents(ctx, coord)))
}

fn position(ctx: &NodeCtx, coord: CoordType) -> Result<(i32, i32), CallError> {
    let (x, y, _, _) = extents_in(ctx, coord)?;
    Ok((x, y))
}

fn size(ctx: &NodeCtx) -> Result<(i32, i32), CallError> {
    let (_, _, w, h) = to_xywh(extents(ctx, CoordType::Screen));
    Ok((w, h))
}

fn contains(ctx: &NodeCtx, x: i32, y: i32, coord: CoordType) -> Result<bool, CallError> {
    let point = to_surface_point(ctx, x, y, coord);
    Ok(surface_rect(ctx).contains(point))
}

fn object_at_point(
    ctx: &NodeCtx,
    x: i32,
    y: i32,
    coord: CoordType,
) -> Result<ObjectRef, CallError> {
    let point = to_surface_point(ctx, x, y, coord);
    Ok(accessible_at_point(ctx, point))
}

fn mdi_z_order(ctx: &NodeCtx) -> Result<i16, CallError> {
    Ok(if ctx.node.is_root() { 0 } else { -1 })
}

fn alpha(_ctx: &NodeCtx) -> Result<f64, CallError> {
    Ok(1.0)
}

fn grab_focus(ctx: &NodeCtx) -> Result<Acted<bool>, CallError> {
    Ok(Acted::with(true, request(ctx, Action::Focus, None)))
}

fn scroll_to(ctx: &NodeCtx, kind: ScrollType) -> Result<Acted<bool>, CallError> {
    let data = kind.hint().map(ActionData::ScrollHint);
    Ok(Acted::with(
        true,
        request(ctx, Action::ScrollIntoView, data),
    ))
}

fn scroll_to_point(
    ctx: &NodeCtx,
    coord: CoordType,
    x: i32,
    y: i32,
) -> Result<Acted<bool>, CallError> {
    let point = to_surface_point(ctx, x, y, coord);
    let data = Some(ActionData::ScrollToPoint(point));
    Ok(Acted::with(true, request(ctx, Action::ScrollToPoint, data)))
}

/// Moving and resizing belong to the application and the compositor: false.
fn set_extents(
    _ctx: &NodeCtx,
    _x: i32,
    _y: i32,
    _width: i32,
    _height: i32,
    _coord: CoordType,
) -> Result<bool, CallError> {
    Ok(false)
}

fn set_position(_ctx: &NodeCtx, _x: i32, _y: i32, _coord: CoordType) -> Result<bool, CallError> {
    Ok(false)
}

fn set_size(_ctx: &NodeCtx, _width: i32, _height: i32) -> Result<bool, CallError> {
    Ok(false)
}

/// The deepest exposed descendant containing the surface point, searching
/// later children first (they paint on top); null when no descendant does.
fn accessible_at_point(ctx: &NodeCtx, point: Point) -> ObjectRef {
    // Hit testing works in the node's own coordinate space.
    let local = ctx.node.transform().inverse() * point;
    match ctx.node.node_at_point(local, &exposure_filter) {
        Some(hit) if hit.id() != ctx.node.id() => ctx.ref_to(&hit),
        _ => paths::null_ref(),
    }
}

fn layer(ctx: &NodeCtx) -> Result<u32, CallError> {
    Ok(layer_of(&ctx.node).wire())
}

/// A surface root is a window; menus and tooltips pop up over the widgets.
fn layer_of(node: &NodeRef) -> Layer {
    if node.is_root() {
        return Layer::Window;
    }
    match node.role() {
        Role::Menu | Role::MenuListPopup | Role::Tooltip => Layer::Popup,
        _ => Layer::Widget,
    }
}
