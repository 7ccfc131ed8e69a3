//! AT-SPI's enumerated values as Rust types: the coordinate type, scroll
//! type, text boundary type and granularity, and Collection's match type,
//! sort order and tree traversal type an AT sends, and the layer Component
//! answers.
//!
//! An AT sends each as a bare integer. Each decodes in one place,
//! [`WireEnum::decode`], so a handler only ever sees a valid value and every
//! invalid one gets the same InvalidArgs wording, naming the argument, the
//! value received and the accepted range:
//!
//! ```text
//! invalid argument “coord_type”: 7 is outside the coordinate types 0..=2 (SCREEN 0, WINDOW 1, PARENT 2)
//! ```
//!
//! A declaration keeps the wire integer and names the type it decodes into
//! (`fn GetExtents(coord_type: u32 as CoordType)`, see `surface.rs`), so the
//! D-Bus signatures stay at-spi2-core's whatever a handler takes.

use accesskit::ScrollHint;

use crate::model::error::CallError;

/// An enumeration AT-SPI sends as an integer numbering its values from 0.
pub trait WireEnum: Copy + 'static {
    /// The integer at-spi2-core's XML gives the argument (`u` or `i`); the
    /// declaration's wire type must be this one, or the call does not compile.
    type Wire: Copy + Into<i64>;
    /// What the values are called, in the plural, for the error.
    const KIND_PLURAL: &'static str;
    /// Every value with its AT-SPI name, in wire order: the value numbered
    /// `n` on the wire is at index `n`.
    const VALUES: &'static [(Self, &'static str)];

    /// The value numbered `wire`; InvalidArgs naming `argument` when there is none.
    fn decode(wire: Self::Wire, argument: &str) -> Result<Self, CallError> {
        let number: i64 = wire.into();
        usize::try_from(number)
            .ok()
            .and_then(|index| Self::VALUES.get(index))
            .map(|(value, _)| *value)
            .ok_or_else(|| invalid::<Self>(argument, number))
    }
}

