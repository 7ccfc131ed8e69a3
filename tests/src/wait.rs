//! Bounded polling for readiness (never used to assert on speed).

use std::time::{Duration, Instant};

use crate::{HarnessError, Result};

const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Polls `condition` every 100 ms until it returns `Ok(true)`, an error, or `timeout` passes.
/// On timeout the error names `what`; callers add what was still missing to its `detail`.
pub fn wait_until(
    what: &str,
    timeout: Duration,
    mut condition: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let start = Instant::now();
    loop {
        if condition()? {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(HarnessError::Timeout {
                what: what.to_string(),
                seconds: timeout.as_secs_f64(),
                detail: String::new(),
            });
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}
