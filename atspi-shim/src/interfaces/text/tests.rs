//! Text answers on small AccessKit trees, through `handle` with real
//! zbus messages. Expected offsets are code points.

use super::*;
use accesskit::{Node, NodeId, Role, ScrollHint, TextPosition, TreeId};
use accesskit_consumer::Tree;
use newton_push_protocol::Geometry;
use serde::Serialize;
use zvariant::DynamicType;

use crate::model::fixtures::{chars, multilingual, node, run, tree, GEOMETRY};
use crate::model::text_env::{has_text, text_of, ENV};
use crate::surface::testing::{body, message};

fn ask<B: Serialize + DynamicType>(node: NodeRef, member: &str, args: &B) -> Handled {
    handle(&ENV, node, member, &message(INTERFACE, member, args)).expect("call succeeds")
}

fn ask_err<B: Serialize + DynamicType>(node: NodeRef, member: &str, args: &B) -> CallError {
    match handle(&ENV, node, member, &message(INTERFACE, member, args)) {
        Ok(_) => panic!("{member} should fail"),
        Err(e) => e,
    }
}

fn at(node: NodeRef, member: &str, offset: i32, kind: u32) -> (String, i32, i32) {
    body(&ask(node, member, &(offset, kind)))
}

fn s(text: &str, start: i32, end: i32) -> (String, i32, i32) {
    (text.to_string(), start, end)
}

const T: &str = "héllo wörld\ne\u{301}moji 👍🏽 end";

#[test]
fn counts_code_points_and_reads_text() {
    let tree = multilingual();
    let n = node(&tree, 0);
    assert_eq!(text_of(&n), T);
    assert_eq!(
        i32::try_from(property_of(n, "CharacterCount").unwrap()).unwrap(),
        25
    );
    assert_eq!(body::<String>(&ask(n, "GetText", &(0, -1))), T);
    assert_eq!(body::<String>(&ask(n, "GetText", &(6, 11))), "wörld");
    assert_eq!(body::<String>(&ask(n, "GetText", &(20, 100))), "🏽 end");
    assert_eq!(body::<String>(&ask(n, "GetText", &(11, 6))), "");
    assert_eq!(body::<String>(&ask(n, "GetText", &(-1, 3))), "");
    assert_eq!(body::<String>(&ask(n, "GetText", &(25, -1))), "");
    assert_eq!(
        body::<String>(&ask(n, "GetText", &(i32::MAX, i32::MIN))),
        ""
    );
}

#[test]
fn character_at_offset_is_the_code_point() {
    let tree = multilingual();
    let n = node(&tree, 0);
    let ch = |o: i32| body::<i32>(&ask(n, "GetCharacterAtOffset", &(o,)));
    assert_eq!(ch(0), 'h' as i32);
    assert_eq!(ch(1), 'é' as i32);
    assert_eq!(ch(13), 0x301);
    assert_eq!(ch(19), 0x1F44D);
    assert_eq!(ch(20), 0x1F3FD);
    assert_eq!(ch(24), 'd' as i32);
    assert_eq!(ch(25), 0);
    assert_eq!(ch(-5), 0);
}

#[test]
fn char_boundary() {
    let tree = multilingual();
    let n = node(&tree, 0);
    assert_eq!(at(n, "GetTextAtOffset", 0, 0), s("h", 0, 1));
    assert_eq!(at(n, "GetTextAtOffset", 1, 0), s("é", 1, 2));
    assert_eq!(at(n, "GetTextAtOffset", 19, 0), s("👍", 19, 20));
    assert_eq!(at(n, "GetTextAtOffset", 25, 0), s("", 25, 25));
    assert_eq!(at(n, "GetTextAtOffset", 26, 0), s("", -1, -1));
    assert_eq!(at(n, "GetTextAtOffset", -1, 0), s("", -1, -1));
    assert_eq!(at(n, "GetTextBeforeOffset", 0, 0), s("", 0, 0));
    assert_eq!(at(n, "GetTextBeforeOffset", 2, 0), s("é", 1, 2));
    assert_eq!(at(n, "GetTextBeforeOffset", 25, 0), s("d", 24, 25));
    assert_eq!(at(n, "GetTextAfterOffset", 0, 0), s("é", 1, 2));
    assert_eq!(at(n, "GetTextAfterOffset", 23, 0), s("d", 24, 25));
    assert_eq!(at(n, "GetTextAfterOffset", 24, 0), s("", 25, 25));
    assert_eq!(at(n, "GetTextAfterOffset", 25, 0), s("", 25, 25));
    assert_eq!(at(n, "GetStringAtOffset", 19, 0), s("👍", 19, 20));
}

