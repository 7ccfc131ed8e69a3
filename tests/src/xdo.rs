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
