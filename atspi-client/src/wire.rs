//! The AT-SPI wire shapes a client decodes, declared once for the tools,
//! tests, benchmarks and the legacy reference.
//!
//! These are the raw D-Bus shapes, not atspi-common's `ObjectRef` and
//! `CacheItem`, although those have the same signatures: atspi-common 0.13
//! decodes an `ObjectRef` whose name is empty with a non-null path by
//! panicking (an `assert!` in its deserializer) and refuses well-known names
//! (it parses a `UniqueName`), and its `CacheItem` decodes the role into an
//! enum that refuses numbers it does not know. A client checking what a
//! bridge or toolkit sends has to see such answers and report them, so it
//! decodes the wire as it is.

use zbus::zvariant::OwnedObjectPath;

/// `(so)`: an object reference, the owner's bus name and the object path.
pub type ObjectRef = (String, OwnedObjectPath);

/// `((so)(so)(so)iiassusau)`: one item of `org.a11y.atspi.Cache.GetItems`
/// (and of the `AddAccessible` signal): the object, its application, its
/// parent, its index in the parent, its child count, its interfaces, its
/// name, its role, its description and its state words.
pub type CacheItem = (
    ObjectRef,
    ObjectRef,
    ObjectRef,
    i32,
    i32,
    Vec<String>,
    String,
    u32,
    String,
    Vec<u32>,
);
