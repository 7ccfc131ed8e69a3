//! The bridge's replica of pushed accessibility trees: decode → validate →
//! apply → change set, with no IO.
//!
//! One [`AppReplica`] per connected application holds one
//! `accesskit_consumer::Tree` per surface. Every commit is checked by the
//! [`validate`] module against the current tree *before* the consumer sees it,
//! because `accesskit_consumer` panics, loops or aborts on malformed input.
//! A rejected commit leaves the surface exactly as it was and returns a
//! [`RejectError`] naming the surface, the node and the broken [`Rule`]. An
//! accepted commit returns a [`ChangeSet`] that the AT-SPI layer turns into
//! events.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod app;
pub mod budget;
pub mod changes;
pub mod error;
pub mod exposure;
pub mod limits;
mod refs;
pub mod strings;
pub mod validate;

pub use app::{prepare_full_tree, AppReplica, PreparedTree, SurfaceReplica};
pub use budget::ByteBudget;
pub use changes::{
    Change, ChangeSet, FlagName, FocusChange, FrameKind, NodeUpdate, RemovedNode,
    TextSelectionOffsets,
};
pub use error::{RejectError, Rule};
pub use limits::Limits;
pub use newton_push_protocol::{Geometry, SurfaceId};

/// Re-exported so users name the same versions the replica uses.
pub use accesskit;
pub use accesskit_consumer;