/// Declares an enumeration AT-SPI sends as an integer: the Rust enum and its
/// [`WireEnum`] table (each variant with its AT-SPI name, in wire order) in
/// one place, so a value cannot be added to one and not the other.
macro_rules! wire_enum {
    (
        $(#[$doc:meta])*
        $name:ident: $wire:ty, $plural:literal {
            $($(#[$variant_doc:meta])* $variant:ident = $atspi_name:literal,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($(#[$variant_doc])* $variant,)+
        }

        impl WireEnum for $name {
            type Wire = $wire;
            const KIND_PLURAL: &'static str = $plural;
            const VALUES: &'static [(Self, &'static str)] = &[$(($name::$variant, $atspi_name),)+];
        }
    };
}

/// The one wording for a value outside its enumeration.
fn invalid<T: WireEnum>(argument: &str, number: i64) -> CallError {
    let names: Vec<String> = (T::VALUES.iter().enumerate())
        .map(|(wire, (_, name))| format!("{name} {wire}"))
        .collect();
    CallError::InvalidArgs(format!(
        "invalid argument \u{201c}{argument}\u{201d}: {number} is outside the {} 0..={} ({})",
        T::KIND_PLURAL,
        T::VALUES.len().saturating_sub(1),
        names.join(", ")
    ))
}

wire_enum! {
    /// AT-SPI `CoordType`: what a point or box a client sends or asks for is
    /// relative to (Orca 43 asks SCREEN, Orca 51 WINDOW).
    CoordType: u32, "coordinate types" {
        Screen = "SCREEN",
        Window = "WINDOW",
        Parent = "PARENT",
    }
}

wire_enum! {
    /// AT-SPI `ScrollType`: where `ScrollTo` / `ScrollSubstringTo` should bring
    /// the object or text.
    ScrollType: u32, "scroll types" {
        TopLeft = "TOP_LEFT",
        BottomRight = "BOTTOM_RIGHT",
        TopEdge = "TOP_EDGE",
        BottomEdge = "BOTTOM_EDGE",
        LeftEdge = "LEFT_EDGE",
        RightEdge = "RIGHT_EDGE",
        Anywhere = "ANYWHERE",
    }
}

impl ScrollType {
    /// The AccessKit hint for the producer; ANYWHERE is no hint (the
    /// producer scrolls as little as it can).
    pub fn hint(self) -> Option<ScrollHint> {
        match self {
            ScrollType::TopLeft => Some(ScrollHint::TopLeft),
            ScrollType::BottomRight => Some(ScrollHint::BottomRight),
            ScrollType::TopEdge => Some(ScrollHint::TopEdge),
            ScrollType::BottomEdge => Some(ScrollHint::BottomEdge),
            ScrollType::LeftEdge => Some(ScrollHint::LeftEdge),
            ScrollType::RightEdge => Some(ScrollHint::RightEdge),
            ScrollType::Anywhere => None,
        }
    }
}

wire_enum! {
    /// AT-SPI `TextBoundaryType`, the unit of `GetText{Before,At,After}Offset`.
    TextBoundaryType: u32, "text boundary types" {
        Char = "CHAR",
        WordStart = "WORD_START",
        WordEnd = "WORD_END",
        SentenceStart = "SENTENCE_START",
        SentenceEnd = "SENTENCE_END",
        LineStart = "LINE_START",
        LineEnd = "LINE_END",
    }
}

wire_enum! {
    /// AT-SPI `TextGranularity`, the unit of `GetStringAtOffset`.
    TextGranularity: u32, "text granularities" {
        Char = "CHAR",
        Word = "WORD",
        Sentence = "SENTENCE",
        Line = "LINE",
        Paragraph = "PARAGRAPH",
    }
}

wire_enum! {
    /// AT-SPI `CollectionMatchType`: how a match rule's states, attributes,
    /// roles or interfaces must match. Sent inside the rule, as `i`.
    MatchType: i32, "match types" {
        /// Matches only when the criterion is empty.
        Invalid = "INVALID",
        All = "ALL",
        Any = "ANY",
        None = "NONE",
        /// The object has none of that kind.
        Empty = "EMPTY",
    }
}

wire_enum! {
    /// AT-SPI `CollectionSortOrder` of Collection's `GetMatches*`.
    SortOrder: u32, "sort orders" {
        Invalid = "INVALID",
        Canonical = "CANONICAL",
        Flow = "FLOW",
        Tab = "TAB",
        ReverseCanonical = "REVERSE_CANONICAL",
        ReverseFlow = "REVERSE_FLOW",
        ReverseTab = "REVERSE_TAB",
    }
}

wire_enum! {
    /// AT-SPI `CollectionTreeTraversalType`: which part of the tree
    /// `GetMatchesFrom` / `GetMatchesTo` search around the current object.
    TreeTraversalType: u32, "tree traversal types" {
        RestrictChildren = "RESTRICT_CHILDREN",
        RestrictSibling = "RESTRICT_SIBLING",
        Inorder = "INORDER",
    }
}

/// AT-SPI `ComponentLayer`, answered by `Component.GetLayer` (the bridge
/// uses three of them). Only answered, never decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Layer {
    Widget = 3,
    Popup = 5,
    Window = 7,
}

