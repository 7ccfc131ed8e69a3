//! The Text methods and properties: decoding a call, answering it from the
//! text model, routing the actions it asks for.

use std::collections::HashMap;

use super::*;
use crate::surface::declare_interface;

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Text";

declare_interface! {
    pub(crate) static TEXT = INTERFACE, on node forwarding to (call, property) {
        fn GetStringAtOffset(offset: i32, granularity: u32)
            -> (text: String, start_offset: i32, end_offset: i32);
        fn GetText(start_offset: i32, end_offset: i32) -> (text: String);
        fn SetCaretOffset(offset: i32) -> (success: bool);
        fn GetTextBeforeOffset(offset: i32, kind: u32)
            -> (text: String, start_offset: i32, end_offset: i32);
        fn GetTextAtOffset(offset: i32, kind: u32)
            -> (text: String, start_offset: i32, end_offset: i32);
        fn GetTextAfterOffset(offset: i32, kind: u32)
            -> (text: String, start_offset: i32, end_offset: i32);
        fn GetCharacterAtOffset(offset: i32) -> (character: i32);
        fn GetAttributeValue(offset: i32, attribute_name: String) -> (value: String);
        fn GetAttributes(offset: i32)
            -> (attributes: HashMap<String, String>, start_offset: i32, end_offset: i32);
        fn GetDefaultAttributes() -> (attributes: HashMap<String, String>);
        fn GetCharacterExtents(offset: i32, coord_type: u32)
            -> (x: i32, y: i32, width: i32, height: i32);
        fn GetOffsetAtPoint(x: i32, y: i32, coord_type: u32) -> (offset: i32);
        fn GetNSelections() -> (count: i32);
        fn GetSelection(selection_num: i32) -> (start_offset: i32, end_offset: i32);
        fn AddSelection(start_offset: i32, end_offset: i32) -> (success: bool);
        fn RemoveSelection(selection_num: i32) -> (success: bool);
        fn SetSelection(selection_num: i32, start_offset: i32, end_offset: i32)
            -> (success: bool);
        fn GetRangeExtents(start_offset: i32, end_offset: i32, coord_type: u32)
            -> (x: i32, y: i32, width: i32, height: i32);
        fn GetBoundedRanges(
            x: i32,
            y: i32,
            width: i32,
            height: i32,
            coord_type: u32,
            x_clip_type: u32,
            y_clip_type: u32,
        ) -> (ranges: Vec<(i32, i32, String, OwnedValue)>);
        fn GetAttributeRun(offset: i32, include_defaults: bool)
            -> (attributes: HashMap<String, String>, start_offset: i32, end_offset: i32);
        fn GetDefaultAttributeSet() -> (attributes: HashMap<String, String>);
        fn ScrollSubstringTo(start_offset: i32, end_offset: i32, kind: u32) -> (success: bool);
        fn ScrollSubstringToPoint(
            start_offset: i32,
            end_offset: i32,
            coord_type: u32,
            x: i32,
            y: i32,
        ) -> (success: bool);
        property CharacterCount: i32;
        property CaretOffset: i32;
    }
}

/// Character AccessKit uses to mask password characters.
pub(crate) const MASK: char = '\u{2022}';

/// Where the node lives: what a handler needs besides the node itself.
/// Built from a [`NodeCtx`]; tests build it directly.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Env<'a> {
    pub unique_name: &'a str,
    pub surface: SurfaceId,
    pub geometry: Geometry,
    /// The surface's replica generation, which keys the text-model cache;
    /// `None` builds the model afresh.
    pub generation: Option<u64>,
}

