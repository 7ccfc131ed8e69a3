//! `org.a11y.atspi.Hyperlink` on link nodes, and in the per-block layout
//! (`text/blocks.rs`) on every child object of a block, whose span is its
//! U+FFFC in the block's text.
//!
//! A link has one anchor: itself. `StartIndex`/`EndIndex` are the code-point
//! span of its text runs inside the nearest text-bearing ancestor's text
//! (see `hypertext.rs`), or -1 when the link is not inside such a text (for
//! example a link whose text is only its label).

use crate::model::error::CallError;
use crate::model::hyperlinks::{is_hyperlink, object_ref, span_in_parent};
use crate::model::index::to_i32;
use crate::model::names;
use crate::model::paths::{null_ref, ObjectRef};
#[cfg(test)]
use crate::model::text_env::Env;
use crate::model::text_env::TextOn;
use crate::surface::declare_interface;
#[cfg(test)]
use accesskit_consumer::NodeRef;
#[cfg(test)]
use {crate::surface::reply::Handled, zvariant::OwnedValue};

pub(crate) const INTERFACE: &str = names::HYPERLINK;

declare_interface! {
    /// Served by link nodes and by their hyperlink objects.
    pub(crate) static HYPERLINK = INTERFACE, on text, tested through (handle_on, property_on) {
        fn GetObject(i: i32) -> (object: ObjectRef) = object;
        fn GetURI(i: i32) -> (uri: String) = uri;
        fn IsValid() -> (valid: bool) = is_valid;
        property version: u32 = crate::surface::interface_version;
        property NAnchors: i16 = n_anchors;
        property StartIndex: i32 = start_index;
        property EndIndex: i32 = end_index;
    }
}

#[cfg(test)]
pub(crate) fn property_of(env: &Env, node: NodeRef, name: &str) -> Result<OwnedValue, CallError> {
    property_on(TextOn { env: *env, node }, name)
}

fn n_anchors(on: TextOn) -> Result<i16, CallError> {
    require_link(&on)?;
    Ok(1)
}

fn start_index(on: TextOn) -> Result<i32, CallError> {
    require_link(&on)?;
    Ok(span_in_parent(&on.env, &on.node).map_or(-1, |(s, _)| to_i32(s)))
}

fn end_index(on: TextOn) -> Result<i32, CallError> {
    require_link(&on)?;
    Ok(span_in_parent(&on.env, &on.node).map_or(-1, |(_, e)| to_i32(e)))
}

fn require_link(on: &TextOn) -> Result<(), CallError> {
    if is_hyperlink(&on.env, &on.node) {
        Ok(())
    } else {
        Err(CallError::NotSupported(format!(
            "this {:?} node is not a link",
            on.node.role()
        )))
    }
}

/// The link itself for anchor 0 (one anchor per link).
fn object(on: TextOn, anchor: i32) -> Result<ObjectRef, CallError> {
    require_link(&on)?;
    Ok(if anchor == 0 {
        object_ref(&on.env, &on.node)
    } else {
        null_ref()
    })
}

fn uri(on: TextOn, anchor: i32) -> Result<String, CallError> {
    require_link(&on)?;
    let uri = if anchor == 0 { on.node.url() } else { None };
    Ok(uri.unwrap_or_default().to_owned())
}

/// The node is in the replica (a removed node never reaches here).
fn is_valid(on: TextOn) -> Result<bool, CallError> {
    require_link(&on)?;
    Ok(true)
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
mod tests {
    use super::*;
    use crate::model::fixtures::{node, paragraph};
    use crate::model::roles::is_link;
    use crate::model::text_env::ENV;
    use crate::surface::testing::{body, message};
    use accesskit::{Node, NodeId, Role};
    use zvariant::OwnedObjectPath;

    fn ask<B: serde::Serialize + zvariant::DynamicType>(
        n: NodeRef,
        member: &str,
        args: &B,
    ) -> Handled {
        handle(&ENV, n, member, &message(INTERFACE, member, args)).expect("call succeeds")
    }

    fn int(value: OwnedValue) -> i32 {
        i32::try_from(value).expect("an i32 property")
    }

    #[test]
    fn link_reports_its_span_uri_and_itself() {
        let tree = paragraph();
        let example = node(&tree, 3);
        let docs = node(&tree, 6);
        assert!(is_link(&example));
        assert_eq!(
            i16::try_from(property_of(&ENV, example, "NAnchors").unwrap()).unwrap(),
            1
        );
        assert_eq!(int(property_of(&ENV, example, "StartIndex").unwrap()), 6);
        assert_eq!(int(property_of(&ENV, example, "EndIndex").unwrap()), 13);
        assert_eq!(int(property_of(&ENV, docs, "StartIndex").unwrap()), 22);
        assert_eq!(int(property_of(&ENV, docs, "EndIndex").unwrap()), 31);
        assert_eq!(
            body::<String>(&ask(example, "GetURI", &(0,))),
            "https://example.org/"
        );
        assert_eq!(body::<String>(&ask(example, "GetURI", &(1,))), "");
        assert_eq!(body::<String>(&ask(docs, "GetURI", &(0,))), "");
        let object = body::<(String, OwnedObjectPath)>(&ask(example, "GetObject", &(0,)));
        assert_eq!(object.1.as_str(), "/org/a11y/atspi/accessible/7_3");
        assert_eq!(
            body::<(String, OwnedObjectPath)>(&ask(example, "GetObject", &(1,))),
            null_ref()
        );
        assert!(body::<bool>(&ask(example, "IsValid", &())));
        assert!(property_of(&ENV, node(&tree, 1), "StartIndex").is_err());
    }

    #[test]
    fn link_outside_text_has_no_span() {
        let mut root = Node::new(Role::Window);
        root.set_children(vec![NodeId(1)]);
        let mut link = Node::new(Role::Link);
        link.set_label("Home");
        link.set_url("https://example.org/");
        let tree = crate::model::fixtures::tree(vec![(0, root), (1, link)]);
        let link = node(&tree, 1);
        assert_eq!(int(property_of(&ENV, link, "StartIndex").unwrap()), -1);
        assert_eq!(int(property_of(&ENV, link, "EndIndex").unwrap()), -1);
    }
}
