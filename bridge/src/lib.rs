//! The Newton → AT-SPI bridge daemon: applications (through their
//! compositor, a test producer, a replay file or a remote stream) push
//! accessibility trees; the daemon keeps a validated replica of each and
//! serves it on the AT-SPI bus so unmodified screen readers work.
//!
//! This crate is the daemon only: the sender socket, the accessibility-bus
//! and peer-to-peer connections, the status socket and the lifecycle. The
//! installed `newton-atspi-bridge` program (tools/) runs it as `serve` and
//! adds the client tools (dump, diff, record, replay, status, demo). See
//! ARCHITECTURE.md for the data flow.

// Unsafe code only in unsafe_os.rs (adopting the socket a service manager passes; glibc's
// arena limit and malloc_trim), each call with its SAFETY argument; everything else is safe
// Rust. `deny`, not `forbid`, so that one module can allow it.
#![deny(unsafe_code)]

pub mod a11y_bus;
mod accept;
mod activation;
mod app;
pub mod config;
pub mod control;
pub mod daemon;
mod driven;
mod fault;
mod heavy;
mod keys;
mod listeners;
pub mod logging;
mod memory;
mod p2p;
pub mod registry;
mod sender;
mod serve_args;
mod shutdown;
pub mod socket;
mod unsafe_os;

pub use daemon::{run, run_embedded, run_until};
pub use serve_args::ServeArgs;
