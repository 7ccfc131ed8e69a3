//! Resident memory per node: the bridge before/after attaching a tree, next to the legacy
//! reference's process with that tree minus the same process with a one-node tree.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::procfs::rss_bytes;
use crate::world::World;
use crate::Result;

/// Time for allocations to settle (lazy work after "ready", deferred frees).
const SETTLE: Duration = Duration::from_millis(500);

#[derive(Debug, Default, Serialize)]
pub struct Memory {
    pub nodes: usize,
    pub bridge_rss_before: u64,
    pub bridge_rss_after: u64,
    pub bridge_bytes_per_node: f64,
    pub legacy_rss: Option<u64>,
    pub legacy_rss_one_node: Option<u64>,
    pub legacy_bytes_per_node: Option<f64>,
}

impl Memory {
    pub fn bridge(nodes: usize, before: u64, after: u64) -> Memory {
        Memory {
            nodes,
            bridge_rss_before: before,
            bridge_rss_after: after,
            bridge_bytes_per_node: after.saturating_sub(before) as f64 / nodes.max(1) as f64,
            ..Memory::default()
        }
    }

    pub fn with_legacy(mut self, rss: Option<u64>, one_node: Option<u64>) -> Memory {
        self.legacy_rss = rss;
        self.legacy_rss_one_node = one_node;
        self.legacy_bytes_per_node = rss
            .zip(one_node)
            .map(|(r, b)| r.saturating_sub(b) as f64 / self.nodes.max(1) as f64);
        self
    }
}

/// The bridge's RSS after letting it settle.
pub fn bridge_rss(world: &World) -> Result<u64> {
    std::thread::sleep(SETTLE);
    rss_bytes(world.bridge_pid)
}

/// RSS of the legacy reference holding the tree of `file`; `None` when it is not built.
pub fn legacy_rss(world: &mut World, label: &str, file: &Path) -> Result<Option<u64>> {
    Ok(with_legacy(world, label, file, |_, _| Ok(()))?.map(|(rss, ())| rss))
}

/// Starts the legacy reference on `file`, takes its settled RSS, runs `then` (given its PID)
/// while it still runs, and stops it. `None` when the legacy reference is not built.
pub fn with_legacy<T>(
    world: &mut World,
    label: &str,
    file: &Path,
    then: impl FnOnce(&mut World, u32) -> Result<T>,
) -> Result<Option<(u64, T)>> {
    let Some(legacy) = world.spawn_legacy(label, file)? else {
        return Ok(None);
    };
    std::thread::sleep(SETTLE);
    let rss = rss_bytes(legacy.pid);
    let measured = then(world, legacy.pid);
    world.stop(legacy.pid);
    Ok(Some((rss?, measured?)))
}
