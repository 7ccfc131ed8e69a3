//! Key forwarding for screen readers that learn keys from applications
//! (Orca < 48): a sender's `key` message becomes the registry's
//! `DeviceEventController.NotifyListenersSync`, called from the
//! application's own bus connection as atk-bridge does, and the AT's
//! "consumed" answer goes back as `keyHandled` (docs/protocol.md §6.1).

use std::time::Duration;

use newton_push_protocol::{KeyEvent, KeyEventKind};

use crate::registry::REGISTRY_NAME;

const DEC_PATH: &str = "/org/a11y/atspi/registry/deviceeventcontroller";
const DEC_INTERFACE: &str = "org.a11y.atspi.DeviceEventController";

/// How long the bridge waits for the registry (and through it the AT) to
/// say whether it consumed a key. The registry itself waits for its
/// listeners; a stuck AT must not leave the sender without an answer.
pub const KEY_ANSWER_TIMEOUT: Duration = Duration::from_secs(3);

/// AT-SPI's `DeviceEvent` as the registry reads it: `(uinnisb)` — type,
/// keysym, keycode, modifiers, timestamp, event string, is-text.
type DeviceEvent = (u32, i32, i16, i16, i32, String, bool);

/// Offers the key to the ATs' key listeners from `conn` (the application's
/// connection). `Ok(true)` when an AT consumed it; a registry that does not
/// answer within [`KEY_ANSWER_TIMEOUT`] counts as not consumed.
pub async fn notify_listeners(conn: &zbus::Connection, event: &KeyEvent) -> zbus::Result<bool> {
    let body = (device_event(event),);
    let call = conn.call_method(
        Some(REGISTRY_NAME),
        DEC_PATH,
        Some(DEC_INTERFACE),
        "NotifyListenersSync",
        &body,
    );
    let timeout = async_io::Timer::after(KEY_ANSWER_TIMEOUT);
    let reply = match futures::future::select(std::pin::pin!(call), timeout).await {
        futures::future::Either::Left((reply, _)) => reply?,
        futures::future::Either::Right(_) => return Ok(false),
    };
    reply.body().deserialize::<bool>()
}

/// The registry's view of a key, filled as atk-bridge fills it from a GTK
/// key event: the event string is the key's text when it is a visible
/// character, else the keysym's name ("Tab", "space", "KP_Enter"); is-text
/// is whether that string starts with a printable character.
fn device_event(event: &KeyEvent) -> DeviceEvent {
    let kind = match event.kind {
        KeyEventKind::Press => 0,
        KeyEventKind::Release => 1,
    };
    let string = event_string(event);
    let is_text = string.chars().next().is_some_and(|c| !c.is_control());
    (
        kind,
        // X keysyms fit in 29 bits; the wire types are AT-SPI's.
        event.keysym as i32,
        event.keycode as i16,
        event.modifiers as i16,
        (event.timestamp_ms & 0x7fff_ffff) as i32,
        string,
        is_text,
    )
}

fn event_string(event: &KeyEvent) -> String {
    let visible = |text: &str| {
        let mut chars = text.chars();
        matches!((chars.next(), chars.next()), (Some(c), None) if !c.is_control() && !c.is_whitespace())
    };
    match &event.text {
        Some(text) if visible(text) => text.clone(),
        _ => keysym_name(event.keysym)
            .map(str::to_owned)
            .or_else(|| keysym_char(event.keysym).map(String::from))
            .unwrap_or_default(),
    }
}

/// The character of a Latin-1 or Unicode keysym.
fn keysym_char(keysym: u32) -> Option<char> {
    match keysym {
        0x21..=0x7e | 0xa1..=0xff => char::from_u32(keysym),
        0x0100_0000..=0x0110_ffff => char::from_u32(keysym - 0x0100_0000),
        _ => None,
    }
}

