//! Message budgets: no reply or signal the bridge builds may come near the
//! D-Bus limits, whatever the producer pushed or the AT asked for.
//!
//! The hard limits: the D-Bus specification caps a message at 128 MiB and
//! an array at 64 MiB; libdbus enforces both on every connection (its
//! `DBUS_MAXIMUM_MESSAGE_LENGTH` / `DBUS_MAXIMUM_ARRAY_LENGTH`; a P2P
//! connection has no other limit, and at-spi2-core's `accessibility.conf`
//! raises the bus daemon's `max_message_size` to 1,000,000,000, so the
//! specification's caps are the ones that bite). A message over them makes
//! libdbus drop the whole connection, and the bus daemon disconnects the
//! sender: the application vanishes from the desktop. The budgets below
//! keep every message under three quarters of the array cap (a 100,000-node
//! tree's `GetItems`, about 33 MB, still goes whole).
//!
//! Rules (docs/robustness.md, "Message budgets"):
//! * a name or description is cut to [`MAX_NAME_BYTES`], a text answer to
//!   [`MAX_TEXT_BYTES`], each at the last UTF-8 character boundary at or
//!   below the limit (a prefix, never a broken character);
//! * `Cache.GetItems` lists items, shallowest first, until
//!   [`GET_ITEMS_BUDGET_BYTES`] (`cache.rs`); libatspi fetches the others
//!   when it meets them;
//! * `Collection` answers at most [`MAX_COLLECTION_MATCHES`] matches;
//! * anything else over [`MAX_MESSAGE_BYTES`] is answered with
//!   `org.a11y.atspi.Error.Failed` naming rule `max-message-bytes`, and a
//!   signal over it is not sent (logged).

/// The most a reply or signal may weigh once serialized.
pub const MAX_MESSAGE_BYTES: usize = 48 * 1024 * 1024;
/// An accessible name or description.
pub const MAX_NAME_BYTES: usize = 64 * 1024;
/// One string of text (`Text.GetText`, `GetTextAtOffset`, `GetStringAtOffset`, …).
pub const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;
/// The estimated size of a `Cache.GetItems` reply.
pub const GET_ITEMS_BUDGET_BYTES: usize = 40 * 1024 * 1024;
/// References in one `Collection` answer (about 70 bytes each).
pub const MAX_COLLECTION_MATCHES: usize = 100_000;

/// `text` cut to at most `max` bytes at a character boundary.
pub fn truncate_utf8(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

/// A name or description within [`MAX_NAME_BYTES`].
pub fn bounded_name(name: String) -> String {
    truncate_utf8(name, MAX_NAME_BYTES)
}

/// A text answer within [`MAX_TEXT_BYTES`].
pub fn bounded_text(text: String) -> String {
    truncate_utf8(text, MAX_TEXT_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate_utf8("héllo".into(), 2), "h");
        assert_eq!(truncate_utf8("héllo".into(), 3), "hé");
        assert_eq!(truncate_utf8("🏽🏽".into(), 5), "🏽");
        assert_eq!(truncate_utf8("🏽🏽".into(), 3), "");
        assert_eq!(truncate_utf8("abc".into(), 3), "abc");
        assert_eq!(truncate_utf8("abc".into(), 0), "");
    }

    #[test]
    fn a_huge_name_is_bounded() {
        let name = "é".repeat(MAX_NAME_BYTES);
        let bounded = bounded_name(name);
        assert_eq!(bounded.len(), MAX_NAME_BYTES);
        assert!(bounded.chars().all(|c| c == 'é'));
    }
}
