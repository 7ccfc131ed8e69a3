//! [`Backoff`]: when to try reconnecting next (sans-IO: no clock, no sleep).
//!
//! Jittered exponential backoff, capped (docs/protocol.md §2.3): the n-th
//! attempt after a loss waits a delay drawn uniformly from `[d/2, d]`, where
//! `d = min(initial × 2ⁿ, max)`. With the defaults the waits are 50–100 ms,
//! 100–200 ms, 200–400 ms, 400–800 ms, 0.8–1.6 s, then 1–2 s for as long as
//! the bridge stays away. The jitter spreads the reconnects of every
//! application on the desktop after a bridge restart, so they do not all
//! knock at the same instant.

use std::time::Duration;

/// First delay before the jitter (the first wait is 50–100 ms).
pub const DEFAULT_INITIAL_DELAY: Duration = Duration::from_millis(100);
/// Cap before the jitter (every wait is at most 2 s).
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(2);

/// The state of one sender's reconnect attempts.
#[derive(Clone, Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    attempt: u32,
    random: SplitMix64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(DEFAULT_INITIAL_DELAY, DEFAULT_MAX_DELAY)
    }
}

impl Backoff {
    /// A backoff from `initial` doubling up to `max`, seeded from the process
    /// id and the clock (so two applications draw different jitter).
    pub fn new(initial: Duration, max: Duration) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self::with_seed(initial, max, nanos ^ (u64::from(std::process::id()) << 32))
    }

    /// A backoff with a fixed jitter seed (for tests).
    pub fn with_seed(initial: Duration, max: Duration, seed: u64) -> Self {
        Self {
            initial,
            max: max.max(initial),
            attempt: 0,
            random: SplitMix64(seed),
        }
    }

    /// The wait before the next attempt; each call counts one attempt.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self.ceiling();
        self.attempt = self.attempt.saturating_add(1);
        // Uniform in [ceiling/2, ceiling]: never zero, never above the cap.
        let half = ceiling / 2;
        let fraction = (self.random.next() >> 11) as f64 / (1u64 << 53) as f64;
        half + half.mul_f64(fraction)
    }

    /// The delay bound (before jitter) of the next attempt.
    pub fn ceiling(&self) -> Duration {
        let factor = 1u32.checked_shl(self.attempt.min(31)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }

    /// Starts over after a connection that lasted: the next wait is short
    /// again.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// Attempts counted since the last reset.
    pub fn attempts(&self) -> u32 {
        self.attempt
    }
}

/// A tiny, good-enough generator for jitter (no dependency for it).
#[derive(Clone, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_within_their_jitter_band_up_to_the_cap() {
        let mut backoff = Backoff::with_seed(DEFAULT_INITIAL_DELAY, DEFAULT_MAX_DELAY, 7);
        let ceilings_ms = [100, 200, 400, 800, 1600, 2000, 2000, 2000];
        for ceiling in ceilings_ms {
            let ceiling = Duration::from_millis(ceiling);
            assert_eq!(backoff.ceiling(), ceiling);
            let delay = backoff.next_delay();
            assert!(
                delay >= ceiling / 2 && delay <= ceiling,
                "{delay:?} outside [{:?}, {ceiling:?}]",
                ceiling / 2
            );
        }
        for _ in 0..100 {
            assert!(backoff.next_delay() <= DEFAULT_MAX_DELAY);
        }
    }

    #[test]
    fn reset_starts_over() {
        let mut backoff = Backoff::with_seed(DEFAULT_INITIAL_DELAY, DEFAULT_MAX_DELAY, 1);
        for _ in 0..10 {
            backoff.next_delay();
        }
        backoff.reset();
        assert_eq!(backoff.attempts(), 0);
        assert!(backoff.next_delay() <= DEFAULT_INITIAL_DELAY);
    }

    #[test]
    fn jitter_spreads_two_senders() {
        let mut a = Backoff::with_seed(DEFAULT_INITIAL_DELAY, DEFAULT_MAX_DELAY, 1);
        let mut b = Backoff::with_seed(DEFAULT_INITIAL_DELAY, DEFAULT_MAX_DELAY, 2);
        let differ = (0..8).filter(|_| a.next_delay() != b.next_delay()).count();
        assert!(differ >= 7, "jitter should differ between seeds");
    }

    #[test]
    fn huge_attempt_counts_do_not_overflow() {
        let mut backoff = Backoff::with_seed(Duration::from_secs(1), Duration::from_secs(30), 3);
        for _ in 0..10_000 {
            assert!(backoff.next_delay() <= Duration::from_secs(30));
        }
    }
}
