//! App-side cost of `update_if_active` for a one-node change: `newton_accesskit::Adapter` (the
//! live adapter, pushing to the bridge) against `accesskit_unix::Adapter` (in-process AT-SPI), the
//! same change on the same tree, side by side in one process and one run.
//!
//! The parent starts a private session and the bridge, then runs this binary again as a child
//! (`--update-cost-app`) in that session, so both adapters find their buses the way an
//! application does (the session's environment; no variable is set in-process). The child makes
//! one window of each adapter over the same list, waits until both are active (the bridge asked
//! for the tree; accesskit_unix saw the accessibility bus enabled and asked for it), then times
//! `update_if_active` calls that relabel one list item, alternating the two adapters. What is timed
//! is the call on the UI thread, factory included (the factory's cost is the same for both):
//!
//! * newton: the factory, then the update queued for the adapter's thread (encoding and writing
//!   happen there, off the UI thread);
//! * accesskit_unix: the factory, then the update applied to its in-process `accesskit_consumer`
//!   tree and the resulting AT-SPI events computed and handed to its bus thread.
//!
//! Calls are paced (one pair per `PACE`) so neither adapter's queue backs up; the child reports the
//! newton adapter's collapses and skipped builds, which must both be zero for the figures to count.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use accesskit::{
    ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, Node, NodeId, Role,
    TreeId, TreeInfo, TreeUpdate,
};
use serde::{Deserialize, Serialize};

use crate::stats::Summary;
use crate::world::{wait_for, World, READY_TIMEOUT};
use crate::{fail, Result};

/// Time between two pairs of calls: far above either adapter's per-update work, so no queue
/// backs up and every call builds and sends.
const PACE: Duration = Duration::from_millis(2);

/// The result of one run.
#[derive(Debug, Serialize)]
pub struct UpdateCost {
    /// Nodes of the tree (window, list, items).
    pub nodes: usize,
    pub calls: usize,
    pub newton: Summary,
    pub accesskit_unix: Summary,
    /// Newton adapter counters after the run: all calls built and sent, none collapsed.
    pub newton_built: u64,
    pub newton_sent: u64,
    pub newton_collapses: u64,
}

/// What the child prints on its last stdout line.
#[derive(Debug, Serialize, Deserialize)]
struct ChildReport {
    newton_ns: Vec<u64>,
    unix_ns: Vec<u64>,
    built: u64,
    sent: u64,
    collapses: u64,
}

/// Parent: the session, the bridge and the measuring child.
pub fn measure(files: std::path::PathBuf, items: usize, calls: usize) -> Result<UpdateCost> {
    let mut world = World::start(files)?;
    let exe = std::env::current_exe()
        .map_err(|e| fail(format!("cannot find this executable to run the child: {e}")))?;
    let mut cmd = world.session.command(exe);
    cmd.env(newton_push_protocol::SOCKET_ENV_VAR, &world.socket)
        .arg("--update-cost-app")
        .arg(items.to_string())
        .arg(calls.to_string());
    let timeout = READY_TIMEOUT + PACE * (calls as u32) * 4;
    let (status, stdout) = world
        .session
        .run("update-cost-app", cmd, timeout)
        .map_err(|e| fail(format!("the update-cost child did not finish: {e}")))?;
    if !status.success() {
        let err = world.session.dir().join("logs/update-cost-app.err");
        let text = std::fs::read_to_string(&err).unwrap_or_default();
        return Err(fail(format!(
            "the update-cost child failed ({status}): {}",
            text.trim()
        )));
    }
    let last = stdout.lines().last().unwrap_or_default();
    let report: ChildReport = serde_json::from_str(last)
        .map_err(|e| fail(format!("the update-cost child's report {last:?}: {e}")))?;
    let durations =
        |ns: &[u64]| -> Vec<Duration> { ns.iter().map(|&n| Duration::from_nanos(n)).collect() };
    Ok(UpdateCost {
        nodes: items + 2,
        calls,
        newton: Summary::of(&durations(&report.newton_ns)),
        accesskit_unix: Summary::of(&durations(&report.unix_ns)),
        newton_built: report.built,
        newton_sent: report.sent,
        newton_collapses: report.collapses,
    })
}

/// The markdown table of one run.
pub fn markdown(cost: &UpdateCost) -> String {
    let ratio = crate::stats::ratio(cost.newton.median_us, cost.accesskit_unix.median_us)
        .map(|r| format!("{r:.2}×"))
        .unwrap_or_else(|| "n/a".into());
    format!(
        "## update_if_active, one-node change ({} nodes, {} calls each)\n\n\
         | adapter | median | p99 |\n|---|---|---|\n\
         | newton_accesskit (queued for the bridge) | {:.1} µs | {:.1} µs |\n\
         | accesskit_unix 0.24.1 (in-process AT-SPI) | {:.1} µs | {:.1} µs |\n\n\
         newton / accesskit_unix median: {ratio}; newton adapter built {}, sent {}, collapsed {} times\n",
        cost.nodes,
        cost.calls,
        cost.newton.median_us,
        cost.newton.p99_us,
        cost.accesskit_unix.median_us,
        cost.accesskit_unix.p99_us,
        cost.newton_built,
        cost.newton_sent,
        cost.newton_collapses,
    )
}

const WINDOW: NodeId = NodeId(1);
const LIST: NodeId = NodeId(2);

fn item_id(index: usize) -> NodeId {
    NodeId(10 + index as u64)
}

fn item(index: usize, round: usize) -> Node {
    let mut node = Node::new(Role::ListItem);
    node.set_label(format!("Item {index} ({round})"));
    node
}

