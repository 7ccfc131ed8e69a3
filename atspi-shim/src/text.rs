//! `org.a11y.atspi.Text`, answered from the replica.
//!
//! Every answer is computed on a [`TextModel`]: the node's text flattened
//! once per call into a string with a code-point index, because AT-SPI
//! offsets count **code points** while AccessKit positions count its own
//! "characters" (grapheme clusters, `character_lengths`) inside each text
//! run. Boundaries (words, sentences, lines, paragraphs) are sets of
//! code-point offsets on that model, so every query is a pure function of
//! the model and cannot panic whatever offset or boundary an AT sends.
//!
//! Which nodes have Text ([`supported`]):
//! * nodes where `supports_text_ranges()` holds (text inputs, labels,
//!   documents and terminals with `TextRun` children): the text is the
//!   concatenation of the runs, exactly as AccessKit's document range;
//! * text inputs and labels **without** runs ("plain string" backend): the
//!   text is the node's `value` (a label without a value falls back to its
//!   `label`), so static text and simple producers still read well in Orca.
//!   The plain backend has no caret, selection or per-character geometry:
//!   CaretOffset is -1, SetCaretOffset/selection setters answer false.
//!
//! Documented choices:
//! * Out-of-range offsets give atk's "nothing" answer, not an error:
//!   `("", -1, -1)` for the Get*Offset family, `""` for GetText, `0` for
//!   GetCharacterAtOffset, zero rectangles for extents. An unknown boundary
//!   type, granularity, coordinate type or scroll type is InvalidArgs.
//! * `offset == CharacterCount` is valid: CHAR gives `("", n, n)`; the other
//!   boundaries give the unit that ends the text (the last line, as GTK's
//!   pango code does, so Orca can speak the line at an end-of-text caret).
//! * Words come from the runs' `word_starts` (AccessKit convention: a word
//!   includes its trailing whitespace). When no run carries any, word
//!   starts are derived from whitespace. Password inputs have no words.
//! * Sentences are approximated (AccessKit has no sentence boundaries): a
//!   sentence ends after `.`, `!`, `?`, `…` (and CJK equivalents) plus any
//!   closing quotes/brackets when followed by whitespace, and at every
//!   paragraph break.
//! * Lines start at runs without `previous_on_line` and after hard breaks;
//!   paragraphs start after `\n` / U+2029.
//! * No U+FFFC is inserted: AccessKit inlines the text of links and other
//!   inline children as runs, so their text is part of the parent's text
//!   (see `hypertext.rs`).
//! * Password inputs expose the masked text AccessKit would expose (one
//!   U+2022 per character unless the producer already masked it).
//! * GetAttributeValue returns just `s` (what atk-bridge sends and libatspi
//!   reads), not the `sib` of the XML, and looks at the effective
//!   attributes (defaults included).

use std::collections::BTreeMap;
use std::sync::Arc;

use accesskit::{
    Action, ActionData, ActionRequest, NodeId, Point, Rect, Role, ScrollHint, TextDecorationStyle,
    TextDirection, TextPosition, TextSelection, TreeId, VerticalOffset,
};
use accesskit_consumer::{FilterResult, NodeRef};
use newton_push_protocol::{Geometry, SurfaceId};
use zvariant::OwnedValue;

use crate::budgets::bounded_text;
use crate::coords::{self, CoordType};
use crate::reply::{args, method_return};
use crate::{CallError, Handled, NodeCtx};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Text";
/// Property names, for `GetAll` and introspection.
pub(crate) const PROPERTIES: &[&str] = &["CharacterCount", "CaretOffset"];

/// Character AccessKit uses to mask password characters.
const MASK: char = '\u{2022}';

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

