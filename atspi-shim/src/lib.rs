//! Maps the replica to AT-SPI: answers every AT-SPI method from the replica
//! (never from the application) and turns change sets into AT-SPI events.
//!
//! This crate is sans-IO: [`handle_call`] takes a received `zbus::Message`
//! and returns the reply message to send (plus any action to route to the
//! sender, or the `Application.Id` the registry set); [`events_for`] and
//! [`focus_events`] turn a `newton_cache::ChangeSet` or a compositor focus
//! change into signal messages. The bridge owns the connections and sends
//! what this crate builds. One file per AT-SPI interface.
//!
//! Object model (see [`paths`]): the app root
//! `/org/a11y/atspi/accessible/root`, the cache `/org/a11y/atspi/cache`, and
//! one object per exposed replica node at
//! `/org/a11y/atspi/accessible/<surface>_<node>`.

pub mod context;
pub mod coords;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod paths;
pub mod reply;

mod accessible;
mod action;
mod application;
mod cache;
mod collection;
mod component;
mod document;
mod editable_text;
mod hyperlink;
mod hypertext;
mod image;
mod introspect;
mod objects;
mod properties;
mod relations;
mod roles;
mod selection;
mod states;
mod table;
mod table_cell;
mod text;
mod value;

pub use cache::{CacheItem, ItemRef};
pub use context::{AppContext, NodeCtx};
pub use dispatch::{error_reply, handle_call};
pub use error::CallError;
pub use events::{compositor_focus_events, event_name, events_for, focus_events, EventListeners};
pub use reply::Handled;
