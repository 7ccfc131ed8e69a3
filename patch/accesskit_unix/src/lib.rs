//! `accesskit_unix` 0.24's public API, implemented on `newton-accesskit`: an
//! AccessKit application that creates `accesskit_unix::Adapter` (directly, or
//! through `accesskit_winit`, as eframe and egui-winit do) pushes its trees to
//! `newton-atspi-bridge` instead of serving AT-SPI itself, without a change to
//! its code. Its Cargo.toml takes this crate in place of the registry's with
//! one line:
//!
//! ```toml
//! [patch.crates-io]
//! accesskit_unix = { path = "/path/to/newton-atspi-bridge/patch/accesskit_unix" }
//! ```
//!
//! The surface is exactly accesskit_unix 0.24's: [`Adapter`] with
//! [`Adapter::new`], [`Adapter::update_if_active`],
//! [`Adapter::update_window_focus_state`] and
//! [`Adapter::set_root_window_bounds`], and the features `async-io` (default)
//! and `tokio`, which accesskit_winit forwards and which change nothing here.
//! Each adapter is one window (one surface) of the process's one connection to
//! the bridge; see `newton-accesskit` for the model (nothing is built while no
//! assistive technology listens, the UI thread never waits for the bridge,
//! reconnection after the bridge restarts).
//!
//! **Never less accessible than accesskit_unix**: when no bridge answers on
//! the session's socket, the application serves AT-SPI itself, as
//! accesskit_unix would: the project's own daemon runs on a thread of the
//! application for it alone (`newton_accesskit::serve_in_process_without_bridge`).
//! When a bridge starts, the application moves to it (its in-process objects
//! leave the accessibility bus before the bridge's arrive); when the bridge
//! goes away, it comes back in-process. `NEWTON_ACCESSKIT_IN_PROCESS=0` turns
//! that off (the application then waits for a bridge). See docs/adoption.md.
//!
//! What differs from accesskit_unix, and why it is invisible to the
//! application: handlers are called from the adapter's threads (accesskit_unix
//! calls them from its own thread too); the application's name on the desktop
//! is the executable's file name, as accesskit_unix names it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use accesskit::{ActionHandler, ActivationHandler, DeactivationHandler, Rect, TreeUpdate};

/// The adapter of one window: accesskit_unix's `Adapter`, pushing to the
/// bridge.
#[derive(Debug)]
pub struct Adapter {
    inner: newton_accesskit::Adapter,
}

impl Adapter {
    /// Creates the adapter of a new window.
    ///
    /// All of the handlers are called from another thread, never from the
    /// caller's (as with accesskit_unix).
    pub fn new(
        activation_handler: impl 'static + ActivationHandler + Send,
        action_handler: impl 'static + ActionHandler + Send,
        deactivation_handler: impl 'static + DeactivationHandler + Send,
    ) -> Self {
        // Before the first adapter starts the process's connection thread.
        newton_accesskit::serve_in_process_without_bridge();
        Self {
            inner: newton_accesskit::Adapter::new(
                activation_handler,
                action_handler,
                deactivation_handler,
            ),
        }
    }

    /// Sets the bounds of the top-level window. The outer bounds contain any
    /// window decoration and borders; the tree's coordinates are relative to
    /// the inner bounds.
    ///
    /// As with accesskit_unix, this makes sense only under X11: a Wayland
    /// client does not know where its window is.
    pub fn set_root_window_bounds(&mut self, outer: Rect, inner: Rect) {
        self.inner.set_root_window_bounds(outer, inner);
    }

    /// If and only if an assistive technology wants this window's tree, calls
    /// the provided function and pushes its update; never waits for the
    /// bridge. If the caller's [`ActivationHandler::request_initial_tree`]
    /// returned `None`, the update the function returns must contain a full
    /// tree.
    pub fn update_if_active(&mut self, update_factory: impl FnOnce() -> TreeUpdate) {
        self.inner.update_if_active(update_factory);
    }

    /// Updates the tree's state with whether the window is focused.
    pub fn update_window_focus_state(&mut self, is_focused: bool) {
        self.inner.update_window_focus_state(is_focused);
    }
}
