//! Per-application resource limits.

/// Limits applied to one application (all its surfaces together for node
/// counts). Exceeding one rejects the commit with a clear rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nodes across all surfaces of one application.
    pub max_nodes: usize,
    /// Depth of any tree (root = depth 1).
    pub max_depth: usize,
    /// Children of one node.
    pub max_children: usize,
    /// Encoded bytes of one commit (all its updates).
    pub max_frame_bytes: usize,
    /// Surfaces of one application.
    pub max_surfaces: usize,
    /// Bytes one application's replica may cost (see `budget.rs`).
    pub max_app_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_nodes: 1_000_000,
            max_depth: 256,
            max_children: 200_000,
            max_frame_bytes: 64 * 1024 * 1024,
            max_surfaces: 64,
            max_app_bytes: DEFAULT_MAX_APP_BYTES,
        }
    }
}

/// Default of [`Limits::max_app_bytes`]: room for the 1,000,000-node limit
/// with short labels (about 940 MB counted: the consumer's two maps at 2^21
/// buckets are 710 MB of it; `budget.rs`).
pub const DEFAULT_MAX_APP_BYTES: usize = 1024 * 1024 * 1024;
/// Default budget of every application together (the bridge's
/// `--max-total-bytes`).
pub const DEFAULT_MAX_TOTAL_BYTES: usize = 2 * 1024 * 1024 * 1024;
