//! Several applications side by side, each isolated from the others.

use std::collections::BTreeMap;

use crate::{AppReplica, Limits};

/// Identifies one connected application (one sender connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AppKey(pub u64);

/// Every application's replica. A failure in one application's commit never
/// touches another's.
#[derive(Default)]
pub struct ReplicaStore {
    apps: BTreeMap<AppKey, AppReplica>,
    next_key: u64,
}

impl ReplicaStore {
    /// No applications.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an empty application and returns its key.
    pub fn add_app(&mut self, limits: Limits) -> AppKey {
        self.next_key += 1;
        let key = AppKey(self.next_key);
        self.apps.insert(key, AppReplica::new(limits));
        key
    }

    /// Removes an application (its replica is returned, e.g. for `clear`).
    pub fn remove_app(&mut self, key: AppKey) -> Option<AppReplica> {
        self.apps.remove(&key)
    }
    /// One application's replica.
    pub fn app(&self, key: AppKey) -> Option<&AppReplica> {
        self.apps.get(&key)
    }
    /// One application's replica, mutable.
    pub fn app_mut(&mut self, key: AppKey) -> Option<&mut AppReplica> {
        self.apps.get_mut(&key)
    }
    /// Every application with its key, in key order.
    pub fn apps(&self) -> impl Iterator<Item = (AppKey, &AppReplica)> {
        self.apps.iter().map(|(k, v)| (*k, v))
    }
}
