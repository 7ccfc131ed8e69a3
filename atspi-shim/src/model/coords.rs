//! Coordinate conversion. Tree bounds are surface-relative; AT-SPI asks for
//! SCREEN (Orca 43), WINDOW (Orca 51) or PARENT coordinates
//! ([`crate::model::wire::CoordType`]).

use accesskit::Rect;
use newton_push_protocol::Geometry;

/// Converts a surface-relative rect to screen coordinates with the
/// compositor's geometry for that surface.
pub fn surface_to_screen(rect: Rect, geometry: &Geometry) -> Rect {
    let scale = if geometry.scale.is_finite() && geometry.scale > 0.0 {
        geometry.scale
    } else {
        1.0
    };
    Rect {
        x0: f64::from(geometry.x) + rect.x0 * scale,
        y0: f64::from(geometry.y) + rect.y0 * scale,
        x1: f64::from(geometry.x) + rect.x1 * scale,
        y1: f64::from(geometry.y) + rect.y1 * scale,
    }
}

/// Converts a screen point back to surface-relative coordinates.
pub fn screen_to_surface(x: f64, y: f64, geometry: &Geometry) -> (f64, f64) {
    let scale = if geometry.scale.is_finite() && geometry.scale > 0.0 {
        geometry.scale
    } else {
        1.0
    };
    (
        (x - f64::from(geometry.x)) / scale,
        (y - f64::from(geometry.y)) / scale,
    )
}

/// Rounds a rect to AT-SPI's `(x, y, width, height)` integers, saturating
/// NaN and infinities (producers may send them) to 0 / the i32 range.
pub fn to_xywh(rect: Rect) -> (i32, i32, i32, i32) {
    let x = saturate(rect.x0);
    let y = saturate(rect.y0);
    (
        x,
        y,
        saturate(rect.x1 - rect.x0),
        saturate(rect.y1 - rect.y0),
    )
}

fn saturate(value: f64) -> i32 {
    if value.is_nan() {
        0
    } else {
        value
            .round()
            .clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
    }
}