fn property_in(
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

fn ok<B>(call: &zbus::Message, body: &B) -> Result<Handled, CallError>
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

fn require_model(generation: Option<u64>, node: NodeRef) -> Result<TextModel, CallError> {
    model_at(generation, node).ok_or_else(|| {
        CallError::NotSupported(format!(
            "this {:?} node has no text; query Text only on objects that list {INTERFACE}",
            node.role()
        ))
    })
}

/// Replies `true` and routes `SetTextSelection` when `selection` is known,
/// else replies `false`.
fn answer_with_selection(
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

fn answer_with_action(
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

fn scroll_hint(kind: u32) -> Result<Option<ScrollHint>, CallError> {
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

// ---------------------------------------------------------------------------
// Coordinates

/// Surface-relative rect → `(x, y, w, h)` in the client's coordinate type,
/// with Component's conventions (component.rs): SCREEN applies the
/// compositor's origin and scale, WINDOW is the surface-relative box, PARENT
/// is relative to the parent's box (the window for a tree root).
fn to_client(env: &Env, node: &NodeRef, rect: Rect, coord: CoordType) -> (i32, i32, i32, i32) {
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
fn from_client(env: &Env, node: &NodeRef, x: i32, y: i32, coord: CoordType) -> (f64, f64) {
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
fn parent_origin(node: &NodeRef) -> (f64, f64) {
    if node.is_root() {
        return (0.0, 0.0);
    }
    node.parent()
        .and_then(|parent| parent.bounding_box())
        .map_or((0.0, 0.0), |bounds| (bounds.x0, bounds.y0))
}

// ---------------------------------------------------------------------------
// Boundaries

/// A unit of text an AT asks for: the boundary types of
/// GetText{Before,At,After}Offset and the granularities of GetStringAtOffset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Boundary {
    Char,
    WordStart,
    WordEnd,
    SentenceStart,
    SentenceEnd,
    LineStart,
    LineEnd,
    Paragraph,
}

impl Boundary {
    /// AT-SPI `TextBoundaryType`.
    pub(crate) fn from_boundary_type(value: u32) -> Result<Self, CallError> {
        Ok(match value {
            0 => Boundary::Char,
            1 => Boundary::WordStart,
            2 => Boundary::WordEnd,
            3 => Boundary::SentenceStart,
            4 => Boundary::SentenceEnd,
            5 => Boundary::LineStart,
            6 => Boundary::LineEnd,
            other => {
                return Err(CallError::InvalidArgs(format!(
                    "boundary type {other} is not one of CHAR (0), WORD_START (1), WORD_END (2), \
                     SENTENCE_START (3), SENTENCE_END (4), LINE_START (5), LINE_END (6)"
                )))
            }
        })
    }

    /// AT-SPI `TextGranularity`; each maps to the `_START` boundary, as
    /// atk documents `get_string_at_offset`.
    pub(crate) fn from_granularity(value: u32) -> Result<Self, CallError> {
        Ok(match value {
            0 => Boundary::Char,
            1 => Boundary::WordStart,
            2 => Boundary::SentenceStart,
            3 => Boundary::LineStart,
            4 => Boundary::Paragraph,
            other => {
                return Err(CallError::InvalidArgs(format!(
                    "granularity {other} is not one of CHAR (0), WORD (1), SENTENCE (2), LINE (3), \
                     PARAGRAPH (4)"
                )))
            }
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    Before,
    At,
    After,
}

/// The unit containing `offset` given sorted cut points that include 0:
/// from the last point at or before `offset` to the next point (or the end).
fn unit_at(points: &[usize], len: usize, offset: usize) -> (usize, usize) {
    let after = points.partition_point(|&p| p <= offset);
    let start = after
        .checked_sub(1)
        .and_then(|i| points.get(i))
        .copied()
        .unwrap_or(0);
    let end = points
        .get(after)
        .copied()
        .unwrap_or(len)
        .clamp(start, len.max(start));
    (start, end)
}

fn unit_before(points: &[usize], len: usize, offset: usize) -> (usize, usize) {
    let (start, _) = unit_at(points, len, offset);
    if start == 0 {
        return (0, 0);
    }
    let before = points.partition_point(|&p| p < start);
    let previous = before
        .checked_sub(1)
        .and_then(|i| points.get(i))
        .copied()
        .unwrap_or(0);
    (previous, start)
}

fn unit_after(points: &[usize], len: usize, offset: usize) -> (usize, usize) {
    let (_, end) = unit_at(points, len, offset);
    if end >= len {
        return (len, len);
    }
    let (_, next) = unit_at(points, len, end);
    (end, next)
}

fn char_unit(len: usize, offset: usize, which: Which) -> (usize, usize) {
    match which {
        Which::At => (offset.min(len), (offset + 1).min(len)),
        Which::Before if offset == 0 => (0, 0),
        Which::Before => (offset - 1, offset.min(len)),
        Which::After if offset + 1 >= len => (len, len),
        Which::After => (offset + 1, offset + 2),
    }
}

fn is_paragraph_break(c: char) -> bool {
    matches!(c, '\n' | '\u{2029}')
}

fn is_hard_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{2028}' | '\u{2029}' | '\u{000b}' | '\u{000c}' | '\u{0085}'
    )
}

fn is_sentence_terminal(c: char) -> bool {
    matches!(
        c,
        '.' | '!'
            | '?'
            | '\u{2026}'
            | '\u{3002}'
            | '\u{ff01}'
            | '\u{ff1f}'
            | '\u{203c}'
            | '\u{2047}'
            | '\u{2048}'
            | '\u{2049}'
    )
}

fn is_sentence_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | ')'
            | ']'
            | '}'
            | '\u{201d}'
            | '\u{2019}'
            | '\u{00bb}'
            | '\u{300d}'
            | '\u{300f}'
    )
}

fn sorted_unique(mut points: Vec<usize>) -> Vec<usize> {
    points.sort_unstable();
    points.dedup();
    points
}

// ---------------------------------------------------------------------------
// The model

/// One `TextRun` as placed in the flattened text.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    /// The text run's node id (resolve it with [`TextModel::run_node`]).
    pub node: NodeId,
    /// Code-point offsets of the run in the whole text.
    pub start: usize,
    pub end: usize,
    /// Global code-point offset at which each AccessKit character starts.
    pub clusters: Vec<usize>,
}

/// A node's text flattened for code-point arithmetic.
pub(crate) struct TextModel<'a> {
    pub root: NodeRef<'a>,
    data: Arc<TextData>,
}

impl std::ops::Deref for TextModel<'_> {
    type Target = TextData;
    fn deref(&self) -> &TextData {
        &self.data
    }
}

/// A cached model's key: the surface generation and the text's node.
type ModelKey = (u64, NodeId);

thread_local! {
    /// The text model built last on this thread, with its key: Orca asks
    /// many questions of one text between two commits.
    static LAST_MODEL: std::cell::RefCell<Option<(ModelKey, Arc<TextData>)>> =
        const { std::cell::RefCell::new(None) };
}

/// The node-independent part of a [`TextModel`]: owned, so it can be kept
/// between calls while the surface does not change (building it is
/// O(whole text), and Orca asks many questions of one text in a row).
pub(crate) struct TextData {
    pub text: String,
    /// Byte index of every code point, followed by `text.len()`.
    bytes: Vec<usize>,
    /// The code points of `text`, for boundary scans.
    chars: Vec<char>,
    /// Empty for the plain-string backend.
    pub runs: Vec<Run>,
    /// Word starts the producer supplied; `None` when no run has any.
    producer_words: Option<Vec<usize>>,
    /// Offsets where a run without `previous_on_line` starts.
    run_line_starts: Vec<usize>,
    /// Each boundary's sorted cut points, computed on first use: they are
    /// O(whole text) to find, and Orca asks for words and lines of one
    /// text many times between two commits.
    boundary_points: BoundaryPoints,
    /// The text's links, computed on first use (`hypertext::link_index`):
    /// O(runs × depth) to find, and Orca's braille asks for every link of
    /// the focused text one by one.
    pub(crate) link_index: std::sync::OnceLock<crate::hypertext::LinkIndex>,
}

/// Lazily computed cut points, one slot per [`Boundary`] except `Char`.
#[derive(Default)]
struct BoundaryPoints {
    slots: [std::sync::OnceLock<Vec<usize>>; 7],
}

impl BoundaryPoints {
    fn slot(&self, boundary: Boundary) -> Option<&std::sync::OnceLock<Vec<usize>>> {
        let index = match boundary {
            Boundary::Char => return None,
            Boundary::WordStart => 0,
            Boundary::WordEnd => 1,
            Boundary::SentenceStart => 2,
            Boundary::SentenceEnd => 3,
            Boundary::LineStart => 4,
            Boundary::LineEnd => 5,
            Boundary::Paragraph => 6,
        };
        self.slots.get(index)
    }
}

/// The string a node without text runs exposes, if it exposes Text at all.
fn plain_text_of(node: &NodeRef) -> Option<String> {
    if node.supports_text_ranges() {
        return None;
    }
    let data = node.data();
    if node.is_text_input() {
        let value = data.value().unwrap_or_default();
        return Some(if node.is_password_input() {
            masked_plain(value)
        } else {
            value.to_string()
        });
    }
    if node.role() == Role::Label {
        return data.value().or_else(|| data.label()).map(str::to_string);
    }
    None
}

/// AccessKit's masking rule: mask unless every character is the same (the
/// producer already masked it).
fn masked_plain(value: &str) -> String {
    if has_distinct(value.chars()) {
        value.chars().map(|_| MASK).collect()
    } else {
        value.to_string()
    }
}

fn has_distinct<T: PartialEq>(mut items: impl Iterator<Item = T>) -> bool {
    match items.next() {
        Some(first) => items.any(|item| item != first),
        None => false,
    }
}

/// The `TextRun` nodes making up `node`'s text, in order, as
/// accesskit_consumer collects them (other descendants are looked through).
pub(crate) fn text_runs<'a>(
    node: &NodeRef<'a>,
) -> impl DoubleEndedIterator<Item = NodeRef<'a>> + use<'a> {
    node.filtered_children(|child: &NodeRef| {
        if child.role() == Role::TextRun {
            FilterResult::Include
        } else {
            FilterResult::ExcludeNode
        }
    })
}

/// The AccessKit characters of one run as string slices. Stops at the
/// first length that does not fit the value (the validator rejects such
/// runs; this keeps a bad one from panicking).
fn run_clusters<'a>(run: &NodeRef<'a>) -> Vec<&'a str> {
    let data = run.data();
    let value = data.value().unwrap_or_default();
    let mut clusters = Vec::with_capacity(data.character_lengths().len());
    let mut at = 0usize;
    for &length in data.character_lengths() {
        let end = at + usize::from(length);
        match value.get(at..end) {
            Some(cluster) => clusters.push(cluster),
            None => break,
        }
        at = end;
    }
    clusters
}

impl<'a> TextModel<'a> {
    /// The model of `node`'s text, or `None` when it has no Text.
    pub(crate) fn of(node: NodeRef<'a>) -> Option<Self> {
        if node.supports_text_ranges() {
            return Some(Self::from_runs(node));
        }
        plain_text_of(&node).map(|text| Self::plain(node, text))
    }

    fn plain(root: NodeRef<'a>, text: String) -> Self {
        let mut bytes: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        bytes.push(text.len());
        let data = TextData {
            chars: text.chars().collect(),
            text,
            bytes,
            runs: Vec::new(),
            producer_words: None,
            run_line_starts: vec![0],
            boundary_points: BoundaryPoints::default(),
            link_index: std::sync::OnceLock::new(),
        };
        TextModel {
            root,
            data: Arc::new(data),
        }
    }

    fn from_runs(root: NodeRef<'a>) -> Self {
        let pieces: Vec<(NodeRef<'a>, Vec<&'a str>)> = text_runs(&root)
            .map(|run| (run, run_clusters(&run)))
            .collect();
        let masked = root.is_password_input()
            && has_distinct(pieces.iter().flat_map(|(_, clusters)| clusters.iter()));
        let mut model = TextData {
            text: String::new(),
            bytes: Vec::new(),
            chars: Vec::new(),
            runs: Vec::with_capacity(pieces.len()),
            producer_words: None,
            run_line_starts: Vec::new(),
            boundary_points: BoundaryPoints::default(),
            link_index: std::sync::OnceLock::new(),
        };
        let mut words = Vec::new();
        let mut any_words = false;
        for (node, clusters) in pieces {
            let run = model.push_run(node.locate().0, &clusters, masked);
            if node.data().previous_on_line().is_none() {
                model.run_line_starts.push(run.start);
            }
            if !root.is_password_input() {
                let starts = node.data().word_starts();
                any_words |= !starts.is_empty();
                words.extend(
                    starts
                        .iter()
                        .filter_map(|&i| run.clusters.get(usize::from(i)).copied()),
                );
            }
            model.runs.push(run);
        }
        model.bytes.push(model.text.len());
        model.producer_words = any_words.then_some(words);
        TextModel {
            root,
            data: Arc::new(model),
        }
    }

    /// The model of `node`'s text at replica `generation`, reusing the last
    /// one this thread built when neither changed. Generations are unique
    /// across surfaces and commits (see `SurfaceReplica::generation`), so a
    /// hit is always the same tree state.
    pub(crate) fn cached(node: NodeRef<'a>, generation: u64) -> Option<Self> {
        let key = (generation, node.locate().0);
        let hit = LAST_MODEL.with(|last| {
            last.borrow()
                .as_ref()
                .filter(|(k, _)| *k == key)
                .map(|(_, data)| Arc::clone(data))
        });
        if let Some(data) = hit {
            return Some(TextModel { root: node, data });
        }
        let model = Self::of(node)?;
        LAST_MODEL.with(|last| *last.borrow_mut() = Some((key, Arc::clone(&model.data))));
        Some(model)
    }

