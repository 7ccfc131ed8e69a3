//! `org.a11y.atspi.Text`: the methods and properties, answered from the
//! node's text model (`model/text/`, whose documentation says how offsets,
//! boundaries and the two layouts work), and the actions they ask for.

use std::collections::BTreeMap;

use accesskit::{Action, ActionData, ActionRequest, Point, TextSelection};
use accesskit_consumer::NodeRef;
use zvariant::OwnedValue;

use crate::model::actions::action_on;
use crate::model::budgets::bounded_text;
use crate::model::error::CallError;
use crate::model::index::to_i32;
use crate::model::names;
use crate::model::text::*;
#[cfg(test)]
use crate::model::text_env::Env;
use crate::model::text_env::{from_client, require_model, to_client, TextOn};
use crate::model::wire::{CoordType, ScrollType, TextBoundaryType, TextGranularity};
#[cfg(test)]
use crate::surface::reply::Handled;
use crate::surface::{declare_interface, Acted};

#[cfg(test)]
mod tests;

/// Text attributes (`a{ss}`), sorted by name.
type Attributes = BTreeMap<String, String>;
/// A text unit and its offsets: `(text, start, end)`.
type Unit = (String, i32, i32);
/// A box in client coordinates: `(x, y, width, height)`.
type Xywh = (i32, i32, i32, i32);

pub(crate) const INTERFACE: &str = names::TEXT;

declare_interface! {
    pub(crate) static TEXT = INTERFACE, on text, tested through (handle_on, property_on) {
        fn GetStringAtOffset(offset: i32, granularity: u32 as TextGranularity)
            -> (text: String, start_offset: i32, end_offset: i32) = string_at_offset;
        fn GetText(start_offset: i32, end_offset: i32) -> (text: String) = text;
        fn SetCaretOffset(offset: i32) -> (success: bool) = set_caret_offset, acting;
        fn GetTextBeforeOffset(offset: i32, kind: u32 as TextBoundaryType)
            -> (text: String, start_offset: i32, end_offset: i32) = text_before_offset;
        fn GetTextAtOffset(offset: i32, kind: u32 as TextBoundaryType)
            -> (text: String, start_offset: i32, end_offset: i32) = text_at_offset;
        fn GetTextAfterOffset(offset: i32, kind: u32 as TextBoundaryType)
            -> (text: String, start_offset: i32, end_offset: i32) = text_after_offset;
        fn GetCharacterAtOffset(offset: i32) -> (character: i32) = character_at_offset;
        fn GetAttributeValue(offset: i32, attribute_name: String) -> (value: String)
            = attribute_value;
        fn GetAttributes(offset: i32)
            -> (attributes: Attributes, start_offset: i32, end_offset: i32) = attributes;
        fn GetDefaultAttributes() -> (attributes: Attributes) = default_attributes;
        fn GetCharacterExtents(offset: i32, coord_type: u32 as CoordType)
            -> (x: i32, y: i32, width: i32, height: i32) = character_extents;
        fn GetOffsetAtPoint(x: i32, y: i32, coord_type: u32 as CoordType) -> (offset: i32)
            = offset_at_point;
        fn GetNSelections() -> (count: i32) = n_selections;
        fn GetSelection(selection_num: i32) -> (start_offset: i32, end_offset: i32) = selection;
        fn AddSelection(start_offset: i32, end_offset: i32) -> (success: bool)
            = add_selection, acting;
        fn RemoveSelection(selection_num: i32) -> (success: bool) = remove_selection, acting;
        fn SetSelection(selection_num: i32, start_offset: i32, end_offset: i32)
            -> (success: bool) = set_selection, acting;
        fn GetRangeExtents(start_offset: i32, end_offset: i32, coord_type: u32 as CoordType)
            -> (x: i32, y: i32, width: i32, height: i32) = range_extents;
        fn GetBoundedRanges(
            x: i32,
            y: i32,
            width: i32,
            height: i32,
            coord_type: u32 as CoordType,
            x_clip_type: u32,
            y_clip_type: u32,
        ) -> (ranges: Vec<(i32, i32, String, OwnedValue)>) = bounded_ranges;
        fn GetAttributeRun(offset: i32, include_defaults: bool)
            -> (attributes: Attributes, start_offset: i32, end_offset: i32) = attribute_run;
        fn GetDefaultAttributeSet() -> (attributes: Attributes) = default_attributes;
        fn ScrollSubstringTo(start_offset: i32, end_offset: i32, kind: u32 as ScrollType)
            -> (success: bool) = scroll_substring_to, acting;
        fn ScrollSubstringToPoint(
            start_offset: i32,
            end_offset: i32,
            coord_type: u32 as CoordType,
            x: i32,
            y: i32,
        ) -> (success: bool) = scroll_substring_to_point, acting;
        property version: u32 = crate::surface::interface_version;
        property CharacterCount: i32 = character_count;
        property CaretOffset: i32 = caret_offset_property;
    }
}