/// The full tree: a window holding a list of `items` items.
fn full_tree(items: usize) -> TreeUpdate {
    let mut window = Node::new(Role::Window);
    window.set_label("bench update cost");
    window.set_children(vec![LIST]);
    let mut list = Node::new(Role::List);
    list.set_children((0..items).map(item_id).collect::<Vec<_>>());
    let mut nodes = vec![(WINDOW, window), (LIST, list)];
    nodes.extend((0..items).map(|i| (item_id(i), item(i, 0))));
    TreeUpdate {
        nodes,
        tree: Some(TreeInfo::new(WINDOW)),
        tree_id: TreeId::ROOT,
        focus: WINDOW,
    }
}

/// The one-node change of call `round`: one item relabelled.
fn one_node_change(items: usize, round: usize) -> TreeUpdate {
    let index = round % items;
    TreeUpdate {
        nodes: vec![(item_id(index), item(index, round + 1))],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: WINDOW,
    }
}

/// Gives the full tree and records that it was asked for.
struct Activation {
    items: usize,
    asked: Arc<AtomicBool>,
}

impl ActivationHandler for Activation {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        self.asked.store(true, Ordering::SeqCst);
        Some(full_tree(self.items))
    }
}

struct NoActions;
impl ActionHandler for NoActions {
    fn do_action(&mut self, _request: ActionRequest) {}
}

struct NoDeactivation;
impl DeactivationHandler for NoDeactivation {
    fn deactivate_accessibility(&mut self) {}
}

/// Child (`--update-cost-app ITEMS CALLS`): both adapters, the timed calls, a JSON report.
pub fn run_app(items: usize, calls: usize) -> Result<()> {
    if items == 0 {
        return Err(fail("--update-cost-app needs at least one list item"));
    }
    let activation = |asked: &Arc<AtomicBool>| Activation {
        items,
        asked: asked.clone(),
    };
    let newton_asked = Arc::new(AtomicBool::new(false));
    let unix_asked = Arc::new(AtomicBool::new(false));
    let mut newton = newton_accesskit::Adapter::with_title(
        Some("bench update cost (newton)".into()),
        activation(&newton_asked),
        NoActions,
        NoDeactivation,
    );
    let mut unix = accesskit_unix::Adapter::new(activation(&unix_asked), NoActions, NoDeactivation);
    newton.update_window_focus_state(true);
    unix.update_window_focus_state(true);
    wait_for(
        "the bridge to want the newton window",
        READY_TIMEOUT,
        || Ok(newton.is_active() && newton_asked.load(Ordering::SeqCst)),
    )?;
    wait_for(
        "accesskit_unix to activate (accessibility bus enabled)",
        READY_TIMEOUT,
        || Ok(unix_asked.load(Ordering::SeqCst)),
    )?;
    // Let both finish publishing their initial trees before timing.
    std::thread::sleep(Duration::from_millis(500));
    let before = newton.stats();
    let mut newton_ns = Vec::with_capacity(calls);
    let mut unix_ns = Vec::with_capacity(calls);
    for round in 0..calls {
        // Alternate which adapter goes first, so neither always follows the other's work.
        let mut time_newton = |newton: &mut newton_accesskit::Adapter| {
            let start = Instant::now();
            newton.update_if_active(|| one_node_change(items, round));
            newton_ns.push(start.elapsed().as_nanos() as u64);
        };
        let mut time_unix = |unix: &mut accesskit_unix::Adapter| {
            let start = Instant::now();
            unix.update_if_active(|| one_node_change(items, round));
            unix_ns.push(start.elapsed().as_nanos() as u64);
        };
        if round % 2 == 0 {
            time_newton(&mut newton);
            time_unix(&mut unix);
        } else {
            time_unix(&mut unix);
            time_newton(&mut newton);
        }
        std::thread::sleep(PACE);
    }
    // The adapter's thread writes the last updates out.
    let deadline = Instant::now() + Duration::from_secs(10);
    while newton.stats().updates_sent - before.updates_sent < calls as u64
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let after = newton.stats();
    let report = ChildReport {
        newton_ns,
        unix_ns,
        built: after.updates_built - before.updates_built,
        sent: after.updates_sent - before.updates_sent,
        collapses: after.collapses - before.collapses,
    };
    let json = serde_json::to_string(&report)
        .map_err(|e| fail(format!("cannot encode the report: {e}")))?;
    println!("{json}");
    Ok(())
}

/// Child (`--adapter-app ITEMS`): one window of the live adapter over a list of `items`, named
/// [`crate::restart::ADAPTER_APP_NAME`], until it is stopped (the restart benchmark's
/// application).
pub fn run_adapter_app(items: usize, in_process: bool) -> Result<()> {
    if in_process {
        newton_accesskit::serve_in_process_without_bridge();
    }
    newton_accesskit::set_app_identity(newton_accesskit::AppIdentity {
        app_id: Some("org.newton.bench.adapter".into()),
        name: Some(crate::restart::ADAPTER_APP_NAME.into()),
        toolkit_name: Some("newton-bench".into()),
        toolkit_version: None,
    })
    .map_err(|_| fail("the adapter's identity was fixed before --adapter-app set it"))?;
    let mut adapter = newton_accesskit::Adapter::new(
        Activation {
            items,
            asked: Arc::new(AtomicBool::new(false)),
        },
        NoActions,
        NoDeactivation,
    );
    adapter.update_window_focus_state(true);
    println!("ready");
    // The adapter's thread does the work (reconnects, full trees on activation).
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
