//! `org.a11y.atspi.Image` for image-like nodes.

use accesskit::Role;
use zbus::message::Message;
use zvariant::OwnedValue;

use crate::accessible::{self, no_args};
use crate::component::extents;
use crate::context::NodeCtx;
use crate::coords::{to_xywh, CoordType};
use crate::properties::owned;
use crate::reply::{args, method_return};
use crate::{CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Image";

pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    matches!(
        ctx.node.role(),
        Role::Image | Role::SvgRoot | Role::GraphicsSymbol | Role::Canvas
    )
}

pub(crate) fn property(ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    match name {
        "ImageDescription" => {
            let description = ctx
                .node
                .description()
                .unwrap_or_else(|| accessible::name(ctx));
            owned(description)
        }
        "ImageLocale" => accessible::property(ctx, "Locale"),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}

pub(crate) fn call(ctx: &NodeCtx, member: &str, call: &Message) -> Result<Handled, CallError> {
    let reply = match member {
        "GetImageExtents" => {
            let (coord,): (u32,) = args(call)?;
            method_return(call, &(to_xywh(extents(ctx, CoordType::from_u32(coord)?)),))?
        }
        "GetImagePosition" => {
            let (coord,): (u32,) = args(call)?;
            let (x, y, _, _) = to_xywh(extents(ctx, CoordType::from_u32(coord)?));
            method_return(call, &(x, y))?
        }
        "GetImageSize" => {
            no_args(call)?;
            let (_, _, w, h) = to_xywh(extents(ctx, CoordType::Screen));
            method_return(call, &(w, h))?
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
