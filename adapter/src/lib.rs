//! An AccessKit platform adapter that pushes each window's tree to
//! `newton-atspi-bridge` instead of serving AT-SPI itself: a drop-in for
//! `accesskit_unix` with the same shape of API.
//!
//! ```no_run
//! use accesskit::{ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler};
//! use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
//! use newton_accesskit::Adapter;
//!
//! struct Activation;
//! impl ActivationHandler for Activation {
//!     fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
//!         let mut window = Node::new(Role::Window);
//!         window.set_label("Hello");
//!         Some(TreeUpdate {
//!             nodes: vec![(NodeId(0), window)],
//!             tree: Some(TreeInfo::new(NodeId(0))),
//!             tree_id: TreeId::ROOT,
//!             focus: NodeId(0),
//!         })
//!     }
//! }
//! struct Actions;
//! impl ActionHandler for Actions {
//!     fn do_action(&mut self, request: ActionRequest) { /* send it to the UI thread */ }
//! }
//! struct Deactivation;
//! impl DeactivationHandler for Deactivation {
//!     fn deactivate_accessibility(&mut self) {}
//! }
//!
//! let mut adapter = Adapter::new(Activation, Actions, Deactivation);
//! adapter.update_window_focus_state(true);
//! // After every UI change, only while an AT listens:
//! adapter.update_if_active(|| TreeUpdate {
//!     nodes: vec![],
//!     tree: None,
//!     tree_id: TreeId::ROOT,
//!     focus: NodeId(0),
//! });
//! ```
//!
//! # Model
//!
//! * **One connection per process** (one application on the desktop), made
//!   by a background thread at the first [`Adapter::new`]; **one surface per
//!   adapter** (window). The hello carries the process's identity: the
//!   application id and name default to the executable's name, the pid is
//!   the process's, the toolkit's name and version are what the toolkit
//!   gives [`set_app_identity`] before its first window.
//! * **Nothing is built while no AT listens.** A window starts inactive; the
//!   bridge says per surface whether updates are wanted. When they become
//!   wanted, the [`ActivationHandler`] is asked for the full tree (from the
//!   adapter's thread); if it returns `None`, the next
//!   [`Adapter::update_if_active`] factory must return a full tree (the UI
//!   thread may push it even before the handler has returned). Until then,
//!   and after the bridge says updates are unwanted (the
//!   [`DeactivationHandler`] is then called), `update_if_active` does not
//!   call its factory.
//! * **Actions** from ATs reach the [`ActionHandler`] on the adapter's
//!   thread, as with `accesskit_unix`.
//! * **The UI thread never waits for the bridge.** Updates go into a
//!   bounded queue per window that the adapter's thread writes out; when a
//!   slow or stopped bridge lets the queue fill ([`MAX_QUEUED_UPDATES`]),
//!   the queued updates are dropped, the window builds nothing more, and
//!   once the bridge reads again the activation handler is asked for one
//!   full tree, which replaces them all (coalescing: the bridge gets the
//!   latest state, never a stale or partial one).
//! * **No bridge running** costs a connect attempt with backoff (up to every
//!   [`MAX_RECONNECT_DELAY`]) on the adapter's thread, nothing on the UI
//!   thread; the adapter connects when a bridge appears, and reconnects if
//!   the bridge goes away, creating its surfaces again (the bridge asks for
//!   full trees). With the feature `in-process-bridge` and
//!   `serve_in_process_without_bridge()`, the application is not invisible
//!   meanwhile: the daemon runs on a thread of the process for it alone, and
//!   the connection moves to the session's bridge when one listens
//!   (docs/adoption.md).
//! * **Keys for Orca < 48.** [`Adapter::key_event`] forwards a key the window
//!   received to the bridge, which offers it to the AT-SPI registry's key
//!   listeners from the application's connection (as atk-bridge does), and
//!   returns whether the screen reader consumed it, waiting at most
//!   [`KEY_WAIT`]. The application must not act on a consumed key.
//!
//! # Switching from accesskit_unix
//!
//! Replace `accesskit_unix::Adapter` by [`newton_accesskit::Adapter`](Adapter): `new`,
//! `update_if_active`, `update_window_focus_state` and
//! `set_root_window_bounds` take the same arguments. In addition, call
//! [`set_app_identity`] once with the toolkit's name and version, and call
//! [`Adapter::key_event`] for every key press and release before acting on
//! it. See the README's "For toolkit developers".

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "in-process-bridge")]
mod fallback;
mod identity;
mod process;

#[cfg(feature = "in-process-bridge")]
pub use fallback::IN_PROCESS_ENV;

use std::sync::Arc;
use std::time::Duration;

use accesskit::{ActionHandler, ActivationHandler, DeactivationHandler, Rect, TreeUpdate};
use newton_push_protocol::{Geometry, SurfaceId};
pub use newton_push_protocol::{KeyEvent, KeyEventKind};

pub use identity::{set_app_identity, AppIdentity, IdentityError};
use process::{Handlers, Process};

/// Updates a window may have queued towards a bridge that does not read;
/// beyond it they collapse into one full tree (2 s of updates at 60 fps).
pub const MAX_QUEUED_UPDATES: usize = 120;

