//! Harness for end-to-end tests: brings up a private session bus, an optional Xvfb, the AT-SPI bus
//! launcher and registry, then lets tests start applications, the bridge and a real Orca, and tears
//! every process down again (by PID) when the session is dropped.
//!
//! Nothing here touches the caller's own session bus: `DBUS_SESSION_BUS_ADDRESS` is never read
//! from the environment, only set for the children this harness starts.
//!
//! Locating the bridge binary: Cargo does not expose `CARGO_BIN_EXE_*` across crates, and a nested
//! `cargo build` from inside `cargo test` would dead-lock on the build-directory lock. So
//! [`bridge_binary`] looks for `newton-atspi-bridge` next to the running test executable (same
//! target dir and profile), or at `$NEWTON_BRIDGE_BIN`. Build it first with
//! `cargo build -p newton-atspi-bridge` (scripts/test.sh builds the whole workspace first).

#![forbid(unsafe_code)]

mod bridge;
mod bus;
mod error;
mod golden;
mod keys;
mod legacy;
mod lock;
mod orca;
mod paths;
mod process;
pub mod raw_sender;
mod session;
mod stepped;
mod summary;
mod voice;
mod wait;
mod xdo;

pub use bridge::{fixture, Bridge, Replay};
pub use bus::BusClient;
pub use error::{HarnessError, Result};
pub use golden::{check_golden, first_difference, golden_path, orca_golden};
pub use keys::{registry_key, KeyPhase};
pub use legacy::{legacy_binary, LegacyReference};
pub use lock::OrcaLock;
pub use orca::{
    atspi_release, atspi_root, extract_speech, orca_command, orca_root, registry_release,
    utterance_position, Orca, OrcaSpeech, OrcaVersion,
};
pub use paths::{
    bridge_binary, py_script, python, workspace_binary, workspace_binary_or_panic, workspace_root,
};
pub use process::TrackedChild;
pub use session::{SessionOptions, ShutdownReport, TestSession};
pub use stepped::SteppedReplay;
pub use summary::{summary_note, summary_path};
pub use voice::{SilentVoice, STOPPED};
pub use wait::wait_until;
pub use xdo::{find_window, focus_stand_in_window, xdotool};

/// True when the caller asked to skip Orca tests. Tests print a loud message when they skip
/// (and note it in the test summary, see [`summary_note`]); any other value (or none) runs
/// them. Under CI (`CI` set) skipping is refused: the test fails instead.
pub fn orca_tests_skipped() -> bool {
    let skip = std::env::var("NEWTON_E2E_SKIP_ORCA").is_ok_and(|v| v == "1");
    assert!(
        !(skip && under_ci()),
        "NEWTON_E2E_SKIP_ORCA=1 is refused under CI (CI is set): CI must run the Orca tests"
    );
    if skip {
        summary_note(
            "skip",
            &format!(
                "NEWTON_E2E_SKIP_ORCA=1: an Orca test was SKIPPED ({})",
                std::thread::current().name().unwrap_or("?")
            ),
        );
    }
    skip
}

/// True when golden files should be rewritten from the current output instead of compared.
/// Refused under CI (`CI` set): CI compares goldens, it never rewrites them.
pub fn update_goldens() -> bool {
    let update = std::env::var("NEWTON_UPDATE_GOLDENS").is_ok_and(|v| v == "1");
    assert!(
        !(update && under_ci()),
        "NEWTON_UPDATE_GOLDENS=1 is refused under CI (CI is set): CI compares the goldens"
    );
    update
}

/// True when running under CI (`CI` set to anything but "" or "false").
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false")
}
