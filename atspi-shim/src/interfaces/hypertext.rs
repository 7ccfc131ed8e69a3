//! `org.a11y.atspi.Hypertext`: the links inside a text-bearing node.
//!
//! In the per-block layout (`text/blocks.rs`, a web engine's document) a
//! block's links are its child objects, one U+FFFC each, all of them listed.
//! The rest of this comment is the inline layout.
//!
//! AccessKit inlines a link's text as `TextRun`s below the link node, and
//! those runs are part of the enclosing text node's text (accesskit_consumer
//! looks through non-run descendants). So a link is not an embedded-object
//! character (U+FFFC) here: it *is* the span of its runs in the parent's
//! text, and `Hyperlink.StartIndex/EndIndex` are that span in code points.
//!
//! Advertised on text-bearing nodes (`supports_text_ranges`) with at least
//! one link-role node among the ancestors of their runs. A link counts only
//! if it is exposed (a hidden link has no hyperlink object) and only in its
//! nearest text-bearing ancestor, the text its `StartIndex`/`EndIndex`
//! count in (an enclosing text showing the same runs does not list it).
//!
//! Object references are the dispatcher's `<surface>_<node>` paths
//! (`paths.rs`). `GetLink` answers with the link's *hyperlink object*
//! (`<surface>_<node>_hyperlink`), never the link's accessible path: libatspi
//! caches accessibles and hyperlinks in one table keyed by path, so a shared
//! path would hand Orca an accessible where it expects a hyperlink.

use std::collections::HashMap;

use accesskit::{NodeId, Role, TreeId};
use accesskit_consumer::NodeRef;

use crate::model::context::local_id;
use crate::model::exposure;
use crate::model::names;
use crate::model::paths::{self, null_ref, ObjectAddress, ObjectRef};

use crate::interfaces::text::{model_at, Env, TextLayout, TextModel, TextOn};
use crate::model::index::to_i32;
use crate::surface::declare_interface;
#[cfg(test)]
use crate::surface::reply::Handled;
use crate::{model::context::NodeCtx, model::error::CallError};

pub(crate) const INTERFACE: &str = names::HYPERTEXT;

declare_interface! {
    pub(crate) static HYPERTEXT = INTERFACE, on text, tested through (handle_on, property_on) {
        fn GetNLinks() -> (count: i32) = n_links;
        fn GetLink(index: i32) -> (link: ObjectRef) = link;
        fn GetLinkIndex(character_index: i32) -> (index: i32) = link_at;
        property version: u32 = crate::surface::interface_version;
    }
}

/// `(unique name, path)` of a node of this surface.
pub(crate) fn object_ref(env: &Env, node: &NodeRef) -> ObjectRef {
    paths::node_ref(env.unique_name, env.surface, local_id(node))
}

/// The node of this surface a `(so)` reference names, if it is one.
pub(crate) fn node_of<'a>(
    env: &Env,
    context: &NodeRef<'a>,
    reference: &ObjectRef,
) -> Option<NodeRef<'a>> {
    // Clients may leave the bus name empty for objects of the app they call.
    if !reference.0.is_empty() && reference.0 != env.unique_name {
        return None;
    }
    match paths::parse(reference.1.as_str())? {
        ObjectAddress::Node { surface, node } if surface == env.surface => {
            context.tree_state.node_by_tree_local_id(node, TreeId::ROOT)
        }
        _ => None,
    }
}

/// Roles AccessKit treats as links.
pub(crate) fn is_link(node: &NodeRef) -> bool {
    matches!(
        node.role(),
        Role::Link | Role::DocBackLink | Role::DocBiblioRef | Role::DocGlossRef | Role::DocNoteRef
    )
}

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

/// The most links a text of the inline layout may have and still offer
/// Hypertext (the per-block layout has no limit: a block lists only its own
/// children, so this walk stays per block there). Orca 43.1's
/// default script enumerates every link of the focused text (three calls
/// each: `GetLink`, `StartIndex`, `EndIndex`) on every braille refresh
/// (`braille.Text.getAttributeMask`), so a 12,000-link document froze it
/// for over a minute per focus change (docs/interfaces.md, "Hypertext").
/// Beyond the limit the links stay reachable as objects — each keeps its
/// Hyperlink interface with its offsets, Collection finds them — but the
/// text does not list them.
pub(crate) const MAX_HYPERTEXT_LINKS: usize = 256;

pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    has_links(&Env::of(ctx), &ctx.node)
}

