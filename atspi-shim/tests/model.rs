//! The exposed object model and interfaces on hand-built trees.

mod common;

use std::collections::HashMap;

use accesskit::{Action, ActionData, CustomAction, Node, NodeId, Role, Toggled};
use atspi_common::{State, StateSet};
use common::*;

const WINDOW: NodeId = NodeId(1);

/// Window [label "Name:" (10), panel (11) [input (12)], hidden button (13), button (14)].
fn form() -> Harness {
    let mut window = make(Role::Window, Some("Form"), (0.0, 0.0, 800.0, 600.0));
    window.set_children(vec![NodeId(10), NodeId(11), NodeId(13), NodeId(14)]);
    window.set_language("fr-CA");
    window.add_child_action(Action::Focus);
    let mut label = make(Role::Label, None, (10.0, 10.0, 60.0, 20.0));
    label.set_value("Name:");
    let mut panel = make(Role::GenericContainer, None, (80.0, 10.0, 300.0, 40.0));
    panel.set_children(vec![NodeId(12)]);
    let mut input = make(Role::TextInput, None, (90.0, 15.0, 200.0, 30.0));
    input.set_labelled_by(vec![NodeId(10)]);
    input.set_described_by(vec![NodeId(14)]);
    input.set_error_message(NodeId(10));
    input.set_placeholder("Your name");
    input.set_author_id("name-input");
    input.set_tooltip("Type your full name");
    input.set_required();
    input.set_read_only();
    input.add_action(Action::Focus);
    let mut hidden = make(Role::Button, Some("Secret"), (0.0, 0.0, 10.0, 10.0));
    hidden.set_hidden();
    let mut button = make(Role::Button, Some("Submit"), (10.0, 100.0, 80.0, 30.0));
    button.set_disabled();
    button.set_description("Sends the form");
    button.add_action(Action::Click);

    button.set_custom_actions(vec![CustomAction {
        id: 7,
        description: "Submit later".into(),
    }]);
    button.set_keyboard_shortcut("Alt+S");
    Harness::custom(full_tree(
        vec![
            (WINDOW, window),
            (NodeId(10), label),
            (NodeId(11), panel),
            (NodeId(12), input),
            (NodeId(13), hidden),
            (NodeId(14), button),
        ],
        NodeId(12),
    ))
}

#[test]
fn generic_containers_are_panels_and_hidden_nodes_vanish() {
    let h = form();
    let children: Vec<Ref> = h.ok(&node(1), ACCESSIBLE, "GetChildren", &());
    assert_eq!(children, [10, 11, 14].map(node_ref));
    assert_eq!(h.ok::<u32, _>(&node(11), ACCESSIBLE, "GetRole", &()), 39);
    assert_eq!(
        h.ok::<i32, _>(&node(14), ACCESSIBLE, "GetIndexInParent", &()),
        2,
        "the hidden sibling is not counted"
    );
    let last: Ref = h.ok(&node(1), ACCESSIBLE, "GetChildAtIndex", &(2i32,));
    assert_eq!(last, node_ref(14));
    let parent: Ref = h.prop(&node(12), ACCESSIBLE, "Parent");
    assert_eq!(parent, node_ref(11));
    let (name, _) = h.err(&node(13), ACCESSIBLE, "GetRole", &());
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownObject");
}

#[test]
fn names_descriptions_and_identity() {
    let h = form();
    assert_eq!(
        h.prop::<String>(&node(10), ACCESSIBLE, "Name"),
        "Name:",
        "a label's name is its value"
    );
    assert_eq!(
        h.prop::<String>(&node(12), ACCESSIBLE, "Name"),
        "Name:",
        "labelled_by"
    );
    assert_eq!(
        h.prop::<String>(&node(14), ACCESSIBLE, "Description"),
        "Sends the form"
    );
    assert_eq!(
        h.prop::<String>(&node(12), ACCESSIBLE, "AccessibleId"),
        "name-input"
    );
    assert_eq!(
        h.prop::<String>(&node(12), ACCESSIBLE, "HelpText"),
        "Type your full name"
    );
    assert_eq!(
        h.prop::<String>(&node(12), ACCESSIBLE, "Locale"),
        "fr_CA",
        "inherited language"
    );
}