    /// The node of one of this text's runs.
    pub(crate) fn run_node(&self, run: &Run) -> Option<NodeRef<'a>> {
        self.root
            .tree_state
            .node_by_tree_local_id(run.node, TreeId::ROOT)
    }
}

impl TextData {
    fn push_run(&mut self, node: NodeId, clusters: &[&str], masked: bool) -> Run {
        let start = self.bytes.len();
        let mut starts = Vec::with_capacity(clusters.len());
        for cluster in clusters {
            starts.push(self.bytes.len());
            if masked {
                self.bytes.push(self.text.len());
                self.text.push(MASK);
                self.chars.push(MASK);
            } else {
                for c in cluster.chars() {
                    self.bytes.push(self.text.len());
                    self.text.push(c);
                    self.chars.push(c);
                }
            }
        }
        Run {
            node,
            start,
            end: self.bytes.len(),
            clusters: starts,
        }
    }
}

impl<'a> TextModel<'a> {
    /// Length in code points.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len().saturating_sub(1)
    }

    /// `offset` as a valid position `0..=len`.
    pub(crate) fn offset(&self, offset: i32) -> Option<usize> {
        usize::try_from(offset).ok().filter(|&o| o <= self.len())
    }

    /// The text between two code-point offsets (clamped, never panics).
    pub(crate) fn slice(&self, start: usize, end: usize) -> &str {
        let byte = |o: usize| self.bytes.get(o.min(self.len())).copied().unwrap_or(0);
        self.text
            .get(byte(start)..byte(end.max(start)))
            .unwrap_or_default()
    }

    fn chars(&self) -> &[char] {
        &self.chars
    }

    /// atk's `get_text`: `end == -1` means the end; a negative start, an
    /// end before the start or a start past the end give "".
    pub(crate) fn get_text(&self, start: i32, end: i32) -> String {
        let len = self.len();
        let Some(start) = usize::try_from(start).ok().filter(|&s| s <= len) else {
            return String::new();
        };
        let end = match end {
            -1 => len,
            e if e < 0 => return String::new(),
            e => usize::try_from(e).map_or(len, |e| e.min(len)),
        };
        if end < start {
            return String::new();
        }
        self.slice(start, end).to_string()
    }

    pub(crate) fn char_at(&self, offset: i32) -> Option<char> {
        self.chars.get(usize::try_from(offset).ok()?).copied()
    }

    /// One Get*Offset answer: `(text, start, end)`, `("", -1, -1)` for an
    /// offset outside `0..=len`.
    pub(crate) fn unit(&self, offset: i32, boundary: Boundary, which: Which) -> (String, i32, i32) {
        let Some(offset) = self.offset(offset) else {
            return (String::new(), -1, -1);
        };
        let (start, end) = self.unit_range(offset, boundary, which);
        (
            self.slice(start, end).to_string(),
            to_i32(start),
            to_i32(end),
        )
    }

    pub(crate) fn unit_range(
        &self,
        offset: usize,
        boundary: Boundary,
        which: Which,
    ) -> (usize, usize) {
        let len = self.len();
        if boundary == Boundary::Char {
            return char_unit(len, offset, which);
        }
        let points = self.points(boundary);
        match which {
            Which::At => unit_at(points, len, offset),
            Which::Before => unit_before(points, len, offset),
            Which::After => unit_after(points, len, offset),
        }
    }

    /// Sorted cut points for `boundary`, always including 0; computed once
    /// per model (the model is shared while its surface does not change).
    fn points(&self, boundary: Boundary) -> &[usize] {
        match self.data.boundary_points.slot(boundary) {
            Some(slot) => slot.get_or_init(|| self.compute_points(boundary)),
            // Characters need no cut points: `unit_range` answers them directly.
            None => &[],
        }
    }

    fn compute_points(&self, boundary: Boundary) -> Vec<usize> {
        let mut points = match boundary {
            Boundary::Char => (0..=self.len()).collect(),
            Boundary::WordStart => self.word_starts(),
            Boundary::WordEnd => self.word_ends(),
            Boundary::SentenceStart => self.sentences().0,
            Boundary::SentenceEnd => self.sentences().1,
            Boundary::LineStart => self.line_starts(),
            Boundary::LineEnd => self.line_ends(),
            Boundary::Paragraph => self.paragraph_starts(),
        };
        points.push(0);
        sorted_unique(points)
    }

    pub(crate) fn paragraph_starts(&self) -> Vec<usize> {
        let mut starts = vec![0];
        starts.extend(
            self.chars()
                .iter()
                .enumerate()
                .filter(|(_, &c)| is_paragraph_break(c))
                .map(|(i, _)| i + 1),
        );
        starts
    }

    pub(crate) fn line_starts(&self) -> Vec<usize> {
        let chars = self.chars();
        let mut starts = self.run_line_starts.clone();
        for (i, &c) in chars.iter().enumerate() {
            // "\r\n" is one break: the line starts after the "\n".
            let crlf = c == '\r' && chars.get(i + 1) == Some(&'\n');
            if is_hard_line_break(c) && !crlf {
                starts.push(i + 1);
            }
        }
        sorted_unique(starts)
    }

    /// Line ends: each line start minus the hard break before it, plus the end.
    pub(crate) fn line_ends(&self) -> Vec<usize> {
        let chars = self.chars();
        let mut ends: Vec<usize> = self
            .line_starts()
            .into_iter()
            .filter(|&start| start > 0)
            .map(|start| {
                let mut end = start;
                if end > 0 && chars.get(end - 1).is_some_and(|&c| is_hard_line_break(c)) {
                    end -= 1;
                    if end > 0 && chars.get(end) == Some(&'\n') && chars.get(end - 1) == Some(&'\r')
                    {
                        end -= 1;
                    }
                }
                end
            })
            .collect();
        ends.push(self.len());
        sorted_unique(ends)
    }

    pub(crate) fn word_starts(&self) -> Vec<usize> {
        let mut starts = self.paragraph_starts();
        if self.root.is_password_input() {
            return starts;
        }
        match &self.producer_words {
            Some(words) => starts.extend(words.iter().copied()),
            None => {
                let chars = self.chars();
                starts.extend((1..chars.len()).filter(|&i| {
                    chars.get(i).is_some_and(|c| !c.is_whitespace())
                        && chars.get(i - 1).is_some_and(|c| c.is_whitespace())
                }));
            }
        }
        sorted_unique(starts)
    }

    /// A word ends where its trailing whitespace starts; whitespace-only
    /// words (leading indentation) have no end.
    pub(crate) fn word_ends(&self) -> Vec<usize> {
        let chars = self.chars();
        let mut starts = self.word_starts();
        starts.push(self.len());
        let starts = sorted_unique(starts);
        starts
            .windows(2)
            .filter_map(|pair| {
                let (start, mut end) = (pair[0], pair[1]);
                while end > start && chars.get(end - 1).is_some_and(|c| c.is_whitespace()) {
                    end -= 1;
                }
                (end > start).then_some(end)
            })
            .collect()
    }

    /// Approximate sentence (starts, ends); see the module doc.
    pub(crate) fn sentences(&self) -> (Vec<usize>, Vec<usize>) {
        let chars = self.chars();
        let n = chars.len();
        let (mut starts, mut ends) = (vec![0], Vec::new());
        let mut content = false;
        let mut i = 0;
        while i < n {
            let c = chars.get(i).copied().unwrap_or(' ');
            if is_paragraph_break(c) {
                if content {
                    ends.push(i);
                }
                starts.push(i + 1);
                content = false;
                i += 1;
            } else if is_sentence_terminal(c) {
                let mut j = i + 1;
                while j < n
                    && chars
                        .get(j)
                        .is_some_and(|&c| is_sentence_terminal(c) || is_sentence_closer(c))
                {
                    j += 1;
                }
                let followed_by_space = chars
                    .get(j)
                    .is_some_and(|&c| c.is_whitespace() && !is_paragraph_break(c));
                if j >= n || followed_by_space {
                    ends.push(j);
                    content = false;
                    let mut k = j;
                    while k < n
                        && chars
                            .get(k)
                            .is_some_and(|&c| c.is_whitespace() && !is_paragraph_break(c))
                    {
                        k += 1;
                    }
                    if k < n && !chars.get(k).is_some_and(|&c| is_paragraph_break(c)) {
                        starts.push(k);
                    }
                    i = k;
                } else {
                    content = true;
                    i = j;
                }
            } else {
                content |= !c.is_whitespace();
                i += 1;
            }
        }
        ends.push(n);
        (sorted_unique(starts), sorted_unique(ends))
    }

    // -- caret and selection -------------------------------------------------

    /// Code-point offset of an AccessKit text position inside this text.
    pub(crate) fn offset_of(&self, position: &TextPosition) -> Option<usize> {
        let run = self.runs.iter().find(|run| run.node == position.node)?;
        Some(
            run.clusters
                .get(position.character_index)
                .copied()
                .unwrap_or(run.end),
        )
    }

    /// The AccessKit position at a code-point offset: the character that
    /// contains it, at a run boundary the start of the following run, at
    /// the very end the end of the last run.
    pub(crate) fn position_at(&self, offset: usize) -> Option<TextPosition> {
        let run = self
            .runs
            .iter()
            .find(|run| run.start <= offset && offset < run.end)
            .or_else(|| self.runs.iter().rev().find(|run| run.end <= offset))?;
        let index = run
            .clusters
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        let character_index = if offset >= run.end {
            run.clusters.len()
        } else {
            index
        };
        Some(TextPosition {
            node: run.node,
            character_index,
        })
    }

    fn raw_selection(&self) -> Option<(usize, usize)> {
        let selection = self.root.data().text_selection()?;
        Some((
            self.offset_of(&selection.anchor)?,
            self.offset_of(&selection.focus)?,
        ))
    }

    /// The caret (the selection's focus), if the node has one.
    pub(crate) fn caret(&self) -> Option<usize> {
        self.raw_selection().map(|(_, focus)| focus)
    }

    /// The selected range `(start, end)`, when it is not empty.
    pub(crate) fn selection(&self) -> Option<(usize, usize)> {
        let (anchor, focus) = self.raw_selection()?;
        (anchor != focus).then(|| (anchor.min(focus), anchor.max(focus)))
    }

    /// A selection from code-point offsets given by a client; `None` when
    /// either is out of range or the node has no runs.
    pub(crate) fn selection_for(&self, start: i32, end: i32) -> Option<TextSelection> {
        self.selection_between(self.offset(start)?, self.offset(end)?)
    }

    pub(crate) fn selection_between(&self, anchor: usize, focus: usize) -> Option<TextSelection> {
        Some(TextSelection {
            anchor: self.position_at(anchor)?,
            focus: self.position_at(focus)?,
        })
    }

    // -- attributes ------------------------------------------------------------

    /// `(attributes, start, end)` of the attribute run containing `offset`
    /// (`-1` = the caret). Without defaults, attributes equal to the
    /// node's defaults are left out, as atk's run attributes are.
    pub(crate) fn attribute_run(
        &self,
        offset: i32,
        include_defaults: bool,
    ) -> (BTreeMap<String, String>, i32, i32) {
        let offset = if offset == -1 {
            Some(self.caret().unwrap_or(0))
        } else {
            self.offset(offset)
        };
        let Some(offset) = offset else {
            return (BTreeMap::new(), -1, -1);
        };
        let defaults = attributes_of(&self.root, &self.root);
        let spans = self.attribute_spans();
        let span = spans
            .iter()
            .find(|(start, end, _)| *start <= offset && offset < *end)
            .or_else(|| spans.last().filter(|(_, end, _)| *end <= offset));
        let Some((start, end, attributes)) = span else {
            let all = if include_defaults {
                defaults
            } else {
                BTreeMap::new()
            };
            return (all, 0, to_i32(self.len()));
        };
        let mut result = if include_defaults {
            defaults.clone()
        } else {
            BTreeMap::new()
        };
        for (name, value) in attributes {
            if include_defaults || defaults.get(name) != Some(value) {
                result.insert(name.clone(), value.clone());
            }
        }
        (result, to_i32(*start), to_i32(*end))
    }

    /// Maximal spans of equal attributes: runs merged with their
    /// neighbours when nothing differs.
    fn attribute_spans(&self) -> Vec<(usize, usize, BTreeMap<String, String>)> {
        let mut spans: Vec<(usize, usize, BTreeMap<String, String>)> = Vec::new();
        for run in self.runs.iter().filter(|run| run.end > run.start) {
            let Some(node) = self.run_node(run) else {
                continue;
            };
            let attributes = attributes_of(&node, &self.root);
            match spans.last_mut() {
                Some(last) if last.2 == attributes && last.1 == run.start => last.1 = run.end,
                _ => spans.push((run.start, run.end, attributes)),
            }
        }
        spans
    }

    // -- geometry ------------------------------------------------------------------

    /// Surface-relative bounds of `[start, end)`; `None` without per-character
    /// geometry or for a bad range.
    fn bounds(&self, start: usize, end: usize) -> Option<Rect> {
        if self.runs.is_empty() || start > end || end > self.len() {
            return None;
        }
        let root = self.root;
        let first = root.text_position_from_global_usv_index(start)?;
        let mut range = first.to_degenerate_range();
        if end > start {
            let last = root
                .text_position_from_global_usv_index(end)?
                .biased_to_end();
            range.set_end(last);
        }
        range.bounding_boxes().into_iter().reduce(|a, b| a.union(b))
    }

    /// Extents of the character at `offset`; at the end of the text, the
    /// zero-width caret box there.
    pub(crate) fn character_rect(&self, offset: i32) -> Option<Rect> {
        let offset = self.offset(offset)?;
        self.bounds(offset, (offset + 1).min(self.len()))
    }

    /// atk's `get_range_extents`: nothing for a negative start or an empty
    /// or reversed range; the end is clamped to the text.
    pub(crate) fn range_rect(&self, start: i32, end: i32) -> Option<Rect> {
        let start = usize::try_from(start).ok().filter(|&s| s < self.len())?;
        let end = usize::try_from(end)
            .ok()
            .filter(|&e| e > start)?
            .min(self.len());
        self.bounds(start, end)
    }

    /// The offset of the character under a surface-relative point; `None`
    /// when the point is outside the node or there is no geometry.
    pub(crate) fn offset_at_point(&self, (x, y): (f64, f64)) -> Option<usize> {
        // Without per-character geometry the consumer would answer the end
        // of the text for any point; atk's answer for "unknown" is -1.
        let has_geometry = self
            .runs
            .iter()
            .filter_map(|run| self.run_node(run))
            .any(|node| {
                node.data().character_positions().is_some() && node.data().bounds().is_some()
            });
        if !has_geometry {
            return None;
        }
        let point = Point::new(x, y);
        if !self
            .root
            .bounding_box()
            .is_some_and(|bounds| bounds.contains(point))
        {
            return None;
        }
        let local = self.root.transform().inverse() * point;
        let position = self.root.text_position_at_point(local);
        let offset = self.offset_of(&position.to_raw())?;
        Some(offset)
    }

    /// The node to scroll for `ScrollSubstring*`: the run holding the start
    /// (the end for bottom/right hints), or the node itself without runs.
    pub(crate) fn scroll_target(
        &self,
        start: i32,
        end: i32,
        hint: Option<ScrollHint>,
    ) -> Option<NodeRef<'a>> {
        let (start, end) = (self.offset(start)?, self.offset(end)?);
        if self.runs.is_empty() {
            return Some(self.root);
        }
        let toward_end = matches!(
            hint,
            Some(ScrollHint::BottomRight | ScrollHint::BottomEdge | ScrollHint::RightEdge)
        );
        let offset = if toward_end {
            end.max(start).saturating_sub(1)
        } else {
            start.min(end)
        };
        let position = self.position_at(offset)?;
        self.runs
            .iter()
            .find(|run| run.node == position.node)
            .and_then(|run| self.run_node(run))
    }
}

