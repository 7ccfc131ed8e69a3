//! A text's links: each link node and its span in the text, computed once
//! per kept text model (Hypertext lists them, Hyperlink finds its offsets).

use std::collections::HashMap;

use super::*;
use crate::model::exposure;
use crate::model::paths::local_id;
use crate::model::roles::is_link;

/// The nearest exposed link-role ancestor of `run` strictly below `root`,
/// if `root` is that link's hypertext ([`text_parent`]).
/// A hidden link is no link: its hyperlink object does not exist (the
/// dispatcher resolves exposed nodes only), so `GetLink` must not hand it
/// out; its runs stay plain text of the enclosing text.
fn link_of<'a>(run: &NodeRef<'a>, root: &NodeRef) -> Option<NodeRef<'a>> {
    let mut current = run.parent();
    while let Some(node) = current {
        if node.id() == root.id() {
            return None;
        }
        if is_link(&node) && exposure::is_exposed(&node) {
            // The link's hypertext is its nearest text-bearing ancestor
            // (`Hyperlink.StartIndex` counts there); an enclosing text
            // showing the same runs does not list it.
            return (text_parent(&node)?.id() == root.id()).then_some(node);
        }
        current = node.parent();
    }
    None
}

/// The nearest ancestor of `link` that bears text: the hypertext the link
/// belongs to.
pub(crate) fn text_parent<'a>(link: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    let mut current = link.parent();
    while let Some(node) = current {
        if node.supports_text_ranges() {
            return Some(node);
        }
        current = node.parent();
    }
    None
}

/// A text's links, kept with its cached model: `spans` in text order (so
/// sorted by start, and disjoint), `by_link` each link node's place in it.
#[derive(Debug, Default)]
pub(crate) struct LinkIndex {
    spans: Vec<(NodeId, usize, usize)>,
    by_link: HashMap<NodeId, usize>,
}

impl LinkIndex {
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// The link node and span at `index`.
    pub(crate) fn get(&self, index: usize) -> Option<(NodeId, usize, usize)> {
        self.spans.get(index).copied()
    }

    /// The index of the link whose span holds code point `offset`.
    pub(crate) fn index_at(&self, offset: usize) -> Option<usize> {
        let after = self.spans.partition_point(|&(_, start, _)| start <= offset);
        let index = after.checked_sub(1)?;
        let (_, _, end) = self.spans.get(index)?;
        (offset < *end).then_some(index)
    }

    /// The span of link node `link`, if it is one of this text's links.
    pub(crate) fn span_of(&self, link: NodeId) -> Option<(usize, usize)> {
        let &index = self.by_link.get(&link)?;
        self.spans.get(index).map(|&(_, start, end)| (start, end))
    }
}

/// The links of `model`'s text, computed once per cached model.
pub(crate) fn link_index<'m>(model: &'m TextModel) -> &'m LinkIndex {
    model.link_index.get_or_init(|| {
        let spans = links(model);
        let by_link = spans
            .iter()
            .enumerate()
            .map(|(index, &(link, _, _))| (link, index))
            .collect();
        LinkIndex { spans, by_link }
    })
}

/// The links of a text in order, as (link node, start, end) in code points;
/// consecutive runs of one link merge.
fn links(model: &TextModel) -> Vec<(NodeId, usize, usize)> {
    if !model.embedded().is_empty() {
        // Per-block layout: every child object is a link of its parent.
        return model
            .embedded()
            .iter()
            .map(|&(child, offset)| (child, offset, offset + 1))
            .collect();
    }
    let mut spans: Vec<(NodeId, usize, usize)> = Vec::new();
    for run in &model.runs {
        let Some(link) = model
            .run_node(run)
            .and_then(|node| link_of(&node, &model.root))
        else {
            continue;
        };
        let link = local_id(&link);
        match spans.last_mut() {
            Some((last, _, end)) if *last == link => *end = run.end,
            _ => spans.push((link, run.start, run.end)),
        }
    }
    spans
}