#[test]
fn relations_forward_and_reverse() {
    let h = form();
    let relations: Vec<(u32, Vec<Ref>)> = h.ok(&node(12), ACCESSIBLE, "GetRelationSet", &());
    let by_type: HashMap<u32, Vec<Ref>> = relations.into_iter().collect();
    assert_eq!(by_type.get(&2), Some(&vec![node_ref(10)]), "LABELLED_BY");
    assert_eq!(by_type.get(&18), Some(&vec![node_ref(14)]), "DESCRIBED_BY");
    assert_eq!(by_type.get(&21), Some(&vec![node_ref(10)]), "ERROR_MESSAGE");
    let reverse: Vec<(u32, Vec<Ref>)> = h.ok(&node(10), ACCESSIBLE, "GetRelationSet", &());
    let reverse: HashMap<u32, Vec<Ref>> = reverse.into_iter().collect();
    assert_eq!(reverse.get(&1), Some(&vec![node_ref(12)]), "LABEL_FOR");
    assert_eq!(reverse.get(&22), Some(&vec![node_ref(12)]), "ERROR_FOR");
    let described: Vec<(u32, Vec<Ref>)> = h.ok(&node(14), ACCESSIBLE, "GetRelationSet", &());
    assert!(
        described.contains(&(17, vec![node_ref(12)])),
        "DESCRIPTION_FOR: {described:?}"
    );
}

#[test]
fn states_from_flags() {
    let h = form();
    let input: StateSet = h.ok(&node(12), ACCESSIBLE, "GetState", &());
    for state in [
        State::Focused,
        State::Focusable,
        State::Required,
        State::ReadOnly,
        State::SingleLine,
        State::Enabled,
    ] {
        assert!(input.contains(state), "{state:?} missing: {input:?}");
    }
    assert!(!input.contains(State::Editable), "read-only input");
    let button: StateSet = h.ok(&node(14), ACCESSIBLE, "GetState", &());
    assert!(!button.contains(State::Enabled) && !button.contains(State::Sensitive));
    assert!(
        button.contains(State::Focusable),
        "focus declared by the parent for its children"
    );
}

#[test]
fn attributes_orca_reads() {
    let h = form();
    let attrs: HashMap<String, String> = h.ok(&node(12), ACCESSIBLE, "GetAttributes", &());
    assert_eq!(
        attrs.get("placeholder-text").map(String::as_str),
        Some("Your name")
    );
    assert_eq!(attrs.get("toolkit").map(String::as_str), Some("Newton"));
    let attrs: HashMap<String, String> = h.ok(&node(14), ACCESSIBLE, "GetAttributes", &());
    assert_eq!(attrs.get("keyshortcuts").map(String::as_str), Some("Alt+S"));
}

#[test]
fn an_empty_placeholder_is_not_an_attribute() {
    // egui sends "" on every text edit (docs/compat.md, C2).
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2)]);
    let mut input = Node::new(Role::TextInput);
    input.set_placeholder("");
    let h = Harness::custom(full_tree(
        vec![(NodeId(1), window), (NodeId(2), input)],
        NodeId(2),
    ));
    let attrs: HashMap<String, String> = h.ok(&node(2), ACCESSIBLE, "GetAttributes", &());
    assert_eq!(attrs.get("placeholder-text"), None, "{attrs:?}");
}

