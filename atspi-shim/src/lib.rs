//! Maps the replica to AT-SPI: answers every AT-SPI method from the replica
//! (never from the application) and turns change sets into AT-SPI events.
//!
//! This crate is sans-IO: the dispatcher takes a received `zbus::Message` and
//! returns the reply message to send (plus any action to route to the
//! sender); the events module turns a `newton_cache::ChangeSet` into signal
//! messages. The bridge owns the connections and sends what this crate
//! builds. One file per AT-SPI interface.

pub mod context;
pub mod coords;
pub mod error;
pub mod reply;

pub use context::{AppContext, NodeCtx};
pub use error::CallError;
pub use reply::Handled;