impl<'a> Env<'a> {
    pub(crate) fn of(ctx: &NodeCtx<'a>) -> Self {
        Env {
            unique_name: ctx.app.unique_name,
            surface: ctx.surface.id(),
            geometry: ctx.surface.geometry(),
            generation: Some(ctx.surface.generation()),
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

/// Whether this node gets the Text interface.
pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    has_text(&ctx.node)
}

/// Whether `node` exposes Text (see the module doc).
pub(crate) fn has_text(node: &NodeRef) -> bool {
    node.supports_text_ranges() || plain_text_of(node).is_some()
}

pub(crate) fn call(
    ctx: &NodeCtx,
    member: &str,
    call: &zbus::Message,
) -> Result<Handled, CallError> {
    handle(&Env::of(ctx), ctx.node, member, call)
}

pub(crate) fn property(ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    property_in(Some(ctx.surface.generation()), ctx.node, name)
}

/// The text AT-SPI exposes for `node` ("" when it has no Text). Used by
/// the event code for text-changed events and by EditableText.
#[allow(dead_code)]
pub fn text_of(node: &NodeRef) -> String {
    TextModel::of(*node)
        .map(|model| model.text.clone())
        .unwrap_or_default()
}

/// The caret offset in code points, when the node has a caret. Used by
/// the event code (text-caret-moved); allowed unused until it is wired.
#[allow(dead_code)]
pub fn caret_offset(node: &NodeRef) -> Option<i32> {
    let model = TextModel::of(*node)?;
    model.caret().map(to_i32)
}

#[cfg(test)]
pub(crate) fn property_of(node: NodeRef, name: &str) -> Result<OwnedValue, CallError> {
    property_in(None, node, name)
}

pub(crate) fn property_in(
    generation: Option<u64>,
    node: NodeRef,
    name: &str,
) -> Result<OwnedValue, CallError> {
    let model = require_model(generation, node)?;
    match name {
        "CharacterCount" => Ok(OwnedValue::from(to_i32(model.len()))),
        "CaretOffset" => Ok(OwnedValue::from(model.caret().map_or(-1, to_i32))),
        other => Err(CallError::UnknownProperty(format!("{INTERFACE}.{other}"))),
    }
}

/// Dispatches one Text method on `node`.
pub(crate) fn handle(
    env: &Env,
    node: NodeRef,
    member: &str,
    call: &zbus::Message,
) -> Result<Handled, CallError> {
    let model = require_model(env.generation, node)?;
    match member {
        "GetText" => {
            let (start, end) = args::<(i32, i32)>(call)?;
            ok(call, &bounded_text(model.get_text(start, end)))
        }
        "GetTextAtOffset" | "GetTextBeforeOffset" | "GetTextAfterOffset" => {
            let (offset, kind) = args::<(i32, u32)>(call)?;
            let boundary = Boundary::from_boundary_type(kind)?;
            let which = match member {
                "GetTextBeforeOffset" => Which::Before,
                "GetTextAtOffset" => Which::At,
                _ => Which::After,
            };
            let (unit, start, end) = model.unit(offset, boundary, which);
            ok(call, &(bounded_text(unit), start, end))
        }
        "GetStringAtOffset" => {
            let (offset, granularity) = args::<(i32, u32)>(call)?;
            let boundary = Boundary::from_granularity(granularity)?;
            let (unit, start, end) = model.unit(offset, boundary, Which::At);
            ok(call, &(bounded_text(unit), start, end))
        }
        "GetCharacterAtOffset" => {
            let (offset,) = args::<(i32,)>(call)?;
            let ch = model.char_at(offset).map_or(0, |c| c as i32);
            ok(call, &ch)
        }
        "SetCaretOffset" => {
            let (offset,) = args::<(i32,)>(call)?;
            let selection = model
                .offset(offset)
                .and_then(|o| model.selection_between(o, o));
            answer_with_selection(call, node, selection)
        }
        "GetNSelections" => {
            let count = i32::from(model.selection().is_some());
            ok(call, &count)
        }
        "GetSelection" => {
            let (number,) = args::<(i32,)>(call)?;
            let range = match (number, model.selection()) {
                (0, Some((start, end))) => (to_i32(start), to_i32(end)),
                _ => (-1, -1),
            };
            ok(call, &range)
        }
        "AddSelection" => {
            let (start, end) = args::<(i32, i32)>(call)?;
            // One selection only (AccessKit has one): adding succeeds
            // only when there is none yet.
            let selection = if model.selection().is_some() {
                None
            } else {
                model.selection_for(start, end)
            };
            answer_with_selection(call, node, selection)
        }
        "RemoveSelection" => {
            let (number,) = args::<(i32,)>(call)?;
            let selection = match (number, model.selection(), model.caret()) {
                (0, Some(_), Some(caret)) => model.selection_between(caret, caret),
                _ => None,
            };
            answer_with_selection(call, node, selection)
        }
        "SetSelection" => {
            let (number, start, end) = args::<(i32, i32, i32)>(call)?;
            let selection = if number == 0 {
                model.selection_for(start, end)
            } else {
                None
            };
            answer_with_selection(call, node, selection)
        }
        "GetAttributes" => {
            let (offset,) = args::<(i32,)>(call)?;
            let run = model.attribute_run(offset, false);
            ok(call, &run)
        }
        "GetAttributeRun" => {
            let (offset, include_defaults) = args::<(i32, bool)>(call)?;
            let run = model.attribute_run(offset, include_defaults);
            ok(call, &run)
        }
        "GetAttributeValue" => {
            let (offset, name) = args::<(i32, String)>(call)?;
            let (attributes, _, _) = model.attribute_run(offset, true);
            let value = attributes.get(&name).cloned().unwrap_or_default();
            ok(call, &value)
        }
        "GetDefaultAttributes" | "GetDefaultAttributeSet" => {
            let defaults = attributes_of(&node, &node);
            ok(call, &defaults)
        }
        "GetCharacterExtents" => {
            let (offset, coord) = args::<(i32, u32)>(call)?;
            let coord = CoordType::from_u32(coord)?;
            let rect = model.character_rect(offset);
            let xywh = rect.map_or((0, 0, 0, 0), |r| to_client(env, &node, r, coord));
            ok(call, &xywh)
        }
        "GetRangeExtents" => {
            let (start, end, coord) = args::<(i32, i32, u32)>(call)?;
            let coord = CoordType::from_u32(coord)?;
            let rect = model.range_rect(start, end);
            let xywh = rect.map_or((0, 0, 0, 0), |r| to_client(env, &node, r, coord));
            ok(call, &xywh)
        }
        "GetOffsetAtPoint" => {
            let (x, y, coord) = args::<(i32, i32, u32)>(call)?;
            let coord = CoordType::from_u32(coord)?;
            let point = from_client(env, &node, x, y, coord);
            let offset = model.offset_at_point(point).map_or(-1, to_i32);
            ok(call, &offset)
        }
        "GetBoundedRanges" => {
            // Not implemented: no known client uses it; an empty list is
            // the answer atk-bridge gives for toolkits without it.
            let _ = args::<(i32, i32, i32, i32, u32, u32, u32)>(call)?;
            let ranges: Vec<(i32, i32, String, zvariant::Value)> = Vec::new();
            ok(call, &ranges)
        }
        "ScrollSubstringTo" => {
            let (start, end, kind) = args::<(i32, i32, u32)>(call)?;
            let hint = scroll_hint(kind)?;
            let target = model.scroll_target(start, end, hint);
            let action = target.map(|node| {
                action_on(
                    &node,
                    Action::ScrollIntoView,
                    hint.map(ActionData::ScrollHint),
                )
            });
            answer_with_action(call, action)
        }
        "ScrollSubstringToPoint" => {
            let (start, end, coord, x, y) = args::<(i32, i32, u32, i32, i32)>(call)?;
            let coord = CoordType::from_u32(coord)?;
            let (sx, sy) = from_client(env, &node, x, y, coord);
            let target = model.scroll_target(start, end, None);
            let action = target.map(|node| {
                action_on(
                    &node,
                    Action::ScrollToPoint,
                    Some(ActionData::ScrollToPoint(Point::new(sx, sy))),
                )
            });
            answer_with_action(call, action)
        }
        other => Err(CallError::UnknownMethod {
            interface: INTERFACE.into(),
            member: other.into(),
        }),
    }
}

pub(crate) fn ok<B>(call: &zbus::Message, body: &B) -> Result<Handled, CallError>
where
    B: serde::Serialize + zvariant::DynamicType,
{
    method_return(call, body).map(Handled::reply)
}

/// `node`'s text model, from the cache when the surface generation is known.
pub(crate) fn model_at(generation: Option<u64>, node: NodeRef) -> Option<TextModel> {
    match generation {
        Some(generation) => TextModel::cached(node, generation),
        None => TextModel::of(node),
    }
}

pub(crate) fn require_model(
    generation: Option<u64>,
    node: NodeRef,
) -> Result<TextModel, CallError> {
    model_at(generation, node).ok_or_else(|| {
        CallError::NotSupported(format!(
            "this {:?} node has no text; query Text only on objects that list {INTERFACE}",
            node.role()
        ))
    })
}

/// Replies `true` and routes `SetTextSelection` when `selection` is known,
/// else replies `false`.
pub(crate) fn answer_with_selection(
    call: &zbus::Message,
    node: NodeRef,
    selection: Option<TextSelection>,
) -> Result<Handled, CallError> {
    let action = selection.map(|s| {
        action_on(
            &node,
            Action::SetTextSelection,
            Some(ActionData::SetTextSelection(s)),
        )
    });
    answer_with_action(call, action)
}

pub(crate) fn answer_with_action(
    call: &zbus::Message,
    action: Option<ActionRequest>,
) -> Result<Handled, CallError> {
    let reply = method_return(call, &action.is_some())?;
    Ok(match action {
        Some(action) => Handled::with_action(reply, action),
        None => Handled::reply(reply),
    })
}

/// An action request aimed at `node` in its own tree.
pub(crate) fn action_on(node: &NodeRef, action: Action, data: Option<ActionData>) -> ActionRequest {
    let (target_node, target_tree) = node.locate();
    ActionRequest {
        action,
        target_tree,
        target_node,
        data,
    }
}

pub(crate) fn scroll_hint(kind: u32) -> Result<Option<ScrollHint>, CallError> {
    Ok(Some(match kind {
        0 => ScrollHint::TopLeft,
        1 => ScrollHint::BottomRight,
        2 => ScrollHint::TopEdge,
        3 => ScrollHint::BottomEdge,
        4 => ScrollHint::LeftEdge,
        5 => ScrollHint::RightEdge,
        6 => return Ok(None),
        other => {
            return Err(CallError::InvalidArgs(format!(
                "scroll type {other} is not one of TOP_LEFT (0) … ANYWHERE (6)"
            )))
        }
    }))
}

pub(crate) fn to_i32(value: usize) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}