#[test]
fn word_start_boundary_uses_producer_word_starts() {
    let tree = multilingual();
    let n = node(&tree, 0);
    assert_eq!(at(n, "GetTextAtOffset", 0, 1), s("héllo ", 0, 6));
    assert_eq!(at(n, "GetTextAtOffset", 5, 1), s("héllo ", 0, 6));
    assert_eq!(at(n, "GetTextAtOffset", 7, 1), s("wörld\n", 6, 12));
    assert_eq!(at(n, "GetTextAtOffset", 12, 1), s("e\u{301}moji ", 12, 19));
    assert_eq!(at(n, "GetTextAtOffset", 20, 1), s("👍🏽 ", 19, 22));
    assert_eq!(at(n, "GetTextAtOffset", 25, 1), s("end", 22, 25));
    assert_eq!(at(n, "GetTextAtOffset", 26, 1), s("", -1, -1));
    assert_eq!(at(n, "GetTextBeforeOffset", 3, 1), s("", 0, 0));
    assert_eq!(at(n, "GetTextBeforeOffset", 7, 1), s("héllo ", 0, 6));
    assert_eq!(at(n, "GetTextBeforeOffset", 25, 1), s("👍🏽 ", 19, 22));
    assert_eq!(at(n, "GetTextAfterOffset", 0, 1), s("wörld\n", 6, 12));
    assert_eq!(at(n, "GetTextAfterOffset", 20, 1), s("end", 22, 25));
    assert_eq!(at(n, "GetTextAfterOffset", 23, 1), s("", 25, 25));
    assert_eq!(at(n, "GetStringAtOffset", 8, 1), s("wörld\n", 6, 12));
    assert_eq!(at(n, "GetStringAtOffset", 25, 1), s("end", 22, 25));
}

#[test]
fn word_end_boundary_excludes_trailing_whitespace() {
    let tree = multilingual();
    let n = node(&tree, 0);
    assert_eq!(at(n, "GetTextAtOffset", 3, 2), s("héllo", 0, 5));
    assert_eq!(at(n, "GetTextAtOffset", 5, 2), s(" wörld", 5, 11));
    assert_eq!(at(n, "GetTextAtOffset", 11, 2), s("\ne\u{301}moji", 11, 18));
    assert_eq!(at(n, "GetTextAtOffset", 25, 2), s("", 25, 25));
    assert_eq!(at(n, "GetTextBeforeOffset", 7, 2), s("héllo", 0, 5));
    assert_eq!(at(n, "GetTextBeforeOffset", 2, 2), s("", 0, 0));
    assert_eq!(
        at(n, "GetTextAfterOffset", 7, 2),
        s("\ne\u{301}moji", 11, 18)
    );
    assert_eq!(at(n, "GetTextAfterOffset", 23, 2), s("", 25, 25));
}

#[test]
fn line_and_paragraph_boundaries() {
    let tree = multilingual();
    let n = node(&tree, 0);
    assert_eq!(at(n, "GetTextAtOffset", 0, 5), s("héllo wörld\n", 0, 12));
    assert_eq!(at(n, "GetTextAtOffset", 11, 5), s("héllo wörld\n", 0, 12));
    assert_eq!(
        at(n, "GetTextAtOffset", 12, 5),
        s("e\u{301}moji 👍🏽 end", 12, 25)
    );
    assert_eq!(
        at(n, "GetTextAtOffset", 25, 5),
        s("e\u{301}moji 👍🏽 end", 12, 25)
    );
    assert_eq!(
        at(n, "GetTextBeforeOffset", 13, 5),
        s("héllo wörld\n", 0, 12)
    );
    assert_eq!(at(n, "GetTextBeforeOffset", 3, 5), s("", 0, 0));
    assert_eq!(
        at(n, "GetTextAfterOffset", 3, 5),
        s("e\u{301}moji 👍🏽 end", 12, 25)
    );
    assert_eq!(at(n, "GetTextAfterOffset", 13, 5), s("", 25, 25));
    assert_eq!(at(n, "GetTextAtOffset", 3, 6), s("héllo wörld", 0, 11));
    assert_eq!(
        at(n, "GetTextAtOffset", 11, 6),
        s("\ne\u{301}moji 👍🏽 end", 11, 25)
    );
    assert_eq!(at(n, "GetTextAtOffset", 25, 6), s("", 25, 25));
    assert_eq!(at(n, "GetStringAtOffset", 4, 3), s("héllo wörld\n", 0, 12));
    assert_eq!(at(n, "GetStringAtOffset", 4, 4), s("héllo wörld\n", 0, 12));
    assert_eq!(
        at(n, "GetStringAtOffset", 25, 4),
        s("e\u{301}moji 👍🏽 end", 12, 25)
    );
    // Sentences without punctuation end at paragraph breaks.
    assert_eq!(at(n, "GetStringAtOffset", 4, 2), s("héllo wörld\n", 0, 12));
    assert_eq!(at(n, "GetTextAtOffset", 4, 4), s("héllo wörld", 0, 11));
}

