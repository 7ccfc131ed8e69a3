//! Text coordinates: surface-relative rectangles to and from the client's
//! coordinate type.

use super::*;

/// Surface-relative rect → `(x, y, w, h)` in the client's coordinate type,
/// with Component's conventions (component.rs): SCREEN applies the
/// compositor's origin and scale, WINDOW is the surface-relative box, PARENT
/// is relative to the parent's box (the window for a tree root).
pub(crate) fn to_client(
    env: &Env,
    node: &NodeRef,
    rect: Rect,
    coord: CoordType,
) -> (i32, i32, i32, i32) {
    let rect = match coord {
        CoordType::Screen => coords::surface_to_screen(rect, &env.geometry),
        CoordType::Window => rect,
        CoordType::Parent => {
            let (x, y) = parent_origin(node);
            Rect::new(rect.x0 - x, rect.y0 - y, rect.x1 - x, rect.y1 - y)
        }
    };
    coords::to_xywh(rect)
}

/// A client point → surface-relative coordinates.
pub(crate) fn from_client(
    env: &Env,
    node: &NodeRef,
    x: i32,
    y: i32,
    coord: CoordType,
) -> (f64, f64) {
    let (x, y) = (f64::from(x), f64::from(y));
    match coord {
        CoordType::Screen => coords::screen_to_surface(x, y, &env.geometry),
        CoordType::Window => (x, y),
        CoordType::Parent => {
            let (px, py) = parent_origin(node);
            (x + px, y + py)
        }
    }
}

/// The origin of PARENT coordinates, surface-relative.
pub(crate) fn parent_origin(node: &NodeRef) -> (f64, f64) {
    if node.is_root() {
        return (0.0, 0.0);
    }
    node.parent()
        .and_then(|parent| parent.bounding_box())
        .map_or((0.0, 0.0), |bounds| (bounds.x0, bounds.y0))
}
