//! Log set-up: `RUST_LOG` wins over `--log-level`; under systemd (journald
//! sets JOURNAL_STREAM) lines carry no timestamps or colours, which the
//! journal adds itself; colours only when stderr is a terminal.
//!
//! Log lines quote what producers and AT clients send (application names,
//! rejection reasons). Every field of every line is therefore escaped and
//! bounded by the field formatter ([`newton_push_protocol::text`] rule:
//! control characters, ANSI escapes and direction overrides written as
//! `\n`, `\u{1b}`, …; at most [`LOG_FIELD_BYTES`] per field), so nothing a
//! sender chooses can forge a line, colour the terminal or grow one line
//! without bound. Repeated warnings go through a [`LogLimiter`]: one line
//! per cause per interval, with the count of those not logged.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::time::{Duration, Instant};

use newton_push_protocol::text::needs_escape;
use tracing::field::Field;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::EnvFilter;

/// Most bytes of one field (the message included) in a log line.
pub const LOG_FIELD_BYTES: usize = 2048;

pub fn init(level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let under_journald = std::env::var_os("JOURNAL_STREAM").is_some();
    let fields = tracing_subscriber::fmt::format::debug_fn(format_field).delimited(" ");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .fmt_fields(fields)
        .with_target(false);
    if under_journald {
        builder.without_time().with_ansi(false).init();
    } else {
        // Colours only for a terminal: a log file gets plain lines, where
        // any escape byte would be one a producer smuggled in (none is).
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        builder.with_ansi(terminal).init();
    }
}

/// One field: the message as is, others as `name=value`; escaped, bounded.
fn format_field(writer: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
    if field.name() != "message" {
        write!(writer, "{}=", field.name())?;
    }
    let mut bounded = Bounded {
        out: writer,
        left: LOG_FIELD_BYTES,
        skipped: 0,
    };
    write!(bounded, "{value:?}")?;
    let skipped = bounded.skipped;
    if skipped > 0 {
        write!(writer, "…(+{skipped} bytes)")?;
    }
    Ok(())
}

/// Escapes what passes through and keeps the first `left` bytes, counting
/// the rest without storing it (a 10 MB value costs no 10 MB buffer).
struct Bounded<'a, W: fmt::Write> {
    out: &'a mut W,
    left: usize,
    skipped: usize,
}

impl<W: fmt::Write> fmt::Write for Bounded<'_, W> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for c in text.chars() {
            let len = c.len_utf8();
            if self.skipped > 0 || len > self.left {
                self.skipped += len;
                continue;
            }
            self.left -= len;
            match c {
                '\n' => self.out.write_str("\\n")?,
                '\r' => self.out.write_str("\\r")?,
                '\t' => self.out.write_str("\\t")?,
                c if needs_escape(c) => write!(self.out, "\\u{{{:x}}}", u32::from(c))?,
                c => self.out.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// How often one cause may log a line.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Rate limit for repeated warnings: at most one line per cause per
/// interval; the lines held back are counted and reported with the next
/// line of that cause (or by [`LogLimiter::take_suppressed`], e.g. when a
/// connection closes). Causes are the bridge's own names (rules, error
/// kinds), never producer strings, so the table stays small.
#[derive(Debug)]
pub struct LogLimiter {
    interval: Duration,
    causes: HashMap<&'static str, Cause>,
}

#[derive(Debug)]
struct Cause {
    logged_at: Instant,
    suppressed: u64,
}

impl Default for LogLimiter {
    fn default() -> Self {
        Self::new(LOG_INTERVAL)
    }
}

impl LogLimiter {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            causes: HashMap::new(),
        }
    }

    /// Whether a line for `cause` may be logged at `now`: `Some(n)` with the
    /// number of lines held back since the last one, `None` to stay quiet
    /// (the line is counted).
    pub fn check(&mut self, cause: &'static str, now: Instant) -> Option<u64> {
        match self.causes.get_mut(cause) {
            Some(entry) if now.saturating_duration_since(entry.logged_at) < self.interval => {
                entry.suppressed += 1;
                None
            }
            Some(entry) => {
                entry.logged_at = now;
                Some(std::mem::take(&mut entry.suppressed))
            }
            None => {
                self.causes.insert(
                    cause,
                    Cause {
                        logged_at: now,
                        suppressed: 0,
                    },
                );
                Some(0)
            }
        }
    }

    /// The lines held back and not reported yet, per cause (then zeroed).
    pub fn take_suppressed(&mut self) -> Vec<(&'static str, u64)> {
        let mut held: Vec<_> = self
            .causes
            .iter_mut()
            .filter(|(_, entry)| entry.suppressed > 0)
            .map(|(cause, entry)| (*cause, std::mem::take(&mut entry.suppressed)))
            .collect();
        held.sort_unstable();
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_text(value: &str) -> String {
        let mut out = String::new();
        let mut bounded = Bounded {
            out: &mut out,
            left: LOG_FIELD_BYTES,
            skipped: 0,
        };
        write!(bounded, "{value}").unwrap();
        let skipped = bounded.skipped;
        if skipped > 0 {
            write!(out, "…(+{skipped} bytes)").unwrap();
        }
        out
    }

    #[test]
    fn fields_cannot_forge_lines_or_colour_the_terminal() {
        let shown = field_text("App\n2026-12-04T00:00:00Z  INFO forged\u{1b}[2J\r");
        assert_eq!(
            shown,
            "App\\n2026-12-04T00:00:00Z  INFO forged\\u{1b}[2J\\r"
        );
    }

    #[test]
    fn fields_are_bounded() {
        let shown = field_text(&"é".repeat(1_000_000));
        assert!(shown.len() <= LOG_FIELD_BYTES + 24, "{}", shown.len());
        assert!(shown.ends_with(&format!("…(+{} bytes)", 2_000_000 - LOG_FIELD_BYTES)));
    }

    #[test]
    fn one_line_per_cause_per_interval_with_the_count() {
        let start = Instant::now();
        let mut limiter = LogLimiter::new(Duration::from_secs(10));
        assert_eq!(limiter.check("unknown-surface", start), Some(0));
        for i in 1..50 {
            assert_eq!(
                limiter.check("unknown-surface", start + Duration::from_millis(i)),
                None
            );
        }
        // Another cause is not held back by the first.
        assert_eq!(limiter.check("too-many-nodes", start), Some(0));
        let later = start + Duration::from_secs(10);
        assert_eq!(limiter.check("unknown-surface", later), Some(49));
        assert_eq!(limiter.check("unknown-surface", later), None);
        assert_eq!(limiter.take_suppressed(), vec![("unknown-surface", 1)]);
        assert!(limiter.take_suppressed().is_empty());
    }
}
