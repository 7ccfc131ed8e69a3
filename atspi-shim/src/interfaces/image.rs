//! `org.a11y.atspi.Image` for image-like nodes.

use crate::model::context::NodeCtx;
use crate::model::coords::to_xywh;
use crate::model::describe;
use crate::model::error::CallError;
use crate::model::geometry::extents;
use crate::model::names;
use crate::model::wire::CoordType;
use crate::surface::declare_interface;

declare_interface! {
    pub(crate) static IMAGE = names::IMAGE, on node {
        fn GetImageExtents(coord_type: u32 as CoordType) -> (extents: (i32, i32, i32, i32))
            = image_extents;
        fn GetImagePosition(coord_type: u32 as CoordType) -> (x: i32, y: i32) = image_position;
        fn GetImageSize() -> (width: i32, height: i32) = image_size;
        property version: u32 = crate::surface::interface_version;
        property ImageDescription: String = image_description;
        property ImageLocale: String = image_locale;
    }
}

fn image_description(ctx: &NodeCtx) -> Result<String, CallError> {
    Ok(ctx
        .node
        .description()
        .unwrap_or_else(|| describe::name(ctx)))
}

fn image_locale(ctx: &NodeCtx) -> Result<String, CallError> {
    Ok(describe::locale(ctx))
}

fn image_extents(ctx: &NodeCtx, coord: CoordType) -> Result<(i32, i32, i32, i32), CallError> {
    Ok(to_xywh(extents(ctx, coord)))
}

fn image_position(ctx: &NodeCtx, coord: CoordType) -> Result<(i32, i32), CallError> {
    let (x, y, _, _) = image_extents(ctx, coord)?;
    Ok((x, y))
}

fn image_size(ctx: &NodeCtx) -> Result<(i32, i32), CallError> {
    let (_, _, w, h) = to_xywh(extents(ctx, CoordType::Screen));
    Ok((w, h))
}
