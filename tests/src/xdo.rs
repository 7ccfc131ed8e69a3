//! Real X input and window lookup with `xdotool` (no registry injection).

use std::time::Duration;

use crate::{HarnessError, Result, TestSession};

const XDOTOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `xdotool ARGS` in the session (as child `label`) and fails with its stderr unless it
/// exits 0 within 30 s. Returns its stdout.
pub fn xdotool(session: &mut TestSession, label: &str, args: &[&str]) -> Result<String> {
    let mut cmd = session.command("xdotool");
    cmd.args(args);
    session.run_ok(label, cmd, XDOTOOL_TIMEOUT)
}

/// The X window id of the visible window whose whole title is `title` (waits for it to map).
pub fn find_window(session: &mut TestSession, title: &str) -> Result<String> {
    let pattern = format!("^{}$", regex_escape(title));
    let out = xdotool(
        session,
        "xdotool-search",
        &["search", "--sync", "--onlyvisible", "--name", &pattern],
    )?;
    out.lines()
        .next()
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
        .ok_or_else(|| HarnessError::Other(format!("xdotool found no window titled {title:?}")))
}

/// Escapes the characters xdotool's (POSIX extended) regular expressions treat specially.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The title of [`focus_stand_in_window`]'s window.
const STAND_IN_TITLE: &str = "newton stand-in window";

/// Gives the X server a focused window when none has the focus, as a desktop always has one:
/// a plain X window (`xev`, from x11-utils; not accessible, so no AT sees it) mapped and focused
/// with `xdotool windowfocus`. A replayed application has no X window of its own, and with the
/// focus left at PointerRoot libatspi 2.60.2 and later read keys from XInput2's raw events as
/// well (`atspi-device-x11.c`, "Fall back on raw key events if there is no focus"): Orca 51.1
/// received every XTEST key three times and echoed and acted on each. Call it before Orca
/// starts, since libatspi reads the focus when its device is created. Returns the window's id,
/// or `None` when a window already has the focus (left alone).
pub fn focus_stand_in_window(session: &mut TestSession) -> Result<Option<String>> {
    if has_focused_window(session)? {
        return Ok(None);
    }
    let mut cmd = session.command("xev");
    cmd.args(["-name", STAND_IN_TITLE]);
    session.spawn("stand-in-window", cmd)?;
    let window = find_window(session, STAND_IN_TITLE)?;
    xdotool(
        session,
        "xdotool-focus-stand-in",
        &["windowfocus", "--sync", &window],
    )?;
    Ok(Some(window))
}

/// Whether an X window has the input focus (`xdotool getwindowfocus` fails while the focus is
/// PointerRoot or None).
fn has_focused_window(session: &mut TestSession) -> Result<bool> {
    let mut cmd = session.command("xdotool");
    cmd.arg("getwindowfocus");
    let (status, _) = session.run("xdotool-getwindowfocus", cmd, XDOTOOL_TIMEOUT)?;
    Ok(status.success())
}