#[test]
fn custom_actions_and_key_bindings() {
    let h = form();
    let action = "org.a11y.atspi.Action";
    let list: Vec<(String, String, String)> = h.ok(&node(14), action, "GetActions", &());
    assert_eq!(
        list,
        vec![
            (
                "click".into(),
                "Activates the object".into(),
                "Alt+S".into()
            ),
            (
                "focus".into(),
                "Gives the object keyboard focus".into(),
                String::new()
            ),
            ("Submit later".into(), "Submit later".into(), String::new()),
        ]
    );
    let handled = h.handle(&node(14), action, "DoAction", &(2i32,));
    let request = handled.action.expect("custom action request");
    assert_eq!(
        (request.action, request.data),
        (Action::CustomAction, Some(ActionData::CustomAction(7)))
    );
    let (name, _) = list_box().err(&node(6), action, "GetActions", &());
    assert_eq!(
        name, "org.freedesktop.DBus.Error.UnknownInterface",
        "no actions, no Action interface"
    );
}

/// Window [list box (2) [option 3 selected, option 4, option 5 selected], image (6)].
fn list_box() -> Harness {
    let mut window = make(Role::Window, Some("Pick"), (0.0, 0.0, 400.0, 300.0));
    window.set_children(vec![NodeId(2), NodeId(6)]);
    let mut list = make(Role::ListBox, Some("Fruit"), (0.0, 0.0, 200.0, 90.0));
    list.set_children(vec![NodeId(3), NodeId(4), NodeId(5)]);
    list.set_multiselectable();
    let option = |label: &str, y: f64, selected: bool| {
        let mut n = make(Role::ListBoxOption, Some(label), (0.0, y, 200.0, 30.0));
        n.set_selected(selected);
        n.add_action(Action::Click);
        n.set_position_in_set((y / 30.0) as usize + 1);
        n.set_size_of_set(3);
        n
    };
    let mut image = make(Role::Image, Some("Logo"), (250.0, 10.0, 64.0, 32.0));
    image.set_description("Company logo");
    let mut expander = make(Role::Button, Some("More"), (0.0, 100.0, 50.0, 20.0));
    expander.set_expanded(false);
    expander.set_toggled(Toggled::True);
    window.push_child(NodeId(7));
    Harness::custom(full_tree(
        vec![
            (NodeId(1), window),
            (NodeId(2), list),
            (NodeId(3), option("Apple", 0.0, true)),
            (NodeId(4), option("Banana", 30.0, false)),
            (NodeId(5), option("Cherry", 60.0, true)),
            (NodeId(6), image),
            (NodeId(7), expander),
        ],
        NodeId(2),
    ))
}

#[test]
fn selection_reads_and_requests_clicks() {
    let h = list_box();
    let selection = "org.a11y.atspi.Selection";
    let list = node(2);
    assert_eq!(h.prop::<i32>(&list, selection, "NSelectedChildren"), 2);
    let second: Ref = h.ok(&list, selection, "GetSelectedChild", &(1i32,));
    assert_eq!(second, node_ref(5));
    assert!(h.ok::<bool, _>(&list, selection, "IsChildSelected", &(0i32,)));
    assert!(!h.ok::<bool, _>(&list, selection, "IsChildSelected", &(1i32,)));
    let handled = h.handle(&list, selection, "SelectChild", &(1i32,));
    assert_eq!(
        handled.action.map(|a| (a.action, a.target_node)),
        Some((Action::Click, NodeId(4)))
    );
    let handled = h.handle(&list, selection, "SelectChild", &(0i32,));
    assert!(handled.action.is_none(), "already selected");
    let handled = h.handle(&list, selection, "DeselectSelectedChild", &(1i32,));
    assert_eq!(handled.action.map(|a| a.target_node), Some(NodeId(5)));
    assert!(!h.ok::<bool, _>(&list, selection, "SelectAll", &()));
    let (name, _) = h.err(&list, selection, "GetSelectedChild", &(2i32,));
    assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs");
    let states: StateSet = h.ok(&node(3), ACCESSIBLE, "GetState", &());
    assert!(states.contains(State::Selectable) && states.contains(State::Selected));
    let attrs: HashMap<String, String> = h.ok(&node(4), ACCESSIBLE, "GetAttributes", &());
    assert_eq!(
        (
            attrs.get("posinset").map(String::as_str),
            attrs.get("setsize").map(String::as_str)
        ),
        (Some("2"), Some("3"))
    );
}

