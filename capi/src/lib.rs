//! libnewton_producer: the Newton push-protocol sender for C and C++
//! toolkits. The C API (include/newton_producer.h, generated from this
//! crate by cbindgen; docs/c-api.md) gives C the calls of the Python
//! producer: connect with the application's identity, surfaces, tree
//! updates as accesskit JSON, commit, focus, geometry, sync, action
//! requests and other bridge messages back (polled, with a descriptor for
//! the main loop), and keys.
//!
//! Nothing a C caller passes can crash the host: every exported function
//! runs inside `catch_unwind` and returns a [`NewtonStatus`], with a
//! message for `newton_last_error_message()`; handles are table entries, not
//! pointers (a destroyed or made-up handle is reported, not followed); NULL,
//! misaligned and non-UTF-8 arguments, bad JSON, and strings freed twice are
//! refused. What C can still get wrong is a dangling or unterminated string
//! pointer; each function's Safety section says what it reads.
//!
//! The Rust library is named `newton_producer_c` (the sender crate it wraps
//! is `newton_producer`); `make install` installs it as libnewton_producer.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod api;
mod ffi;
mod handles;
mod producer;
mod status;

pub use api::*;
pub use ffi::strings_outstanding;
pub use handles::{live_handles, NewtonProducer};
pub use producer::{message_json, Identity, Producer};
pub use status::{all_statuses, last_error_message, Failure, NewtonStatus};

/// The C ABI's version (the shared library's SONAME is
/// libnewton_producer.so.ABI); bumped on every incompatible header change.
pub const ABI_VERSION: &str = env!("NEWTON_PRODUCER_ABI_VERSION");
