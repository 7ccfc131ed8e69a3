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
        self.visited.set(count);
        let now = Instant::now();
        if now.duration_since(self.started) < QUIET_FOR {
            return;
        }
        if self
            .last_line
            .get()
            .is_some_and(|last| now.duration_since(last) < EVERY)
        {
            return;
        }
        self.last_line.set(Some(now));
        eprintln!(
            "{}: {count} objects read in {} s…",
            self.label,
            now.duration_since(self.started).as_secs()
        );
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