/// Whether `node` offers Hypertext: a text with at least one link (in the
/// inline layout at most [`MAX_HYPERTEXT_LINKS`]), judged on its text model
/// (cached, like the link list). In the per-block layout a block's links
/// are its child objects: having a child object is answered from its
/// children, without building its model. In the inline layout a
/// plain-text node has no runs, hence no links; checking first spares
/// building its model.
pub(crate) fn has_links(env: &Env, node: &NodeRef) -> bool {
    if env.layout.is_block_text(node) {
        return node
            .children()
            .any(|child| exposure::is_exposed_child(&child));
    }
    node.supports_text_ranges()
        && model_at(env, *node).is_some_and(|model| offers_hypertext(env, link_index(&model)))
}

/// The inline layout caps the links a text lists (see
/// [`MAX_HYPERTEXT_LINKS`]); a block lists all of its child objects.
fn offers_hypertext(env: &Env, links: &LinkIndex) -> bool {
    match env.layout {
        TextLayout::Blocks => links.len() > 0,
        TextLayout::Inline => (1..=MAX_HYPERTEXT_LINKS).contains(&links.len()),
    }
}

/// `answer` on the node's link list; NotSupported for a node without
/// Hypertext.
fn with_links<T>(on: TextOn, answer: impl FnOnce(&LinkIndex) -> T) -> Result<T, CallError> {
    match model_at(&on.env, on.node) {
        Some(model) if offers_hypertext(&on.env, link_index(&model)) => {
            Ok(answer(link_index(&model)))
        }
        _ => Err(CallError::NotSupported(format!(
            "this {:?} node has no hypertext",
            on.node.role()
        ))),
    }
}

fn n_links(on: TextOn) -> Result<i32, CallError> {
    with_links(on, |links| to_i32(links.len()))
}

/// The link's hyperlink object; the null reference past the last link.
fn link(on: TextOn, index: i32) -> Result<ObjectRef, CallError> {
    with_links(on, |links| {
        let link = usize::try_from(index).ok().and_then(|i| links.get(i));
        link.map_or_else(null_ref, |(link, _, _)| {
            paths::hyperlink_ref(on.env.unique_name, on.env.surface, link)
        })
    })
}

/// The index of the link covering character `offset`, or -1.
fn link_at(on: TextOn, offset: i32) -> Result<i32, CallError> {
    with_links(on, |links| {
        let index = usize::try_from(offset)
            .ok()
            .and_then(|offset| links.index_at(offset));
        index.map_or(-1, to_i32)
    })
}

