//! Memory budgets: what one application's replica may cost, and what all
//! applications together may cost, counted in bytes as the allocator sees
//! them and checked before a commit is applied.
//!
//! The cost of a node ([`node_cost`]) follows where its memory goes in the
//! bridge (measured with a counting allocator, `cache/tests/budget_accuracy.rs`;
//! docs/robustness.md §13):
//!
//! * **Two copies in the consumer.** `accesskit_consumer::Tree` keeps every
//!   node twice (`state` and `next_state`), so each node's heap — strings,
//!   id lists, per-character arrays, its property vector — counts
//!   [`CONSUMER_COPIES`] times. One copy is the decoded node (its property
//!   vector grown by doubling: capacity a power of two, at least 4), the
//!   other a clone (capacity exact).
//! * **Two hash maps**, one per copy, holding the key, the parent link and
//!   the `Node` itself inline in each bucket: counted per tree
//!   ([`tree_bytes`]) from the most nodes the tree has held since it was
//!   built, since hashbrown's tables double and never shrink, plus the
//!   fixed structures of a tree ([`TREE_BASE_BYTES`]).
//! * **The replica's reverse index** of relations: an entry per reference.
//! * **The AT side's text model** (atspi-shim `TextData`): built when an AT
//!   reads a text, it keeps the string again, a byte offset (`usize`) and a
//!   `char` per character, and the cut points of every boundary asked;
//!   counted [`TEXT_MODEL_BYTES_PER_BYTE`] per byte of `value`, once (one
//!   model per text), whether or not an AT has asked yet: the budget bounds
//!   what the bridge may come to hold, not what it holds at the moment.
//!
//! Computing it is O(the node's size): a fixed number of property reads
//! plus the lengths of its strings and arrays, never their contents.
//!
//! Rules: a commit whose new nodes would take the application over
//! `Limits::max_app_bytes` is rejected (`app-bytes`); one that would take
//! every application together over the shared [`ByteBudget`] is rejected
//! (`total-bytes`). Either way the replica keeps its last good state and the
//! sender is asked for a full tree, as for every rejection.

use std::mem::size_of;
use std::sync::atomic::{AtomicUsize, Ordering};

use accesskit::{Affine, Node, NodeId, TextSelection};
use accesskit_consumer::FullNodeId;

/// Copies of every node `accesskit_consumer::Tree` keeps (`state`,
/// `next_state`).
pub const CONSUMER_COPIES: usize = 2;

/// One property in a node's property vector (`accesskit`'s private
/// `PropertyValue`: a 24-byte `Vec` or `String` plus its tag).
pub const PROPERTY_SLOT_BYTES: usize = 32;

/// One hash-map bucket of the consumer: key, parent link (id and index),
/// the `Node` inline, one control byte.
pub const MAP_BUCKET_BYTES: usize =
    size_of::<FullNodeId>() * 2 + size_of::<usize>() + size_of::<Node>() + 1;

/// Per byte of `value`, the AT side's text model with every boundary's cut
/// points built: the string again (1), a byte offset per character (8), the
/// character itself (4), each grown by doubling, and seven cut-point
/// tables of `usize`. Measured with a counting allocator (atspi-shim
/// `tests/budget_accuracy.rs`): 33.5 bytes per byte for one 4 MiB run (its
/// vectors just doubled), 25.5 for the same text in 1,000 runs; 29 is
/// within 1.16× of both.
pub const TEXT_MODEL_BYTES_PER_BYTE: usize = 29;

/// One reference (`labelled_by`, `controls`, …, and the single-id
/// relations) in the replica's reverse index: the source id in the
/// target's list, the list's share of its map entry.
pub const REFERENCE_BYTES: usize = 24;

/// Weight of a node's `value` relative to a label of the same length: the
/// consumer's copies and the text model (see the module comment).
pub const VALUE_WEIGHT: usize = CONSUMER_COPIES + TEXT_MODEL_BYTES_PER_BYTE;

