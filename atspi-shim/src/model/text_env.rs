//! Where a text lives: what the Text family (Text, EditableText,
//! Hypertext, Hyperlink, Document) needs besides the node, its layout, and
//! its text model as kept for the surface state.

use accesskit::Rect;
use accesskit_consumer::NodeRef;
use newton_push_protocol::{Geometry, SurfaceId};

use crate::model::context::NodeCtx;
use crate::model::coords;
use crate::model::derived::ModelsAt;
use crate::model::describe::toolkit_name;
use crate::model::error::CallError;
use crate::model::names;
use crate::model::text::{has_block_text, plain_text_of, TextLayout, TextModel};
use crate::model::wire::CoordType;

/// Where the node lives: what a handler needs besides the node itself.
/// Built from a [`NodeCtx`]; tests build it directly.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Env<'a> {
    pub unique_name: &'a str,
    pub surface: SurfaceId,
    pub geometry: Geometry,
    /// Where the surface state's text models are kept (`crate::model::derived`);
    /// `None` builds the model afresh.
    pub models: Option<ModelsAt<'a>>,
    /// Inline or per block, as the application's producer calls for.
    pub layout: TextLayout,
}

impl<'a> Env<'a> {
    pub(crate) fn of(ctx: &NodeCtx<'a>) -> Self {
        Env {
            unique_name: ctx.app.unique_name,
            surface: ctx.surface.id(),
            geometry: ctx.surface.geometry(),
            models: Some(ctx.models()),
            layout: layout_of(ctx),
        }
    }
}

/// A text-family handler's receiver: the node and where it lives. Tests
/// build it from a bare tree (`Env` without a replica).
#[derive(Clone, Copy)]
pub(crate) struct TextOn<'a> {
    pub env: Env<'a>,
    pub node: NodeRef<'a>,
}

impl<'a> TextOn<'a> {
    pub(crate) fn of(ctx: &NodeCtx<'a>) -> Self {
        TextOn {
            env: Env::of(ctx),
            node: ctx.node,
        }
    }
}

/// The text layout of the node's application (`blocks.rs`).
pub(crate) fn layout_of(ctx: &NodeCtx) -> TextLayout {
    TextLayout::for_toolkit(toolkit_name(ctx.app))
}

/// Whether `node` exposes Text in `layout` (see `text/mod.rs`).
pub(crate) fn has_text(node: &NodeRef, layout: TextLayout) -> bool {
    if layout.is_block_text(node) {
        return has_block_text(node);
    }
    node.supports_text_ranges() || plain_text_of(node).is_some()
}

/// A text input the user may edit.
pub(crate) fn is_editable(node: &NodeRef) -> bool {
    node.is_text_input() && !node.is_read_only_or_disabled()
}

/// The text AT-SPI exposes for `node` ("" when it has no Text). Used by
/// EditableText.
pub(crate) fn text_of(node: &NodeRef) -> String {
    TextModel::of(*node, TextLayout::Inline)
        .map(|model| model.text.clone())
        .unwrap_or_default()
}

/// `node`'s text model, from the surface state's kept models when given.
pub(crate) fn model_at<'a>(env: &Env, node: NodeRef<'a>) -> Option<TextModel<'a>> {
    match env.models {
        Some(models) => TextModel::cached(node, env.layout, models),
        None => TextModel::of(node, env.layout),
    }
}

pub(crate) fn require_model<'a>(env: &Env, node: NodeRef<'a>) -> Result<TextModel<'a>, CallError> {
    model_at(env, node).ok_or_else(|| {
        CallError::NotSupported(format!(
            "this {:?} node has no text; query Text only on objects that list {}",
            node.role(),
            names::TEXT
        ))
    })
}

/// Text coordinates: surface-relative rectangles to and from the client's
/// coordinate type, with the environment's geometry.
/// A surface-relative rect → `(x, y, w, h)` in the client's coordinate type,
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

/// The environment of the unit tests' texts: an inline layout, no kept
/// models.
#[cfg(test)]
pub(crate) const ENV: Env<'static> = Env {
    unique_name: ":1.42",
    surface: SurfaceId(7),
    geometry: crate::model::fixtures::GEOMETRY,
    models: None,
    layout: TextLayout::Inline,
};