#[test]
fn unknown_boundaries_are_invalid_args() {
    let tree = multilingual();
    let n = node(&tree, 0);
    for member in [
        "GetTextAtOffset",
        "GetTextBeforeOffset",
        "GetTextAfterOffset",
    ] {
        assert!(matches!(
            ask_err(n, member, &(0, 7u32)),
            CallError::InvalidArgs(_)
        ));
        assert!(matches!(
            ask_err(n, member, &(0, u32::MAX)),
            CallError::InvalidArgs(_)
        ));
    }
    let error = ask_err(n, "GetStringAtOffset", &(0, 5u32));
    assert!(matches!(error, CallError::InvalidArgs(_)));
    let named = "invalid argument \u{201c}granularity\u{201d}: 5 is outside the text granularities";
    assert!(error.to_string().starts_with(named), "{error}");
    // Wrong signature.
    assert!(matches!(
        ask_err(n, "GetTextAtOffset", &("x",)),
        CallError::InvalidArgs(_)
    ));
    assert!(matches!(
        ask_err(n, "NoSuchMethod", &()),
        CallError::UnknownMethod { .. }
    ));
}

/// "The quick brown fox jumps over. Then": a soft-wrapped line (runs
/// linked by next_on_line, then a run starting a new line) and no
/// producer word starts.
fn wrapped() -> Tree {
    let mut root = Node::new(Role::Document);
    root.set_children(vec![NodeId(1), NodeId(2), NodeId(3)]);
    let mut a = run(&chars("The quick "), &[]);
    a.set_next_on_line(NodeId(2));
    let mut b = run(&chars("brown fox "), &[]);
    b.set_previous_on_line(NodeId(1));
    let c = run(&chars("jumps over. Then"), &[]);
    tree(vec![(0, root), (1, a), (2, b), (3, c)])
}

#[test]
fn soft_wrapped_lines_follow_next_on_line() {
    let tree = wrapped();
    let n = node(&tree, 0);
    assert_eq!(
        at(n, "GetTextAtOffset", 12, 5),
        s("The quick brown fox ", 0, 20)
    );
    assert_eq!(
        at(n, "GetTextAtOffset", 20, 5),
        s("jumps over. Then", 20, 36)
    );
    assert_eq!(
        at(n, "GetTextAtOffset", 36, 5),
        s("jumps over. Then", 20, 36)
    );
    assert_eq!(
        at(n, "GetTextAtOffset", 12, 6),
        s("The quick brown fox ", 0, 20)
    );
    assert_eq!(
        at(n, "GetStringAtOffset", 12, 4),
        s("The quick brown fox jumps over. Then", 0, 36)
    );
}

#[test]
fn words_fall_back_to_whitespace_without_producer_word_starts() {
    let tree = wrapped();
    let n = node(&tree, 0);
    assert_eq!(at(n, "GetTextAtOffset", 5, 1), s("quick ", 4, 10));
    assert_eq!(at(n, "GetTextAtOffset", 19, 1), s("fox ", 16, 20));
    assert_eq!(at(n, "GetTextAtOffset", 30, 1), s("over. ", 26, 32));
    assert_eq!(at(n, "GetTextAfterOffset", 30, 1), s("Then", 32, 36));
}

