//! Maps the replica to AT-SPI: answers every AT-SPI method from the replica
//! (never from the application) and turns change sets into AT-SPI events.
//!
//! This crate is sans-IO: the bridge owns the connections and sends what
//! this crate builds.
//!
//! Layers, each importing only those below it (ARCHITECTURE.md, "atspi-shim
//! in layers"; `tests/layers.rs` checks them): `model` (the replica as
//! AT-SPI objects), [`surface`] (the declaration machinery and replies),
//! `interfaces` (one file per AT-SPI interface) and [`events`], then
//! [`declared`], `introspect` and [`dispatch`].
//!
//! Object model (see [`paths`]): the app root
//! `/org/a11y/atspi/accessible/root` (Accessible + Application), the cache
//! `/org/a11y/atspi/cache`, and one object per exposed replica node at
//! `/org/a11y/atspi/accessible/<surface>_<node>` (TextRun and hidden nodes
//! are not exposed; see `model/exposure.rs`).
//!
//! How the bridge uses it, per application connection, under the lock on
//! that application's replica:
//! * every received message → [`handle_call`]. `None`: send nothing. `Some`:
//!   send `reply` if `reply_wanted`; route `action` (if any) to the sender;
//!   store `set_app_id` (if any) and pass it back as [`AppContext::app_id`].
//!   [`error_reply`] builds an error answer for failures of the bridge's own.
//! * every applied commit, `destroy_surface` and `clear` change set →
//!   [`events_for`];
//! * the change sets of `AppReplica::set_focused_surface` →
//!   [`compositor_focus_events`] (window activate/deactivate, active and
//!   focused states, each once, in Orca's order). [`focus_events`] is the
//!   building block for one surface.
//! * before sending a signal: [`EventListeners::is_needed`] on
//!   [`event_name`] (events libatspi's cache depends on always pass).

#![forbid(unsafe_code)]

pub mod declared;
pub mod dispatch;
pub mod events;
mod interfaces;
mod introspect;

#[cfg(test)]
mod block_layout_tests;
pub(crate) mod model;
pub mod surface;

pub use model::{budgets, context, coords, derived, error, host, paths, wire};
pub use surface::reply;

pub use dispatch::{error_reply, handle_call};
pub use events::{
    compositor_focus_events, event_name, events_for, events_for_listeners, focus_events,
    EventListeners,
};
pub use model::cache_items::{CacheItem, ItemRef};
pub use model::context::{AppContext, NodeCtx};
pub use model::derived::DerivedModels;
pub use model::error::CallError;
pub use model::host::HostFacts;
pub use surface::reply::Handled;
