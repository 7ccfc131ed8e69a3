//! One AT-SPI client for everything in this repository that observes the
//! accessibility bus: the `dump`/`diff` tools, the end-to-end tests, the
//! benchmarks and the legacy reference's parity tests. It holds
//!
//! * [`calls`]: every AT-SPI method and property a client here uses,
//!   declared once with its types, and the one raw sender for bad calls;
//! * [`dump`]: the tree walker (what an AT reads, object by object, or from
//!   the cache) and its text/JSON renderings;
//! * [`private_session`]: the one launcher of private session and
//!   accessibility buses with the registry and `IsEnabled` set;
//! * [`wire`]: the object reference and cache item shapes, declared once.
//!
//! It never serves anything; the daemon is the bridge/ crate.

#![forbid(unsafe_code)]

pub mod calls;
pub mod dump;
pub mod private_session;
pub mod wire;