#[test]
fn images_and_toggle_buttons() {
    let h = list_box();
    let image = "org.a11y.atspi.Image";
    assert_eq!(
        h.prop::<String>(&node(6), image, "ImageDescription"),
        "Company logo"
    );
    let size: (i32, i32) = h.ok(&node(6), image, "GetImageSize", &());
    assert_eq!(size, (64, 32));
    let extents: (i32, i32, i32, i32) = h.ok(&node(6), image, "GetImageExtents", &(0u32,));
    assert_eq!(extents, (350, 60, 64, 32));
    assert_eq!(
        h.ok::<u32, _>(&node(7), ACCESSIBLE, "GetRole", &()),
        62,
        "toggle button"
    );
    let states: StateSet = h.ok(&node(7), ACCESSIBLE, "GetState", &());
    for state in [State::Pressed, State::Expandable, State::Collapsed] {
        assert!(states.contains(state), "{state:?} missing");
    }
    assert!(
        !states.contains(State::Checked),
        "a toggle button says pressed only (one state, one event)"
    );
}

use newton_atspi_client::calls::collection::MatchRule as Rule;

fn role_bits(roles: &[u32]) -> Vec<i32> {
    let mut words = vec![0i32; 5];
    for role in roles {
        words[(role / 32) as usize] |= (1u32 << (role % 32)) as i32;
    }
    words
}

fn rule(roles: &[u32], attributes: &[(&str, &str)], interfaces: &[&str]) -> Rule {
    let attributes = attributes
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let interfaces = interfaces.iter().map(|s| s.to_string()).collect();
    (
        vec![0, 0],
        1,
        attributes,
        1,
        role_bits(roles),
        2,
        interfaces,
        1,
        false,
    )
}

#[test]
fn collection_finds_by_role_attribute_interface_and_state() {
    let h = form();
    let collection = "org.a11y.atspi.Collection";
    let window = node(1);
    let buttons: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatches",
        &(rule(&[43], &[], &[]), 1u32, 0i32, true),
    );
    assert_eq!(
        buttons,
        vec![node_ref(14)],
        "the hidden button is not exposed"
    );
    let entries: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatches",
        &(
            rule(&[], &[("placeholder-text", "nothing:YOUR NAME")], &[]),
            1u32,
            0i32,
            true,
        ),
    );
    assert_eq!(
        entries,
        vec![node_ref(12)],
        "alternatives, case-insensitive"
    );
    let clickable: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatches",
        &(rule(&[], &[], &["action(click)"]), 1u32, 0i32, true),
    );
    assert_eq!(clickable, vec![node_ref(14)]);
    let all: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatches",
        &(rule(&[], &[], &[]), 1u32, 0i32, true),
    );
    assert_eq!(
        all,
        [10, 11, 12, 14].map(node_ref),
        "canonical pre-order, not the collection itself"
    );
    let children: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatches",
        &(rule(&[], &[], &[]), 1u32, 0i32, false),
    );
    assert_eq!(children, [10, 11, 14].map(node_ref));
    let first: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatches",
        &(rule(&[], &[], &[]), 1u32, 1i32, true),
    );
    assert_eq!(first, vec![node_ref(10)]);
    let reversed: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatches",
        &(rule(&[], &[], &[]), 4u32, 0i32, true),
    );
    assert_eq!(reversed, [14, 12, 11, 10].map(node_ref));
    let mut focused = rule(&[], &[], &[]);
    focused.0 = vec![1 << 12, 0]; // FOCUSED
    let found: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatches",
        &(focused, 1u32, 0i32, true),
    );
    assert_eq!(found, vec![node_ref(12)]);

    let path = zvariant::ObjectPath::try_from(node(14)).expect("path");
    let before: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatchesTo",
        &(
            path.clone(),
            rule(&[], &[], &[]),
            1u32,
            2u32,
            false,
            0i32,
            true,
        ),
    );
    assert_eq!(before, [12, 11, 10].map(node_ref), "nearest first");
    let path = zvariant::ObjectPath::try_from(node(10)).expect("path");
    let after: Vec<Ref> = h.ok(
        &window,
        collection,
        "GetMatchesFrom",
        &(path, rule(&[], &[], &[]), 1u32, 2u32, 0i32, true),
    );
    assert_eq!(after, [11, 12, 14].map(node_ref));
    let (name, _) = h.err(
        &window,
        collection,
        "GetMatches",
        &(rule(&[], &[], &[]), 1u32),
    );
    assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs");
}

