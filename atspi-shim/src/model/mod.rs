//! Layer 1, the model: what the replica says as AT-SPI objects, without
//! D-Bus calls. Every interface, the events and dispatch build on it; it
//! imports nothing above it, and its modules import each other without a
//! loop (ARCHITECTURE.md, "atspi-shim in layers").

pub(crate) mod actions;
pub mod budgets;
pub(crate) mod cache_items;
pub mod context;
pub mod coords;
pub mod derived;
pub(crate) mod describe;
pub mod error;
pub(crate) mod exposure;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod geometry;
pub(crate) mod grid;
pub mod host;
pub(crate) mod hyperlinks;
pub(crate) mod implements;
pub(crate) mod index;
pub(crate) mod names;
pub(crate) mod objects;
pub mod paths;
pub(crate) mod relations;
pub(crate) mod resolve;
pub(crate) mod roles;
pub(crate) mod states;
pub(crate) mod text;
pub(crate) mod text_env;
pub mod wire;
