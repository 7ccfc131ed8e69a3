//! Latency summaries: median and p99 (nearest rank) in microseconds.

use std::time::Duration;

use serde::Serialize;

/// A summary of one series of samples.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Summary {
    pub samples: usize,
    pub median_us: f64,
    pub p99_us: f64,
}

impl Summary {
    pub fn of(samples: &[Duration]) -> Summary {
        let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        Summary {
            samples: us.len(),
            median_us: percentile(&us, 0.5),
            p99_us: percentile(&us, 0.99),
        }
    }
}

/// Nearest-rank percentile of sorted values (0 for an empty series).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.saturating_sub(1).min(sorted.len() - 1))
        .copied()
        .unwrap_or(0.0)
}

/// Median of unsorted values.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile(&sorted, 0.5)
}

/// `a / b`, or `None` when `b` is not positive.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}
