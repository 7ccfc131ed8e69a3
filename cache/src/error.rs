//! Why a commit was rejected: the surface, the node and the rule.

use accesskit::NodeId;
use newton_push_protocol::SurfaceId;

/// A validation rule. `as_str` is the stable name sent to senders in
/// `Rejected.rule` and used by the malformed corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// First update of a surface lacks `tree` (root info).
    MissingTreeInfo,
    /// `tree_id` is not the root tree, or a node carries a `tree_id`
    /// property: Newton has one tree per surface, subtrees are refused.
    SubtreeUnsupported,
    /// The root is not in the tree after the update.
    MissingRoot,
    /// The focus is not in the tree after the update (unknown, or removed by
    /// this very update).
    FocusNotInTree,
    /// A child id is neither in the update nor in the tree.
    DanglingChild,
    /// A child id is listed twice (by one parent or by two).
    DuplicateChild,
    /// A node id appears twice in one update's `nodes`.
    DuplicateNode,
    /// A node in the update is neither the root nor anyone's child after it.
    OrphanNode,
    /// A node was given a new parent while its old parent still lists it.
    ReparentWithoutRemoval,
    /// A node is its own ancestor, or the root has a parent.
    Cycle,
    /// The tree is deeper than the limit.
    TooDeep,
    /// `labelled_by`, `controls` (or another relation) names a missing node.
    DanglingRelation,
    /// A text run's value and character lengths disagree.
    BadTextRun,
    /// `next_on_line`/`previous_on_line` name a missing node or form a cycle.
    BadLineLink,
    /// A text selection endpoint is not a text run inside the selecting node.
    BadTextSelection,
    /// Per-application node limit exceeded.
    TooManyNodes,
    /// Per-node children limit exceeded.
    TooManyChildren,
    /// The frame is larger than the per-application byte limit.
    FrameTooLarge,
    /// Commit, update or fact for a surface the sender never created (or
    /// already destroyed).
    UnknownSurface,
    /// A surface id was created twice.
    DuplicateSurface,
    /// Too many surfaces for one application.
    TooManySurfaces,
    /// The application's replica would pass `Limits::max_app_bytes`.
    AppBytes,
    /// Every application together would pass the bridge's byte budget.
    TotalBytes,
}

impl Rule {
    /// The stable kebab-case name of the rule.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::MissingTreeInfo => "missing-tree-info",
            Rule::SubtreeUnsupported => "subtree-unsupported",
            Rule::MissingRoot => "missing-root",
            Rule::FocusNotInTree => "focus-not-in-tree",
            Rule::DanglingChild => "dangling-child",
            Rule::DuplicateChild => "duplicate-child",
            Rule::DuplicateNode => "duplicate-node",
            Rule::OrphanNode => "orphan-node",
            Rule::ReparentWithoutRemoval => "reparent-without-removal",
            Rule::Cycle => "cycle",
            Rule::TooDeep => "too-deep",
            Rule::DanglingRelation => "dangling-relation",
            Rule::BadTextRun => "bad-text-run",
            Rule::BadLineLink => "bad-line-link",
            Rule::BadTextSelection => "bad-text-selection",
            Rule::TooManyNodes => "too-many-nodes",
            Rule::TooManyChildren => "too-many-children",
            Rule::FrameTooLarge => "frame-too-large",
            Rule::UnknownSurface => "unknown-surface",
            Rule::DuplicateSurface => "duplicate-surface",
            Rule::TooManySurfaces => "too-many-surfaces",
            Rule::AppBytes => "app-bytes",
            Rule::TotalBytes => "total-bytes",
        }
    }

    /// Every rule, for docs and the malformed corpus.
    pub const ALL: [Rule; 23] = [
        Rule::MissingTreeInfo,
        Rule::SubtreeUnsupported,
        Rule::MissingRoot,
        Rule::FocusNotInTree,
        Rule::DanglingChild,
        Rule::DuplicateChild,
        Rule::DuplicateNode,
        Rule::OrphanNode,
        Rule::ReparentWithoutRemoval,
        Rule::Cycle,
        Rule::TooDeep,
        Rule::DanglingRelation,
        Rule::BadTextRun,
        Rule::BadLineLink,
        Rule::BadTextSelection,
        Rule::TooManyNodes,
        Rule::TooManyChildren,
        Rule::FrameTooLarge,
        Rule::UnknownSurface,
        Rule::DuplicateSurface,
        Rule::TooManySurfaces,
        Rule::AppBytes,
        Rule::TotalBytes,
    ];

    /// The rule with this [`Rule::as_str`] name.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rejected commit. The surface kept its last good state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("surface {}: update rejected ({rule}){}: {detail}", surface.0, node.map(|n| format!(" at node {}", n.0)).unwrap_or_default())]
pub struct RejectError {
    /// The surface whose commit (or fact) was rejected.
    pub surface: SurfaceId,
    /// The offending node, when one is to blame.
    pub node: Option<NodeId>,
    /// The rule that was broken.
    pub rule: Rule,
    /// Human-readable explanation, including what to fix.
    pub detail: String,
}

impl RejectError {
    /// A rejection of `surface`'s commit, blaming `node` for breaking `rule`.
    pub fn new(
        surface: SurfaceId,
        node: Option<NodeId>,
        rule: Rule,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            surface,
            node,
            rule,
            detail: detail.into(),
        }
    }
}