#[test]
fn sentences_are_approximated_from_punctuation() {
    let tree = wrapped();
    let n = node(&tree, 0);
    assert_eq!(
        at(n, "GetTextAtOffset", 5, 3),
        s("The quick brown fox jumps over. ", 0, 32)
    );
    assert_eq!(at(n, "GetTextAtOffset", 33, 3), s("Then", 32, 36));
    assert_eq!(at(n, "GetTextAfterOffset", 5, 3), s("Then", 32, 36));
    assert_eq!(
        at(n, "GetTextBeforeOffset", 33, 3),
        s("The quick brown fox jumps over. ", 0, 32)
    );
    assert_eq!(
        at(n, "GetTextAtOffset", 5, 4),
        s("The quick brown fox jumps over.", 0, 31)
    );
    assert_eq!(at(n, "GetTextAtOffset", 33, 4), s(" Then", 31, 36));
    assert_eq!(at(n, "GetStringAtOffset", 33, 2), s("Then", 32, 36));
}

#[test]
fn plain_label_without_runs_has_text() {
    let mut root = Node::new(Role::Window);
    root.set_children(vec![NodeId(1), NodeId(2), NodeId(3)]);
    let mut label = Node::new(Role::Label);
    label.set_value("Hi there. How are you? Fine…\nNext");
    let button = Node::new(Role::Button);
    let mut named = Node::new(Role::Label);
    named.set_label("Only a name");
    let tree = tree(vec![(0, root), (1, label), (2, button), (3, named)]);
    let n = node(&tree, 1);
    assert!(has_text(&n, TextLayout::Inline));
    assert!(!has_text(&node(&tree, 2), TextLayout::Inline));
    assert_eq!(text_of(&node(&tree, 3)), "Only a name");
    assert_eq!(
        i32::try_from(property_of(n, "CaretOffset").unwrap()).unwrap(),
        -1
    );
    assert_eq!(at(n, "GetTextAtOffset", 12, 3), s("How are you? ", 10, 23));
    assert_eq!(at(n, "GetTextAtOffset", 24, 3), s("Fine…\n", 23, 29));
    assert_eq!(at(n, "GetTextAtOffset", 30, 3), s("Next", 29, 33));
    assert_eq!(at(n, "GetTextAtOffset", 24, 4), s(" Fine…", 22, 28));
    assert_eq!(at(n, "GetTextAtOffset", 30, 5), s("Next", 29, 33));
    assert_eq!(at(n, "GetTextAtOffset", 3, 1), s("there. ", 3, 10));
    // No runs: no caret to set, no geometry.
    assert!(!body::<bool>(&ask(n, "SetCaretOffset", &(3,))));
    assert_eq!(
        body::<(i32, i32, i32, i32)>(&ask(n, "GetCharacterExtents", &(0, 0u32))),
        (0, 0, 0, 0)
    );
    assert_eq!(body::<i32>(&ask(n, "GetOffsetAtPoint", &(5, 5, 0u32))), -1);
}

#[test]
fn password_text_is_masked() {
    let mut root = Node::new(Role::Window);
    root.set_children(vec![NodeId(1), NodeId(3), NodeId(5)]);
    let mut password = Node::new(Role::PasswordInput);
    password.set_children(vec![NodeId(2)]);
    let mut premasked = Node::new(Role::PasswordInput);
    premasked.set_children(vec![NodeId(4)]);
    let mut plain = Node::new(Role::PasswordInput);
    plain.set_value("hunter2");
    let tree = tree(vec![
        (0, root),
        (1, password),
        (2, run(&chars("s3cret pw"), &[0, 7])),
        (3, premasked),
        (4, run(&chars("•••"), &[])),
        (5, plain),
    ]);
    let n = node(&tree, 1);
    assert_eq!(text_of(&n), "•••••••••");
    assert_eq!(at(n, "GetTextAtOffset", 8, 1), s("•••••••••", 0, 9));
    assert_eq!(
        body::<i32>(&ask(n, "GetCharacterAtOffset", &(0,))),
        '•' as i32
    );
    assert_eq!(text_of(&node(&tree, 3)), "•••");
    assert_eq!(text_of(&node(&tree, 5)), "•••••••");
}

#[test]
fn caret_and_selection_map_accesskit_positions_to_code_points() {
    let tree = multilingual();
    let n = node(&tree, 0);
    assert_eq!(
        i32::try_from(property_of(n, "CaretOffset").unwrap()).unwrap(),
        21
    );
    assert_eq!(body::<i32>(&ask(n, "GetNSelections", &())), 1);
    assert_eq!(body::<(i32, i32)>(&ask(n, "GetSelection", &(0,))), (14, 21));
    assert_eq!(body::<(i32, i32)>(&ask(n, "GetSelection", &(1,))), (-1, -1));
    assert!(matches!(
        property_of(n, "Nope"),
        Err(CallError::UnknownProperty(_))
    ));
}