#[cfg(test)]
pub(crate) fn property_of(node: NodeRef, name: &str) -> Result<OwnedValue, CallError> {
    property_on(
        TextOn {
            env: crate::model::text_env::ENV,
            node,
        },
        name,
    )
}

/// Dispatches one Text method on `node`, as the bus does.
#[cfg(test)]
pub(crate) fn handle(
    env: &Env,
    node: NodeRef,
    member: &str,
    call: &zbus::Message,
) -> Result<Handled, CallError> {
    handle_on(TextOn { env: *env, node }, member, call)
}

/// The node's text model (kept per surface state when known).
fn model(on: TextOn) -> Result<TextModel, CallError> {
    require_model(&on.env, on.node)
}

fn character_count(on: TextOn) -> Result<i32, CallError> {
    Ok(to_i32(model(on)?.len()))
}

fn caret_offset_property(on: TextOn) -> Result<i32, CallError> {
    Ok(model(on)?.caret().map_or(-1, to_i32))
}

fn text(on: TextOn, start: i32, end: i32) -> Result<String, CallError> {
    Ok(bounded_text(model(on)?.get_text(start, end)))
}

fn text_unit(on: TextOn, offset: i32, boundary: Boundary, which: Which) -> Result<Unit, CallError> {
    let (unit, start, end) = model(on)?.unit(offset, boundary, which);
    Ok((bounded_text(unit), start, end))
}

fn text_before_offset(on: TextOn, offset: i32, kind: TextBoundaryType) -> Result<Unit, CallError> {
    text_unit(on, offset, kind.into(), Which::Before)
}

fn text_at_offset(on: TextOn, offset: i32, kind: TextBoundaryType) -> Result<Unit, CallError> {
    text_unit(on, offset, kind.into(), Which::At)
}

fn text_after_offset(on: TextOn, offset: i32, kind: TextBoundaryType) -> Result<Unit, CallError> {
    text_unit(on, offset, kind.into(), Which::After)
}

fn string_at_offset(
    on: TextOn,
    offset: i32,
    granularity: TextGranularity,
) -> Result<Unit, CallError> {
    text_unit(on, offset, granularity.into(), Which::At)
}

/// The code point at `offset`, 0 outside the text.
fn character_at_offset(on: TextOn, offset: i32) -> Result<i32, CallError> {
    Ok(model(on)?.char_at(offset).map_or(0, |c| c as i32))
}

fn set_caret_offset(on: TextOn, offset: i32) -> Result<Acted<bool>, CallError> {
    let model = model(on)?;
    let selection = model
        .offset(offset)
        .and_then(|o| model.selection_between(o, o));
    Ok(with_selection(
        model.selection_source().unwrap_or(on.node),
        selection,
    ))
}

fn n_selections(on: TextOn) -> Result<i32, CallError> {
    Ok(i32::from(model(on)?.selection().is_some()))
}

fn selection(on: TextOn, number: i32) -> Result<(i32, i32), CallError> {
    Ok(match (number, model(on)?.selection()) {
        (0, Some((start, end))) => (to_i32(start), to_i32(end)),
        _ => (-1, -1),
    })
}

/// One selection only (AccessKit has one): adding succeeds only when there
/// is none yet.
fn add_selection(on: TextOn, start: i32, end: i32) -> Result<Acted<bool>, CallError> {
    let model = model(on)?;
    let selection = if model.selection().is_some() {
        None
    } else {
        model.selection_for(start, end)
    };
    Ok(with_selection(
        model.selection_source().unwrap_or(on.node),
        selection,
    ))
}

fn remove_selection(on: TextOn, number: i32) -> Result<Acted<bool>, CallError> {
    let model = model(on)?;
    let selection = match (number, model.selection(), model.caret()) {
        (0, Some(_), Some(caret)) => model.selection_between(caret, caret),
        _ => None,
    };
    Ok(with_selection(
        model.selection_source().unwrap_or(on.node),
        selection,
    ))
}

