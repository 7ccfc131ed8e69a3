//! Memory budgets: what one application's replica may cost, and what all
//! applications together may cost, counted in estimated bytes and checked
//! before a commit is applied.
//!
//! The estimate ([`node_cost`]) is deliberately simple and a little
//! generous: a fixed [`NODE_BASE_BYTES`] per node (the consumer's node
//! state, its map entry, the property table), plus every string and array
//! the node carries, with the text a screen reader may ask about weighted
//! for what the AT side derives from it (a `value` is counted
//! [`VALUE_WEIGHT`] times: the shim's per-text model keeps a `char` per
//! character and the boundaries besides the string). Properties not listed
//! here are small by construction and bounded by the frame size.
//!
//! Rules: a commit whose new nodes would take the application over
//! `Limits::max_app_bytes` is rejected (`app-bytes`); one that would take
//! every application together over the shared [`ByteBudget`] is rejected
//! (`total-bytes`). Either way the replica keeps its last good state and the
//! sender is asked for a full tree, as for every rejection.

use std::sync::atomic::{AtomicUsize, Ordering};

use accesskit::Node;

/// Fixed cost of one node in the replica.
pub const NODE_BASE_BYTES: usize = 200;
/// Weight of a node's `value` (see the module comment).
pub const VALUE_WEIGHT: usize = 6;

/// The estimated bytes `node` costs in the replica.
pub fn node_cost(node: &Node) -> usize {
    let strings = [
        node.label(),
        node.description(),
        node.placeholder(),
        node.access_key(),
        node.author_id(),
        node.class_name(),
        node.font_family(),
        node.html_id(),
        node.html_tag(),
        node.inner_html(),
        node.keyboard_shortcut(),
        node.language(),
        node.role_description(),
        node.state_description(),
    ];
    let text: usize = strings.iter().flatten().map(|s| s.len()).sum();
    let value = node.value().map_or(0, |v| v.len() * VALUE_WEIGHT);
    let ids = [
        node.children(),
        node.controls(),
        node.details(),
        node.described_by(),
        node.flow_to(),
        node.labelled_by(),
        node.owns(),
        node.radio_group(),
    ];
    let ids: usize = ids.iter().map(|ids| ids.len() * 8).sum();
    let per_character = node.character_lengths().len()
        + node.word_starts().len()
        + node.character_positions().map_or(0, |p| p.len() * 4)
        + node.character_widths().map_or(0, |w| w.len() * 4);
    NODE_BASE_BYTES + text + value + ids + per_character
}

/// The budget every application's replica draws from (one per bridge).
#[derive(Debug)]
pub struct ByteBudget {
    max: usize,
    used: AtomicUsize,
}

impl ByteBudget {
    /// A budget of `max` estimated bytes.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            used: AtomicUsize::new(0),
        }
    }

    /// The budget's size.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Estimated bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `bytes` if they fit; false (and nothing taken) otherwise.
    pub fn try_reserve(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.max)
            })
            .is_ok()
    }

    /// Gives back `bytes` taken before.
    pub fn release(&self, bytes: usize) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(bytes))
            });
    }
}

impl Default for ByteBudget {
    /// No limit.
    fn default() -> Self {
        Self::new(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_refuses_what_does_not_fit_and_takes_back_releases() {
        let budget = ByteBudget::new(100);
        assert!(budget.try_reserve(60));
        assert!(!budget.try_reserve(41));
        assert_eq!(budget.used(), 60);
        assert!(budget.try_reserve(40));
        budget.release(70);
        assert_eq!(budget.used(), 30);
        budget.release(1000);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn text_costs_more_than_a_label_of_the_same_length() {
        let mut label = Node::new(accesskit::Role::Label);
        label.set_label("x".repeat(1000));
        let mut run = Node::new(accesskit::Role::TextRun);
        run.set_value("x".repeat(1000));
        run.set_character_lengths(vec![1u8; 1000]);
        assert_eq!(node_cost(&label), NODE_BASE_BYTES + 1000);
        assert_eq!(node_cost(&run), NODE_BASE_BYTES + 6000 + 1000);
    }
}
