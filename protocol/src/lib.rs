//! The Newton push protocol, version 1: how a sender (a compositor forwarding
//! an application's pushed trees, a test producer, a replay file or a remote
//! stream) talks to the bridge.
//!
//! This crate is sans-IO: it defines the messages, the length-prefixed
//! framing, and state machines that are fed bytes and return messages.
//! Sockets live in the bridge and the producer library. The normative
//! description is `docs/protocol.md`.

pub mod messages;

pub use messages::*;
