//! `org.a11y.atspi.Hypertext`: the links inside a text-bearing node.
//!
//! AccessKit inlines a link's text as `TextRun`s below the link node, and
//! those runs are part of the enclosing text node's text (accesskit_consumer
//! looks through non-run descendants). So a link is not an embedded-object
//! character (U+FFFC) here: it *is* the span of its runs in the parent's
//! text, and `Hyperlink.StartIndex/EndIndex` are that span in code points.
//!
//! Advertised on text-bearing nodes (`supports_text_ranges`) with at least
//! one link-role node among the ancestors of their runs.
//!
//! Object references use [`object_path`], the `<surface>_<node>` scheme of
//! the dispatcher's `paths` module, kept local so this file compiles on its
//! own; swap in `paths::node_ref` when convenient.

use accesskit::{NodeId, Role};
use accesskit_consumer::NodeRef;
use newton_push_protocol::SurfaceId;
use zvariant::{ObjectPath, OwnedObjectPath, OwnedValue};

use crate::reply::{args, method_return};
use crate::text::{to_i32, Env, TextModel};
use crate::{CallError, Handled, NodeCtx};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Hypertext";
/// Property names, for `GetAll` and introspection.
pub(crate) const PROPERTIES: &[&str] = &[];

const NODE_PREFIX: &str = "/org/a11y/atspi/accessible/";
const NULL_PATH: &str = "/org/a11y/atspi/null";

/// An AT-SPI object reference `(so)`.
pub(crate) type ObjectRef = (String, OwnedObjectPath);

/// `/org/a11y/atspi/accessible/<surface>_<node>`, as `paths::node_path`.
pub(crate) fn object_path(surface: SurfaceId, node: NodeId) -> String {
    format!("{NODE_PREFIX}{}_{}", surface.0, node.0)
}

/// `(unique name, path)` of a node of this surface.
pub(crate) fn object_ref(env: &Env, node: &NodeRef) -> ObjectRef {
    let path = object_path(env.surface, node.locate().0);
    let path = ObjectPath::try_from(path).map_or_else(|_| null_path(), OwnedObjectPath::from);
    (env.unique_name.to_string(), path)
}

fn null_path() -> OwnedObjectPath {
    OwnedObjectPath::from(ObjectPath::from_static_str_unchecked(NULL_PATH))
}

/// The null reference `("", "/org/a11y/atspi/null")`.
pub(crate) fn null_ref() -> ObjectRef {
    (String::new(), null_path())
}

/// The node a `<surface>_<node>` path names, if it is canonical.
pub(crate) fn parse_object_path(path: &str) -> Option<(SurfaceId, NodeId)> {
    let rest = path.strip_prefix(NODE_PREFIX)?;
    let (surface, node) = rest.split_once('_')?;
    let canonical = |text: &str| {
        !text.is_empty()
            && text.bytes().all(|b| b.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'))
    };
    if !canonical(surface) || !canonical(node) {
        return None;
    }
    Some((SurfaceId(surface.parse().ok()?), NodeId(node.parse().ok()?)))
}

/// Roles AccessKit treats as links.
pub(crate) fn is_link(node: &NodeRef) -> bool {
    matches!(
        node.role(),
        Role::Link | Role::DocBackLink | Role::DocBiblioRef | Role::DocGlossRef | Role::DocNoteRef
    )
}

/// One link inside a text: the link node and its code-point span.
#[derive(Clone, Debug)]
pub(crate) struct LinkSpan<'a> {
    pub link: NodeRef<'a>,
    pub start: usize,
    pub end: usize,
}

/// The nearest link-role ancestor of `run` strictly below `root`.
fn link_of<'a>(run: &NodeRef<'a>, root: &NodeRef) -> Option<NodeRef<'a>> {
    let mut current = run.parent();
    while let Some(node) = current {
        if node.id() == root.id() {
            return None;
        }
        if is_link(&node) {
            return Some(node);
        }
        current = node.parent();
    }
    None
}

