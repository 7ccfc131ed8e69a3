//! A full libatspi walk (python3, gi `Atspi`, libatspi's cache off) of one application: what a
//! naive libatspi-based AT pays to read a whole tree, every property a D-Bus call
//! (`tests/py/atspi_walk.py`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::world::World;
use crate::{fail, Result};

/// One walk of one application.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct PyWalk {
    pub nodes: usize,
    pub seconds: f64,
    pub errors: usize,
    pub first_error: Option<String>,
}

impl PyWalk {
    pub fn us_per_node(&self) -> f64 {
        self.seconds * 1e6 / self.nodes.max(1) as f64
    }
}

/// The libatspi walks of one list fixture: through the bridge and through the legacy
/// reference (`None` when it is not built).
#[derive(Debug, Default, Serialize)]
pub struct ListWalks {
    pub nodes: usize,
    pub bridge: Option<PyWalk>,
    pub legacy: Option<PyWalk>,
}

/// Which application to walk: one of the bridge's (by name and the bridge's PID: every bridged
/// application shares it, and a legacy process that just left may have had the same name) or a
/// legacy process's (by PID).
pub enum Target<'a> {
    Bridged { name: &'a str, bridge_pid: u32 },
    Process(u32),
}

/// Walks `target` with libatspi; `nodes` bounds how long it may take (20 ms per node, at
/// least two minutes: far above any healthy walk, so only a hang trips it). Errors (objects
/// the application lists but does not serve) are counted, not fatal: the walk goes on as an AT's
/// would.
pub fn walk(world: &mut World, label: &str, target: Target, nodes: usize) -> Result<PyWalk> {
    let mut cmd = world.session.command(newton_e2e::python());
    cmd.arg(newton_e2e::py_script("atspi_walk.py"));
    match target {
        Target::Bridged { name, bridge_pid } => {
            cmd.args(["--name", name, "--pid", &bridge_pid.to_string()])
        }
        Target::Process(pid) => cmd.args(["--pid", &pid.to_string()]),
    };
    let timeout = Duration::from_secs(120).max(Duration::from_millis(20 * nodes as u64));
    let name = format!("atspi-walk-{label}");
    let stdout = world
        .session
        .run_ok(&name, cmd, timeout)
        .map_err(|e| fail(format!("the libatspi walk of {label} failed: {e}")))?;
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| {
        fail(format!(
            "the libatspi walk of {label} printed {line:?}: {e}"
        ))
    })
}