/// Fixed cost of one surface's tree, whatever its size: the consumer's two
/// states with their other maps, the replica's indexes (measured: about
/// 10.7 KB for a one-node tree).
pub const TREE_BASE_BYTES: usize = 11 * 1024;

/// The bytes a tree that has held at most `peak_nodes` nodes since it was
/// built costs besides its nodes' own ([`node_cost`]): [`TREE_BASE_BYTES`]
/// and the consumer's two node maps. A hashbrown table of `b` buckets (a
/// power of two, at least 4) holds `b − 1` entries below 8 buckets and
/// `7b/8` from 8; it doubles when full and never shrinks. O(1).
pub fn tree_bytes(peak_nodes: usize) -> usize {
    let mut buckets = 4usize;
    loop {
        let capacity = if buckets < 8 {
            buckets - 1
        } else {
            buckets / 8 * 7
        };
        if capacity >= peak_nodes {
            break;
        }
        match buckets.checked_mul(2) {
            Some(next) => buckets = next,
            None => return usize::MAX,
        }
    }
    buckets
        .saturating_mul(MAP_BUCKET_BYTES)
        .saturating_mul(CONSUMER_COPIES)
        .saturating_add(TREE_BASE_BYTES)
}

/// The bytes `node` costs the bridge (see the module comment): its share of
/// the replica plus its share of the AT side's text model.
pub fn node_cost(node: &Node) -> usize {
    replica_cost(node).saturating_add(text_model_cost(node))
}

/// The AT side's text model's share of `node`: [`TEXT_MODEL_BYTES_PER_BYTE`]
/// per byte of its `value`.
pub fn text_model_cost(node: &Node) -> usize {
    node.value()
        .map_or(0, |v| v.len().saturating_mul(TEXT_MODEL_BYTES_PER_BYTE))
}

/// The bytes `node` keeps live in the replica (both consumer copies, map
/// buckets, property vectors, reverse index).
pub fn replica_cost(node: &Node) -> usize {
    let strings = [
        node.label(),
        node.description(),
        node.access_key(),
        node.author_id(),
        node.class_name(),
        node.font_family(),
        node.html_id(),
        node.html_tag(),
        node.inner_html(),
        node.keyboard_shortcut(),
        node.language(),
        node.placeholder(),
        node.role_description(),
        node.state_description(),
        node.tooltip(),
        node.url(),
        node.row_index_text(),
        node.column_index_text(),
        node.braille_label(),
        node.braille_role_description(),
    ];
    let value = node.value();
    let id_lists = [
        node.children(),
        node.controls(),
        node.details(),
        node.described_by(),
        node.flow_to(),
        node.labelled_by(),
        node.owns(),
        node.radio_group(),
    ];
    let single_ids = [
        node.active_descendant(),
        node.error_message(),
        node.in_page_link_target(),
        node.member_of(),
        node.next_on_line(),
        node.previous_on_line(),
        node.popup_for(),
    ];
    let lengths = [node.character_lengths(), node.word_starts()];
    let coords = [node.character_positions(), node.character_widths()];
    let custom_actions = node.custom_actions();

    // Heap of one copy of the node.
    let mut heap = strings.iter().flatten().map(|s| s.len()).sum::<usize>();
    heap += value.map_or(0, str::len);
    heap += id_lists.iter().map(|ids| ids.len()).sum::<usize>() * size_of::<NodeId>();
    heap += lengths.iter().map(|l| l.len()).sum::<usize>();
    heap += coords.iter().flatten().map(|c| c.len()).sum::<usize>() * size_of::<f32>();
    heap += std::mem::size_of_val(custom_actions)
        + custom_actions
            .iter()
            .map(|a| a.description.len())
            .sum::<usize>();
    heap += node.transform().map_or(0, |_| size_of::<Affine>());
    heap += node
        .text_selection()
        .map_or(0, |_| size_of::<TextSelection>());

    let properties = strings.iter().flatten().count()
        + usize::from(value.is_some())
        + id_lists.iter().filter(|ids| !ids.is_empty()).count()
        + single_ids.iter().flatten().count()
        + lengths.iter().filter(|l| !l.is_empty()).count()
        + coords.iter().flatten().count()
        + usize::from(!custom_actions.is_empty())
        + scalar_properties(node);
    // The decoded copy's vector grew by doubling from 4; the clone's is exact.
    let slots = if properties == 0 {
        0
    } else {
        properties + properties.next_power_of_two().max(4)
    };

    let references = id_lists[1..].iter().map(|ids| ids.len()).sum::<usize>()
        + single_ids.iter().flatten().count();

    CONSUMER_COPIES * heap + slots * PROPERTY_SLOT_BYTES + references * REFERENCE_BYTES
}