// ---------------------------------------------------------------------------
// Attributes

/// ATK text attributes of `node` (a run, or the text root for defaults),
/// from AccessKit's inherited text properties. Spelling and grammar flags
/// are looked up from `node` up to `root`.
pub(crate) fn attributes_of(node: &NodeRef, root: &NodeRef) -> BTreeMap<String, String> {
    let mut attributes = BTreeMap::new();
    let mut put = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            attributes.insert(name.to_string(), value);
        }
    };
    put("family-name", node.font_family().map(str::to_string));
    // AccessKit font sizes are pixels; ATK's "size" is points.
    put(
        "size",
        node.font_size()
            .filter(|s| s.is_finite())
            .map(|px| format_number(f64::from(px) * 0.75)),
    );
    put(
        "weight",
        node.font_weight()
            .filter(|w| w.is_finite())
            .map(|w| format_number(f64::from(w))),
    );
    put("style", node.is_italic().then(|| "italic".to_string()));
    put(
        "underline",
        node.underline()
            .map(|d| underline_value(d.style).to_string()),
    );
    put(
        "strikethrough",
        node.strikethrough().map(|_| "true".to_string()),
    );
    put(
        "fg-color",
        node.foreground_color()
            .map(|c| format!("{},{},{}", c.red, c.green, c.blue)),
    );
    put(
        "bg-color",
        node.background_color()
            .map(|c| format!("{},{},{}", c.red, c.green, c.blue)),
    );
    put("language", node.language().map(str::to_string));
    put(
        "justification",
        node.text_align().map(|a| {
            match a {
                accesskit::TextAlign::Left => "left",
                accesskit::TextAlign::Right => "right",
                accesskit::TextAlign::Center => "center",
                accesskit::TextAlign::Justify => "fill",
            }
            .to_string()
        }),
    );
    put(
        "text-position",
        node.vertical_offset().map(|v| {
            match v {
                VerticalOffset::Subscript => "sub",
                VerticalOffset::Superscript => "super",
            }
            .to_string()
        }),
    );
    put(
        "direction",
        node.text_direction().and_then(|d| match d {
            TextDirection::LeftToRight => Some("ltr".to_string()),
            TextDirection::RightToLeft => Some("rtl".to_string()),
            _ => None,
        }),
    );
    put("invalid", invalid_value(node, root).map(str::to_string));
    attributes
}

