//! `org.a11y.atspi.EditableText`: edits become `SetValue` action requests.
//!
//! AccessKit can set a text field's whole value (`Action::SetValue` with
//! `ActionData::Value`) but has no insert/delete primitive, and one call may
//! route only one action. So InsertText and DeleteText compute the new
//! full string from the replica's current text and send it as one
//! `SetValue`: the application sees the same request a user's "replace
//! contents" would produce. The reply (`true`) does not wait for the
//! application; the edit shows up when it pushes its next update.
//!
//! AccessKit has no clipboard, so CopyText, CutText and PasteText answer
//! `NotSupported` instead of pretending (cutting without copying would lose
//! the user's text). Password fields refuse Insert/Delete: their exposed
//! text is masked, so a string built from it would overwrite the password
//! with bullets; SetTextContents still works there.
//!
//! Advertised on text inputs that are neither read-only nor disabled.

use accesskit::{Action, ActionData};
use accesskit_consumer::NodeRef;

use crate::model::actions::action_on;
use crate::model::error::CallError;
use crate::model::names;
use crate::model::text_env::{is_editable, text_of};
use crate::surface::{declare_interface, Acted};

declare_interface! {
    pub(crate) static EDITABLE_TEXT = names::EDITABLE_TEXT, on node_ref {
        fn SetTextContents(new_contents: String) -> (success: bool) = set_text_contents, acting;
        fn InsertText(position: i32, text: String, length: i32) -> (success: bool)
            = insert_text, acting;
        fn CopyText(start_pos: i32, end_pos: i32) -> () = copy_text;
        fn CutText(start_pos: i32, end_pos: i32) -> (success: bool) = cut_text;
        fn DeleteText(start_pos: i32, end_pos: i32) -> (success: bool) = delete_text, acting;
        fn PasteText(position: i32) -> (success: bool) = paste_text;
        property version: u32 = crate::surface::interface_version;
    }
}

/// Handlers are reached only for editable nodes; called directly they
/// refuse anything else.
fn editable(node: &NodeRef) -> Result<(), CallError> {
    if is_editable(node) {
        return Ok(());
    }
    Err(CallError::NotSupported(format!(
        "this {:?} node is not an editable text input",
        node.role()
    )))
}

fn set_text_contents(node: NodeRef, contents: String) -> Result<Acted<bool>, CallError> {
    editable(&node)?;
    Ok(set_value(&node, contents))
}

fn insert_text(
    node: NodeRef,
    position: i32,
    text: String,
    length: i32,
) -> Result<Acted<bool>, CallError> {
    editable(&node)?;
    refuse_masked(&node, "InsertText")?;
    let current = text_of(&node);
    let position = non_negative(position, "position")?;
    let new = inserted(&current, position, prefix_bytes(&text, length));
    Ok(set_value(&node, new))
}

fn delete_text(node: NodeRef, start: i32, end: i32) -> Result<Acted<bool>, CallError> {
    editable(&node)?;
    refuse_masked(&node, "DeleteText")?;
    let current = text_of(&node);
    let new = deleted(&current, start, end);
    if new == current {
        // Nothing to delete: no request for the application.
        return Ok(Acted::without(true));
    }
    Ok(set_value(&node, new))
}

fn copy_text(node: NodeRef, _start: i32, _end: i32) -> Result<(), CallError> {
    editable(&node)?;
    Err(no_clipboard("CopyText"))
}

fn cut_text(node: NodeRef, _start: i32, _end: i32) -> Result<bool, CallError> {
    editable(&node)?;
    Err(no_clipboard("CutText"))
}

fn paste_text(node: NodeRef, _position: i32) -> Result<bool, CallError> {
    editable(&node)?;
    Err(no_clipboard("PasteText"))
}

fn no_clipboard(member: &str) -> CallError {
    CallError::NotSupported(format!(
        "{member} needs the system clipboard, which AccessKit applications do not expose \
         to assistive technologies; use GetText and SetTextContents instead"
    ))
}

fn set_value(node: &NodeRef, value: String) -> Acted<bool> {
    let action = action_on(
        node,
        Action::SetValue,
        Some(ActionData::Value(value.into_boxed_str())),
    );
    Acted::with(true, action)
}

fn refuse_masked(node: &NodeRef, member: &str) -> Result<(), CallError> {
    if node.is_password_input() {
        return Err(CallError::NotSupported(format!(
            "{member} is not available on password fields: their text is masked; \
             use SetTextContents to replace the whole password"
        )));
    }
    Ok(())
}

fn non_negative(value: i32, what: &str) -> Result<usize, CallError> {
    usize::try_from(value)
        .map_err(|_| CallError::InvalidArgs(format!("{what} {value} must not be negative")))
}