fn set_selection(on: TextOn, number: i32, start: i32, end: i32) -> Result<Acted<bool>, CallError> {
    let model = model(on)?;
    let selection = if number == 0 {
        model.selection_for(start, end)
    } else {
        None
    };
    Ok(with_selection(
        model.selection_source().unwrap_or(on.node),
        selection,
    ))
}

fn attributes(on: TextOn, offset: i32) -> Result<(Attributes, i32, i32), CallError> {
    Ok(model(on)?.attribute_run(offset, false))
}

fn attribute_run(
    on: TextOn,
    offset: i32,
    include_defaults: bool,
) -> Result<(Attributes, i32, i32), CallError> {
    Ok(model(on)?.attribute_run(offset, include_defaults))
}

fn attribute_value(on: TextOn, offset: i32, name: String) -> Result<String, CallError> {
    let (attributes, _, _) = model(on)?.attribute_run(offset, true);
    Ok(attributes.get(&name).cloned().unwrap_or_default())
}

fn default_attributes(on: TextOn) -> Result<Attributes, CallError> {
    model(on)?;
    Ok(attributes_of(&on.node, &on.node))
}

fn character_extents(on: TextOn, offset: i32, coord: CoordType) -> Result<Xywh, CallError> {
    let model = model(on)?;
    let rect = model.character_rect(offset);
    Ok(rect.map_or((0, 0, 0, 0), |r| to_client(&on.env, &on.node, r, coord)))
}

fn range_extents(on: TextOn, start: i32, end: i32, coord: CoordType) -> Result<Xywh, CallError> {
    let model = model(on)?;
    let rect = model.range_rect(start, end);
    Ok(rect.map_or((0, 0, 0, 0), |r| to_client(&on.env, &on.node, r, coord)))
}

fn offset_at_point(on: TextOn, x: i32, y: i32, coord: CoordType) -> Result<i32, CallError> {
    let model = model(on)?;
    let point = from_client(&on.env, &on.node, x, y, coord);
    Ok(model.offset_at_point(point).map_or(-1, to_i32))
}

/// Not implemented: no known client uses it; an empty list is the answer
/// atk-bridge gives for toolkits without it.
#[allow(clippy::too_many_arguments)] // the wire method's seven arguments
fn bounded_ranges(
    on: TextOn,
    _x: i32,
    _y: i32,
    _width: i32,
    _height: i32,
    _coord: CoordType,
    _x_clip: u32,
    _y_clip: u32,
) -> Result<Vec<(i32, i32, String, OwnedValue)>, CallError> {
    model(on)?;
    Ok(Vec::new())
}

fn scroll_substring_to(
    on: TextOn,
    start: i32,
    end: i32,
    kind: ScrollType,
) -> Result<Acted<bool>, CallError> {
    let model = model(on)?;
    let hint = kind.hint();
    let target = model.scroll_target(start, end, hint);
    let action = target.map(|node| {
        action_on(
            &node,
            Action::ScrollIntoView,
            hint.map(ActionData::ScrollHint),
        )
    });
    Ok(with_action(action))
}

fn scroll_substring_to_point(
    on: TextOn,
    start: i32,
    end: i32,
    coord: CoordType,
    x: i32,
    y: i32,
) -> Result<Acted<bool>, CallError> {
    let model = model(on)?;
    let (sx, sy) = from_client(&on.env, &on.node, x, y, coord);
    let target = model.scroll_target(start, end, None);
    let action = target.map(|node| {
        action_on(
            &node,
            Action::ScrollToPoint,
            Some(ActionData::ScrollToPoint(Point::new(sx, sy))),
        )
    });
    Ok(with_action(action))
}

/// True with the `SetTextSelection` request when `selection` is known,
/// else false.
fn with_selection(node: NodeRef, selection: Option<TextSelection>) -> Acted<bool> {
    let action = selection.map(|s| {
        action_on(
            &node,
            Action::SetTextSelection,
            Some(ActionData::SetTextSelection(s)),
        )
    });
    with_action(action)
}

/// True with the request when there is one, else false.
fn with_action(action: Option<ActionRequest>) -> Acted<bool> {
    match action {
        Some(action) => Acted::with(true, action),
        None => Acted::without(false),
    }
}
