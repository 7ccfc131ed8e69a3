//! One application's replica: its surfaces, each with a validated
//! `accesskit_consumer::Tree`.

use std::collections::BTreeMap;

use accesskit::TreeUpdate;
use accesskit_consumer::Tree;
use newton_push_protocol::{Geometry, SurfaceId};

use crate::{ChangeSet, Limits, RejectError};

/// One surface (window) of an application.
pub struct SurfaceReplica {
    pub(crate) id: SurfaceId,
    pub(crate) title: Option<String>,
    /// `None` until the first good commit.
    pub(crate) tree: Option<Tree>,
    pub(crate) geometry: Geometry,
    /// Whether the compositor says this surface has keyboard focus.
    pub(crate) focused: bool,
}

impl SurfaceReplica {
    pub fn id(&self) -> SurfaceId { self.id }
    pub fn title(&self) -> Option<&str> { self.title.as_deref() }
    /// The tree, once the first commit was applied.
    pub fn tree(&self) -> Option<&Tree> { self.tree.as_ref() }
    pub fn geometry(&self) -> Geometry { self.geometry }
    pub fn is_focused(&self) -> bool { self.focused }
}

/// All surfaces of one application plus its limits and counters.
pub struct AppReplica {
    pub(crate) limits: Limits,
    pub(crate) surfaces: BTreeMap<SurfaceId, SurfaceReplica>,
    pub(crate) node_count: usize,
    pub(crate) commits_applied: u64,
    pub(crate) commits_rejected: u64,
}

impl AppReplica {
    pub fn new(limits: Limits) -> Self {
        Self { limits, surfaces: BTreeMap::new(), node_count: 0, commits_applied: 0, commits_rejected: 0 }
    }
    pub fn limits(&self) -> &Limits { &self.limits }
    pub fn surfaces(&self) -> impl Iterator<Item = &SurfaceReplica> { self.surfaces.values() }
    pub fn surface(&self, id: SurfaceId) -> Option<&SurfaceReplica> { self.surfaces.get(&id) }
    /// Nodes across every surface.
    pub fn node_count(&self) -> usize { self.node_count }
    pub fn commits_applied(&self) -> u64 { self.commits_applied }
    pub fn commits_rejected(&self) -> u64 { self.commits_rejected }

    /// Registers a new, still empty surface.
    pub fn create_surface(&mut self, _id: SurfaceId, _title: Option<String>) -> Result<(), RejectError> {
        todo!("implemented by the cache work")
    }

    /// Removes a surface; the change set lists every node it had.
    pub fn destroy_surface(&mut self, _id: SurfaceId) -> Result<ChangeSet, RejectError> {
        todo!()
    }

    /// Validates then applies `updates` (one commit, in order) atomically.
    /// `frame_bytes` is their encoded size, checked against the limit. On
    /// error nothing changed. A full tree (`tree: Some`) on a surface that
    /// already has one replaces it (`FrameKind::Replaced`).
    pub fn commit(&mut self, _surface: SurfaceId, _updates: Vec<TreeUpdate>, _frame_bytes: usize) -> Result<ChangeSet, RejectError> {
        todo!()
    }

    /// Compositor focus fact: which surface (if any) is focused. Returns the
    /// change sets of surfaces whose effective focus changed.
    pub fn set_focused_surface(&mut self, _surface: Option<SurfaceId>) -> Result<Vec<ChangeSet>, RejectError> {
        todo!()
    }

    pub fn set_geometry(&mut self, _surface: SurfaceId, _geometry: Geometry) -> Result<(), RejectError> {
        todo!()
    }

    /// Removes every surface (the sender left).
    pub fn clear(&mut self) -> Vec<ChangeSet> {
        todo!()
    }
}
