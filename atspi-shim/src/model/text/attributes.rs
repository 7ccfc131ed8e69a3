//! Text attributes: the effective attributes of a run, defaults included.

use super::*;

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

pub(crate) fn underline_value(style: TextDecorationStyle) -> &'static str {
    match style {
        TextDecorationStyle::Double => "double",
        _ => "single",
    }
}

/// "spelling" / "grammar" when `node` or an ancestor up to `root` carries
/// the flag (Orca reads `invalid` to announce misspellings).
pub(crate) fn invalid_value(node: &NodeRef, root: &NodeRef) -> Option<&'static str> {
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
pub(crate) fn format_number(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}