/// How many of `node`'s properties without heap data are set (each takes a
/// slot in its property vector).
fn scalar_properties(node: &Node) -> usize {
    let set = [
        node.scroll_x().is_some(),
        node.scroll_x_min().is_some(),
        node.scroll_x_max().is_some(),
        node.scroll_y().is_some(),
        node.scroll_y_min().is_some(),
        node.scroll_y_max().is_some(),
        node.numeric_value().is_some(),
        node.min_numeric_value().is_some(),
        node.max_numeric_value().is_some(),
        node.numeric_value_step().is_some(),
        node.numeric_value_jump().is_some(),
        node.font_size().is_some(),
        node.font_weight().is_some(),
        node.row_count().is_some(),
        node.column_count().is_some(),
        node.row_index().is_some(),
        node.column_index().is_some(),
        node.row_span().is_some(),
        node.column_span().is_some(),
        node.level().is_some(),
        node.size_of_set().is_some(),
        node.position_in_set().is_some(),
        node.color_value().is_some(),
        node.background_color().is_some(),
        node.foreground_color().is_some(),
        node.overline().is_some(),
        node.strikethrough().is_some(),
        node.underline().is_some(),
        node.is_expanded().is_some(),
        node.is_selected().is_some(),
        node.invalid().is_some(),
        node.toggled().is_some(),
        node.live().is_some(),
        node.text_direction().is_some(),
        node.orientation().is_some(),
        node.sort_direction().is_some(),
        node.aria_current().is_some(),
        node.auto_complete().is_some(),
        node.has_popup().is_some(),
        node.list_style().is_some(),
        node.text_align().is_some(),
        node.vertical_offset().is_some(),
        node.transform().is_some(),
        node.bounds().is_some(),
        node.text_selection().is_some(),
        node.tree_id().is_some(),
    ];
    set.iter().filter(|s| **s).count()
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
        // One property: 1 slot in the clone, 4 in the decoded copy.
        let one_slot = 5 * PROPERTY_SLOT_BYTES;
        assert_eq!(node_cost(&label), one_slot + 2 * 1000);
        // Two properties: 2 + 4 slots; the value in both copies and the
        // text model, the lengths in both copies.
        let two_slots = 6 * PROPERTY_SLOT_BYTES;
        assert_eq!(node_cost(&run), two_slots + 1000 * VALUE_WEIGHT + 2 * 1000);
    }

    #[test]
    fn tree_bytes_follow_hashbrown_buckets() {
        let per_bucket = CONSUMER_COPIES * MAP_BUCKET_BYTES;
        assert_eq!(tree_bytes(0), TREE_BASE_BYTES + 4 * per_bucket);
        assert_eq!(tree_bytes(3), TREE_BASE_BYTES + 4 * per_bucket);
        assert_eq!(tree_bytes(4), TREE_BASE_BYTES + 8 * per_bucket);
        assert_eq!(tree_bytes(7), TREE_BASE_BYTES + 8 * per_bucket);
        assert_eq!(tree_bytes(8), TREE_BASE_BYTES + 16 * per_bucket);
        assert_eq!(tree_bytes(112), TREE_BASE_BYTES + 128 * per_bucket);
        assert_eq!(tree_bytes(113), TREE_BASE_BYTES + 256 * per_bucket);
        assert_eq!(tree_bytes(usize::MAX), usize::MAX);
    }
}
