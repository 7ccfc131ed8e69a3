//! Small AccessKit trees for the crate's unit tests, built without a
//! replica (no `NodeCtx`): the text family's handlers take a `TextOn`
//! (`text_env.rs`) made of a node and [`ENV`](crate::model::text_env::ENV).

use accesskit::{
    Node, NodeId, Rect, Role, TextDirection, TextPosition, TextSelection, TreeId, TreeInfo,
    TreeUpdate,
};
use accesskit_consumer::{NodeRef, Tree};
use newton_push_protocol::Geometry;

pub(crate) const GEOMETRY: Geometry = Geometry {
    x: 100,
    y: 50,
    width: 800,
    height: 600,
    scale: 1.0,
};
/// A text run from its AccessKit characters.
pub(crate) fn run(clusters: &[&str], word_starts: &[u8]) -> Node {
    let mut node = Node::new(Role::TextRun);
    node.set_value(clusters.concat());
    node.set_character_lengths(clusters.iter().map(|c| c.len() as u8).collect::<Vec<_>>());
    if !word_starts.is_empty() {
        node.set_word_starts(word_starts.to_vec());
    }
    node
}

pub(crate) fn chars(text: &str) -> Vec<&str> {
    text.char_indices()
        .map(|(i, c)| &text[i..i + c.len_utf8()])
        .collect()
}

pub(crate) fn tree(nodes: Vec<(u64, Node)>) -> Tree {
    let nodes = nodes
        .into_iter()
        .map(|(id, node)| (NodeId(id), node))
        .collect();
    let update = TreeUpdate {
        nodes,
        tree: Some(TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(0),
    };
    Tree::new(update, true)
}

pub(crate) fn node(tree: &Tree, id: u64) -> NodeRef<'_> {
    tree.state()
        .node_by_tree_local_id(NodeId(id), TreeId::ROOT)
        .expect("test node exists")
}

/// "héllo wörld\némoji 👍🏽 end": two lines, multi-byte characters, a
/// combining accent and an emoji with a skin-tone modifier (one AccessKit
/// character, two code points), producer word starts, a selection from
/// "m" to the space after the emoji, geometry on the first run and
/// attributes on both.
pub(crate) fn multilingual() -> Tree {
    let mut root = Node::new(Role::MultilineTextInput);
    root.set_children(vec![NodeId(1), NodeId(2)]);
    root.set_bounds(Rect {
        x0: 10.0,
        y0: 20.0,
        x1: 210.0,
        y1: 80.0,
    });
    root.set_text_direction(TextDirection::LeftToRight);
    root.set_font_family("Noto Sans");
    root.set_font_size(16.0);
    root.set_language("fr");
    root.set_text_selection(TextSelection {
        anchor: TextPosition {
            node: NodeId(2),
            character_index: 1,
        },
        focus: TextPosition {
            node: NodeId(2),
            character_index: 7,
        },
    });
    let mut first = run(&chars("héllo wörld\n"), &[0, 6]);
    first.set_bounds(Rect {
        x0: 10.0,
        y0: 20.0,
        x1: 130.0,
        y1: 40.0,
    });
    first.set_character_positions((0..12).map(|i| i as f32 * 10.0).collect::<Vec<_>>());
    first.set_character_widths(vec![10.0; 12]);
    first.set_font_weight(700.0);
    let mut second = run(
        &[
            "e\u{301}", "m", "o", "j", "i", " ", "👍🏽", " ", "e", "n", "d",
        ],
        &[0, 6, 8],
    );
    second.set_is_spelling_error();
    tree(vec![(0, root), (1, first), (2, second)])
}

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
