//! Models derived from a surface's tree (a text's flattened string and
//! boundaries, a table's grid), kept between calls while the surface does
//! not change.
//!
//! Building either is O(whole text) or O(cells), and an AT asks many
//! questions of one text or table between two frames. The models live per
//! application (the daemon keeps one [`DerivedModels`] beside each replica)
//! and per surface, keyed by the surface generation and the node, so a call
//! answered on the executor's thread finds what the heavy-call thread
//! built, and the reverse. Each
//! surface keeps at most [`TEXTS_KEPT`] text models and one grid, so memory
//! is bounded by the surfaces and one surface never evicts another's. A frame applied
//! to a surface makes its models stale (their generation is gone); the
//! daemon drops them right after each change with
//! [`DerivedModels::retain_current`], and a stale model is never served
//! even before that.
//!
//! The lock is held only to look up or store an `Arc`: never while a model
//! is built, never across an await (the shim has none).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use accesskit::NodeId;
use accesskit_consumer::{FullNodeId, NodeRef};
use newton_cache::AppReplica;
use newton_push_protocol::SurfaceId;

use crate::model::grid::{Grid, GridData};
use crate::model::text::{TextData, TextLayout, TextModel};

/// Surfaces with models kept at once. The daemon drops the models of gone
/// surfaces after each change; this bounds the map for callers that never do.
const MAX_SURFACES: usize = 64;

/// Text models kept per surface. More than one: in the per-block layout
/// Orca's web script moves between a block and its parent (a child's
/// `StartIndex` is read from its parent's text), and with one slot each
/// step rebuilt the other; the inline layout has one text per document.
const TEXTS_KEPT: usize = 8;

/// One application's derived models, per surface.
#[derive(Default)]
pub struct DerivedModels {
    surfaces: Mutex<HashMap<SurfaceId, SurfaceModels>>,
}

/// One surface's models, all of one generation.
#[derive(Default)]
struct SurfaceModels {
    generation: u64,
    text: Slot<NodeId, TextData>,
    grid: Slot<FullNodeId, GridData>,
}

/// Kept models with the node each was built for, the newest last.
type Slot<K, T> = Vec<(K, Arc<T>)>;

impl DerivedModels {
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops every model whose surface is gone or has changed since it was
    /// built. The daemon calls it after each change to the replica.
    pub fn retain_current(&self, replica: &AppReplica) {
        self.lock().retain(|surface, models| {
            replica
                .surface(*surface)
                .is_some_and(|s| s.generation() == models.generation)
        });
    }

    /// The models of `surface` at `generation` (`SurfaceReplica::generation`).
    pub(crate) fn at(&self, surface: SurfaceId, generation: u64) -> ModelsAt<'_> {
        ModelsAt {
            models: self,
            surface,
            generation,
        }
    }

    /// How many surfaces have models (tests).
    #[cfg(test)]
    fn surfaces_kept(&self) -> usize {
        self.lock().len()
    }

    /// A panic elsewhere while the lock was held leaves only `Arc`s behind,
    /// each a complete model: the map is still sound.
    fn lock(&self) -> MutexGuard<'_, HashMap<SurfaceId, SurfaceModels>> {
        self.surfaces
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Where a handler finds (and leaves) the models of one surface state.
#[derive(Clone, Copy)]
pub(crate) struct ModelsAt<'a> {
    models: &'a DerivedModels,
    surface: SurfaceId,
    generation: u64,
}

impl std::fmt::Debug for ModelsAt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelsAt")
            .field("surface", &self.surface)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl ModelsAt<'_> {
    /// The text model of `node`, built by `build` unless kept.
    pub(crate) fn text(
        &self,
        node: NodeId,
        build: impl FnOnce() -> Option<Arc<TextData>>,
    ) -> Option<Arc<TextData>> {
        self.get_or_build(|m| &mut m.text, TEXTS_KEPT, node, || build().ok_or(()))
            .ok()
    }

    /// The grid of `table`, built by `build` unless kept.
    pub(crate) fn grid(
        &self,
        table: FullNodeId,
        build: impl FnOnce() -> Arc<GridData>,
    ) -> Arc<GridData> {
        match self.get_or_build(
            |m| &mut m.grid,
            1,
            table,
            || Ok::<_, std::convert::Infallible>(build()),
        ) {
            Ok(grid) => grid,
            Err(never) => match never {},
        }
    }

    /// The model in `slot` when it is `key`'s at this generation; else
    /// `build`'s, kept in the slot (outside the lock while it builds), which
    /// keeps the `capacity` most recently built.
    fn get_or_build<K: PartialEq + Copy, T, E>(
        &self,
        slot: fn(&mut SurfaceModels) -> &mut Slot<K, T>,
        capacity: usize,
        key: K,
        build: impl FnOnce() -> Result<Arc<T>, E>,
    ) -> Result<Arc<T>, E> {
        {
            let mut surfaces = self.models.lock();
            if let Some(models) = surfaces.get_mut(&self.surface) {
                if models.generation == self.generation {
                    if let Some((_, model)) = slot(models).iter().find(|(k, _)| *k == key) {
                        return Ok(Arc::clone(model));
                    }
                }
            }
        }
        let model = build()?;
        let mut surfaces = self.models.lock();
        if !surfaces.contains_key(&self.surface) && surfaces.len() >= MAX_SURFACES {
            // Only reached when nobody drops gone surfaces: any one will do.
            if let Some(other) = surfaces.keys().next().copied() {
                surfaces.remove(&other);
            }
        }
        let models = surfaces.entry(self.surface).or_default();
        if models.generation < self.generation {
            // A newer frame: the surface's other models are stale too.
            *models = SurfaceModels {
                generation: self.generation,
                ..SurfaceModels::default()
            };
        }
        if models.generation == self.generation {
            let kept = slot(models);
            // Another thread may have built the same model meanwhile.
            kept.retain(|(k, _)| *k != key);
            if kept.len() >= capacity {
                kept.remove(0);
            }
            kept.push((key, Arc::clone(&model)));
        }
        Ok(model)
    }
}

/// `TextModel::cached` and `Grid::cached`: each model through the kept ones.
impl<'a> TextModel<'a> {
    /// The model of `node`'s text in the surface state `models` stands for,
    /// reusing the one kept there (by any thread) when the node's text was
    /// modelled already.
    pub(crate) fn cached(
        node: NodeRef<'a>,
        layout: TextLayout,
        models: ModelsAt<'_>,
    ) -> Option<Self> {
        let data = models.text(node.locate().0, || {
            Self::of(node, layout).map(|model| model.data)
        })?;
        Some(TextModel { root: node, data })
    }
}

impl<'a> Grid<'a> {
    /// The grid of `table` in the surface state `models` stands for,
    /// reusing the one kept there (by any thread) when this table's grid
    /// was built already.
    pub(crate) fn cached(table: &NodeRef<'a>, models: ModelsAt<'_>) -> Self {
        let data = models.grid(table.id(), || Arc::new(GridData::of(table)));
        Grid::with(table, data)
    }
}

#[cfg(test)]
mod tests;
