//! Handles: what C holds instead of pointers to Rust objects.
//!
//! A `NewtonProducer` is a number naming an entry of a process-wide table,
//! never reused. A handle that was destroyed, never filled in, or made up is
//! therefore not found, and the call returns `NEWTON_STATUS_INVALID_HANDLE`
//! instead of reading freed memory; a call racing `newton_producer_destroy`
//! on another thread holds its own reference and fails with
//! `NEWTON_STATUS_CLOSED`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::producer::Producer;
use crate::status::{Failure, NewtonStatus};

/// A connection to the bridge, as C holds it: an opaque number (0 is never
/// valid, so a zero-initialized handle is safely invalid). Copy it freely;
/// it stays valid until `newton_producer_destroy`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewtonProducer {
    /// Opaque; do not interpret or change it.
    pub id: u64,
}

static TABLE: Mutex<BTreeMap<u64, Arc<Producer>>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn table() -> MutexGuard<'static, BTreeMap<u64, Arc<Producer>>> {
    TABLE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Puts a new connection in the table.
pub(crate) fn insert(producer: Producer) -> NewtonProducer {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    table().insert(id, Arc::new(producer));
    NewtonProducer { id }
}

/// The live connection `handle` names.
pub(crate) fn get(handle: NewtonProducer) -> Result<Arc<Producer>, Failure> {
    table()
        .get(&handle.id)
        .cloned()
        .ok_or_else(|| invalid(handle))
}

/// Takes the connection out of the table (later calls with the handle fail).
pub(crate) fn remove(handle: NewtonProducer) -> Result<Arc<Producer>, Failure> {
    table().remove(&handle.id).ok_or_else(|| invalid(handle))
}

fn invalid(handle: NewtonProducer) -> Failure {
    let what = if handle.id == 0 {
        "is zero: it was never filled in by newton_producer_connect".to_owned()
    } else if handle.id < NEXT_ID.load(Ordering::Relaxed) {
        format!("{} was destroyed already", handle.id)
    } else {
        format!(
            "{} was never handed out by newton_producer_connect",
            handle.id
        )
    };
    Failure::new(
        NewtonStatus::InvalidHandle,
        format!("the producer handle {what}; connect again for a new handle"),
    )
}

/// How many connections are in the table (for the tests).
pub fn live_handles() -> usize {
    table().len()
}