/// The first `length` bytes of `text`, cut back to a character boundary;
/// all of it when `length` is negative or at least its size (the XML's
/// rule for InsertText's byte count).
fn prefix_bytes(text: &str, length: i32) -> &str {
    let Ok(length) = usize::try_from(length) else {
        return text;
    };
    if length >= text.len() {
        return text;
    }
    let mut end = length;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// Byte index of code-point `offset`, clamped to the end.
fn byte_index(text: &str, offset: usize) -> usize {
    text.char_indices()
        .nth(offset)
        .map_or(text.len(), |(index, _)| index)
}

fn inserted(current: &str, position: usize, text: &str) -> String {
    let at = byte_index(current, position);
    let mut result = String::with_capacity(current.len() + text.len());
    result.push_str(current.get(..at).unwrap_or(current));
    result.push_str(text);
    result.push_str(current.get(at..).unwrap_or_default());
    result
}

/// GtkEditable's rule: a negative end means the end of the text, offsets
/// are clamped, and a start past the end deletes nothing.
fn deleted(current: &str, start: i32, end: i32) -> String {
    let length = current.chars().count();
    let end = usize::try_from(end).map_or(length, |e| e.min(length));
    let start = usize::try_from(start).unwrap_or(0).min(end);
    let (from, to) = (byte_index(current, start), byte_index(current, end));
    let mut result = String::with_capacity(current.len());
    result.push_str(current.get(..from).unwrap_or(current));
    result.push_str(current.get(to..).unwrap_or_default());
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{chars, node, run, tree};
    use accesskit::{ActionRequest, Node, NodeId, Role, TreeId};

    fn fields() -> accesskit_consumer::Tree {
        let mut root = Node::new(Role::Window);
        root.set_children(vec![NodeId(1), NodeId(3), NodeId(5), NodeId(6)]);
        let mut input = Node::new(Role::TextInput);
        input.set_children(vec![NodeId(2)]);
        let mut password = Node::new(Role::PasswordInput);
        password.set_children(vec![NodeId(4)]);
        let mut read_only = Node::new(Role::TextInput);
        read_only.set_read_only();
        read_only.set_value("fixed");
        let mut label = Node::new(Role::Label);
        label.set_value("static");
        tree(vec![
            (0, root),
            (1, input),
            (2, run(&chars("héllo 👍 end"), &[0, 6, 8])),
            (3, password),
            (4, run(&chars("pw"), &[])),
            (5, read_only),
            (6, label),
        ])
    }

    fn value_sent(acted: &Acted<bool>) -> Option<String> {
        match &acted.action {
            Some(ActionRequest {
                action: Action::SetValue,
                target_tree: TreeId::ROOT,
                data: Some(ActionData::Value(value)),
                ..
            }) => Some(value.to_string()),
            _ => None,
        }
    }

    fn sent(edit: Result<Acted<bool>, CallError>) -> Option<String> {
        let acted = edit.expect("edit accepted");
        assert!(acted.answer);
        value_sent(&acted)
    }

    #[test]
    fn advertised_on_editable_inputs_only() {
        let tree = fields();
        assert!(is_editable(&node(&tree, 1)));
        assert!(is_editable(&node(&tree, 3)));
        assert!(!is_editable(&node(&tree, 5)));
        assert!(!is_editable(&node(&tree, 6)));
        assert!(matches!(
            set_text_contents(node(&tree, 6), "x".into()),
            Err(CallError::NotSupported(_))
        ));
    }

    #[test]
    fn set_text_contents_sends_set_value() {
        let tree = fields();
        let handled = set_text_contents(node(&tree, 1), "new ✓".into()).unwrap();
        assert_eq!(
            handled.action.as_ref().map(|a| a.target_node),
            Some(NodeId(1))
        );
        assert_eq!(value_sent(&handled).as_deref(), Some("new ✓"));
        assert_eq!(
            sent(set_text_contents(node(&tree, 3), "secret".into())).as_deref(),
            Some("secret")
        );
    }

    #[test]
    fn insert_text_composes_the_new_value_in_code_points() {
        let tree = fields();
        let n = node(&tree, 1);
        assert_eq!(
            sent(insert_text(n, 0, ">".into(), -1)).as_deref(),
            Some(">héllo 👍 end")
        );
        assert_eq!(
            sent(insert_text(n, 7, "🎉".into(), 4)).as_deref(),
            Some("héllo 👍🎉 end")
        );
        // Past the end: appended. Byte length cuts back to a character boundary.
        assert_eq!(
            sent(insert_text(n, 99, "äb".into(), 1)).as_deref(),
            Some("héllo 👍 end")
        );
        assert_eq!(
            sent(insert_text(n, 99, "äb".into(), 2)).as_deref(),
            Some("héllo 👍 endä")
        );
        assert!(matches!(
            insert_text(n, -1, "x".into(), -1),
            Err(CallError::InvalidArgs(_))
        ));
    }

    #[test]
    fn delete_text_follows_gtk_editable_rules() {
        let tree = fields();
        let n = node(&tree, 1);
        assert_eq!(sent(delete_text(n, 1, 2)).as_deref(), Some("hllo 👍 end"));
        assert_eq!(sent(delete_text(n, 6, 8)).as_deref(), Some("héllo end"));
        assert_eq!(sent(delete_text(n, 6, -1)).as_deref(), Some("héllo "));
        assert_eq!(sent(delete_text(n, -5, 2)).as_deref(), Some("llo 👍 end"));
        assert_eq!(sent(delete_text(n, 5, 3)), None);
        assert_eq!(sent(delete_text(n, 40, 50)), None);
    }

    #[test]
    fn clipboard_and_masked_edits_are_not_supported() {
        let tree = fields();
        let n = node(&tree, 1);
        assert!(matches!(
            copy_text(n, 0, 2),
            Err(CallError::NotSupported(_))
        ));
        assert!(matches!(cut_text(n, 0, 2), Err(CallError::NotSupported(_))));
        assert!(matches!(paste_text(n, 0), Err(CallError::NotSupported(_))));
        let password = node(&tree, 3);
        assert!(matches!(
            insert_text(password, 0, "x".into(), -1),
            Err(CallError::NotSupported(_))
        ));
        assert!(matches!(
            delete_text(password, 0, 1),
            Err(CallError::NotSupported(_))
        ));
    }
}