/// Sort order, tree traversal type and the rule's match types decode into
/// their enumerations (`wire.rs`): a number outside one is InvalidArgs naming
/// the argument; every number inside answers as before.
#[test]
fn collection_enumerations_out_of_range_are_invalid_args_naming_the_argument() {
    let h = form();
    let collection = "org.a11y.atspi.Collection";
    let window = node(1);
    let invalid_args = |(name, message): (String, String), argument: &str| {
        assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs", "{message}");
        let named = format!("invalid argument \u{201c}{argument}\u{201d}: ");
        assert!(message.starts_with(&named), "{message}");
    };
    let any = || rule(&[], &[], &[]);
    invalid_args(
        h.err(
            &window,
            collection,
            "GetMatches",
            &(any(), 7u32, 0i32, true),
        ),
        "sortby",
    );
    let mut bad_match = any();
    bad_match.5 = 5; // roles' match type
    invalid_args(
        h.err(
            &window,
            collection,
            "GetMatches",
            &(bad_match, 1u32, 0i32, true),
        ),
        "rule.roles_match",
    );
    let path = zvariant::ObjectPath::try_from(node(10)).expect("path");
    let from = (path.clone(), any(), 1u32, 3u32, 0i32, true);
    invalid_args(h.err(&window, collection, "GetMatchesFrom", &from), "tree");
    let to = (path, any(), 1u32, 3u32, false, 0i32, true);
    invalid_args(h.err(&window, collection, "GetMatchesTo", &to), "tree");
    // Every sort order in range answers; only REVERSE_CANONICAL (4) reverses.
    for sort in 0..=6u32 {
        let found: Vec<Ref> = h.ok(
            &window,
            collection,
            "GetMatches",
            &(any(), sort, 0i32, true),
        );
        let mut expected = [10, 11, 12, 14].map(node_ref).to_vec();
        if sort == 4 {
            expected.reverse();
        }
        assert_eq!(found, expected, "sort order {sort}");
    }
}