/// The links of a text in order; consecutive runs of one link merge.
pub(crate) fn links<'a>(model: &TextModel<'a>) -> Vec<LinkSpan<'a>> {
    let mut spans: Vec<LinkSpan<'a>> = Vec::new();
    for run in &model.runs {
        let Some(link) = link_of(&run.node, &model.root) else {
            continue;
        };
        match spans.last_mut() {
            Some(last) if last.link.id() == link.id() => last.end = run.end,
            _ => spans.push(LinkSpan {
                link,
                start: run.start,
                end: run.end,
            }),
        }
    }
    spans
}

pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    has_links(&ctx.node)
}

pub(crate) fn has_links(node: &NodeRef) -> bool {
    node.supports_text_ranges()
        && crate::text::text_runs(node).any(|run| link_of(&run, node).is_some())
}

pub(crate) fn call(
    ctx: &NodeCtx,
    member: &str,
    call: &zbus::Message,
) -> Result<Handled, CallError> {
    handle(&Env::of(ctx), ctx.node, member, call)
}

pub(crate) fn property(_ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    Err(CallError::UnknownProperty(format!("{INTERFACE}.{name}")))
}

pub(crate) fn handle(
    env: &Env,
    node: NodeRef,
    member: &str,
    call: &zbus::Message,
) -> Result<Handled, CallError> {
    let model = match TextModel::of(node) {
        Some(model) if node.supports_text_ranges() => model,
        _ => {
            return Err(CallError::NotSupported(format!(
                "this {:?} node has no hypertext",
                node.role()
            )))
        }
    };
    let spans = links(&model);
    let reply = match member {
        "GetNLinks" => method_return(call, &to_i32(spans.len()))?,
        "GetLink" => {
            let (index,) = args::<(i32,)>(call)?;
            let link = usize::try_from(index).ok().and_then(|i| spans.get(i));
            let reference = link.map_or_else(null_ref, |span| object_ref(env, &span.link));
            method_return(call, &(reference,))?
        }
        "GetLinkIndex" => {
            let (offset,) = args::<(i32,)>(call)?;
            let index = usize::try_from(offset).ok().and_then(|offset| {
                spans
                    .iter()
                    .position(|span| span.start <= offset && offset < span.end)
            });
            method_return(call, &index.map_or(-1, to_i32))?
        }
        other => {
            return Err(CallError::UnknownMethod {
                interface: INTERFACE.into(),
                member: other.into(),
            })
        }
    };
    Ok(Handled::reply(reply))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::text::tests::{body, chars, message, node, run, tree, ENV};
    use accesskit::Node;

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
        assert!(has_links(&label));
        assert!(!has_links(&node(&tree, 3)));
        assert_eq!(
            crate::text::text_of(&label),
            "Go to example now, or see docs."
        );
        assert_eq!(body::<i32>(&ask(label, "GetNLinks", &())), 2);
        let link = |i: i32| body::<(String, OwnedObjectPath)>(&ask(label, "GetLink", &(i,)));
        assert_eq!(
            link(0),
            (
                ":1.42".to_string(),
                OwnedObjectPath::try_from("/org/a11y/atspi/accessible/7_3").unwrap()
            )
        );
        assert_eq!(link(1).1.as_str(), "/org/a11y/atspi/accessible/7_6");
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

    #[test]
    fn object_paths_round_trip() {
        assert_eq!(
            object_path(SurfaceId(7), NodeId(3)),
            "/org/a11y/atspi/accessible/7_3"
        );
        assert_eq!(
            parse_object_path("/org/a11y/atspi/accessible/7_3"),
            Some((SurfaceId(7), NodeId(3)))
        );
        for bad in [
            "/org/a11y/atspi/accessible/root",
            "/org/a11y/atspi/accessible/07_3",
            "/x/7_3",
            "/org/a11y/atspi/accessible/7_-3",
            "/org/a11y/atspi/accessible/99999999999_3",
        ] {
            assert_eq!(parse_object_path(bad), None, "{bad}");
        }
    }
}
