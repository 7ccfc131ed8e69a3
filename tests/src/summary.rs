//! The test summary: one file that every test appends its skips, reruns, warnings and
//! allow-list counts to, and that scripts/test.sh prints at the end of the CI log — stderr of a
//! passing test is swallowed by cargo, so a note only printed there is never seen.
//!
//! The file is `$NEWTON_TEST_SUMMARY` (scripts/test.sh sets it and empties it before the tests),
//! else `target/test-summary.txt` in the workspace. Lines are appended whole (one `write` each,
//! `O_APPEND`), so test binaries running at once do not interleave within a line.

use std::io::Write;
use std::path::PathBuf;

use crate::workspace_root;

/// Where the summary is written.
pub fn summary_path() -> PathBuf {
    match std::env::var_os("NEWTON_TEST_SUMMARY") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => workspace_root().join("target").join("test-summary.txt"),
    }
}

/// Appends `text` (one or more lines) to the summary under `topic`, and prints it on stderr.
/// A summary that cannot be written is reported on stderr; the test goes on. Within a pass that
/// runs beside another (`NEWTON_SUMMARY_PASS`, set by scripts/orca-pass.sh), the topic is
/// prefixed with the pass's name.
pub fn summary_note(topic: &str, text: &str) {
    let topic = match std::env::var("NEWTON_SUMMARY_PASS") {
        Ok(pass) if !pass.is_empty() => format!("{pass} {topic}"),
        _ => topic.to_string(),
    };
    let mut block = String::new();
    for line in text.lines() {
        block.push_str(&format!("[{topic}] {line}\n"));
    }
    eprint!("{block}");
    let path = summary_path();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(block.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "newton-e2e: cannot append to the test summary {}: {e}",
            path.display()
        );
    }
}
