//! `org.a11y.atspi.Document` on document roots (`Document`, `RootWebArea`,
//! `PdfRoot`).
//!
//! * `GetLocale`: the document's (inherited) `language`, "" when unknown.
//! * `GetAttributes` / `GetAttributeValue`: `Title` (the label), `URI` and
//!   `DocURL` (the `url`; Chromium and Gecko spell it differently and Orca
//!   reads both). Nothing else is known to AccessKit (no MIME type).
//! * `CurrentPageNumber` / `PageCount`: -1, AccessKit has no pages.
//! * `GetTextSelections` (at-spi2-core ≥ 2.52, `a((so)i(so)ib)`): every
//!   non-empty text selection of the document or of text nodes below it.
//!   A selection never spans nodes in AccessKit, so start and end objects
//!   are the same text node.
//! * `SetTextSelections`: applies the **first** selection as one
//!   `SetTextSelection` action (AccessKit keeps one selection per text node
//!   and a call routes one action); its start and end must be the same text
//!   node of this surface, else the reply is `false`.

use accesskit::{Action, ActionData, Role};
use accesskit_consumer::NodeRef;
use std::collections::BTreeMap;

use crate::model::actions::action_on;
use crate::model::error::CallError;
use crate::model::hyperlinks::{node_of, object_ref};
use crate::model::index::to_i32;
use crate::model::names;
use crate::model::paths::ObjectRef;
use crate::model::roles::is_document;
use crate::model::text_env::{model_at, Env, TextOn};
use crate::surface::{declare_interface, Acted};
#[cfg(test)]
use {crate::surface::reply::Handled, zvariant::OwnedValue};

pub(crate) const INTERFACE: &str = names::DOCUMENT;

declare_interface! {
    pub(crate) static DOCUMENT = INTERFACE, on text, tested through (handle_on, property_on) {
        fn GetLocale() -> (locale: String) = locale;
        fn GetAttributeValue(attribute_name: String) -> (value: String) = attribute_value;
        fn GetAttributes() -> (attributes: BTreeMap<String, String>) = document_attributes;
        fn GetTextSelections() -> (selections: Vec<WireSelection>) = get_text_selections;
        fn SetTextSelections(selections: Vec<WireSelection>) -> (success: bool)
            = set_text_selections, acting;
        property version: u32 = crate::surface::interface_version;
        property CurrentPageNumber: i32 = no_pages;
        property PageCount: i32 = no_pages;
    }
}

/// Upper bound on nodes visited looking for selections, so a huge document
/// cannot stall the 800 ms reply budget.
const SELECTION_SCAN_LIMIT: usize = 20_000;

/// One `(so)i(so)ib` text selection.
type WireSelection = (ObjectRef, i32, ObjectRef, i32, bool);

#[cfg(test)]
pub(crate) fn property_of(node: NodeRef, name: &str) -> Result<OwnedValue, CallError> {
    let env = crate::model::text_env::ENV;
    property_on(TextOn { env, node }, name)
}

/// AccessKit has no pages: -1, "unknown".
fn no_pages(on: TextOn) -> Result<i32, CallError> {
    require_document(&on.node)?;
    Ok(-1)
}

fn require_document(node: &NodeRef) -> Result<(), CallError> {
    if is_document(node) {
        Ok(())
    } else {
        Err(CallError::NotSupported(format!(
            "this {:?} node is not a document",
            node.role()
        )))
    }
}

/// The document attributes AccessKit can supply.
pub(crate) fn attributes(node: &NodeRef) -> BTreeMap<String, String> {
    let mut attributes = BTreeMap::new();
    if let Some(title) = node.data().label() {
        attributes.insert("Title".to_string(), title.to_string());
    }
    if let Some(url) = node.url() {
        attributes.insert("URI".to_string(), url.to_string());
        attributes.insert("DocURL".to_string(), url.to_string());
    }
    attributes
}

fn locale(on: TextOn) -> Result<String, CallError> {
    require_document(&on.node)?;
    Ok(on.node.language().unwrap_or_default().to_owned())
}