impl Layer {
    /// The number AT-SPI gives the layer.
    pub fn wire(self) -> u32 {
        self as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes every wire number from 0 through `expected.len()` (one past
    /// the last): the valid ones must give `expected` in order, the first
    /// invalid one the error naming the argument, the value and the range.
    fn check_decoding<T>(expected: &[T], first_invalid: T::Wire, range: &str)
    where
        T: WireEnum + PartialEq + std::fmt::Debug,
        T::Wire: TryFrom<usize> + std::fmt::Debug,
    {
        for (number, value) in expected.iter().enumerate() {
            let wire = T::Wire::try_from(number).ok().expect("small wire number");
            assert_eq!(T::decode(wire, "arg").ok(), Some(*value), "wire {number}");
        }
        let Err(CallError::InvalidArgs(message)) = T::decode(first_invalid, "the_argument") else {
            panic!("{first_invalid:?} must be InvalidArgs");
        };
        let number: i64 = first_invalid.into();
        let start =
            format!("invalid argument \u{201c}the_argument\u{201d}: {number} is outside the ");
        assert!(message.starts_with(&start), "{message}");
        assert!(message.contains(range), "{message} lacks {range}");
    }

    #[test]
    fn coord_types_decode() {
        use CoordType::*;
        check_decoding(
            &[Screen, Window, Parent],
            3u32,
            "0..=2 (SCREEN 0, WINDOW 1, PARENT 2)",
        );
    }

    #[test]
    fn scroll_types_decode_and_give_accesskit_hints() {
        use ScrollType::*;
        let all = [
            TopLeft,
            BottomRight,
            TopEdge,
            BottomEdge,
            LeftEdge,
            RightEdge,
            Anywhere,
        ];
        check_decoding(&all, 7u32, "scroll types 0..=6 (TOP_LEFT 0,");
        let hints: Vec<Option<ScrollHint>> = all.iter().map(|s| s.hint()).collect();
        assert_eq!(
            hints,
            [
                Some(ScrollHint::TopLeft),
                Some(ScrollHint::BottomRight),
                Some(ScrollHint::TopEdge),
                Some(ScrollHint::BottomEdge),
                Some(ScrollHint::LeftEdge),
                Some(ScrollHint::RightEdge),
                None,
            ]
        );
    }

    #[test]
    fn text_boundary_types_decode() {
        use TextBoundaryType::*;
        let all = [
            Char,
            WordStart,
            WordEnd,
            SentenceStart,
            SentenceEnd,
            LineStart,
            LineEnd,
        ];
        check_decoding(&all, 7u32, "text boundary types 0..=6 (CHAR 0,");
    }

    #[test]
    fn text_granularities_decode() {
        use TextGranularity::*;
        let all = [Char, Word, Sentence, Line, Paragraph];
        check_decoding(&all, 5u32, "text granularities 0..=4 (CHAR 0,");
    }

    #[test]
    fn match_types_decode() {
        use MatchType::*;
        let all = [Invalid, All, Any, None, Empty];
        check_decoding(&all, 5i32, "match types 0..=4 (INVALID 0,");
        // `i` on the wire: a negative number is outside too.
        check_decoding(&all, -1i32, "match types 0..=4");
    }

    #[test]
    fn sort_orders_decode() {
        use SortOrder::*;
        let all = [
            Invalid,
            Canonical,
            Flow,
            Tab,
            ReverseCanonical,
            ReverseFlow,
            ReverseTab,
        ];
        check_decoding(&all, 7u32, "sort orders 0..=6 (INVALID 0,");
    }

    #[test]
    fn tree_traversal_types_decode() {
        use TreeTraversalType::*;
        let all = [RestrictChildren, RestrictSibling, Inorder];
        check_decoding(
            &all,
            3u32,
            "tree traversal types 0..=2 (RESTRICT_CHILDREN 0,",
        );
    }

    #[test]
    fn the_largest_wire_numbers_are_invalid_not_a_panic() {
        assert!(matches!(
            CoordType::decode(u32::MAX, "coord_type"),
            Err(CallError::InvalidArgs(m)) if m.contains("4294967295 is outside")
        ));
        assert!(matches!(
            MatchType::decode(i32::MIN, "rule.states_match"),
            Err(CallError::InvalidArgs(m)) if m.contains("-2147483648 is outside")
        ));
    }

    #[test]
    fn layers_have_at_spi_numbers() {
        assert_eq!(
            [Layer::Widget, Layer::Popup, Layer::Window].map(Layer::wire),
            [3, 5, 7]
        );
    }
}
