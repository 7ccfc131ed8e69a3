//! Test-only fault injection: lets the end-to-end tests prove that a panic
//! inside one application's handling resets that application only.
//!
//! Compiled into debug builds only (`cfg(debug_assertions)`); release builds
//! (packages, `cargo build --release`) have no hook at all. Even in a debug
//! build it is off unless the bridge's own environment sets
//! `NEWTON_ATSPI_TEST_PANIC_ON_LABEL`: a sender cannot set it, only whoever
//! starts the bridge. When set, a commit carrying a node whose label equals
//! its value panics: an incremental commit while the application's state
//! lock is held (the lock is poisoned too), a full tree on the blocking
//! thread that builds it off the lock.

use accesskit::TreeUpdate;

/// The environment variable naming the label that triggers the panic.
#[cfg(debug_assertions)]
pub const PANIC_ON_LABEL: &str = "NEWTON_ATSPI_TEST_PANIC_ON_LABEL";

/// Panics when the test hook is armed and `updates` carry its label.
#[cfg(debug_assertions)]
pub fn panic_if_armed(updates: &[TreeUpdate]) {
    static LABEL: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let armed = LABEL.get_or_init(|| {
        std::env::var(PANIC_ON_LABEL)
            .ok()
            .filter(|label| !label.is_empty())
    });
    let Some(label) = armed else {
        return;
    };
    let hit = updates
        .iter()
        .flat_map(|update| &update.nodes)
        .any(|(_, node)| node.label() == Some(label.as_str()));
    if hit {
        panic!("test fault injection: a node labelled {label:?} ({PANIC_ON_LABEL} is set)");
    }
}

/// Release builds: no hook.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn panic_if_armed(_updates: &[TreeUpdate]) {}

/// The environment variable naming the label that makes the bridge close
/// the committing application's bus connection, as the bus daemon does when
/// it drops a connection (debug builds only; set by whoever starts the
/// bridge, never by a sender).
#[cfg(debug_assertions)]
pub const CLOSE_BUS_ON_LABEL: &str = "NEWTON_ATSPI_TEST_CLOSE_BUS_ON_LABEL";

/// Whether the test hook is armed and `updates` carry its label.
#[cfg(debug_assertions)]
pub fn close_bus_armed(updates: &[TreeUpdate]) -> bool {
    static LABEL: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let armed = LABEL.get_or_init(|| {
        std::env::var(CLOSE_BUS_ON_LABEL)
            .ok()
            .filter(|label| !label.is_empty())
    });
    armed.as_ref().is_some_and(|label| {
        updates
            .iter()
            .flat_map(|update| &update.nodes)
            .any(|(_, node)| node.label() == Some(label.as_str()))
    })
}

/// Release builds: no hook.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn close_bus_armed(_updates: &[TreeUpdate]) -> bool {
    false
}