fn selection_action(anchor: (u64, usize), focus: (u64, usize)) -> ActionRequest {
    ActionRequest {
        action: Action::SetTextSelection,
        target_tree: TreeId::ROOT,
        target_node: NodeId(0),
        data: Some(ActionData::SetTextSelection(TextSelection {
            anchor: TextPosition {
                node: NodeId(anchor.0),
                character_index: anchor.1,
            },
            focus: TextPosition {
                node: NodeId(focus.0),
                character_index: focus.1,
            },
        })),
    }
}

#[test]
fn set_caret_offset_routes_a_degenerate_selection() {
    let tree = multilingual();
    let n = node(&tree, 0);
    let set = |o: i32| ask(n, "SetCaretOffset", &(o,));
    let h = set(3);
    assert!(body::<bool>(&h));
    assert_eq!(h.action, Some(selection_action((1, 3), (1, 3))));
    // Inside the two-code-point emoji: the character that contains it.
    assert_eq!(set(20).action, Some(selection_action((2, 6), (2, 6))));
    // A run boundary is the start of the following run.
    assert_eq!(set(12).action, Some(selection_action((2, 0), (2, 0))));
    assert_eq!(set(25).action, Some(selection_action((2, 11), (2, 11))));
    for bad in [26, -1, i32::MAX, i32::MIN] {
        let h = set(bad);
        assert!(!body::<bool>(&h));
        assert_eq!(h.action, None);
    }
}

#[test]
fn selection_setters_route_actions() {
    let tree = multilingual();
    let n = node(&tree, 0);
    let h = ask(n, "SetSelection", &(0, 2, 19));
    assert!(body::<bool>(&h));
    assert_eq!(h.action, Some(selection_action((1, 2), (2, 6))));
    assert!(!body::<bool>(&ask(n, "SetSelection", &(1, 2, 19))));
    assert!(!body::<bool>(&ask(n, "SetSelection", &(0, 2, 99))));
    // One selection exists already: AddSelection refuses.
    assert!(!body::<bool>(&ask(n, "AddSelection", &(0, 1))));
    // RemoveSelection collapses to the caret (the focus, after the emoji).
    let h = ask(n, "RemoveSelection", &(0,));
    assert!(body::<bool>(&h));
    assert_eq!(h.action, Some(selection_action((2, 7), (2, 7))));
    assert!(!body::<bool>(&ask(n, "RemoveSelection", &(3,))));
}

#[test]
fn attributes_come_in_runs_with_defaults() {
    let tree = multilingual();
    let n = node(&tree, 0);
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let defaults = map(&[
        ("direction", "ltr"),
        ("family-name", "Noto Sans"),
        ("language", "fr"),
        ("size", "12"),
    ]);
    assert_eq!(
        body::<BTreeMap<String, String>>(&ask(n, "GetDefaultAttributes", &())),
        defaults
    );
    assert_eq!(
        body::<BTreeMap<String, String>>(&ask(n, "GetDefaultAttributeSet", &())),
        defaults
    );
    type Run = (BTreeMap<String, String>, i32, i32);
    assert_eq!(
        body::<Run>(&ask(n, "GetAttributes", &(3,))),
        (map(&[("weight", "700")]), 0, 12)
    );
    assert_eq!(
        body::<Run>(&ask(n, "GetAttributes", &(20,))),
        (map(&[("invalid", "spelling")]), 12, 25)
    );
    assert_eq!(
        body::<Run>(&ask(n, "GetAttributes", &(25,))),
        (map(&[("invalid", "spelling")]), 12, 25)
    );
    assert_eq!(
        body::<Run>(&ask(n, "GetAttributes", &(26,))),
        (map(&[]), -1, -1)
    );
    // -1 is the caret (21, in the second run).
    assert_eq!(
        body::<Run>(&ask(n, "GetAttributes", &(-1,))),
        (map(&[("invalid", "spelling")]), 12, 25)
    );
    let mut with_defaults = defaults.clone();
    with_defaults.insert("weight".into(), "700".into());
    assert_eq!(
        body::<Run>(&ask(n, "GetAttributeRun", &(0, true))),
        (with_defaults, 0, 12)
    );
    assert_eq!(
        body::<String>(&ask(n, "GetAttributeValue", &(20, "invalid"))),
        "spelling"
    );
    assert_eq!(
        body::<String>(&ask(n, "GetAttributeValue", &(3, "family-name"))),
        "Noto Sans"
    );
    assert_eq!(
        body::<String>(&ask(n, "GetAttributeValue", &(3, "invalid"))),
        ""
    );
}

