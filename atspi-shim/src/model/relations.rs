//! `GetRelationSet`: every relation AccessKit carries, forward and reverse.
//!
//! Forward relations come from the node's own properties; dangling ids are
//! skipped. Reverse relations (LABEL_FOR, CONTROLLED_BY, DESCRIPTION_FOR,
//! DETAILS_FOR, FLOWS_FROM, ERROR_FOR) need the nodes pointing *at* this one:
//! the replica's reverse index gives them in O(referrers), wherever they are
//! in the tree.

use accesskit::{Node, NodeId, TreeId};
use accesskit_consumer::NodeRef;
use atspi_common::RelationType;

use crate::model::context::{NodeCtx, Target};
use crate::model::exposure::is_exposed;
use crate::model::paths::ObjectRef;

type Relation = (u32, Vec<ObjectRef>);

/// One forward relation property, with its AT-SPI type and reverse type.
struct RelationKind {
    forward: RelationType,
    reverse: Option<RelationType>,
    targets: fn(&Node) -> Vec<NodeId>,
}

const KINDS: &[RelationKind] = &[
    RelationKind {
        forward: RelationType::LabelledBy,
        reverse: Some(RelationType::LabelFor),
        targets: |n| n.labelled_by().to_vec(),
    },
    RelationKind {
        forward: RelationType::ControllerFor,
        reverse: Some(RelationType::ControlledBy),
        targets: |n| n.controls().to_vec(),
    },
    RelationKind {
        forward: RelationType::DescribedBy,
        reverse: Some(RelationType::DescriptionFor),
        targets: |n| n.described_by().to_vec(),
    },
    RelationKind {
        forward: RelationType::Details,
        reverse: Some(RelationType::DetailsFor),
        targets: |n| n.details().to_vec(),
    },
    RelationKind {
        forward: RelationType::FlowsTo,
        reverse: Some(RelationType::FlowsFrom),
        targets: |n| n.flow_to().to_vec(),
    },
    RelationKind {
        forward: RelationType::ErrorMessage,
        reverse: Some(RelationType::ErrorFor),
        targets: |n| n.error_message().into_iter().collect(),
    },
    RelationKind {
        forward: RelationType::MemberOf,
        reverse: None,
        targets: |n| n.member_of().into_iter().collect(),
    },
    RelationKind {
        forward: RelationType::PopupFor,
        reverse: None,
        targets: |n| n.popup_for().into_iter().collect(),
    },
];

/// Cost estimate of `GetRelationSet` (`heavy over`, `surface/mod.rs`): the
/// targets it may list, forward and reverse, counted without resolving them.
pub(crate) fn targets_work(target: Target) -> usize {
    let Target::Node(ctx) = target else {
        return 0;
    };
    let node = ctx.node.data();
    let forward = node.labelled_by().len()
        + node.controls().len()
        + node.described_by().len()
        + node.details().len()
        + node.flow_to().len()
        + 3;
    forward + ctx.surface.referrers(ctx.node.locate().0).len()
}

/// The relation set `a(ua(so))`.
pub(crate) fn relation_set(ctx: &NodeCtx) -> Vec<Relation> {
    let mut relations = Vec::new();
    for kind in KINDS {
        let targets = resolve_targets(ctx, &(kind.targets)(ctx.node.data()));
        if !targets.is_empty() {
            relations.push((kind.forward as u32, targets));
        }
    }
    let reverse = reverse_relations(ctx);
    relations.extend(reverse);
    relations
}

fn resolve_targets(ctx: &NodeCtx, ids: &[NodeId]) -> Vec<ObjectRef> {
    let Some(tree) = ctx.surface.tree() else {
        return Vec::new();
    };
    let state = tree.state();
    ids.iter()
        .filter_map(|id| state.node_by_tree_local_id(*id, TreeId::ROOT))
        .filter(is_exposed)
        .map(|target| ctx.ref_to(&target))
        .collect()
}

fn reverse_relations(ctx: &NodeCtx) -> Vec<Relation> {
    let me = ctx.id();
    let mut found: Vec<Relation> = Vec::new();
    for source in referrers(ctx.surface, &ctx.node) {
        record_reverse(ctx, &source, me, &mut found);
    }
    found
}

/// Exposed nodes whose relations name `node` (each once), from the
/// replica's reverse index.
fn referrers<'a>(surface: &newton_cache::SurfaceReplica, node: &NodeRef<'a>) -> Vec<NodeRef<'a>> {
    let me = node.locate().0;
    let mut ids: Vec<NodeId> = surface
        .referrers(me)
        .iter()
        .copied()
        .filter(|id| *id != me)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .filter_map(|id| node.tree_state.node_by_tree_local_id(id, TreeId::ROOT))
        .filter(is_exposed)
        .collect()
}

/// Nodes whose name comes from `node` through `labelled_by` (their name
/// changes when `node`'s label or value does).
pub(crate) fn labelled_nodes<'a>(
    surface: &newton_cache::SurfaceReplica,
    node: &NodeRef<'a>,
) -> Vec<NodeRef<'a>> {
    let me = node.locate().0;
    referrers(surface, node)
        .into_iter()
        .filter(|n| n.data().labelled_by().contains(&me))
        .collect()
}

fn record_reverse(ctx: &NodeCtx, source: &NodeRef, me: NodeId, found: &mut Vec<Relation>) {
    for kind in KINDS {
        let Some(reverse) = kind.reverse else {
            continue;
        };
        if (kind.targets)(source.data()).contains(&me) {
            let reference = ctx.ref_to(source);
            let code = reverse as u32;
            match found.iter_mut().find(|(c, _)| *c == code) {
                Some((_, targets)) => targets.push(reference),
                None => found.push((code, vec![reference])),
            }
        }
    }
}
