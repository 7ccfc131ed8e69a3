//! Idle cost: the bridge's CPU time and wakeups per second with a sender attached and no AT
//! (the launcher started with `--a11y=0`, nobody listening for events).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use newton_e2e::{SessionOptions, TestSession};
use serde::Serialize;

use crate::fixtures::Stream;
use crate::procfs::{context_switches, context_switches_by_thread, cpu_seconds};
use crate::world::World;
use crate::{fail, Result};

#[derive(Debug, Serialize)]
pub struct Idle {
    pub seconds: f64,
    pub nodes: usize,
    pub cpu_s: f64,
    pub cpu_percent: f64,
    pub wakeups: u64,
    pub wakeups_per_s: f64,
    /// Wakeups during the measurement per thread (name and tid), threads that woke only.
    pub by_thread: Vec<(String, u64)>,
}

/// A fresh session with the accessibility bus disabled, the bridge, one attached sender; then
/// `seconds` of measured silence.
pub fn measure(stream: &Stream, seconds: f64, files: PathBuf) -> Result<Idle> {
    let mut session = TestSession::start(SessionOptions {
        xvfb: false,
        atspi: false,
        ready_timeout: Duration::from_secs(60),
    })
    .map_err(|e| fail(format!("cannot bring up the idle session: {e}")))?;
    let address = start_disabled_atspi(&mut session)?;
    let world = World::with_session(session, &address, files)?;
    let _app = world.attach(stream)?;
    // Let start-up work (embedding, updatesUnwanted) finish before measuring.
    std::thread::sleep(Duration::from_secs(1));
    let pid = world.bridge_pid;
    let threads0 = context_switches_by_thread(pid);
    let (cpu0, ctx0) = (cpu_seconds(pid)?, context_switches(pid)?);
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let (cpu1, ctx1) = (cpu_seconds(pid)?, context_switches(pid)?);
    let elapsed = start.elapsed().as_secs_f64();
    let wakeups = ctx1.saturating_sub(ctx0);
    let by_thread = context_switches_by_thread(pid)
        .into_iter()
        .filter_map(|(name, after)| {
            let before = threads0.iter().find(|(n, _)| *n == name).map_or(0, |t| t.1);
            let woke = after.saturating_sub(before);
            (woke > 0).then_some((name, woke))
        })
        .collect();
    Ok(Idle {
        seconds: elapsed,
        nodes: stream.nodes,
        cpu_s: cpu1 - cpu0,
        cpu_percent: (cpu1 - cpu0) * 100.0 / elapsed,
        wakeups,
        wakeups_per_s: wakeups as f64 / elapsed,
        by_thread,
    })
}

/// at-spi-bus-launcher with `--a11y=0` (so `org.a11y.Status.IsEnabled` is false) and the
/// registry; returns the accessibility bus address.
fn start_disabled_atspi(session: &mut TestSession) -> Result<String> {
    let (_, address) = session
        .start_a11y_bus("at-spi-bus-launcher", false)
        .map_err(|e| fail(format!("cannot start at-spi-bus-launcher: {e}")))?;
    session
        .start_registry("at-spi2-registryd", &address)
        .map_err(|e| fail(format!("cannot start at-spi2-registryd: {e}")))?;
    Ok(address)
}
