//! Which replica nodes are AT-SPI objects: a node is exposed unless it is a
//! `TextRun` (its text belongs to the text-bearing parent) or hidden (itself
//! or an ancestor). Judged on the node alone, so the text and grid models
//! use it as the object tree does (`objects.rs`).

use accesskit::Role;
use accesskit_consumer::{FilterResult, NodeRef};

/// Filter for the consumer's traversal helpers (hit testing, action support
/// inherited from the parent): the exposure rule, node by node.
pub(crate) fn exposure_filter(node: &NodeRef) -> FilterResult {
    if is_excluded_here(node) {
        FilterResult::ExcludeSubtree
    } else {
        FilterResult::Include
    }
}

/// Exclusion judged on the node's own data (its parent being exposed).
fn is_excluded_here(node: &NodeRef) -> bool {
    node.role() == Role::TextRun || node.data().is_hidden()
}

/// Whether a child of an exposed node is exposed: O(1).
pub(crate) fn is_exposed_child(node: &NodeRef) -> bool {
    !is_excluded_here(node)
}

/// Whether any node is exposed: O(depth) for the inherited hidden flag.
pub(crate) fn is_exposed(node: &NodeRef) -> bool {
    node.role() != Role::TextRun && !node.is_hidden()
}

/// Exposed children of an exposed node, in the producer's order.
pub(crate) fn exposed_children<'a>(
    node: &NodeRef<'a>,
) -> impl DoubleEndedIterator<Item = NodeRef<'a>> + 'a {
    node.children().filter(is_exposed_child)
}
