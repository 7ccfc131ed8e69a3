//! Trees built from fuzzer bytes: mostly well-formed (so the validator lets
//! them through and the consumers see them), with the odd values producers
//! may legitimately send: NaN and huge bounds, transforms, out-of-range
//! numeric values, table indices far beyond the table, selections at the
//! ends of runs, relations to any node.

use accesskit::{
    Action, Affine, CustomAction, Node, NodeId, Rect, Role, TextPosition, TextSelection, Toggled,
    TreeId, TreeInfo, TreeUpdate,
};

use crate::input::Input;

/// Roles the shim treats specially (text, tables, selection, values, links,
/// documents) plus ordinary ones.
const ROLES: &[Role] = &[
    Role::GenericContainer,
    Role::Group,
    Role::Button,
    Role::Label,
    Role::TextInput,
    Role::MultilineTextInput,
    Role::Paragraph,
    Role::Document,
    Role::Link,
    Role::Image,
    Role::Slider,
    Role::SpinButton,
    Role::ProgressIndicator,
    Role::CheckBox,
    Role::RadioButton,
    Role::ComboBox,
    Role::ListBox,
    Role::ListBoxOption,
    Role::List,
    Role::ListItem,
    Role::Table,
    Role::Grid,
    Role::TreeGrid,
    Role::Row,
    Role::Cell,
    Role::GridCell,
    Role::ColumnHeader,
    Role::RowHeader,
    Role::TabList,
    Role::Tab,
    Role::Menu,
    Role::MenuItem,
    Role::Tree,
    Role::TreeItem,
    Role::ScrollView,
    Role::Heading,
    Role::Unknown,
    Role::Window,
    Role::Dialog,
    Role::Terminal,
];

const WORDS: &[&str] = &[
    "",
    "a",
    "OK",
    "hé llo",
    "two words",
    "€\u{1F600}x",
    "line\nnext",
    " ",
    "\u{FFFC}",
    "tab\tthere",
];

fn f64_value(input: &mut Input) -> f64 {
    match input.byte() % 6 {
        0..=2 => f64::from(input.byte()) - 20.0,
        3 => f64::from(input.u16()) * 4.0,
        _ => input.pick(
            &[
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                1e300,
                -1e300,
                f64::MIN_POSITIVE,
                2_147_483_648.0,
                -2_147_483_649.0,
            ],
            0.0,
        ),
    }
}

fn rect(input: &mut Input) -> Rect {
    if input.one_in(5) {
        Rect::new(
            f64_value(input),
            f64_value(input),
            f64_value(input),
            f64_value(input),
        )
    } else {
        let x = f64::from(input.byte()) * 4.0;
        let y = f64::from(input.byte()) * 2.0;
        let w = f64::from(input.byte());
        let h = f64::from(input.byte() % 40);
        Rect::new(x, y, x + w, y + h)
    }
}

fn usize_value(input: &mut Input) -> usize {
    match input.byte() % 5 {
        0..=2 => usize::from(input.byte() % 8),
        3 => usize::from(input.u16()),
        _ => input.pick(
            &[usize::MAX, i32::MAX as usize, 1 << 31, u32::MAX as usize],
            0,
        ),
    }
}

/// A text run: value plus consistent character lengths (and sometimes
/// positions, widths and word starts, consistent or not).
fn text_run(input: &mut Input) -> Node {
    let mut node = Node::new(Role::TextRun);
    let text = input.string(WORDS);
    let lengths: Vec<u8> = text.chars().map(|c| c.len_utf8() as u8).collect();
    let n = lengths.len();
    if input.one_in(2) {
        let positions: Vec<f32> = (0..n).map(|i| i as f32 * 7.0).collect();
        let widths: Vec<f32> = (0..n).map(|_| f32::from(input.byte() % 9)).collect();
        node.set_character_positions(positions);
        node.set_character_widths(widths);
    }
    if input.one_in(3) {
        let starts: Vec<u8> = (0..input.below(3)).map(|_| input.byte() % 6).collect();
        node.set_word_starts(starts);
    }
    node.set_character_lengths(lengths);
    node.set_value(text);
    if input.one_in(2) {
        node.set_bounds(rect(input));
    }
    node
}

