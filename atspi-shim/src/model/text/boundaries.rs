//! Boundaries: the units of text an AT asks for (characters, words,
//! sentences, lines, paragraphs) as cut points on the flattened text.

use crate::model::wire::{TextBoundaryType, TextGranularity};

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

impl From<TextBoundaryType> for Boundary {
    fn from(kind: TextBoundaryType) -> Self {
        match kind {
            TextBoundaryType::Char => Boundary::Char,
            TextBoundaryType::WordStart => Boundary::WordStart,
            TextBoundaryType::WordEnd => Boundary::WordEnd,
            TextBoundaryType::SentenceStart => Boundary::SentenceStart,
            TextBoundaryType::SentenceEnd => Boundary::SentenceEnd,
            TextBoundaryType::LineStart => Boundary::LineStart,
            TextBoundaryType::LineEnd => Boundary::LineEnd,
        }
    }
}

/// Each granularity is its `_START` boundary, as atk documents
/// `get_string_at_offset`; PARAGRAPH has no boundary type of its own.
impl From<TextGranularity> for Boundary {
    fn from(granularity: TextGranularity) -> Self {
        match granularity {
            TextGranularity::Char => Boundary::Char,
            TextGranularity::Word => Boundary::WordStart,
            TextGranularity::Sentence => Boundary::SentenceStart,
            TextGranularity::Line => Boundary::LineStart,
            TextGranularity::Paragraph => Boundary::Paragraph,
        }
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
pub(crate) fn unit_at(points: &[usize], len: usize, offset: usize) -> (usize, usize) {
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

pub(crate) fn unit_before(points: &[usize], len: usize, offset: usize) -> (usize, usize) {
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

pub(crate) fn unit_after(points: &[usize], len: usize, offset: usize) -> (usize, usize) {
    let (_, end) = unit_at(points, len, offset);
    if end >= len {
        return (len, len);
    }
    let (_, next) = unit_at(points, len, end);
    (end, next)
}

pub(crate) fn char_unit(len: usize, offset: usize, which: Which) -> (usize, usize) {
    match which {
        Which::At => (offset.min(len), (offset + 1).min(len)),
        Which::Before if offset == 0 => (0, 0),
        Which::Before => (offset - 1, offset.min(len)),
        Which::After if offset + 1 >= len => (len, len),
        Which::After => (offset + 1, offset + 2),
    }
}

pub(crate) fn is_paragraph_break(c: char) -> bool {
    matches!(c, '\n' | '\u{2029}')
}

pub(crate) fn is_hard_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{2028}' | '\u{2029}' | '\u{000b}' | '\u{000c}' | '\u{0085}'
    )
}

pub(crate) fn is_sentence_terminal(c: char) -> bool {
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

pub(crate) fn is_sentence_closer(c: char) -> bool {
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

pub(crate) fn sorted_unique(mut points: Vec<usize>) -> Vec<usize> {
    points.sort_unstable();
    points.dedup();
    points
}
