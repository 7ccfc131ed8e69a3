//! What one applied frame changed, in platform-neutral terms, with the old and
//! new value of everything that changed. Produced while both the old and the
//! new tree state are available, so consumers never need the old tree.

use accesskit::{Live, NodeId, Rect, Role, Toggled};
use newton_push_protocol::SurfaceId;

/// Why this change set exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// The surface's first tree: every node is in `added`.
    Created,
    /// An incremental commit.
    Updated,
    /// A full tree replaced the surface's tree (resync); `removed` lists every
    /// old node and `added` every new one.
    Replaced,
    /// The surface (or its application) went away: every node is in `removed`.
    Destroyed,
}

/// A flag whose value changed on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlagName {
    Hidden,
    Disabled,
    ReadOnly,
    Required,
    Busy,
    Modal,
    Visited,
    Multiselectable,
    Focusable,
    Focused,
    Editable,
}

/// Anchor and focus of a text selection, in characters (Unicode scalar
/// values) from the start of the text-bearing node's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextSelectionOffsets {
    pub anchor: usize,
    pub focus: usize,
}

/// One property change on one node: old and new value.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Role { old: Role, new: Role },
    /// The computed name (label, labelled_by, or value-derived).
    Name { old: Option<String>, new: Option<String> },
    Description { old: Option<String>, new: Option<String> },
    /// The string value (`NodeRef::value`).
    Value { old: Option<String>, new: Option<String> },
    NumericValue { old: Option<f64>, new: Option<f64> },
    Toggled { old: Option<Toggled>, new: Option<Toggled> },
    Selected { old: Option<bool>, new: Option<bool> },
    Expanded { old: Option<bool>, new: Option<bool> },
    Flag { flag: FlagName, old: bool, new: bool },
    /// Surface-relative bounding box.
    Bounds { old: Option<Rect>, new: Option<Rect> },
    /// Direct children (unfiltered), in order.
    Children { old: Vec<NodeId>, new: Vec<NodeId> },
    /// The whole text of a text-bearing node (one that supports text ranges),
    /// reported on that node even when only its text runs changed.
    Text { old: String, new: String },
    /// Selection / caret of a text-bearing node; `None` = no selection.
    TextSelection { old: Option<TextSelectionOffsets>, new: Option<TextSelectionOffsets> },
    ActiveDescendant { old: Option<NodeId>, new: Option<NodeId> },
    /// A live region's text changed; carries what to announce.
    LiveRegion { politeness: Live, text: String },
    /// Supported actions bitmask changed.
    Actions { old: u32, new: u32 },
}

/// Every change of one node in one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeUpdate {
    pub id: NodeId,
    pub changes: Vec<Change>,
}

/// A node that left the tree, with where it was.
#[derive(Clone, Debug, PartialEq)]
pub struct RemovedNode {
    pub id: NodeId,
    pub role: Role,
    /// Parent and index before removal; `None` for the old root.
    pub parent: Option<(NodeId, usize)>,
}

/// Keyboard focus inside the surface's tree moved (only reported while the
/// surface holds compositor focus, as `accesskit_consumer` does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FocusChange {
    pub old: Option<NodeId>,
    pub new: Option<NodeId>,
}

/// Everything one applied frame (commit) changed on one surface.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeSet {
    pub surface: SurfaceId,
    pub kind: FrameKind,
    /// New nodes, parents before children.
    pub added: Vec<NodeId>,
    pub removed: Vec<RemovedNode>,
    pub updated: Vec<NodeUpdate>,
    pub focus: Option<FocusChange>,
}

impl ChangeSet {
    pub fn new(surface: SurfaceId, kind: FrameKind) -> Self {
        Self { surface, kind, added: Vec::new(), removed: Vec::new(), updated: Vec::new(), focus: None }
    }

    /// True when the frame changed nothing observable.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.updated.is_empty() && self.focus.is_none()
    }
}