/// Names of the keysyms that produce no visible text (X11's keysymdef.h);
/// Orca speaks these names as key echo.
fn keysym_name(keysym: u32) -> Option<&'static str> {
    Some(match keysym {
        0x20 => "space",
        0xff08 => "BackSpace",
        0xff09 => "Tab",
        0xfe20 => "ISO_Left_Tab",
        0xff0d => "Return",
        0xff1b => "Escape",
        0xffff => "Delete",
        0xff50 => "Home",
        0xff51 => "Left",
        0xff52 => "Up",
        0xff53 => "Right",
        0xff54 => "Down",
        0xff55 => "Page_Up",
        0xff56 => "Page_Down",
        0xff57 => "End",
        0xff63 => "Insert",
        0xff67 => "Menu",
        0xff7f => "Num_Lock",
        0xff80 => "KP_Space",
        0xff89 => "KP_Tab",
        0xff8d => "KP_Enter",
        0xff95 => "KP_Home",
        0xff96 => "KP_Left",
        0xff97 => "KP_Up",
        0xff98 => "KP_Right",
        0xff99 => "KP_Down",
        0xff9a => "KP_Page_Up",
        0xff9b => "KP_Page_Down",
        0xff9c => "KP_End",
        0xff9d => "KP_Begin",
        0xff9e => "KP_Insert",
        0xff9f => "KP_Delete",
        0xffaa => "KP_Multiply",
        0xffab => "KP_Add",
        0xffad => "KP_Subtract",
        0xffae => "KP_Decimal",
        0xffaf => "KP_Divide",
        0xffb0..=0xffb9 => KP_DIGITS[(keysym - 0xffb0) as usize],
        0xffbe..=0xffc9 => FUNCTION_KEYS[(keysym - 0xffbe) as usize],
        0xffe1 => "Shift_L",
        0xffe2 => "Shift_R",
        0xffe3 => "Control_L",
        0xffe4 => "Control_R",
        0xffe5 => "Caps_Lock",
        0xffe9 => "Alt_L",
        0xffea => "Alt_R",
        0xffeb => "Super_L",
        0xffec => "Super_R",
        _ => return None,
    })
}

const KP_DIGITS: [&str; 10] = [
    "KP_0", "KP_1", "KP_2", "KP_3", "KP_4", "KP_5", "KP_6", "KP_7", "KP_8", "KP_9",
];
const FUNCTION_KEYS: [&str; 12] = [
    "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn key(keysym: u32, text: Option<&str>) -> KeyEvent {
        KeyEvent {
            kind: KeyEventKind::Press,
            keysym,
            keycode: 10,
            modifiers: 1,
            text: text.map(str::to_owned),
            timestamp_ms: 0x8000_0005,
        }
    }

    #[test]
    fn text_keys_carry_their_text_and_others_their_keysym_name() {
        assert_eq!(device_event(&key(0x61, Some("a"))).5, "a");
        assert!(device_event(&key(0x61, Some("a"))).6);
        assert_eq!(device_event(&key(0xff09, Some("\t"))).5, "Tab");
        assert_eq!(device_event(&key(0x20, Some(" "))).5, "space");
        assert_eq!(device_event(&key(0xff8d, None)).5, "KP_Enter");
        assert_eq!(device_event(&key(0xffc9, None)).5, "F12");
        assert_eq!(device_event(&key(0x10020ac, None)).5, "€");
        assert_eq!(device_event(&key(0x1234_5678, None)).5, "");
        assert!(!device_event(&key(0x1234_5678, None)).6);
    }

    #[test]
    fn fields_take_at_spi_wire_types() {
        let event = device_event(&KeyEvent {
            kind: KeyEventKind::Release,
            ..key(0xff8d, None)
        });
        assert_eq!(event.0, 1);
        assert_eq!((event.1, event.2, event.3), (0xff8d, 10, 1));
        assert_eq!(event.4, 5, "timestamps wrap into a positive i32");
    }
}
