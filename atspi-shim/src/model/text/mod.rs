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
//! Two layouts ([`TextLayout`], chosen per application by the toolkit its
//! producer names): the inline layout below, and for a web engine the
//! per-block layout of `blocks.rs` (Text on every block of a document, one
//! U+FFFC per child object), which Orca's web script is written for.
//!
//! Which nodes have Text in the inline layout ([`supported`]):
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
//! * No U+FFFC is inserted in the inline layout: AccessKit inlines the text
//!   of links and other inline children as runs, so their text is part of
//!   the parent's text (see `hypertext.rs`).
//! * Password inputs expose the masked text AccessKit would expose (one
//!   U+2022 per character unless the producer already masked it).
//! * GetAttributeValue returns just `s` (what atk-bridge sends and libatspi
//!   reads), not the `sib` of the XML, and looks at the effective
//!   attributes (defaults included).

use std::collections::BTreeMap;
use std::sync::Arc;

use accesskit::{
    NodeId, Point, Rect, Role, ScrollHint, TextDecorationStyle, TextDirection, TextPosition,
    TextSelection, TreeId, VerticalOffset,
};
use accesskit_consumer::{FilterResult, NodeRef};

use crate::model::index::to_i32;

mod attributes;
mod blocks;
mod boundaries;
mod link_index;
mod model;

pub(crate) use attributes::*;
pub(crate) use blocks::*;
pub(crate) use boundaries::*;
pub(crate) use link_index::*;
pub(crate) use model::*;
