//! One accesskit_unix `Adapter` per surface, as a toolkit has one per window.
//!
//! accesskit_unix keeps one process-global application (`AppContext`) whose
//! children are the adapters' root nodes, so several surfaces show up as
//! several windows of one application — the same shape the bridge gives.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use accesskit::{
    ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, Rect, TreeUpdate,
};
use accesskit_unix::Adapter;
use newton_cache::{AppReplica, Limits};
use newton_push_protocol::{Geometry, SurfaceId};

use crate::recording::Event;
use crate::snapshot::Snapshot;

/// How often a wait for accesskit_unix says it is still waiting.
const WAIT_NOTICE: Duration = Duration::from_secs(5);

/// Hands accesskit_unix the surface's current tree when it activates.
struct Activation {
    snapshot: Arc<Mutex<Snapshot>>,
    activated: Sender<()>,
}

impl ActivationHandler for Activation {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        let tree = self
            .snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .full_tree();
        let _ = self.activated.send(());
        tree
    }
}

/// Logs action requests as JSON lines on stderr; the recording cannot react.
struct ActionLog {
    surface: SurfaceId,
}

impl ActionHandler for ActionLog {
    fn do_action(&mut self, request: ActionRequest) {
        let line = serde_json::json!({ "surface": self.surface.0, "actionRequest": request });
        eprintln!("{line}");
    }
}

struct Deactivation;

impl DeactivationHandler for Deactivation {
    fn deactivate_accessibility(&mut self) {
        eprintln!("newton-legacy-reference: the accessibility bus went away; waiting for it");
    }
}

/// Answers `None` (the adapter stays pending, adds nothing) and reports that
/// accesskit_unix's event loop reached it: every message queued before it —
/// object registrations and events of earlier updates — has been handled.
struct Barrier(Sender<()>);

impl ActivationHandler for Barrier {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        let _ = self.0.send(());
        None
    }
}

struct Surface {
    adapter: Adapter,
    snapshot: Arc<Mutex<Snapshot>>,
}

/// The application: its surfaces, a validating replica mirror, and which
/// surface is focused.
pub struct Application {
    surfaces: BTreeMap<SurfaceId, Surface>,
    geometry: BTreeMap<SurfaceId, Geometry>,
    replica: AppReplica,
    focused: Option<SurfaceId>,
}

impl Application {
    pub fn new() -> Self {
        Self {
            surfaces: BTreeMap::new(),
            geometry: BTreeMap::new(),
            replica: AppReplica::new(Limits::default()),
            focused: None,
        }
    }

    /// True once some surface has an adapter (a first tree was accepted).
    pub fn has_surfaces(&self) -> bool {
        !self.surfaces.is_empty()
    }

    /// Applies one event. Commits are validated first with the bridge's own
    /// validator: accesskit_unix panics on malformed trees, so a rejected
    /// commit is reported and skipped, as the bridge skips it.
    pub fn apply(&mut self, event: Event) -> Result<(), String> {
        match event {
            Event::CreateSurface(surface) => self
                .replica
                .create_surface(surface, None)
                .map(|_| ())
                .map_err(|e| format!("surface {}: {e}", surface.0)),
            Event::Focus(surface) => {
                self.focused = surface;
                for (id, s) in &mut self.surfaces {
                    s.adapter.update_window_focus_state(Some(*id) == surface);
                }
                Ok(())
            }
            Event::Geometry(surface, geometry) => {
                self.geometry.insert(surface, geometry);
                if let Some(s) = self.surfaces.get_mut(&surface) {
                    set_bounds(&mut s.adapter, geometry);
                }
                Ok(())
            }
            Event::DestroySurface(surface) => {
                self.surfaces.remove(&surface);
                self.geometry.remove(&surface);
                self.replica
                    .destroy_surface(surface)
                    .map(|_| ())
                    .map_err(|e| format!("surface {}: {e}", surface.0))
            }
            Event::Commit {
                surface,
                serial,
                updates,
            } => self.commit(surface, serial, updates),
        }
    }