#[test]
fn extents_convert_to_screen_and_window() {
    let tree = multilingual();
    let n = node(&tree, 0);
    type Xywh = (i32, i32, i32, i32);
    assert_eq!(
        body::<Xywh>(&ask(n, "GetCharacterExtents", &(1, 1u32))),
        (20, 20, 10, 20)
    );
    assert_eq!(
        body::<Xywh>(&ask(n, "GetCharacterExtents", &(1, 0u32))),
        (120, 70, 10, 20)
    );
    assert_eq!(
        body::<Xywh>(&ask(n, "GetRangeExtents", &(0, 3, 0u32))),
        (110, 70, 30, 20)
    );
    assert_eq!(
        body::<Xywh>(&ask(n, "GetRangeExtents", &(3, 3, 0u32))),
        (0, 0, 0, 0)
    );
    assert_eq!(
        body::<Xywh>(&ask(n, "GetRangeExtents", &(-2, 3, 0u32))),
        (0, 0, 0, 0)
    );
    assert_eq!(
        body::<Xywh>(&ask(n, "GetCharacterExtents", &(99, 0u32))),
        (0, 0, 0, 0)
    );
    // Decoded by the declaration (`u32 as CoordType`), named as declared.
    let error = ask_err(n, "GetCharacterExtents", &(1, 9u32));
    assert_eq!(error.name(), "org.freedesktop.DBus.Error.InvalidArgs");
    assert_eq!(
        error.to_string(),
        "invalid argument \u{201c}coord_type\u{201d}: 9 is outside the coordinate types 0..=2 \
         (SCREEN 0, WINDOW 1, PARENT 2)"
    );
    assert_eq!(
        body::<i32>(&ask(n, "GetOffsetAtPoint", &(125, 75, 0u32))),
        1
    );
    assert_eq!(body::<i32>(&ask(n, "GetOffsetAtPoint", &(25, 25, 1u32))), 1);
    assert_eq!(body::<i32>(&ask(n, "GetOffsetAtPoint", &(0, 0, 0u32))), -1);
}

#[test]
fn extents_follow_component_conventions_when_scaled() {
    let tree = multilingual();
    let n = node(&tree, 0);
    let scaled = Env {
        geometry: Geometry {
            scale: 2.0,
            ..GEOMETRY
        },
        ..ENV
    };
    let ask = |member: &str, args: &(i32, u32)| -> (i32, i32, i32, i32) {
        body(&handle(&scaled, n, member, &message(INTERFACE, member, args)).unwrap())
    };
    // Surface box of "é": x 20..30, y 20..40.
    assert_eq!(ask("GetCharacterExtents", &(1, 1)), (20, 20, 10, 20));
    assert_eq!(ask("GetCharacterExtents", &(1, 0)), (140, 90, 20, 40));
    // The root text input's PARENT is the window itself.
    assert_eq!(ask("GetCharacterExtents", &(1, 2)), (20, 20, 10, 20));
    let offset: i32 = body(
        &handle(
            &scaled,
            n,
            "GetOffsetAtPoint",
            &message(INTERFACE, "GetOffsetAtPoint", &(145, 95, 0u32)),
        )
        .unwrap(),
    );
    assert_eq!(offset, 1);
}

