//! Keys for Orca, the way each Orca reads them: through the registry's key listeners (Orca 43.1)
//! or as real X keys (Orca 48.1, which reads the X server itself and registers no key listener).

use crate::{BusClient, HarnessError, Result};

/// Press or release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPhase {
    Press,
    Release,
}

impl KeyPhase {
    /// AT-SPI's event type: 0 press, 1 release.
    fn atspi_type(self) -> u32 {
        match self {
            KeyPhase::Press => 0,
            KeyPhase::Release => 1,
        }
    }
}

const SHIFT: i16 = 1;

/// (keysym, keycode in Xvfb's default keymap, modifiers, string, is_text) of a key by its X
/// name — the table of tests/py/inject_key.py.
fn key(name: &str) -> Option<(i32, i16, i16, &str, bool)> {
    Some(match name {
        "Tab" => (0xFF09, 23, 0, "Tab", false),
        "ISO_Left_Tab" => (0xFE20, 23, SHIFT, "ISO_Left_Tab", false),
        "space" => (0x20, 65, 0, " ", true),
        "a" => (0x61, 38, 0, "a", true),
        "b" => (0x62, 56, 0, "b", true),
        "exclam" => (0x21, 10, SHIFT, "!", true),
        "BackSpace" => (0xFF08, 22, 0, "BackSpace", false),
        "Delete" => (0xFFFF, 119, 0, "Delete", false),
        "Return" => (0xFF0D, 36, 0, "Return", false),
        "Left" => (0xFF51, 113, 0, "Left", false),
        "Right" => (0xFF53, 114, 0, "Right", false),
        "Up" => (0xFF52, 111, 0, "Up", false),
        "Down" => (0xFF54, 116, 0, "Down", false),
        "Home" => (0xFF50, 110, 0, "Home", false),
        "End" => (0xFF57, 115, 0, "End", false),
        "Page_Up" => (0xFF55, 112, 0, "Page_Up", false),
        "KP_Enter" => (0xFF8D, 104, 0, "KP_Enter", false),
        "KP_Up" => (0xFF97, 80, 0, "KP_Up", false),
        "KP_Page_Up" => (0xFF9A, 81, 0, "KP_Page_Up", false),
        _ => return None,
    })
}

/// One key event through the registry's `DeviceEventController.NotifyListenersSync` (signature
/// `(uinnisb)`, which gdbus cannot send); returns whether a listener (Orca 43) consumed it.
pub fn registry_key(a11y: &BusClient, phase: KeyPhase, name: &str) -> Result<bool> {
    let (keysym, keycode, modifiers, string, is_text) = key(name).ok_or_else(|| {
        HarnessError::Other(format!(
            "no keycode for keysym {name}; add it to tests/src/keys.rs"
        ))
    })?;
    a11y.notify_key(
        phase.atspi_type(),
        (keysym, keycode, modifiers),
        string,
        is_text,
    )
}