/// Grid (2): header row (3) [Name (10), Size (11)]; row group (4) [row (5)
/// [a (12), 1 (13)], row (6, selected) [wide cell (14) spanning 2 columns]].
fn grid() -> Harness {
    let mut window = make(Role::Window, Some("Files"), (0.0, 0.0, 400.0, 300.0));
    window.set_children(vec![NodeId(2)]);
    let mut grid = make(Role::Grid, Some("Files"), (0.0, 0.0, 400.0, 90.0));
    grid.set_children(vec![NodeId(3), NodeId(4)]);
    let row = |children: Vec<NodeId>, y: f64| {
        let mut n = make(Role::Row, None, (0.0, y, 400.0, 30.0));
        n.set_children(children);
        n
    };
    let cell = |role: Role, text: &str, x: f64, y: f64| make(role, Some(text), (x, y, 200.0, 30.0));
    let mut group = make(Role::RowGroup, None, (0.0, 30.0, 400.0, 60.0));
    group.set_children(vec![NodeId(5), NodeId(6)]);
    let mut selected = row(vec![NodeId(14)], 60.0);
    selected.set_selected(true);
    let mut wide = cell(Role::GridCell, "wide", 0.0, 60.0);
    wide.set_column_span(2);
    Harness::custom(full_tree(
        vec![
            (NodeId(1), window),
            (NodeId(2), grid),
            (NodeId(3), row(vec![NodeId(10), NodeId(11)], 0.0)),
            (NodeId(4), group),
            (NodeId(5), row(vec![NodeId(12), NodeId(13)], 30.0)),
            (NodeId(6), selected),
            (NodeId(10), cell(Role::ColumnHeader, "Name", 0.0, 0.0)),
            (NodeId(11), cell(Role::ColumnHeader, "Size", 200.0, 0.0)),
            (NodeId(12), cell(Role::GridCell, "a", 0.0, 30.0)),
            (NodeId(13), cell(Role::GridCell, "1", 200.0, 30.0)),
            (NodeId(14), wide),
        ],
        NodeId(2),
    ))
}

#[test]
fn tables_and_cells() {
    let h = grid();
    let table = "org.a11y.atspi.Table";
    let cell = "org.a11y.atspi.TableCell";
    let grid = node(2);
    assert_eq!(h.prop::<i32>(&grid, table, "NRows"), 3);
    assert_eq!(h.prop::<i32>(&grid, table, "NColumns"), 2);
    assert_eq!(h.prop::<i32>(&grid, table, "NSelectedRows"), 1);
    let at: Ref = h.ok(&grid, table, "GetAccessibleAt", &(1i32, 1i32));
    assert_eq!(at, node_ref(13));
    let at: Ref = h.ok(&grid, table, "GetAccessibleAt", &(2i32, 1i32));
    assert_eq!(at, node_ref(14), "the wide cell covers both columns");
    assert_eq!(
        h.ok::<i32, _>(&grid, table, "GetColumnExtentAt", &(2i32, 0i32)),
        2
    );
    let header: Ref = h.ok(&grid, table, "GetColumnHeader", &(1i32,));
    assert_eq!(header, node_ref(11));
    assert_eq!(
        h.ok::<Vec<i32>, _>(&grid, table, "GetSelectedRows", &()),
        vec![2]
    );
    assert_eq!(h.ok::<i32, _>(&grid, table, "GetIndexAt", &(1i32, 1i32)), 3);
    let extents: (bool, i32, i32, i32, i32, bool) =
        h.ok(&grid, table, "GetRowColumnExtentsAtIndex", &(4i32,));
    assert_eq!(extents, (true, 2, 0, 1, 2, true));
    let (name, _) = h.err(&grid, table, "GetAccessibleAt", &(5i32, 0i32));
    assert_eq!(name, "org.freedesktop.DBus.Error.InvalidArgs");

    let span: (i32, i32, i32, i32) = h.ok(&node(13), cell, "GetRowColumnSpan", &());
    assert_eq!(span, (1, 1, 1, 1));
    let position: (i32, i32) = h.prop(&node(14), cell, "Position");
    assert_eq!(position, (2, 0));
    let table_ref: Ref = h.prop(&node(13), cell, "Table");
    assert_eq!(table_ref, node_ref(2));
    let headers: Vec<Ref> = h.ok(&node(14), cell, "GetColumnHeaderCells", &());
    assert_eq!(headers, vec![node_ref(10), node_ref(11)]);
    let interfaces: Vec<String> = h.ok(&node(12), ACCESSIBLE, "GetInterfaces", &());
    assert!(interfaces.iter().any(|i| i == "org.a11y.atspi.TableCell"));
}