/// Longest wait between two attempts to reach a bridge that is not running
/// (the cap of `newton_producer::Backoff`; each wait is jittered in
/// `[cap/2, cap]` once it is reached).
pub const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(2);

/// Longest [`Adapter::key_event`] waits for the screen reader's verdict (as
/// atk-bridge's synchronous key forwarding waited up to a second).
pub const KEY_WAIT: Duration = Duration::from_secs(1);

/// Serve AT-SPI in this process whenever no bridge answers: the project's
/// daemon runs on a thread of the application for it alone, as
/// accesskit_unix would serve it, and the application moves to the
/// session's bridge when one starts (and back when it stops). Call it before
/// the first [`Adapter::new`]; `NEWTON_ACCESSKIT_IN_PROCESS=0` in the
/// environment turns it off again. See docs/adoption.md.
#[cfg(feature = "in-process-bridge")]
pub fn serve_in_process_without_bridge() {
    fallback::enable();
}

/// Every window's counters of this process, summed (what a wrapper whose API
/// has no counters, such as the accesskit_unix shim, can still report).
/// `max_queued` is the largest of the windows'.
pub fn process_stats() -> AdapterStats {
    Process::get().total_stats()
}

/// Counters of one window's adapter, for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdapterStats {
    /// `update_if_active` calls whose factory ran.
    pub updates_built: u64,
    /// `update_if_active` calls that built nothing (no AT, or collapsed
    /// while the bridge was not reading).
    pub updates_skipped: u64,
    /// Largest number of updates that were queued at once.
    pub max_queued: usize,
    /// Times a full queue collapsed into a request for one full tree.
    pub collapses: u64,
    /// Updates written to the bridge.
    pub updates_sent: u64,
    /// Full trees the activation handler gave.
    pub initial_trees: u64,
}

/// The adapter of one window. Same shape as `accesskit_unix::Adapter`.
pub struct Adapter {
    surface: SurfaceId,
    process: Arc<Process>,
}

impl Adapter {
    /// Creates the adapter of a new window. All handlers are called from
    /// the adapter's background thread, never from the caller's.
    pub fn new(
        activation_handler: impl 'static + ActivationHandler + Send,
        action_handler: impl 'static + ActionHandler + Send,
        deactivation_handler: impl 'static + DeactivationHandler + Send,
    ) -> Self {
        Self::with_title(
            None,
            activation_handler,
            action_handler,
            deactivation_handler,
        )
    }

    /// As [`Adapter::new`], with the window's title as the compositor
    /// would report it (AT-SPI shows the tree's root label otherwise).
    pub fn with_title(
        title: Option<String>,
        activation_handler: impl 'static + ActivationHandler + Send,
        action_handler: impl 'static + ActionHandler + Send,
        deactivation_handler: impl 'static + DeactivationHandler + Send,
    ) -> Self {
        let process = Process::get();
        let handlers = Handlers::new(activation_handler, action_handler, deactivation_handler);
        let surface = process.add_window(title, handlers);
        Self { surface, process }
    }

    /// If and only if an AT wants this window's tree, calls the factory and
    /// queues its update. Never waits for the bridge. If the activation
    /// handler returned `None`, the factory's update must be a full tree.
    pub fn update_if_active(&mut self, update_factory: impl FnOnce() -> TreeUpdate) {
        self.process.update_if_active(self.surface, update_factory);
    }

    /// Whether the window has keyboard focus (a compositor fact).
    pub fn update_window_focus_state(&mut self, is_focused: bool) {
        self.process.set_focus(self.surface, is_focused);
    }

    /// Where the window is on screen. The outer bounds include decorations;
    /// the tree's coordinates are relative to the inner bounds.
    pub fn set_root_window_bounds(&mut self, _outer: Rect, inner: Rect) {
        let geometry = Geometry {
            x: inner.x0.round() as i32,
            y: inner.y0.round() as i32,
            width: inner.width().max(0.0).round() as u32,
            height: inner.height().max(0.0).round() as u32,
            scale: 1.0,
        };
        self.process.set_geometry(self.surface, geometry);
    }

    /// Offers a key press or release the window received to the screen
    /// reader (Orca < 48 learns keys only this way) and returns true when
    /// the screen reader consumed it: the application must then not act on
    /// it. Waits at most [`KEY_WAIT`]; returns false at once when no bridge
    /// is connected, the bridge does not forward keys, or an earlier key
    /// went unanswered (until an answer arrives again).
    pub fn key_event(&self, event: KeyEvent) -> bool {
        self.process.key_event(event)
    }

    /// Whether the bridge currently wants this window's tree.
    pub fn is_active(&self) -> bool {
        self.process.is_active(self.surface)
    }

    /// Whether the process is connected to a bridge now.
    pub fn is_connected(&self) -> bool {
        self.process.is_connected()
    }

    /// This window's counters.
    pub fn stats(&self) -> AdapterStats {
        self.process.stats(self.surface)
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        self.process.remove_window(self.surface);
    }
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapter")
            .field("surface", &self.surface.0)
            .finish_non_exhaustive()
    }
}