/// Decorates a non-run node with properties chosen by the input.
fn decorate(node: &mut Node, input: &mut Input, ids: u64) {
    let flags = input.u32();
    // Now and then one past the last node: a dangling relation.
    let any_id = |input: &mut Input| {
        let spare = usize::from(input.one_in(8));
        NodeId(input.below(ids as usize + spare) as u64)
    };
    if flags & 1 != 0 {
        node.set_label(input.string(WORDS));
    }
    if flags & 2 != 0 {
        node.set_value(input.string(WORDS));
    }
    if flags & 4 != 0 {
        node.set_description(input.string(WORDS));
    }
    if flags & 8 != 0 {
        node.set_bounds(rect(input));
    }
    if flags & 16 != 0 {
        for _ in 0..1 + input.below(3) {
            node.add_action(input.pick(
                &[
                    Action::Click,
                    Action::Focus,
                    Action::SetValue,
                    Action::Increment,
                    Action::Decrement,
                    Action::ScrollIntoView,
                    Action::Expand,
                    Action::Collapse,
                    Action::ReplaceSelectedText,
                    Action::SetTextSelection,
                    Action::ShowContextMenu,
                ],
                Action::Click,
            ));
        }
    }
    if flags & 32 != 0 {
        node.set_numeric_value(f64_value(input));
        node.set_min_numeric_value(f64_value(input));
        node.set_max_numeric_value(f64_value(input));
        if input.one_in(2) {
            node.set_numeric_value_step(f64_value(input));
        }
    }
    if flags & 64 != 0 {
        node.set_row_index(usize_value(input));
        node.set_column_index(usize_value(input));
        if input.one_in(2) {
            node.set_row_span(usize_value(input));
            node.set_column_span(usize_value(input));
        }
    }
    if flags & 128 != 0 {
        node.set_row_count(usize_value(input));
        node.set_column_count(usize_value(input));
    }
    if flags & 256 != 0 {
        node.set_selected(input.one_in(2));
    }
    if flags & 512 != 0 {
        node.set_toggled(input.pick(
            &[Toggled::True, Toggled::False, Toggled::Mixed],
            Toggled::True,
        ));
    }
    if flags & 1024 != 0 {
        node.set_disabled();
    }
    if flags & 2048 != 0 {
        node.set_labelled_by(vec![any_id(input)]);
    }
    if flags & 4096 != 0 {
        node.set_controls(vec![any_id(input), any_id(input)]);
    }
    if flags & 8192 != 0 {
        node.set_active_descendant(any_id(input));
    }
    if flags & 16384 != 0 {
        node.set_url(input.string(&["https://example.org/", "", "x"]));
    }
    if flags & 32768 != 0 {
        node.set_level(usize_value(input));
        node.set_position_in_set(usize_value(input));
        node.set_size_of_set(usize_value(input));
    }
    if flags & 65536 != 0 {
        let scale = if input.one_in(2) {
            2.0
        } else {
            f64_value(input)
        };
        node.set_transform(Affine::new([scale, 0.0, 0.0, scale, f64_value(input), 0.0]));
    }
    if flags & 131072 != 0 {
        node.set_multiselectable();
    }
    if flags & 262144 != 0 {
        node.set_expanded(input.one_in(2));
    }
    if flags & 524288 != 0 {
        node.set_read_only();
    }
    if flags & 1048576 != 0 {
        node.set_tooltip(input.string(WORDS));
        node.set_placeholder(input.string(WORDS));
    }
    if flags & 2097152 != 0 {
        node.set_language(input.string(&["en", "", "de-DE", "x_y"]));
    }
    if flags & 4194304 != 0 {
        node.set_custom_actions(vec![CustomAction {
            id: input.i32_near(0),
            description: input.string(WORDS),
        }]);
    }
    if flags & 8388608 != 0 {
        node.set_scroll_y(f64_value(input));
        node.set_scroll_y_max(f64_value(input));
    }
    if flags & 16777216 != 0 {
        node.set_keyboard_shortcut(input.string(&["Ctrl+S", "", "a"]));
        node.set_author_id(input.string(&["id1", ""]));
    }
}

