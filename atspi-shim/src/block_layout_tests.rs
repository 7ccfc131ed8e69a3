//! The per-block layout (`model/text/blocks.rs`) on a small document, through
//! the Text and Hypertext interfaces: each block's own Text with U+FFFC for
//! child objects, Hypertext/Hyperlink offsets that agree with the children,
//! lines, caret, geometry and the inline-offset mapping events use. Above
//! the interfaces, as it asks two of them.

use accesskit::{Node, NodeId, Rect, Role};
use accesskit_consumer::{NodeRef, Tree};

use crate::interfaces::{hypertext, text};
use crate::model::fixtures::{chars, node, run, tree};
use crate::model::hyperlinks::{has_links, is_hyperlink, span_in_parent, MAX_HYPERTEXT_LINKS};
use crate::model::text::*;
use crate::model::text_env::{has_text, model_at, Env, ENV};
use crate::surface::testing::{body, message};

const FFFC: char = EMBEDDED_OBJECT;

const BLOCKS: Env<'static> = Env {
    layout: TextLayout::Blocks,
    ..ENV
};

fn with_bounds(mut node: Node, y: f64) -> Node {
    node.set_bounds(Rect::new(0.0, y, 800.0, y + 20.0));
    node
}

/// Document 0: heading 1 "Title"; paragraph 3 "Go to <link 5 "example"> now.";
/// list 7 with item 8 "One"; table row 10 with cells 11 "A" and 12 "B". Runs
/// end their block with "\n", as AccessKit's inline document text does.
fn document() -> Tree {
    let mut doc = Node::new(Role::Document);
    doc.set_children(vec![NodeId(1), NodeId(3), NodeId(7), NodeId(10)]);
    let mut heading = with_bounds(Node::new(Role::Heading), 0.0);
    heading.set_children(vec![NodeId(2)]);
    let mut paragraph = with_bounds(Node::new(Role::Paragraph), 20.0);
    paragraph.set_children(vec![NodeId(4), NodeId(5), NodeId(6)]);
    let mut link = Node::new(Role::Link);
    link.set_bounds(Rect::new(40.0, 20.0, 96.0, 40.0));
    link.set_children(vec![NodeId(20)]);
    let mut list = with_bounds(Node::new(Role::List), 40.0);
    list.set_children(vec![NodeId(8)]);
    let mut item = with_bounds(Node::new(Role::ListItem), 40.0);
    item.set_children(vec![NodeId(9)]);
    let mut row = with_bounds(Node::new(Role::Row), 60.0);
    row.set_children(vec![NodeId(11), NodeId(12)]);
    let mut a = with_bounds(Node::new(Role::Cell), 60.0);
    a.set_children(vec![NodeId(13)]);
    let mut b = with_bounds(Node::new(Role::Cell), 60.0);
    b.set_children(vec![NodeId(14)]);
    let mut title = run(&chars("Title\n"), &[]);
    title.set_bounds(Rect::new(0.0, 0.0, 60.0, 20.0));
    title.set_character_positions(vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
    title.set_character_widths(vec![10.0; 6]);
    // The paragraph's runs are one line: each names the run before it.
    let mut link_text = run(&chars("example"), &[0]);
    link_text.set_previous_on_line(NodeId(4));
    let mut after_link = run(&chars(" now.\n"), &[1]);
    after_link.set_previous_on_line(NodeId(20));
    tree(vec![
        (0, doc),
        (1, heading),
        (2, title),
        (3, paragraph),
        (4, run(&chars("Go to "), &[0, 3])),
        (5, link),
        (20, link_text),
        (6, after_link),
        (7, list),
        (8, item),
        (9, run(&chars("One\n"), &[])),
        (10, row),
        (11, a),
        (12, b),
        (13, run(&chars("A"), &[])),
        (14, run(&chars("B\n"), &[])),
    ])
}

fn text_of(env: &Env, n: NodeRef) -> String {
    model_at(env, n).map(|m| m.text.clone()).unwrap_or_default()
}

fn ask<
    T: serde::de::DeserializeOwned + zvariant::Type,
    B: serde::Serialize + zvariant::DynamicType,
>(
    n: NodeRef,
    interface: &str,
    member: &str,
    args: &B,
) -> T {
    let call = message(interface, member, args);
    let handled = match interface {
        hypertext::INTERFACE => hypertext::handle(&BLOCKS, n, member, &call),
        _ => text::handle(&BLOCKS, n, member, &call),
    };
    body(&handled.expect("call succeeds"))
}

#[test]
fn each_block_has_its_own_text_with_an_object_character_per_child() {
    let tree = document();
    assert_eq!(text_of(&BLOCKS, node(&tree, 0)), FFFC.to_string().repeat(4));
    assert_eq!(text_of(&BLOCKS, node(&tree, 1)), "Title");
    assert_eq!(
        text_of(&BLOCKS, node(&tree, 3)),
        format!("Go to {FFFC} now.")
    );
    assert_eq!(text_of(&BLOCKS, node(&tree, 5)), "example");
    assert_eq!(text_of(&BLOCKS, node(&tree, 7)), FFFC.to_string());
    assert_eq!(text_of(&BLOCKS, node(&tree, 8)), "One");
    assert!(has_text(&node(&tree, 7), TextLayout::Blocks));
    // A producer that names no web engine keeps the inline layout.
    assert_eq!(
        text_of(&ENV, node(&tree, 0)),
        "Title\nGo to example now.\nOne\nAB\n"
    );
    assert!(!has_text(&node(&tree, 7), TextLayout::Inline));
}

#[test]
fn hyperlink_offsets_agree_with_the_children() {
    let tree = document();
    let offsets = |id| span_in_parent(&BLOCKS, &node(&tree, id));
    assert_eq!(offsets(5), Some((6, 7)));
    assert_eq!(offsets(1), Some((0, 1)));
    assert_eq!(offsets(3), Some((1, 2)));
    assert_eq!(offsets(10), Some((3, 4)));
    assert_eq!(offsets(12), Some((1, 2)));
    assert!(is_hyperlink(&BLOCKS, &node(&tree, 8)));
    assert!(!is_hyperlink(&ENV, &node(&tree, 8)));
    let document = node(&tree, 0);
    assert_eq!(
        ask::<i32, _>(document, hypertext::INTERFACE, "GetNLinks", &()),
        4
    );
    let (_, second): (String, zvariant::OwnedObjectPath) =
        ask(document, hypertext::INTERFACE, "GetLink", &(1,));
    assert_eq!(second.as_str(), "/org/a11y/atspi/accessible/7_3_hyperlink");
    let paragraph = node(&tree, 3);
    assert_eq!(
        ask::<i32, _>(paragraph, hypertext::INTERFACE, "GetLinkIndex", &(6,)),
        0
    );
    assert_eq!(
        ask::<i32, _>(paragraph, hypertext::INTERFACE, "GetLinkIndex", &(5,)),
        -1
    );
}

#[test]
fn blocks_are_lines_and_a_row_s_cells_share_one() {
    let tree = document();
    const LINE_START: u32 = 5;
    let line = |id, offset: i32| -> (String, i32, i32) {
        ask(
            node(&tree, id),
            text::INTERFACE,
            "GetTextAtOffset",
            &(offset, LINE_START),
        )
    };
    assert_eq!(line(0, 1), (FFFC.to_string(), 1, 2));
    assert_eq!(line(0, 3), (FFFC.to_string(), 3, 4));
    // The link is inline: its paragraph is one line.
    assert_eq!(line(3, 8), (format!("Go to {FFFC} now."), 0, 12));
    assert_eq!(line(10, 1), (format!("{FFFC}{FFFC}"), 0, 2));
}

#[test]
fn the_caret_is_read_from_the_document_and_shown_in_its_block() {
    let mut nodes: Vec<(u64, Node)> = Vec::new();
    let tree = document();
    for id in [0, 1, 2, 3, 4, 5, 20, 6, 7, 8, 9, 10, 11, 12, 13, 14] {
        let mut data = node(&tree, id).data().clone();
        if id == 0 {
            data.set_text_selection(accesskit::TextSelection {
                anchor: accesskit::TextPosition {
                    node: NodeId(6),
                    character_index: 2,
                },
                focus: accesskit::TextPosition {
                    node: NodeId(6),
                    character_index: 2,
                },
            });
        }
        nodes.push((id, data));
    }
    let tree = self::tree(nodes);
    let offset = |id| model_at(&BLOCKS, node(&tree, id)).and_then(|m| m.caret());
    // " now." starts after "Go to " and the link's U+FFFC: 7 + 2.
    assert_eq!(offset(3), Some(9));
    assert_eq!(offset(0), None);
    assert_eq!(offset(1), None);
    // The inline offset the replica reports maps to the same place.
    let inline = TextModel::from_runs(node(&tree, 0));
    let inline_caret = inline.caret().expect("the document has a caret");
    let (block, at) = block_offset(&node(&tree, 0), inline_caret).expect("a block");
    assert_eq!((block.id(), at), (node(&tree, 3).id(), 9));
}

#[test]
fn geometry_comes_from_the_block_s_runs_and_children() {
    let tree = document();
    let paragraph = model_at(&BLOCKS, node(&tree, 3)).expect("text");
    // The link's U+FFFC has the link's box.
    assert_eq!(
        paragraph.bounds(6, 7),
        Some(Rect::new(40.0, 20.0, 96.0, 40.0))
    );
    let heading = model_at(&BLOCKS, node(&tree, 1)).expect("text");
    assert_eq!(heading.bounds(1, 3), Some(Rect::new(10.0, 0.0, 30.0, 20.0)));
    assert_eq!(heading.bounds(2, 2), Some(Rect::new(20.0, 0.0, 20.0, 20.0)));
    assert_eq!(heading.offset_at_point((25.0, 10.0)), Some(2));
}

#[test]
fn a_document_with_more_links_than_the_inline_cap_lists_them_all() {
    let count = MAX_HYPERTEXT_LINKS as u64 + 44;
    let mut doc = Node::new(Role::Document);
    let mut nodes = Vec::new();
    let mut children = Vec::new();
    for i in 0..count {
        let (link, text) = (1 + 2 * i, 2 + 2 * i);
        children.push(NodeId(link));
        let mut l = Node::new(Role::Link);
        l.set_children(vec![NodeId(text)]);
        nodes.push((link, l));
        nodes.push((text, run(&chars("go "), &[0])));
    }
    doc.set_children(children);
    nodes.push((0, doc));
    let tree = tree(nodes);
    let document = node(&tree, 0);
    assert_eq!(
        ask::<i32, _>(document, hypertext::INTERFACE, "GetNLinks", &()),
        count as i32
    );
    assert!(has_links(&BLOCKS, &document));
    assert!(!has_links(&ENV, &document));
}

/// `document()` with the document's selection from `anchor` to `focus`
/// (run node, character index).
fn document_selecting(anchor: (u64, usize), focus: (u64, usize)) -> Tree {
    let tree = document();
    let position = |(node, character_index): (u64, usize)| accesskit::TextPosition {
        node: NodeId(node),
        character_index,
    };
    let nodes = [0, 1, 2, 3, 4, 5, 20, 6, 7, 8, 9, 10, 11, 12, 13, 14]
        .into_iter()
        .map(|id| {
            let mut data = node(&tree, id).data().clone();
            if id == 0 {
                data.set_text_selection(accesskit::TextSelection {
                    anchor: position(anchor),
                    focus: position(focus),
                });
            }
            (id, data)
        })
        .collect();
    self::tree(nodes)
}

#[test]
fn a_selection_across_blocks_is_shown_in_each_block_it_covers() {
    // From "Ti|tle" (the heading) to " n|ow." (the paragraph, after the
    // link), forwards and backwards.
    for (anchor, focus) in [((2, 2), (6, 2)), ((6, 2), (2, 2))] {
        let tree = document_selecting(anchor, focus);
        let model = |id| model_at(&BLOCKS, node(&tree, id)).expect("text");
        // The heading from the anchor to its end; the paragraph from its
        // start to " n|ow." (after "Go to " and the link's U+FFFC: 7 + 2);
        // the link between them whole; the list after the end not at all.
        assert_eq!(model(1).selection(), Some((2, 5)));
        assert_eq!(model(3).selection(), Some((0, 9)));
        assert_eq!(model(5).selection(), Some((0, 7)));
        assert_eq!(model(8).selection(), None);
        // The document: the U+FFFC of each block the selection touches.
        assert_eq!(model(0).selection(), Some((0, 2)));
        // The caret is where the focus is, and only there.
        let caret_in = |id| model(id).caret();
        let (focus_block, focus_offset) = if focus.0 == 6 { (3, 9) } else { (1, 2) };
        assert_eq!(caret_in(focus_block), Some(focus_offset));
        let other = if focus_block == 3 { 1 } else { 3 };
        assert_eq!(caret_in(other), None);
    }
}
