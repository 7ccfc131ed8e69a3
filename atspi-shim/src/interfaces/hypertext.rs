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

use crate::model::names;
use crate::model::paths::{self, null_ref, ObjectRef};

use crate::model::error::CallError;
use crate::model::hyperlinks::offers_hypertext;
use crate::model::index::to_i32;
use crate::model::text::{link_index, LinkIndex};
#[cfg(test)]
use crate::model::text_env::Env;
use crate::model::text_env::{model_at, TextOn};
use crate::surface::declare_interface;
#[cfg(test)]
use crate::surface::reply::Handled;
#[cfg(test)]
use accesskit_consumer::NodeRef;

pub(crate) const INTERFACE: &str = names::HYPERTEXT;

declare_interface! {
    pub(crate) static HYPERTEXT = INTERFACE, on text, tested through (handle_on, property_on) {
        fn GetNLinks() -> (count: i32) = n_links;
        fn GetLink(index: i32) -> (link: ObjectRef) = link;
        fn GetLinkIndex(character_index: i32) -> (index: i32) = link_at;
        property version: u32 = crate::surface::interface_version;
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
    use crate::model::fixtures::{chars, node, paragraph, run, tree};
    use crate::model::hyperlinks::{has_links, node_of, object_ref, MAX_HYPERTEXT_LINKS};
    use crate::model::paths::local_id;
    use crate::model::text_env::ENV;
    use crate::surface::testing::{body, message};
    use accesskit::{Node, NodeId, Role};
    use newton_push_protocol::SurfaceId;
    use zvariant::OwnedObjectPath;

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
            crate::model::text_env::text_of(&label),
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
            crate::model::hyperlinks::span_in_parent(&ENV, &last),
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
