//! Reverse index of node references (relations, line links, text-selection
//! endpoints): target → nodes that point at it.
//!
//! The validator needs it to find, in time proportional to an update, every
//! node *outside* the update that still points at a node the update removes,
//! moves or turns into something else. Without it that check would need a
//! scan of the whole tree.

use std::collections::HashMap;

use accesskit::{Node, NodeId};

/// What kind of reference a node holds to another; picks the rule that a
/// broken reference violates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RefKind {
    /// `labelled_by`, `controls`, `described_by`, … (see [`relation_targets`]).
    Relation(&'static str),
    /// `next_on_line` / `previous_on_line`.
    LineLink(&'static str),
    /// `text_selection` anchor or focus.
    SelectionEndpoint,
}

/// Every relation of `node` with its property name. These are the
/// id-valued properties other than `children` and the text links.
pub(crate) fn relation_targets(node: &Node) -> impl Iterator<Item = (&'static str, NodeId)> + '_ {
    let lists: [(&'static str, &[NodeId]); 7] = [
        ("labelledBy", node.labelled_by()),
        ("controls", node.controls()),
        ("describedBy", node.described_by()),
        ("details", node.details()),
        ("flowTo", node.flow_to()),
        ("owns", node.owns()),
        ("radioGroup", node.radio_group()),
    ];
    let singles: [(&'static str, Option<NodeId>); 5] = [
        ("errorMessage", node.error_message()),
        ("inPageLinkTarget", node.in_page_link_target()),
        ("popupFor", node.popup_for()),
        ("memberOf", node.member_of()),
        ("activeDescendant", node.active_descendant()),
    ];
    lists
        .into_iter()
        .flat_map(|(name, ids)| ids.iter().map(move |id| (name, *id)))
        .chain(
            singles
                .into_iter()
                .filter_map(|(name, id)| id.map(|id| (name, id))),
        )
}

/// Every reference `node` holds, with its kind.
pub(crate) fn all_refs(node: &Node) -> impl Iterator<Item = (RefKind, NodeId)> + '_ {
    let links = [
        node.next_on_line()
            .map(|id| (RefKind::LineLink("nextOnLine"), id)),
        node.previous_on_line()
            .map(|id| (RefKind::LineLink("previousOnLine"), id)),
    ];
    let selection = node
        .text_selection()
        .map(|s| [s.anchor.node, s.focus.node])
        .into_iter()
        .flatten()
        .map(|id| (RefKind::SelectionEndpoint, id));
    relation_targets(node)
        .map(|(name, id)| (RefKind::Relation(name), id))
        .chain(links.into_iter().flatten())
        .chain(selection)
}

/// The first reference `node` holds to `target`, if any.
pub(crate) fn ref_to(node: &Node, target: NodeId) -> Option<RefKind> {
    all_refs(node)
        .find(|(_, id)| *id == target)
        .map(|(kind, _)| kind)
}

/// target → sources (a multiset: one entry per reference).
#[derive(Clone, Debug, Default)]
pub(crate) struct RefIndex {
    by_target: HashMap<NodeId, Vec<NodeId>>,
}

impl RefIndex {
    /// Records every reference `node` (with id `source`) holds.
    pub(crate) fn add_node(&mut self, source: NodeId, node: &Node) {
        for (_, target) in all_refs(node) {
            self.by_target.entry(target).or_default().push(source);
        }
    }

    /// Forgets every reference `node` (with id `source`) holds.
    pub(crate) fn remove_node(&mut self, source: NodeId, node: &Node) {
        for (_, target) in all_refs(node) {
            let Some(sources) = self.by_target.get_mut(&target) else {
                continue;
            };
            if let Some(pos) = sources.iter().position(|s| *s == source) {
                sources.swap_remove(pos);
            }
            if sources.is_empty() {
                self.by_target.remove(&target);
            }
        }
    }

    /// Nodes that (may) point at `target`.
    pub(crate) fn sources(&self, target: NodeId) -> &[NodeId] {
        self.by_target
            .get(&target)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}