    fn commit(
        &mut self,
        surface: SurfaceId,
        serial: u64,
        updates: Vec<TreeUpdate>,
    ) -> Result<(), String> {
        self.replica
            .commit(surface, updates.clone(), 0)
            .map_err(|e| format!("commit {serial} of surface {} rejected: {e}", surface.0))?;
        if !self.surfaces.contains_key(&surface) {
            return self.create_adapter(surface, updates);
        }
        let Some(s) = self.surfaces.get_mut(&surface) else {
            return Ok(());
        };
        for update in updates {
            s.snapshot
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .apply(&update);
            // If accesskit_unix activates between these two lines it gets a
            // snapshot that already holds this update and applies it twice;
            // re-applying an update the tree already reflects changes nothing.
            s.adapter.update_if_active(|| update);
        }
        Ok(())
    }

    /// A surface's first commit: the adapter is created and waits for
    /// accesskit_unix to ask for the initial tree (at once when the
    /// accessibility bus is enabled).
    fn create_adapter(
        &mut self,
        surface: SurfaceId,
        updates: Vec<TreeUpdate>,
    ) -> Result<(), String> {
        let mut snapshot = Snapshot::default();
        for update in &updates {
            snapshot.apply(update);
        }
        let snapshot = Arc::new(Mutex::new(snapshot));
        let (activated, on_activation) = mpsc::channel();
        let mut adapter = Adapter::new(
            Activation {
                snapshot: Arc::clone(&snapshot),
                activated,
            },
            ActionLog { surface },
            Deactivation,
        );
        // The window appears unfocused and gets the compositor's focus once accesskit_unix
        // is active, as a real window is mapped first and focused after. Focused before
        // activation, accesskit_unix would start the tree "already active" and emit neither
        // window:activate nor a focus event, so a screen reader would present nothing until
        // the first focus move (the bridge announces a focused surface as it appears).
        adapter.update_window_focus_state(false);
        if let Some(geometry) = self.geometry.get(&surface) {
            set_bounds(&mut adapter, *geometry);
        }
        wait_for(
            &on_activation,
            "accesskit_unix to activate (it does once org.a11y.Status.IsEnabled is true on the \
             session bus and the accessibility bus answers)",
        )?;
        if self.focused == Some(surface) {
            // After the barrier the adapter is active, so the change emits events.
            self.settle()?;
            adapter.update_window_focus_state(true);
        }
        self.surfaces.insert(surface, Surface { adapter, snapshot });
        Ok(())
    }

    /// Waits until accesskit_unix has handled everything queued so far
    /// (registrations of new objects, events), so that a client calling
    /// now sees the last commit.
    pub fn settle(&self) -> Result<(), String> {
        let (reached, on_reached) = mpsc::channel();
        let barrier = Adapter::new(Barrier(reached), NoActions, NoDeactivation);
        let result = wait_for(&on_reached, "accesskit_unix's event loop to catch up");
        drop(barrier);
        result
    }
}

struct NoActions;
impl ActionHandler for NoActions {
    fn do_action(&mut self, _: ActionRequest) {}
}
struct NoDeactivation;
impl DeactivationHandler for NoDeactivation {
    fn deactivate_accessibility(&mut self) {}
}

/// accesskit_unix computes screen coordinates from the window's bounds;
/// the compositor's geometry is the best a reference can give (scale is
/// not applied: accesskit_unix has no notion of it).
fn set_bounds(adapter: &mut Adapter, geometry: Geometry) {
    let x0 = f64::from(geometry.x);
    let y0 = f64::from(geometry.y);
    let rect = Rect {
        x0,
        y0,
        x1: x0 + f64::from(geometry.width),
        y1: y0 + f64::from(geometry.height),
    };
    adapter.set_root_window_bounds(rect, rect);
}

/// Waits on `receiver`, saying every few seconds what it waits for. Fails
/// only if accesskit_unix's thread is gone.
fn wait_for(receiver: &Receiver<()>, what: &str) -> Result<(), String> {
    loop {
        match receiver.recv_timeout(WAIT_NOTICE) {
            Ok(()) => return Ok(()),
            Err(RecvTimeoutError::Timeout) => {
                eprintln!("newton-legacy-reference: still waiting for {what}")
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(format!("accesskit_unix stopped while waiting for {what}"))
            }
        }
    }
}