/// A full tree (with `tree` info) of up to 40 nodes, root id 0. Node ids are
/// 0..n; text runs are leaves and sit under text-like parents, with
/// previous/next-on-line links between siblings.
pub fn tree_from_input(input: &mut Input) -> TreeUpdate {
    let n = 1 + input.below(40) as u64;
    // (id, role, children)
    let mut roles: Vec<Role> = vec![input.pick(
        &[
            Role::Window,
            Role::Window,
            Role::Document,
            Role::Dialog,
            Role::Group,
        ],
        Role::Window,
    )];
    let mut parents: Vec<u64> = vec![0];
    for id in 1..n {
        let role = if input.one_in(3) {
            Role::TextRun
        } else {
            input.pick(ROLES, Role::Group)
        };
        // Parent: an earlier node that is not a run.
        let containers: Vec<u64> = (0..id)
            .filter(|p| roles.get(*p as usize) != Some(&Role::TextRun))
            .collect();
        let parent = containers
            .get(input.below(containers.len()))
            .copied()
            .unwrap_or(0);
        roles.push(role);
        parents.push(parent);
    }
    let mut children: Vec<Vec<u64>> = vec![Vec::new(); n as usize];
    for id in 1..n {
        if let Some(list) = children.get_mut(parents[id as usize] as usize) {
            list.push(id);
        }
    }
    let mut nodes: Vec<(NodeId, Node)> = Vec::new();
    for id in 0..n {
        let role = roles[id as usize];
        let mut node = if role == Role::TextRun {
            text_run(input)
        } else {
            let mut node = Node::new(role);
            decorate(&mut node, input, n);
            if input.one_in(12) && id != 0 {
                node.set_hidden();
            }
            node
        };
        let kids = &children[id as usize];
        if !kids.is_empty() {
            node.set_children(kids.iter().map(|c| NodeId(*c)).collect::<Vec<_>>());
        }
        nodes.push((NodeId(id), node));
    }
    // Line links between consecutive sibling runs, and a selection on a
    // parent of runs.
    for (id, kids) in children.iter().enumerate() {
        let runs: Vec<u64> = kids
            .iter()
            .copied()
            .filter(|c| roles[*c as usize] == Role::TextRun)
            .collect();
        if runs.is_empty() {
            continue;
        }
        if input.one_in(2) {
            for pair in runs.windows(2) {
                if let (Some(a), Some(b)) = (pair.first(), pair.get(1)) {
                    if let Some((_, node)) = nodes.get_mut(*a as usize) {
                        node.set_next_on_line(NodeId(*b));
                    }
                    if let Some((_, node)) = nodes.get_mut(*b as usize) {
                        node.set_previous_on_line(NodeId(*a));
                    }
                }
            }
        }
        if input.one_in(2) {
            let len_of = |nodes: &[(NodeId, Node)], run: u64| {
                nodes
                    .get(run as usize)
                    .and_then(|(_, node)| node.character_lengths().len().checked_add(0))
                    .unwrap_or(0)
            };
            let a = runs[input.below(runs.len())];
            let f = runs[input.below(runs.len())];
            let ai = input.below(len_of(&nodes, a) + 1);
            let fi = input.below(len_of(&nodes, f) + 1);
            if let Some((_, node)) = nodes.get_mut(id) {
                node.set_text_selection(TextSelection {
                    anchor: TextPosition {
                        node: NodeId(a),
                        character_index: ai,
                    },
                    focus: TextPosition {
                        node: NodeId(f),
                        character_index: fi,
                    },
                });
            }
        }
    }
    let focus = NodeId(input.below(n as usize) as u64);
    TreeUpdate {
        nodes,
        tree: Some(TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus,
    }
}

/// An incremental update to a tree from [`tree_from_input`]: relabels,
/// re-sends or re-decorates a few nodes (their children unchanged).
pub fn edit_from_input(input: &mut Input, base: &TreeUpdate) -> TreeUpdate {
    let mut nodes = Vec::new();
    for _ in 0..1 + input.below(3) {
        let Some((id, node)) = base.nodes.get(input.below(base.nodes.len())).cloned() else {
            continue;
        };
        let mut node = node;
        if node.role() != Role::TextRun {
            decorate(&mut node, input, base.nodes.len() as u64);
        }
        nodes.push((id, node));
    }
    TreeUpdate {
        nodes,
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(input.below(base.nodes.len()) as u64),
    }
}