fn document_attributes(on: TextOn) -> Result<BTreeMap<String, String>, CallError> {
    require_document(&on.node)?;
    Ok(attributes(&on.node))
}

fn attribute_value(on: TextOn, name: String) -> Result<String, CallError> {
    require_document(&on.node)?;
    Ok(attributes(&on.node).remove(&name).unwrap_or_default())
}

fn get_text_selections(on: TextOn) -> Result<Vec<WireSelection>, CallError> {
    require_document(&on.node)?;
    Ok(text_selections(&on.env, &on.node))
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

/// Non-empty selections of `document` and the text nodes below it, in
/// tree order.
fn text_selections(env: &Env, document: &NodeRef) -> Vec<WireSelection> {
    let mut found = Vec::new();
    let mut stack = vec![*document];
    let mut visited = 0usize;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > SELECTION_SCAN_LIMIT {
            break;
        }
        if node.role() == Role::TextRun {
            continue;
        }
        if let Some(selection) = selection_of(env, &node) {
            found.push(selection);
        }
        let children: Vec<NodeRef> = node.children().collect();
        stack.extend(children.into_iter().rev());
    }
    found
}

fn selection_of(env: &Env, node: &NodeRef) -> Option<WireSelection> {
    if !node.supports_text_ranges() || node.data().text_selection().is_none() {
        return None;
    }
    let model = model_at(env, *node)?;
    let (start, end) = model.selection()?;
    let start_is_active = model.caret() == Some(start);
    let reference = object_ref(env, node);
    Some((
        reference.clone(),
        to_i32(start),
        reference,
        to_i32(end),
        start_is_active,
    ))
}

