//! Producer-supplied text made safe to quote in a log line or an `error`
//! frame: control characters (newlines, ANSI escapes, …) and invisible
//! direction overrides are escaped, so a sender cannot forge log lines or
//! drive the terminal, and the text is cut at a byte bound, so a 10 MB
//! string is never echoed or logged whole.
//!
//! Rule (docs/protocol.md §10, docs/robustness.md "Logs"): every character
//! below U+0020, U+007F, the C1 controls U+0080–U+009F and the bidirectional
//! embeddings/overrides/isolates (U+202A–U+202E, U+2066–U+2069) are written
//! as `\n`, `\r`, `\t` or `\u{XX}`; at most `max_bytes` bytes of the original
//! are kept (cut at a character boundary) and `…(+N bytes)` says how many
//! were left out.

use std::fmt;

/// Bound for a producer string quoted inside a message of ours (an app
/// name, a serde error naming a field's value).
pub const QUOTE_BYTES: usize = 256;

/// Bound for a whole reason sent in an `error` or `rejected` frame.
pub const REASON_BYTES: usize = 2048;

/// `text`, escaped and cut to `max_bytes` (see the module doc) when displayed.
#[derive(Clone, Copy, Debug)]
pub struct Escaped<'a> {
    text: &'a str,
    max_bytes: usize,
}

/// Wraps `text` for display, escaped and bounded to `max_bytes`.
pub fn escaped(text: &str, max_bytes: usize) -> Escaped<'_> {
    Escaped { text, max_bytes }
}

/// `text` escaped and cut to `max_bytes`, as an owned string.
pub fn escape_bounded(text: &str, max_bytes: usize) -> String {
    escaped(text, max_bytes).to_string()
}

/// True when `c` must not reach a log line or a terminal as is.
pub fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kept = 0;
        for (at, c) in self.text.char_indices() {
            if at + c.len_utf8() > self.max_bytes {
                kept = at;
                break;
            }
            kept = at + c.len_utf8();
            match c {
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if needs_escape(c) => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => fmt::Write::write_char(f, c)?,
            }
        }
        let left_out = self.text.len() - kept;
        if left_out > 0 {
            write!(f, "…(+{left_out} bytes)")?;
        }
        Ok(())
    }
}

/// Cuts `text` in place to at most `max_bytes` bytes, at a character boundary.
pub fn truncate_at_char(text: &mut String, max_bytes: usize) {
    if text.len() <= max_bytes {
        return;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_and_ansi_escapes_are_escaped() {
        let forged = "App\n2026-01-01 INFO forged line\u{1b}[31mred\u{7}\u{9b}\u{202e}";
        let shown = escape_bounded(forged, 1000);
        assert!(!shown.chars().any(needs_escape), "{shown}");
        assert_eq!(
            shown,
            "App\\n2026-01-01 INFO forged line\\u{1b}[31mred\\u{7}\\u{9b}\\u{202e}"
        );
    }

    #[test]
    fn long_text_is_cut_and_says_how_much_was_left_out() {
        let big = "x".repeat(10 * 1024 * 1024);
        let shown = escape_bounded(&big, QUOTE_BYTES);
        assert!(shown.len() < QUOTE_BYTES + 32, "{}", shown.len());
        assert!(shown.ends_with(&format!("…(+{} bytes)", big.len() - QUOTE_BYTES)));
    }

    #[test]
    fn cuts_at_a_character_boundary() {
        let text = "é".repeat(10); // 20 bytes
        assert_eq!(escape_bounded(&text, 5), "éé…(+16 bytes)");
        let mut owned = text.clone();
        truncate_at_char(&mut owned, 5);
        assert_eq!(owned, "éé");
        let mut short = String::from("ok");
        truncate_at_char(&mut short, 5);
        assert_eq!(short, "ok");
    }

    #[test]
    fn ordinary_text_is_unchanged() {
        let text = "Gedit — “Untitled” 🙂";
        assert_eq!(escape_bounded(text, 1000), text);
    }
}