/// Orca 43.1 reads a cell's row and column through `table-cell-index` and
/// Table.GetRowAtIndex/GetColumnAtIndex; the index is GetIndexAt's.
#[test]
fn cells_carry_their_table_index() {
    let h = grid();
    let table = "org.a11y.atspi.Table";
    let index_attr = |id: u64| {
        let attrs: HashMap<String, String> = h.ok(&node(id), ACCESSIBLE, "GetAttributes", &());
        attrs.get("table-cell-index").cloned()
    };
    for (id, row, column) in [
        (10u64, 0i32, 0i32),
        (11, 0, 1),
        (12, 1, 0),
        (13, 1, 1),
        (14, 2, 0),
    ] {
        let expected: i32 = h.ok(&node(2), table, "GetIndexAt", &(row, column));
        assert_eq!(index_attr(id), Some(expected.to_string()), "node {id}");
        let back: (i32, i32) = (
            h.ok(&node(2), table, "GetRowAtIndex", &(expected,)),
            h.ok(&node(2), table, "GetColumnAtIndex", &(expected,)),
        );
        assert_eq!(back, (row, column), "node {id}");
    }
    assert_eq!(index_attr(13), Some("3".to_owned()));
    assert_eq!(index_attr(2), None, "the table itself is no cell");
    assert_eq!(index_attr(5), None, "a row is no cell");
}

#[test]
fn xml_roles_keep_aria_distinctions() {
    let h = grid();
    let attrs: HashMap<String, String> = h.ok(&node(2), ACCESSIBLE, "GetAttributes", &());
    assert_eq!(attrs.get("xml-roles").map(String::as_str), Some("grid"));
    let collection = "org.a11y.atspi.Collection";
    let found: Vec<Ref> = h.ok(
        &node(1),
        collection,
        "GetMatches",
        &(rule(&[], &[("xml-roles", "grid")], &[]), 1u32, 1i32, true),
    );
    assert_eq!(found, vec![node_ref(2)]);
}

#[test]
fn hostile_table_indices_and_spans_stay_bounded() {
    let mut window = make(Role::Window, Some("T"), (0.0, 0.0, 100.0, 100.0));
    window.set_children(vec![NodeId(2)]);
    let mut table = make(Role::Table, None, (0.0, 0.0, 100.0, 100.0));
    table.set_children(vec![NodeId(3)]);
    table.set_row_count(usize::MAX);
    let mut row = make(Role::Row, None, (0.0, 0.0, 100.0, 10.0));
    row.set_children(vec![NodeId(4), NodeId(5)]);
    row.set_row_index(usize::MAX);
    let mut huge = make(Role::Cell, Some("huge"), (0.0, 0.0, 10.0, 10.0));
    huge.set_row_span(usize::MAX);
    huge.set_column_span(usize::MAX);
    let mut far = make(Role::Cell, Some("far"), (10.0, 0.0, 10.0, 10.0));
    far.set_column_index(usize::MAX);
    let h = Harness::custom(full_tree(
        vec![
            (NodeId(1), window),
            (NodeId(2), table),
            (NodeId(3), row),
            (NodeId(4), huge),
            (NodeId(5), far),
        ],
        NodeId(1),
    ));
    assert_eq!(
        h.prop::<i32>(&node(2), "org.a11y.atspi.Table", "NRows"),
        i32::MAX
    );
    let span: (i32, i32, i32, i32) = h.ok(
        &node(5),
        "org.a11y.atspi.TableCell",
        "GetRowColumnSpan",
        &(),
    );
    assert!(span.0 >= 0 && span.1 >= 0, "{span:?}");
    let _: i32 = h.ok(
        &node(2),
        "org.a11y.atspi.Table",
        "GetIndexAt",
        &(i32::MAX, i32::MAX),
    );
    let _: (bool, i32, i32, i32, i32, bool) = h.ok(
        &node(2),
        "org.a11y.atspi.Table",
        "GetRowColumnExtentsAtIndex",
        &(i32::MAX,),
    );
}