#[test]
fn scrolling_routes_to_the_run() {
    let tree = multilingual();
    let n = node(&tree, 0);
    let h = ask(n, "ScrollSubstringTo", &(13, 15, 0u32));
    assert!(body::<bool>(&h));
    let action = h.action.expect("scroll action");
    assert_eq!(
        (action.action, action.target_node),
        (Action::ScrollIntoView, NodeId(2))
    );
    assert_eq!(
        action.data,
        Some(ActionData::ScrollHint(ScrollHint::TopLeft))
    );
    let h = ask(n, "ScrollSubstringTo", &(0, 3, 6u32));
    assert_eq!(
        h.action.map(|a| (a.target_node, a.data)),
        Some((NodeId(1), None))
    );
    assert!(!body::<bool>(&ask(n, "ScrollSubstringTo", &(0, 30, 0u32))));
    assert!(matches!(
        ask_err(n, "ScrollSubstringTo", &(0, 3, 7u32)),
        CallError::InvalidArgs(_)
    ));
    let h = ask(n, "ScrollSubstringToPoint", &(0, 3, 0u32, 150, 80));
    let action = h.action.expect("scroll-to-point action");
    assert_eq!(action.action, Action::ScrollToPoint);
    assert_eq!(
        action.data,
        Some(ActionData::ScrollToPoint(Point::new(50.0, 30.0)))
    );
    let ranges: Vec<(i32, i32, String, zvariant::OwnedValue)> = body(&ask(
        n,
        "GetBoundedRanges",
        &(0, 0, 100, 100, 0u32, 0u32, 0u32),
    ));
    assert!(ranges.is_empty());
}

#[test]
fn empty_text_input() {
    let mut root = Node::new(Role::TextInput);
    root.set_children(vec![NodeId(1)]);
    let tree = tree(vec![(0, root), (1, run(&[], &[]))]);
    let n = node(&tree, 0);
    assert_eq!(text_of(&n), "");
    for kind in 0..=6u32 {
        assert_eq!(at(n, "GetTextAtOffset", 0, kind), s("", 0, 0));
        assert_eq!(at(n, "GetTextBeforeOffset", 0, kind), s("", 0, 0));
        assert_eq!(at(n, "GetTextAfterOffset", 0, kind), s("", 0, 0));
        assert_eq!(at(n, "GetTextAtOffset", 1, kind), s("", -1, -1));
    }
    let h = ask(n, "SetCaretOffset", &(0,));
    assert_eq!(h.action, Some(selection_action((1, 0), (1, 0))));
}

#[test]
fn no_offset_or_boundary_panics() {
    let tree = multilingual();
    let n = node(&tree, 0);
    let offsets = [
        i32::MIN,
        -2,
        -1,
        0,
        1,
        11,
        12,
        13,
        19,
        20,
        24,
        25,
        26,
        i32::MAX,
    ];
    for member in [
        "GetTextAtOffset",
        "GetTextBeforeOffset",
        "GetTextAfterOffset",
        "GetStringAtOffset",
    ] {
        for &offset in &offsets {
            for kind in [0u32, 1, 2, 3, 4, 5, 6, 7, u32::MAX] {
                let _ = handle(
                    &ENV,
                    n,
                    member,
                    &message(INTERFACE, member, &(offset, kind)),
                );
            }
        }
    }
    for &a in &offsets {
        for &b in &offsets {
            let _ = ask(n, "GetText", &(a, b));
            let _ = ask(n, "GetRangeExtents", &(a, b, 0u32));
            let _ = ask(n, "SetSelection", &(0, a, b));
            let _ = ask(n, "ScrollSubstringTo", &(a, b, 1u32));
            let _ = ask(n, "GetOffsetAtPoint", &(a, b, 0u32));
        }
        let _ = ask(n, "GetAttributeRun", &(a, false));
        let _ = ask(n, "GetCharacterExtents", &(a, 2u32));
    }
}

#[test]
fn header_cells_and_headings_have_their_name_as_text() {
    let mut root = Node::new(Role::Window);
    root.set_children(vec![NodeId(1), NodeId(2), NodeId(3)]);
    let mut column = Node::new(Role::ColumnHeader);
    column.set_label("Name");
    let mut row = Node::new(Role::RowHeader);
    row.set_label("Ada");
    let mut cell = Node::new(Role::Cell);
    cell.set_label("93");
    let mut heading = Node::new(Role::Heading);
    heading.set_label("Lists");
    root.push_child(NodeId(4));
    let tree = tree(vec![
        (0, root),
        (1, column),
        (2, row),
        (3, cell),
        (4, heading),
    ]);
    assert_eq!(text_of(&node(&tree, 1)), "Name");
    assert_eq!(text_of(&node(&tree, 2)), "Ada");
    assert_eq!(text_of(&node(&tree, 4)), "Lists");
    // Data cells are read by name under both Orcas; they keep no Text.
    assert!(!has_text(&node(&tree, 3), TextLayout::Inline));
}