fn underline_value(style: TextDecorationStyle) -> &'static str {
    match style {
        TextDecorationStyle::Double => "double",
        _ => "single",
    }
}

/// "spelling" / "grammar" when `node` or an ancestor up to `root` carries
/// the flag (Orca reads `invalid` to announce misspellings).
fn invalid_value(node: &NodeRef, root: &NodeRef) -> Option<&'static str> {
    let mut current = Some(*node);
    while let Some(n) = current {
        if n.data().is_spelling_error() {
            return Some("spelling");
        }
        if n.data().is_grammar_error() {
            return Some("grammar");
        }
        if n.id() == root.id() {
            break;
        }
        current = n.parent();
    }
    None
}

/// Whole numbers without a fraction ("400", "12"), others with one digit.
fn format_number(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Text answers on small AccessKit trees, through `handle` with real
    //! zbus messages. Expected offsets are code points.

    use super::*;
    use accesskit::{Node, NodeId, TreeId, TreeInfo, TreeUpdate};
    use accesskit_consumer::Tree;
    use serde::de::DeserializeOwned;
    use serde::Serialize;
    use zvariant::{DynamicType, Type};

    pub(crate) const GEOMETRY: Geometry = Geometry {
        x: 100,
        y: 50,
        width: 800,
        height: 600,
        scale: 1.0,
    };
    pub(crate) const ENV: Env<'static> = Env {
        unique_name: ":1.42",
        surface: SurfaceId(7),
        geometry: GEOMETRY,
        generation: None,
    };

    /// A text run from its AccessKit characters.
    pub(crate) fn run(clusters: &[&str], word_starts: &[u8]) -> Node {
        let mut node = Node::new(Role::TextRun);
        node.set_value(clusters.concat());
        node.set_character_lengths(clusters.iter().map(|c| c.len() as u8).collect::<Vec<_>>());
        if !word_starts.is_empty() {
            node.set_word_starts(word_starts.to_vec());
        }
        node
    }

    pub(crate) fn chars(text: &str) -> Vec<&str> {
        text.char_indices()
            .map(|(i, c)| &text[i..i + c.len_utf8()])
            .collect()
    }

    pub(crate) fn tree(nodes: Vec<(u64, Node)>) -> Tree {
        let nodes = nodes
            .into_iter()
            .map(|(id, node)| (NodeId(id), node))
            .collect();
        let update = TreeUpdate {
            nodes,
            tree: Some(TreeInfo::new(NodeId(0))),
            tree_id: TreeId::ROOT,
            focus: NodeId(0),
        };
        Tree::new(update, true)
    }

    pub(crate) fn node(tree: &Tree, id: u64) -> NodeRef<'_> {
        tree.state()
            .node_by_tree_local_id(NodeId(id), TreeId::ROOT)
            .expect("test node exists")
    }

    pub(crate) fn message<B: Serialize + DynamicType>(
        interface: &str,
        member: &str,
        body: &B,
    ) -> zbus::Message {
        zbus::Message::method_call("/org/a11y/atspi/accessible/7_1", member)
            .and_then(|b| b.interface(interface))
            .and_then(|b| b.build(body))
            .expect("test message builds")
    }

    pub(crate) fn body<T: DeserializeOwned + Type>(handled: &Handled) -> T {
        handled
            .reply
            .body()
            .deserialize::<T>()
            .expect("reply has the expected signature")
    }

    fn ask<B: Serialize + DynamicType>(node: NodeRef, member: &str, args: &B) -> Handled {
        handle(&ENV, node, member, &message(INTERFACE, member, args)).expect("call succeeds")
    }

    fn ask_err<B: Serialize + DynamicType>(node: NodeRef, member: &str, args: &B) -> CallError {
        match handle(&ENV, node, member, &message(INTERFACE, member, args)) {
            Ok(_) => panic!("{member} should fail"),
            Err(e) => e,
        }
    }

    fn at(node: NodeRef, member: &str, offset: i32, kind: u32) -> (String, i32, i32) {
        body(&ask(node, member, &(offset, kind)))
    }

    fn s(text: &str, start: i32, end: i32) -> (String, i32, i32) {
        (text.to_string(), start, end)
    }

    /// "héllo wörld\némoji 👍🏽 end": two lines, multi-byte characters, a
    /// combining accent and an emoji with a skin-tone modifier (one AccessKit
    /// character, two code points), producer word starts, a selection from
    /// "m" to the space after the emoji, geometry on the first run and
    /// attributes on both.
    pub(crate) fn multilingual() -> Tree {
        let mut root = Node::new(Role::MultilineTextInput);
        root.set_children(vec![NodeId(1), NodeId(2)]);
        root.set_bounds(Rect {
            x0: 10.0,
            y0: 20.0,
            x1: 210.0,
            y1: 80.0,
        });
        root.set_text_direction(TextDirection::LeftToRight);
        root.set_font_family("Noto Sans");
        root.set_font_size(16.0);
        root.set_language("fr");
        root.set_text_selection(TextSelection {
            anchor: TextPosition {
                node: NodeId(2),
                character_index: 1,
            },
            focus: TextPosition {
                node: NodeId(2),
                character_index: 7,
            },
        });
        let mut first = run(&chars("héllo wörld\n"), &[0, 6]);
        first.set_bounds(Rect {
            x0: 10.0,
            y0: 20.0,
            x1: 130.0,
            y1: 40.0,
        });
        first.set_character_positions((0..12).map(|i| i as f32 * 10.0).collect::<Vec<_>>());
        first.set_character_widths(vec![10.0; 12]);
        first.set_font_weight(700.0);
        let mut second = run(
            &[
                "e\u{301}", "m", "o", "j", "i", " ", "👍🏽", " ", "e", "n", "d",
            ],
            &[0, 6, 8],
        );
        second.set_is_spelling_error();
        tree(vec![(0, root), (1, first), (2, second)])
    }

    const T: &str = "héllo wörld\ne\u{301}moji 👍🏽 end";

    #[test]
    fn counts_code_points_and_reads_text() {
        let tree = multilingual();
        let n = node(&tree, 0);
        assert_eq!(text_of(&n), T);
        assert_eq!(
            i32::try_from(property_of(n, "CharacterCount").unwrap()).unwrap(),
            25
        );
        assert_eq!(body::<String>(&ask(n, "GetText", &(0, -1))), T);
        assert_eq!(body::<String>(&ask(n, "GetText", &(6, 11))), "wörld");
        assert_eq!(body::<String>(&ask(n, "GetText", &(20, 100))), "🏽 end");
        assert_eq!(body::<String>(&ask(n, "GetText", &(11, 6))), "");
        assert_eq!(body::<String>(&ask(n, "GetText", &(-1, 3))), "");
        assert_eq!(body::<String>(&ask(n, "GetText", &(25, -1))), "");
        assert_eq!(
            body::<String>(&ask(n, "GetText", &(i32::MAX, i32::MIN))),
            ""
        );
    }

    #[test]
    fn character_at_offset_is_the_code_point() {
        let tree = multilingual();
        let n = node(&tree, 0);
        let ch = |o: i32| body::<i32>(&ask(n, "GetCharacterAtOffset", &(o,)));
        assert_eq!(ch(0), 'h' as i32);
        assert_eq!(ch(1), 'é' as i32);
        assert_eq!(ch(13), 0x301);
        assert_eq!(ch(19), 0x1F44D);
        assert_eq!(ch(20), 0x1F3FD);
        assert_eq!(ch(24), 'd' as i32);
        assert_eq!(ch(25), 0);
        assert_eq!(ch(-5), 0);
    }

    #[test]
    fn char_boundary() {
        let tree = multilingual();
        let n = node(&tree, 0);
        assert_eq!(at(n, "GetTextAtOffset", 0, 0), s("h", 0, 1));
        assert_eq!(at(n, "GetTextAtOffset", 1, 0), s("é", 1, 2));
        assert_eq!(at(n, "GetTextAtOffset", 19, 0), s("👍", 19, 20));
        assert_eq!(at(n, "GetTextAtOffset", 25, 0), s("", 25, 25));
        assert_eq!(at(n, "GetTextAtOffset", 26, 0), s("", -1, -1));
        assert_eq!(at(n, "GetTextAtOffset", -1, 0), s("", -1, -1));
        assert_eq!(at(n, "GetTextBeforeOffset", 0, 0), s("", 0, 0));
        assert_eq!(at(n, "GetTextBeforeOffset", 2, 0), s("é", 1, 2));
        assert_eq!(at(n, "GetTextBeforeOffset", 25, 0), s("d", 24, 25));
        assert_eq!(at(n, "GetTextAfterOffset", 0, 0), s("é", 1, 2));
        assert_eq!(at(n, "GetTextAfterOffset", 23, 0), s("d", 24, 25));
        assert_eq!(at(n, "GetTextAfterOffset", 24, 0), s("", 25, 25));
        assert_eq!(at(n, "GetTextAfterOffset", 25, 0), s("", 25, 25));
        assert_eq!(at(n, "GetStringAtOffset", 19, 0), s("👍", 19, 20));
    }

    #[test]
    fn word_start_boundary_uses_producer_word_starts() {
        let tree = multilingual();
        let n = node(&tree, 0);
        assert_eq!(at(n, "GetTextAtOffset", 0, 1), s("héllo ", 0, 6));
        assert_eq!(at(n, "GetTextAtOffset", 5, 1), s("héllo ", 0, 6));
        assert_eq!(at(n, "GetTextAtOffset", 7, 1), s("wörld\n", 6, 12));
        assert_eq!(at(n, "GetTextAtOffset", 12, 1), s("e\u{301}moji ", 12, 19));
        assert_eq!(at(n, "GetTextAtOffset", 20, 1), s("👍🏽 ", 19, 22));
        assert_eq!(at(n, "GetTextAtOffset", 25, 1), s("end", 22, 25));
        assert_eq!(at(n, "GetTextAtOffset", 26, 1), s("", -1, -1));
        assert_eq!(at(n, "GetTextBeforeOffset", 3, 1), s("", 0, 0));
        assert_eq!(at(n, "GetTextBeforeOffset", 7, 1), s("héllo ", 0, 6));
        assert_eq!(at(n, "GetTextBeforeOffset", 25, 1), s("👍🏽 ", 19, 22));
        assert_eq!(at(n, "GetTextAfterOffset", 0, 1), s("wörld\n", 6, 12));
        assert_eq!(at(n, "GetTextAfterOffset", 20, 1), s("end", 22, 25));
        assert_eq!(at(n, "GetTextAfterOffset", 23, 1), s("", 25, 25));
        assert_eq!(at(n, "GetStringAtOffset", 8, 1), s("wörld\n", 6, 12));
        assert_eq!(at(n, "GetStringAtOffset", 25, 1), s("end", 22, 25));
    }

    #[test]
    fn word_end_boundary_excludes_trailing_whitespace() {
        let tree = multilingual();
        let n = node(&tree, 0);
        assert_eq!(at(n, "GetTextAtOffset", 3, 2), s("héllo", 0, 5));
        assert_eq!(at(n, "GetTextAtOffset", 5, 2), s(" wörld", 5, 11));
        assert_eq!(at(n, "GetTextAtOffset", 11, 2), s("\ne\u{301}moji", 11, 18));
        assert_eq!(at(n, "GetTextAtOffset", 25, 2), s("", 25, 25));
        assert_eq!(at(n, "GetTextBeforeOffset", 7, 2), s("héllo", 0, 5));
        assert_eq!(at(n, "GetTextBeforeOffset", 2, 2), s("", 0, 0));
        assert_eq!(
            at(n, "GetTextAfterOffset", 7, 2),
            s("\ne\u{301}moji", 11, 18)
        );
        assert_eq!(at(n, "GetTextAfterOffset", 23, 2), s("", 25, 25));
    }

    #[test]
    fn line_and_paragraph_boundaries() {
        let tree = multilingual();
        let n = node(&tree, 0);
        assert_eq!(at(n, "GetTextAtOffset", 0, 5), s("héllo wörld\n", 0, 12));
        assert_eq!(at(n, "GetTextAtOffset", 11, 5), s("héllo wörld\n", 0, 12));
        assert_eq!(
            at(n, "GetTextAtOffset", 12, 5),
            s("e\u{301}moji 👍🏽 end", 12, 25)
        );
        assert_eq!(
            at(n, "GetTextAtOffset", 25, 5),
            s("e\u{301}moji 👍🏽 end", 12, 25)
        );
        assert_eq!(
            at(n, "GetTextBeforeOffset", 13, 5),
            s("héllo wörld\n", 0, 12)
        );
        assert_eq!(at(n, "GetTextBeforeOffset", 3, 5), s("", 0, 0));
        assert_eq!(
            at(n, "GetTextAfterOffset", 3, 5),
            s("e\u{301}moji 👍🏽 end", 12, 25)
        );
        assert_eq!(at(n, "GetTextAfterOffset", 13, 5), s("", 25, 25));
        assert_eq!(at(n, "GetTextAtOffset", 3, 6), s("héllo wörld", 0, 11));
        assert_eq!(
            at(n, "GetTextAtOffset", 11, 6),
            s("\ne\u{301}moji 👍🏽 end", 11, 25)
        );
        assert_eq!(at(n, "GetTextAtOffset", 25, 6), s("", 25, 25));
        assert_eq!(at(n, "GetStringAtOffset", 4, 3), s("héllo wörld\n", 0, 12));
        assert_eq!(at(n, "GetStringAtOffset", 4, 4), s("héllo wörld\n", 0, 12));
        assert_eq!(
            at(n, "GetStringAtOffset", 25, 4),
            s("e\u{301}moji 👍🏽 end", 12, 25)
        );
        // Sentences without punctuation end at paragraph breaks.
        assert_eq!(at(n, "GetStringAtOffset", 4, 2), s("héllo wörld\n", 0, 12));
        assert_eq!(at(n, "GetTextAtOffset", 4, 4), s("héllo wörld", 0, 11));
    }

    #[test]
    fn unknown_boundaries_are_invalid_args() {
        let tree = multilingual();
        let n = node(&tree, 0);
        for member in [
            "GetTextAtOffset",
            "GetTextBeforeOffset",
            "GetTextAfterOffset",
        ] {
            assert!(matches!(
                ask_err(n, member, &(0, 7u32)),
                CallError::InvalidArgs(_)
            ));
            assert!(matches!(
                ask_err(n, member, &(0, u32::MAX)),
                CallError::InvalidArgs(_)
            ));
        }
        assert!(matches!(
            ask_err(n, "GetStringAtOffset", &(0, 5u32)),
            CallError::InvalidArgs(_)
        ));
        // Wrong signature.
        assert!(matches!(
            ask_err(n, "GetTextAtOffset", &("x",)),
            CallError::InvalidArgs(_)
        ));
        assert!(matches!(
            ask_err(n, "NoSuchMethod", &()),
            CallError::UnknownMethod { .. }
        ));
    }

    /// "The quick brown fox jumps over. Then": a soft-wrapped line (runs
    /// linked by next_on_line, then a run starting a new line) and no
    /// producer word starts.
    fn wrapped() -> Tree {
        let mut root = Node::new(Role::Document);
        root.set_children(vec![NodeId(1), NodeId(2), NodeId(3)]);
        let mut a = run(&chars("The quick "), &[]);
        a.set_next_on_line(NodeId(2));
        let mut b = run(&chars("brown fox "), &[]);
        b.set_previous_on_line(NodeId(1));
        let c = run(&chars("jumps over. Then"), &[]);
        tree(vec![(0, root), (1, a), (2, b), (3, c)])
    }

    #[test]
    fn soft_wrapped_lines_follow_next_on_line() {
        let tree = wrapped();
        let n = node(&tree, 0);
        assert_eq!(
            at(n, "GetTextAtOffset", 12, 5),
            s("The quick brown fox ", 0, 20)
        );
        assert_eq!(
            at(n, "GetTextAtOffset", 20, 5),
            s("jumps over. Then", 20, 36)
        );
        assert_eq!(
            at(n, "GetTextAtOffset", 36, 5),
            s("jumps over. Then", 20, 36)
        );
        assert_eq!(
            at(n, "GetTextAtOffset", 12, 6),
            s("The quick brown fox ", 0, 20)
        );
        assert_eq!(
            at(n, "GetStringAtOffset", 12, 4),
            s("The quick brown fox jumps over. Then", 0, 36)
        );
    }

    #[test]
    fn words_fall_back_to_whitespace_without_producer_word_starts() {
        let tree = wrapped();
        let n = node(&tree, 0);
        assert_eq!(at(n, "GetTextAtOffset", 5, 1), s("quick ", 4, 10));
        assert_eq!(at(n, "GetTextAtOffset", 19, 1), s("fox ", 16, 20));
        assert_eq!(at(n, "GetTextAtOffset", 30, 1), s("over. ", 26, 32));
        assert_eq!(at(n, "GetTextAfterOffset", 30, 1), s("Then", 32, 36));
    }

    #[test]
    fn sentences_are_approximated_from_punctuation() {
        let tree = wrapped();
        let n = node(&tree, 0);
        assert_eq!(
            at(n, "GetTextAtOffset", 5, 3),
            s("The quick brown fox jumps over. ", 0, 32)
        );
        assert_eq!(at(n, "GetTextAtOffset", 33, 3), s("Then", 32, 36));
        assert_eq!(at(n, "GetTextAfterOffset", 5, 3), s("Then", 32, 36));
        assert_eq!(
            at(n, "GetTextBeforeOffset", 33, 3),
            s("The quick brown fox jumps over. ", 0, 32)
        );
        assert_eq!(
            at(n, "GetTextAtOffset", 5, 4),
            s("The quick brown fox jumps over.", 0, 31)
        );
        assert_eq!(at(n, "GetTextAtOffset", 33, 4), s(" Then", 31, 36));
        assert_eq!(at(n, "GetStringAtOffset", 33, 2), s("Then", 32, 36));
    }

    #[test]
    fn plain_label_without_runs_has_text() {
        let mut root = Node::new(Role::Window);
        root.set_children(vec![NodeId(1), NodeId(2), NodeId(3)]);
        let mut label = Node::new(Role::Label);
        label.set_value("Hi there. How are you? Fine…\nNext");
        let button = Node::new(Role::Button);
        let mut named = Node::new(Role::Label);
        named.set_label("Only a name");
        let tree = tree(vec![(0, root), (1, label), (2, button), (3, named)]);
        let n = node(&tree, 1);
        assert!(has_text(&n));
        assert!(!has_text(&node(&tree, 2)));
        assert_eq!(text_of(&node(&tree, 3)), "Only a name");
        assert_eq!(caret_offset(&n), None);
        assert_eq!(
            i32::try_from(property_of(n, "CaretOffset").unwrap()).unwrap(),
            -1
        );
        assert_eq!(at(n, "GetTextAtOffset", 12, 3), s("How are you? ", 10, 23));
        assert_eq!(at(n, "GetTextAtOffset", 24, 3), s("Fine…\n", 23, 29));
        assert_eq!(at(n, "GetTextAtOffset", 30, 3), s("Next", 29, 33));
        assert_eq!(at(n, "GetTextAtOffset", 24, 4), s(" Fine…", 22, 28));
        assert_eq!(at(n, "GetTextAtOffset", 30, 5), s("Next", 29, 33));
        assert_eq!(at(n, "GetTextAtOffset", 3, 1), s("there. ", 3, 10));
        // No runs: no caret to set, no geometry.
        assert!(!body::<bool>(&ask(n, "SetCaretOffset", &(3,))));
        assert_eq!(
            body::<(i32, i32, i32, i32)>(&ask(n, "GetCharacterExtents", &(0, 0u32))),
            (0, 0, 0, 0)
        );
        assert_eq!(body::<i32>(&ask(n, "GetOffsetAtPoint", &(5, 5, 0u32))), -1);
    }

    #[test]
    fn password_text_is_masked() {
        let mut root = Node::new(Role::Window);
        root.set_children(vec![NodeId(1), NodeId(3), NodeId(5)]);
        let mut password = Node::new(Role::PasswordInput);
        password.set_children(vec![NodeId(2)]);
        let mut premasked = Node::new(Role::PasswordInput);
        premasked.set_children(vec![NodeId(4)]);
        let mut plain = Node::new(Role::PasswordInput);
        plain.set_value("hunter2");
        let tree = tree(vec![
            (0, root),
            (1, password),
            (2, run(&chars("s3cret pw"), &[0, 7])),
            (3, premasked),
            (4, run(&chars("•••"), &[])),
            (5, plain),
        ]);
        let n = node(&tree, 1);
        assert_eq!(text_of(&n), "•••••••••");
        assert_eq!(at(n, "GetTextAtOffset", 8, 1), s("•••••••••", 0, 9));
        assert_eq!(
            body::<i32>(&ask(n, "GetCharacterAtOffset", &(0,))),
            '•' as i32
        );
        assert_eq!(text_of(&node(&tree, 3)), "•••");
        assert_eq!(text_of(&node(&tree, 5)), "•••••••");
    }

    #[test]
    fn caret_and_selection_map_accesskit_positions_to_code_points() {
        let tree = multilingual();
        let n = node(&tree, 0);
        assert_eq!(caret_offset(&n), Some(21));
        assert_eq!(
            i32::try_from(property_of(n, "CaretOffset").unwrap()).unwrap(),
            21
        );
        assert_eq!(body::<i32>(&ask(n, "GetNSelections", &())), 1);
        assert_eq!(body::<(i32, i32)>(&ask(n, "GetSelection", &(0,))), (14, 21));
        assert_eq!(body::<(i32, i32)>(&ask(n, "GetSelection", &(1,))), (-1, -1));
        assert!(matches!(
            property_of(n, "Nope"),
            Err(CallError::UnknownProperty(_))
        ));
    }

    fn selection_action(anchor: (u64, usize), focus: (u64, usize)) -> ActionRequest {
        ActionRequest {
            action: Action::SetTextSelection,
            target_tree: TreeId::ROOT,
            target_node: NodeId(0),
            data: Some(ActionData::SetTextSelection(TextSelection {
                anchor: TextPosition {
                    node: NodeId(anchor.0),
                    character_index: anchor.1,
                },
                focus: TextPosition {
                    node: NodeId(focus.0),
                    character_index: focus.1,
                },
            })),
        }
    }

    #[test]
    fn set_caret_offset_routes_a_degenerate_selection() {
        let tree = multilingual();
        let n = node(&tree, 0);
        let set = |o: i32| ask(n, "SetCaretOffset", &(o,));
        let h = set(3);
        assert!(body::<bool>(&h));
        assert_eq!(h.action, Some(selection_action((1, 3), (1, 3))));
        // Inside the two-code-point emoji: the character that contains it.
        assert_eq!(set(20).action, Some(selection_action((2, 6), (2, 6))));
        // A run boundary is the start of the following run.
        assert_eq!(set(12).action, Some(selection_action((2, 0), (2, 0))));
        assert_eq!(set(25).action, Some(selection_action((2, 11), (2, 11))));
        for bad in [26, -1, i32::MAX, i32::MIN] {
            let h = set(bad);
            assert!(!body::<bool>(&h));
            assert_eq!(h.action, None);
        }
    }

    #[test]
    fn selection_setters_route_actions() {
        let tree = multilingual();
        let n = node(&tree, 0);
        let h = ask(n, "SetSelection", &(0, 2, 19));
        assert!(body::<bool>(&h));
        assert_eq!(h.action, Some(selection_action((1, 2), (2, 6))));
        assert!(!body::<bool>(&ask(n, "SetSelection", &(1, 2, 19))));
        assert!(!body::<bool>(&ask(n, "SetSelection", &(0, 2, 99))));
        // One selection exists already: AddSelection refuses.
        assert!(!body::<bool>(&ask(n, "AddSelection", &(0, 1))));
        // RemoveSelection collapses to the caret (the focus, after the emoji).
        let h = ask(n, "RemoveSelection", &(0,));
        assert!(body::<bool>(&h));
        assert_eq!(h.action, Some(selection_action((2, 7), (2, 7))));
        assert!(!body::<bool>(&ask(n, "RemoveSelection", &(3,))));
    }

    #[test]
    fn attributes_come_in_runs_with_defaults() {
        let tree = multilingual();
        let n = node(&tree, 0);
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let defaults = map(&[
            ("direction", "ltr"),
            ("family-name", "Noto Sans"),
            ("language", "fr"),
            ("size", "12"),
        ]);
        assert_eq!(
            body::<BTreeMap<String, String>>(&ask(n, "GetDefaultAttributes", &())),
            defaults
        );
        assert_eq!(
            body::<BTreeMap<String, String>>(&ask(n, "GetDefaultAttributeSet", &())),
            defaults
        );
        type Run = (BTreeMap<String, String>, i32, i32);
        assert_eq!(
            body::<Run>(&ask(n, "GetAttributes", &(3,))),
            (map(&[("weight", "700")]), 0, 12)
        );
        assert_eq!(
            body::<Run>(&ask(n, "GetAttributes", &(20,))),
            (map(&[("invalid", "spelling")]), 12, 25)
        );
        assert_eq!(
            body::<Run>(&ask(n, "GetAttributes", &(25,))),
            (map(&[("invalid", "spelling")]), 12, 25)
        );
        assert_eq!(
            body::<Run>(&ask(n, "GetAttributes", &(26,))),
            (map(&[]), -1, -1)
        );
        // -1 is the caret (21, in the second run).
        assert_eq!(
            body::<Run>(&ask(n, "GetAttributes", &(-1,))),
            (map(&[("invalid", "spelling")]), 12, 25)
        );
        let mut with_defaults = defaults.clone();
        with_defaults.insert("weight".into(), "700".into());
        assert_eq!(
            body::<Run>(&ask(n, "GetAttributeRun", &(0, true))),
            (with_defaults, 0, 12)
        );
        assert_eq!(
            body::<String>(&ask(n, "GetAttributeValue", &(20, "invalid"))),
            "spelling"
        );
        assert_eq!(
            body::<String>(&ask(n, "GetAttributeValue", &(3, "family-name"))),
            "Noto Sans"
        );
        assert_eq!(
            body::<String>(&ask(n, "GetAttributeValue", &(3, "invalid"))),
            ""
        );
    }

    #[test]
    fn extents_convert_to_screen_and_window() {
        let tree = multilingual();
        let n = node(&tree, 0);
        type Xywh = (i32, i32, i32, i32);
        assert_eq!(
            body::<Xywh>(&ask(n, "GetCharacterExtents", &(1, 1u32))),
            (20, 20, 10, 20)
        );
        assert_eq!(
            body::<Xywh>(&ask(n, "GetCharacterExtents", &(1, 0u32))),
            (120, 70, 10, 20)
        );
        assert_eq!(
            body::<Xywh>(&ask(n, "GetRangeExtents", &(0, 3, 0u32))),
            (110, 70, 30, 20)
        );
        assert_eq!(
            body::<Xywh>(&ask(n, "GetRangeExtents", &(3, 3, 0u32))),
            (0, 0, 0, 0)
        );
        assert_eq!(
            body::<Xywh>(&ask(n, "GetRangeExtents", &(-2, 3, 0u32))),
            (0, 0, 0, 0)
        );
        assert_eq!(
            body::<Xywh>(&ask(n, "GetCharacterExtents", &(99, 0u32))),
            (0, 0, 0, 0)
        );
        assert!(matches!(
            ask_err(n, "GetCharacterExtents", &(1, 9u32)),
            CallError::InvalidArgs(_)
        ));
        assert_eq!(
            body::<i32>(&ask(n, "GetOffsetAtPoint", &(125, 75, 0u32))),
            1
        );
        assert_eq!(body::<i32>(&ask(n, "GetOffsetAtPoint", &(25, 25, 1u32))), 1);
        assert_eq!(body::<i32>(&ask(n, "GetOffsetAtPoint", &(0, 0, 0u32))), -1);
    }

    #[test]
    fn extents_follow_component_conventions_when_scaled() {
        let tree = multilingual();
        let n = node(&tree, 0);
        let scaled = Env {
            geometry: Geometry {
                scale: 2.0,
                ..GEOMETRY
            },
            ..ENV
        };
        let ask = |member: &str, args: &(i32, u32)| -> (i32, i32, i32, i32) {
            body(&handle(&scaled, n, member, &message(INTERFACE, member, args)).unwrap())
        };
        // Surface box of "é": x 20..30, y 20..40.
        assert_eq!(ask("GetCharacterExtents", &(1, 1)), (20, 20, 10, 20));
        assert_eq!(ask("GetCharacterExtents", &(1, 0)), (140, 90, 20, 40));
        // The root text input's PARENT is the window itself.
        assert_eq!(ask("GetCharacterExtents", &(1, 2)), (20, 20, 10, 20));
        let offset: i32 = body(
            &handle(
                &scaled,
                n,
                "GetOffsetAtPoint",
                &message(INTERFACE, "GetOffsetAtPoint", &(145, 95, 0u32)),
            )
            .unwrap(),
        );
        assert_eq!(offset, 1);
    }

    #[test]
    fn scrolling_routes_to_the_run() {
        let tree = multilingual();
        let n = node(&tree, 0);
        let h = ask(n, "ScrollSubstringTo", &(13, 15, 0u32));
        assert!(body::<bool>(&h));
        let action = h.action.expect("scroll action");
        assert_eq!(
            (action.action, action.target_node),
            (Action::ScrollIntoView, NodeId(2))
        );
        assert_eq!(
            action.data,
            Some(ActionData::ScrollHint(ScrollHint::TopLeft))
        );
        let h = ask(n, "ScrollSubstringTo", &(0, 3, 6u32));
        assert_eq!(
            h.action.map(|a| (a.target_node, a.data)),
            Some((NodeId(1), None))
        );
        assert!(!body::<bool>(&ask(n, "ScrollSubstringTo", &(0, 30, 0u32))));
        assert!(matches!(
            ask_err(n, "ScrollSubstringTo", &(0, 3, 7u32)),
            CallError::InvalidArgs(_)
        ));
        let h = ask(n, "ScrollSubstringToPoint", &(0, 3, 0u32, 150, 80));
        let action = h.action.expect("scroll-to-point action");
        assert_eq!(action.action, Action::ScrollToPoint);
        assert_eq!(
            action.data,
            Some(ActionData::ScrollToPoint(Point::new(50.0, 30.0)))
        );
        let ranges: Vec<(i32, i32, String, zvariant::OwnedValue)> = body(&ask(
            n,
            "GetBoundedRanges",
            &(0, 0, 100, 100, 0u32, 0u32, 0u32),
        ));
        assert!(ranges.is_empty());
    }

    #[test]
    fn empty_text_input() {
        let mut root = Node::new(Role::TextInput);
        root.set_children(vec![NodeId(1)]);
        let tree = tree(vec![(0, root), (1, run(&[], &[]))]);
        let n = node(&tree, 0);
        assert_eq!(text_of(&n), "");
        for kind in 0..=6u32 {
            assert_eq!(at(n, "GetTextAtOffset", 0, kind), s("", 0, 0));
            assert_eq!(at(n, "GetTextBeforeOffset", 0, kind), s("", 0, 0));
            assert_eq!(at(n, "GetTextAfterOffset", 0, kind), s("", 0, 0));
            assert_eq!(at(n, "GetTextAtOffset", 1, kind), s("", -1, -1));
        }
        let h = ask(n, "SetCaretOffset", &(0,));
        assert_eq!(h.action, Some(selection_action((1, 0), (1, 0))));
    }

    #[test]
    fn no_offset_or_boundary_panics() {
        let tree = multilingual();
        let n = node(&tree, 0);
        let offsets = [
            i32::MIN,
            -2,
            -1,
            0,
            1,
            11,
            12,
            13,
            19,
            20,
            24,
            25,
            26,
            i32::MAX,
        ];
        for member in [
            "GetTextAtOffset",
            "GetTextBeforeOffset",
            "GetTextAfterOffset",
            "GetStringAtOffset",
        ] {
            for &offset in &offsets {
                for kind in [0u32, 1, 2, 3, 4, 5, 6, 7, u32::MAX] {
                    let _ = handle(
                        &ENV,
                        n,
                        member,
                        &message(INTERFACE, member, &(offset, kind)),
                    );
                }
            }
        }
        for &a in &offsets {
            for &b in &offsets {
                let _ = ask(n, "GetText", &(a, b));
                let _ = ask(n, "GetRangeExtents", &(a, b, 0u32));
                let _ = ask(n, "SetSelection", &(0, a, b));
                let _ = ask(n, "ScrollSubstringTo", &(a, b, 1u32));
                let _ = ask(n, "GetOffsetAtPoint", &(a, b, 0u32));
            }
            let _ = ask(n, "GetAttributeRun", &(a, false));
            let _ = ask(n, "GetCharacterExtents", &(a, 2u32));
        }
    }
}
