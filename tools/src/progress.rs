//! Progress of long walks on stderr (`dump`, `diff`): silent for walks
//! under [`QUIET_FOR`], then one line every [`EVERY`] and a last line with
//! the total, so a CI log shows a 100,000-object walk advancing instead of
//! minutes of nothing. Standard output stays the report alone.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Walks shorter than this print nothing.
const QUIET_FOR: Duration = Duration::from_secs(2);
/// Time between two progress lines.
const EVERY: Duration = Duration::from_secs(2);

/// The progress of one walk, named by `label` (the application).
pub struct Progress {
    label: String,
    started: Instant,
    last_line: Cell<Option<Instant>>,
    visited: Cell<usize>,
}

impl Progress {
    pub fn new(label: &str) -> Self {
        Progress {
            label: label.to_owned(),
            started: Instant::now(),
            last_line: Cell::new(None),
            visited: Cell::new(0),
        }
    }

    /// Called by the walker after each object read.
    pub fn visited(&self, count: usize) {
        if let Some(line) = self.visited_at(count, Instant::now()) {
            eprintln!("{line}");
        }
    }

    /// The progress line due after `count` objects at `now`, if one is.
    fn visited_at(&self, count: usize, now: Instant) -> Option<String> {
        self.visited.set(count);
        let elapsed = now.duration_since(self.started);
        let since_last = self.last_line.get().map(|last| now.duration_since(last));
        if elapsed < QUIET_FOR || since_last.is_some_and(|since| since < EVERY) {
            return None;
        }
        self.last_line.set(Some(now));
        Some(format!(
            "{}: {count} objects read in {} s…",
            self.label,
            elapsed.as_secs()
        ))
    }

    /// The closing line, only when progress lines were printed.
    pub fn finish(&self) {
        if self.last_line.get().is_some() {
            eprintln!(
                "{}: {} objects read in {:.1} s",
                self.label,
                self.visited.get(),
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_for_short_walks_then_a_line_every_interval() {
        let progress = Progress::new("diff: App");
        let at = |secs: u64| progress.started + Duration::from_secs(secs);
        assert_eq!(
            progress.visited_at(10, at(1)),
            None,
            "a short walk is silent"
        );
        assert_eq!(
            progress.visited_at(500, at(2)).as_deref(),
            Some("diff: App: 500 objects read in 2 s…")
        );
        assert_eq!(
            progress.visited_at(600, at(3)),
            None,
            "not before the interval"
        );
        assert_eq!(
            progress.visited_at(900, at(4)).as_deref(),
            Some("diff: App: 900 objects read in 4 s…")
        );
        assert_eq!(progress.visited.get(), 900);
    }

    #[test]
    fn no_closing_line_after_a_silent_walk() {
        let progress = Progress::new("dump");
        assert_eq!(progress.visited_at(3, progress.started), None);
        assert!(
            progress.last_line.get().is_none(),
            "finish() prints nothing"
        );
    }
}