/// Sets the first selection when it lies within one text; answers whether
/// it was asked of the application.
fn set_text_selections(
    on: TextOn,
    selections: Vec<WireSelection>,
) -> Result<Acted<bool>, CallError> {
    require_document(&on.node)?;
    let (env, document) = (&on.env, &on.node);
    let action =
        selections
            .first()
            .and_then(|(start_obj, start, end_obj, end, start_is_active)| {
                if start_obj != end_obj {
                    return None;
                }
                let node = node_of(env, document, start_obj)?;
                if !node.supports_text_ranges() {
                    return None;
                }
                let model = model_at(env, node)?;
                let (anchor, focus) = if *start_is_active {
                    (*end, *start)
                } else {
                    (*start, *end)
                };
                let selection = model.selection_for(anchor, focus)?;
                Some(action_on(
                    &node,
                    Action::SetTextSelection,
                    Some(ActionData::SetTextSelection(selection)),
                ))
            });
    Ok(match action {
        Some(action) => Acted::with(true, action),
        None => Acted::without(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{chars, node, run, tree};
    use crate::model::text_env::ENV;
    use crate::surface::testing::{body, message};
    use accesskit::{Node, NodeId, TextPosition, TextSelection};
    use zvariant::OwnedObjectPath;

    fn web_page(selected: bool) -> accesskit_consumer::Tree {
        let mut root = Node::new(Role::RootWebArea);
        root.set_label("Example page");
        root.set_url("https://example.org/page");
        root.set_language("en-GB");
        root.set_children(vec![NodeId(1), NodeId(3)]);
        let mut heading = Node::new(Role::Label);
        heading.set_children(vec![NodeId(2)]);
        let mut input = Node::new(Role::TextInput);
        input.set_children(vec![NodeId(4)]);
        if selected {
            // Focus before anchor: the start is the active end.
            input.set_text_selection(TextSelection {
                anchor: TextPosition {
                    node: NodeId(4),
                    character_index: 5,
                },
                focus: TextPosition {
                    node: NodeId(4),
                    character_index: 1,
                },
            });
        }
        tree(vec![
            (0, root),
            (1, heading),
            (2, run(&chars("Welcome"), &[0])),
            (3, input),
            (4, run(&chars("naïve text"), &[0, 6])),
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
    fn locale_attributes_and_pages() {
        let tree = web_page(false);
        let doc = node(&tree, 0);
        assert!(is_document(&doc));
        assert!(!is_document(&node(&tree, 1)));
        assert_eq!(body::<String>(&ask(doc, "GetLocale", &())), "en-GB");
        let attributes = body::<BTreeMap<String, String>>(&ask(doc, "GetAttributes", &()));
        assert_eq!(
            attributes.get("Title").map(String::as_str),
            Some("Example page")
        );
        assert_eq!(
            attributes.get("URI").map(String::as_str),
            Some("https://example.org/page")
        );
        assert_eq!(
            attributes.get("DocURL").map(String::as_str),
            Some("https://example.org/page")
        );
        assert_eq!(
            body::<String>(&ask(doc, "GetAttributeValue", &("Title",))),
            "Example page"
        );
        assert_eq!(
            body::<String>(&ask(doc, "GetAttributeValue", &("MimeType",))),
            ""
        );
        assert_eq!(
            i32::try_from(property_of(doc, "PageCount").unwrap()).unwrap(),
            -1
        );
        assert_eq!(
            i32::try_from(property_of(doc, "CurrentPageNumber").unwrap()).unwrap(),
            -1
        );
        assert!(body::<Vec<WireSelection>>(&ask(doc, "GetTextSelections", &())).is_empty());
    }

    #[test]
    fn text_selections_are_found_below_the_document() {
        let tree = web_page(true);
        let doc = node(&tree, 0);
        let selections = body::<Vec<WireSelection>>(&ask(doc, "GetTextSelections", &()));
        assert_eq!(selections.len(), 1);
        let (start_obj, start, end_obj, end, start_is_active) = &selections[0];
        assert_eq!(start_obj.1.as_str(), "/org/a11y/atspi/accessible/7_3");
        assert_eq!(end_obj, start_obj);
        assert_eq!((*start, *end, *start_is_active), (1, 5, true));
    }

    #[test]
    fn set_text_selections_applies_the_first_one() {
        let tree = web_page(false);
        let doc = node(&tree, 0);
        let input = (
            ":1.42".to_string(),
            OwnedObjectPath::try_from("/org/a11y/atspi/accessible/7_3").unwrap(),
        );
        let heading = (
            "".to_string(),
            OwnedObjectPath::try_from("/org/a11y/atspi/accessible/7_1").unwrap(),
        );
        let h = ask(
            doc,
            "SetTextSelections",
            &(vec![(input.clone(), 2, input.clone(), 6, false)],),
        );
        assert!(body::<bool>(&h));
        let expected = TextSelection {
            anchor: TextPosition {
                node: NodeId(4),
                character_index: 2,
            },
            focus: TextPosition {
                node: NodeId(4),
                character_index: 6,
            },
        };
        let action = h.action.expect("selection action");
        assert_eq!(
            (action.action, action.target_node),
            (Action::SetTextSelection, NodeId(3))
        );
        assert_eq!(action.data, Some(ActionData::SetTextSelection(expected)));
        // Across two nodes, another surface, or a bad offset: refused.
        let across = (vec![(input.clone(), 0, heading.clone(), 2, false)],);
        assert!(!body::<bool>(&ask(doc, "SetTextSelections", &across)));
        let other_surface = (
            "".to_string(),
            OwnedObjectPath::try_from("/org/a11y/atspi/accessible/8_3").unwrap(),
        );
        let elsewhere = (vec![(other_surface.clone(), 0, other_surface, 2, false)],);
        assert!(!body::<bool>(&ask(doc, "SetTextSelections", &elsewhere)));
        assert!(!body::<bool>(&ask(
            doc,
            "SetTextSelections",
            &(vec![(input.clone(), 0, input, 99, false)],)
        )));
        let none: Vec<WireSelection> = Vec::new();
        assert!(!body::<bool>(&ask(doc, "SetTextSelections", &(none,))));
    }
}