#[cfg(test)]
pub(crate) fn handle(
    env: &Env,
    node: NodeRef,
    member: &str,
    call: &zbus::Message,
) -> Result<Handled, CallError> {
    handle_on(TextOn { env: *env, node }, member, call)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::interfaces::text::tests::{body, chars, message, node, run, tree, ENV};
    use accesskit::{Node, NodeId};
    use newton_push_protocol::SurfaceId;
    use zvariant::OwnedObjectPath;

    /// Window → Label "Go to example now, or see docs." with two links:
    /// "example" (one run) and "see docs" (two runs).
    pub(crate) fn paragraph() -> accesskit_consumer::Tree {
        let mut root = Node::new(Role::Window);
        root.set_children(vec![NodeId(1)]);
        let mut label = Node::new(Role::Label);
        label.set_children(vec![NodeId(2), NodeId(3), NodeId(5), NodeId(6)]);
        let mut example = Node::new(Role::Link);
        example.set_url("https://example.org/");
        example.set_children(vec![NodeId(4)]);
        let mut docs = Node::new(Role::Link);
        docs.set_children(vec![NodeId(7), NodeId(8)]);
        tree(vec![
            (0, root),
            (1, label),
            (2, run(&chars("Go to "), &[0, 3])),
            (3, example),
            (4, run(&chars("example"), &[0])),
            (5, run(&chars(" now, or "), &[1, 6])),
            (6, docs),
            (7, run(&chars("see "), &[0])),
            (8, run(&chars("docs."), &[0])),
        ])
    }

    fn ask<B: serde::Serialize + zvariant::DynamicType>(
        n: NodeRef,
        member: &str,
        args: &B,
    ) -> Handled {
        handle(&ENV, n, member, &message(INTERFACE, member, args)).expect("call succeeds")
    }

    #[test]
    fn links_are_spans_of_the_parent_text() {
        let tree = paragraph();
        let label = node(&tree, 1);
        assert!(has_links(&ENV, &label));
        assert!(!has_links(&ENV, &node(&tree, 3)));
        assert_eq!(
            crate::interfaces::text::text_of(&label),
            "Go to example now, or see docs."
        );
        assert_eq!(body::<i32>(&ask(label, "GetNLinks", &())), 2);
        let link = |i: i32| body::<(String, OwnedObjectPath)>(&ask(label, "GetLink", &(i,)));
        assert_eq!(
            link(0),
            (
                ":1.42".to_string(),
                OwnedObjectPath::try_from("/org/a11y/atspi/accessible/7_3_hyperlink").unwrap()
            )
        );
        assert_eq!(
            link(1).1.as_str(),
            "/org/a11y/atspi/accessible/7_6_hyperlink"
        );
        assert_eq!(link(2), null_ref());
        assert_eq!(link(-1), null_ref());
        let index = |o: i32| body::<i32>(&ask(label, "GetLinkIndex", &(o,)));
        assert_eq!(index(5), -1);
        assert_eq!(index(6), 0);
        assert_eq!(index(12), 0);
        assert_eq!(index(13), -1);
        assert_eq!(index(22), 1);
        assert_eq!(index(30), 1);
        assert_eq!(index(31), -1);
        assert_eq!(index(-3), -1);
    }

    /// Window → Label whose text is `count` one-word links.
    fn many_links(count: usize) -> accesskit_consumer::Tree {
        let mut root = Node::new(Role::Window);
        root.set_children(vec![NodeId(1)]);
        let mut label = Node::new(Role::Label);
        let mut nodes = Vec::new();
        let mut children = Vec::new();
        for i in 0..count {
            let link_id = 2 + 2 * i as u64;
            children.push(NodeId(link_id));
            let mut link = Node::new(Role::Link);
            link.set_children(vec![NodeId(link_id + 1)]);
            nodes.push((link_id, link));
            nodes.push((link_id + 1, run(&chars("go "), &[0])));
        }
        label.set_children(children);
        let mut all = vec![(0, root), (1, label)];
        all.extend(nodes);
        tree(all)
    }

    #[test]
    fn a_text_with_too_many_links_does_not_list_them() {
        let tree = many_links(MAX_HYPERTEXT_LINKS);
        let label = node(&tree, 1);
        assert!(has_links(&ENV, &label));
        assert_eq!(
            body::<i32>(&ask(label, "GetNLinks", &())),
            to_i32(MAX_HYPERTEXT_LINKS)
        );
        let index = |o: i32| body::<i32>(&ask(label, "GetLinkIndex", &(o,)));
        assert_eq!(index(3 * 100 + 1), 100);

        let tree = many_links(MAX_HYPERTEXT_LINKS + 1);
        let label = node(&tree, 1);
        assert!(!has_links(&ENV, &label));
        let refused = handle(
            &ENV,
            label,
            "GetNLinks",
            &message(INTERFACE, "GetNLinks", &()),
        );
        assert!(matches!(refused, Err(CallError::NotSupported(_))));
        // Each link still knows its place in the text.
        let last = node(&tree, 2 + 2 * MAX_HYPERTEXT_LINKS as u64);
        assert_eq!(
            crate::interfaces::hyperlink::span_in_parent(&ENV, &last),
            Some((3 * MAX_HYPERTEXT_LINKS, 3 * MAX_HYPERTEXT_LINKS + 3))
        );
    }

    #[test]
    fn references_resolve_to_nodes_of_this_surface_only() {
        let tree = paragraph();
        let label = node(&tree, 1);
        let link = object_ref(&ENV, &node(&tree, 3));
        assert_eq!(
            node_of(&ENV, &label, &link).map(|n| local_id(&n)),
            Some(NodeId(3))
        );
        let anonymous = (String::new(), link.1.clone());
        assert_eq!(
            node_of(&ENV, &label, &anonymous).map(|n| local_id(&n)),
            Some(NodeId(3))
        );
        let other_app = (":1.99".to_string(), link.1.clone());
        assert!(node_of(&ENV, &label, &other_app).is_none());
        let other_surface = paths::node_ref(":1.42", SurfaceId(8), NodeId(3));
        assert!(node_of(&ENV, &label, &other_surface).is_none());
        let missing = paths::node_ref(":1.42", SurfaceId(7), NodeId(99));
        assert!(node_of(&ENV, &label, &missing).is_none());
        assert!(node_of(&ENV, &label, &paths::root_ref(":1.42")).is_none());
    }
}
