//! Change sets from scripted frames → AT-SPI event signals.

mod common;

use accesskit::{Node, NodeId, Role, TreeId, TreeUpdate};
use common::*;
use newton_atspi_shim::{event_name, events_for, focus_events, EventListeners};
use newton_fixtures::basic_ids::{CHECK_BOX, NAME_INPUT, OK_BUTTON, VOLUME_SLIDER, WINDOW};
use newton_push_protocol::SurfaceId;

const OBJECT: &str = "org.a11y.atspi.Event.Object";

fn events_after(h: &mut Harness, serial: u64) -> Vec<zbus::message::Message> {
    let changes = h.advance_to(serial);
    changes
        .iter()
        .flat_map(|c| events_for(&h.ctx(), c))
        .collect()
}

fn ev(path: &str, member: &str, detail: &str, d1: i32, d2: i32) -> Event {
    (
        path.to_owned(),
        OBJECT.to_owned(),
        member.to_owned(),
        detail.to_owned(),
        d1,
        d2,
    )
}

#[test]
fn first_tree_is_announced_on_the_app_root() {
    let lines = newton_fixtures::basic();
    let mut h = Harness::from_stream(lines, 0);
    let messages = events_after(&mut h, 1);
    let events = decode_events(&messages);
    assert!(
        events.contains(&(
            ROOT.to_owned(),
            OBJECT.to_owned(),
            "ChildrenChanged".into(),
            "add".into(),
            0,
            0
        )),
        "{events:#?}"
    );
    let adds = events.iter().filter(|e| e.2 == "AddAccessible").count();
    assert_eq!(adds, 5, "window and four controls (not the text run)");
    // Parents are added before their children.
    let first_add = events
        .iter()
        .position(|e| e.2 == "AddAccessible")
        .expect("add");
    let window_add = &messages[first_add];
    let (item,): (CacheItem,) = window_add.body().deserialize().expect("cache item");
    assert_eq!(item.0, node_ref(WINDOW.0));
}

#[test]
fn focus_move_emits_focused_states() {
    let mut h = Harness::basic();
    let events = decode_events(&events_after(&mut h, 2));
    let lost = ev(&node(OK_BUTTON.0), "StateChanged", "focused", 0, 0);
    let gained = ev(&node(CHECK_BOX.0), "StateChanged", "focused", 1, 0);
    let lost_at = events.iter().position(|e| *e == lost).expect("focus lost");
    let gained_at = events
        .iter()
        .position(|e| *e == gained)
        .expect("focus gained");
    assert!(lost_at < gained_at);
}

#[test]
fn toggling_a_check_box_emits_checked() {
    let mut h = Harness::basic();
    h.advance_to(2);
    let events = decode_events(&events_after(&mut h, 3));
    assert!(
        events.contains(&ev(&node(CHECK_BOX.0), "StateChanged", "checked", 1, 0)),
        "{events:#?}"
    );
}

#[test]
fn typing_emits_text_changed_before_caret_moved() {
    let mut h = Harness::basic();
    h.advance_to(4);
    let messages = events_after(&mut h, 5);
    let events = decode_events(&messages);
    let input = node(NAME_INPUT.0);
    let insert = events
        .iter()
        .position(|e| *e == ev(&input, "TextChanged", "insert", 5, 1))
        .expect("insert");
    let caret = events
        .iter()
        .position(|e| *e == ev(&input, "TextCaretMoved", "", 6, 0))
        .expect("caret");
    assert!(insert < caret);
    assert_eq!(any_data::<String>(&messages[insert]), "!");
    assert!(!events.iter().any(|e| e.3 == "delete"));

    let events = decode_events(&events_after(&mut h, 6));
    assert!(
        events.contains(&ev(&input, "TextCaretMoved", "", 0, 0)),
        "{events:#?}"
    );
}

#[test]
fn value_change_emits_accessible_value() {
    let mut h = Harness::basic();
    h.advance_to(7);
    let events = decode_events(&events_after(&mut h, 8));
    assert!(
        events.contains(&ev(
            &node(VOLUME_SLIDER.0),
            "PropertyChange",
            "accessible-value",
            0,
            0
        )),
        "{events:#?}"
    );
}

#[test]
fn child_removal_emits_remove_defunct_and_cache_removal() {
    let mut h = Harness::basic();
    let mut window = Node::new(Role::Window);
    window.set_label("Demo");
    window.set_children(vec![OK_BUTTON, CHECK_BOX, NAME_INPUT]);
    let changes = h.commit(TreeUpdate {
        nodes: vec![(WINDOW, window)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: OK_BUTTON,
    });
    let messages = events_for(&h.ctx(), &changes);
    let events = decode_events(&messages);
    let slider = node(VOLUME_SLIDER.0);
    let removed = events
        .iter()
        .position(|e| *e == ev(&node(WINDOW.0), "ChildrenChanged", "remove", 3, 0))
        .expect("children-changed:remove");
    let child: (String, zvariant::OwnedObjectPath) = any_data(&messages[removed]);
    assert_eq!(child.1.as_str(), slider);
    assert!(events.contains(&ev(&slider, "StateChanged", "defunct", 1, 0)));
    let cache_removal = messages
        .iter()
        .find(|m| m.header().member().map(|m| m.as_str()) == Some("RemoveAccessible"))
        .expect("Cache.RemoveAccessible");
    assert_eq!(
        cache_removal.header().path().map(|p| p.as_str()),
        Some(CACHE)
    );
    let (gone,): (Ref,) = cache_removal.body().deserialize().expect("(so)");
    assert_eq!(gone, node_ref(VOLUME_SLIDER.0));
}

#[test]
fn adding_a_child_announces_it_with_its_index() {
    let mut h = Harness::basic();
    let mut window = Node::new(Role::Window);
    window.set_label("Demo");
    window.set_children(vec![
        OK_BUTTON,
        NodeId(50),
        CHECK_BOX,
        NAME_INPUT,
        VOLUME_SLIDER,
    ]);
    let mut label = Node::new(Role::Label);
    label.set_value("Hint");
    let changes = h.commit(TreeUpdate {
        nodes: vec![(WINDOW, window), (NodeId(50), label)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: OK_BUTTON,
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert!(
        events.contains(&ev(&node(WINDOW.0), "ChildrenChanged", "add", 1, 0)),
        "{events:#?}"
    );
    assert!(events.iter().any(|e| e.2 == "AddAccessible"));
    assert_eq!(h.prop::<String>(&node(50), ACCESSIBLE, "Name"), "Hint");
}

#[test]
fn compositor_focus_activates_the_window_then_focuses() {
    let h = Harness::basic();
    let messages = focus_events(&h.ctx(), SurfaceId(1), true);
    let events = decode_events(&messages);
    let window = node(WINDOW.0);
    assert_eq!(
        events[0],
        (
            window.clone(),
            "org.a11y.atspi.Event.Window".into(),
            "Activate".into(),
            String::new(),
            0,
            0
        )
    );
    assert_eq!(any_data::<String>(&messages[0]), "Demo");
    assert_eq!(events[1], ev(&window, "StateChanged", "active", 1, 0));
    assert_eq!(
        events[2],
        ev(&node(OK_BUTTON.0), "StateChanged", "focused", 1, 0)
    );

    let events = decode_events(&focus_events(&h.ctx(), SurfaceId(1), false));
    assert_eq!(events[0].2, "Deactivate");
    assert_eq!(events[1], ev(&window, "StateChanged", "active", 0, 0));
}

#[test]
fn event_names_and_listener_filtering() {
    let h = Harness::basic();
    let messages = focus_events(&h.ctx(), SurfaceId(1), true);
    let names: Vec<(String, String, String)> = messages.iter().filter_map(event_name).collect();
    assert_eq!(
        names[0],
        ("Window".into(), "Activate".into(), String::new())
    );
    assert_eq!(
        names[1],
        ("Object".into(), "StateChanged".into(), "active".into())
    );
    let mut listeners = EventListeners::new();
    listeners.set_registered(&[(":1.9".into(), "Object:StateChanged:Focused".into())]);
    assert!(!listeners.is_needed("Window", "Activate", ""));
    listeners.registered(":1.9", "window:activate");
    assert!(listeners.is_needed("Window", "Activate", ""));
}

#[test]
fn compositor_focus_round_trip_sends_each_event_once() {
    let mut h = Harness::basic();
    let window = node(WINDOW.0);
    let button = node(OK_BUTTON.0);
    let changes = h.apply(newton_push_protocol::SenderMessage::Focus { surface: None });
    let events = decode_events(&newton_atspi_shim::compositor_focus_events(
        &h.ctx(),
        &changes,
    ));
    assert_eq!(
        events,
        vec![
            (
                window.clone(),
                "org.a11y.atspi.Event.Window".into(),
                "Deactivate".into(),
                String::new(),
                0,
                0
            ),
            ev(&window, "StateChanged", "active", 0, 0),
            ev(&button, "StateChanged", "focused", 0, 0),
        ]
    );
    let states: atspi_common::StateSet = h.ok(&button, ACCESSIBLE, "GetState", &());
    assert!(!states.contains(atspi_common::State::Focused));

    let changes = h.apply(newton_push_protocol::SenderMessage::Focus {
        surface: Some(SurfaceId(1)),
    });
    let events = decode_events(&newton_atspi_shim::compositor_focus_events(
        &h.ctx(),
        &changes,
    ));
    assert_eq!(
        events,
        vec![
            (
                window.clone(),
                "org.a11y.atspi.Event.Window".into(),
                "Activate".into(),
                String::new(),
                0,
                0
            ),
            ev(&window, "StateChanged", "active", 1, 0),
            ev(&button, "StateChanged", "focused", 1, 0),
        ]
    );
}

#[test]
fn reparented_child_moves_with_parent_change() {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2), NodeId(3)]);
    let mut panel = Node::new(Role::GenericContainer);
    panel.set_children(vec![NodeId(4)]);
    let mut label = Node::new(Role::Label);
    label.set_value("Moving");
    let mut h = Harness::custom(full_tree(
        vec![
            (NodeId(1), window),
            (NodeId(2), Node::new(Role::Button)),
            (NodeId(3), panel),
            (NodeId(4), label),
        ],
        NodeId(2),
    ));
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(4), NodeId(2), NodeId(3)]);
    let changes = h.commit(TreeUpdate {
        nodes: vec![
            (NodeId(1), window),
            (NodeId(3), Node::new(Role::GenericContainer)),
        ],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    });
    let messages = events_for(&h.ctx(), &changes);
    let events = decode_events(&messages);
    let removed = ev(&node(3), "ChildrenChanged", "remove", 0, 0);
    let added = ev(&node(1), "ChildrenChanged", "add", 0, 0);
    let parent = ev(&node(4), "PropertyChange", "accessible-parent", 0, 0);
    let at = |e: &Event| {
        events
            .iter()
            .position(|x| x == e)
            .unwrap_or_else(|| panic!("{e:?} missing from {events:#?}"))
    };
    assert!(at(&removed) < at(&added) && at(&added) < at(&parent));
    let new_parent: Ref = any_data(&messages[at(&parent)]);
    assert_eq!(new_parent, node_ref(1));
    assert!(
        !events.iter().any(|e| e.3 == "defunct"),
        "a moved node is not defunct"
    );
}

#[test]
fn label_value_renames_the_label_and_what_it_labels() {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2), NodeId(3)]);
    let label = |text: &str| {
        let mut n = Node::new(Role::Label);
        n.set_value(text);
        n
    };
    let mut input = Node::new(Role::TextInput);
    input.set_labelled_by(vec![NodeId(2)]);
    input.set_value("abc");
    let mut h = Harness::custom(full_tree(
        vec![
            (NodeId(1), window),
            (NodeId(2), label("Name")),
            (NodeId(3), input.clone()),
        ],
        NodeId(3),
    ));
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(2), label("Full name"))],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(3),
    });
    let messages = events_for(&h.ctx(), &changes);
    let events = decode_events(&messages);
    let renamed: Vec<(String, String)> = events
        .iter()
        .zip(&messages)
        .filter(|(e, _)| e.3 == "accessible-name")
        .map(|(e, m)| (e.0.clone(), any_data::<String>(m)))
        .collect();
    assert_eq!(
        renamed,
        vec![
            (node(2), "Full name".to_owned()),
            (node(3), "Full name".to_owned())
        ]
    );

    // An input without text runs: its text is its value.
    input.set_value("abXc");
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(3), input)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(3),
    });
    let messages = events_for(&h.ctx(), &changes);
    let events = decode_events(&messages);
    let insert = events
        .iter()
        .position(|e| *e == ev(&node(3), "TextChanged", "insert", 2, 1))
        .expect("insert");
    assert_eq!(any_data::<String>(&messages[insert]), "X");
    assert!(!events.iter().any(|e| e.3 == "accessible-value"));
}

#[test]
fn renaming_a_header_cell_edits_its_text() {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2)]);
    let header = |name: &str| {
        let mut n = Node::new(Role::ColumnHeader);
        n.set_label(name);
        n
    };
    let mut h = Harness::custom(full_tree(
        vec![(NodeId(1), window), (NodeId(2), header("Name"))],
        NodeId(1),
    ));
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(2), header("Names"))],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    });
    let messages = events_for(&h.ctx(), &changes);
    let events = decode_events(&messages);
    assert!(events.iter().any(|e| e.3 == "accessible-name"));
    let insert = events
        .iter()
        .position(|e| *e == ev(&node(2), "TextChanged", "insert", 4, 1))
        .expect("the header's text grows by the inserted letter");
    assert_eq!(any_data::<String>(&messages[insert]), "s");
}

#[test]
fn windows_are_created_and_destroyed() {
    let mut h = Harness::from_stream(newton_fixtures::basic(), 0);
    let events = decode_events(&events_after(&mut h, 1));
    let create = events
        .iter()
        .position(|e| e.1 == "org.a11y.atspi.Event.Window" && e.2 == "Create")
        .expect("window:create");
    assert_eq!(events[create].0, node(WINDOW.0));
    let added = events
        .iter()
        .position(|e| e.0 == ROOT && e.3 == "add")
        .expect("children-changed:add");
    assert!(added < create);

    let changes = h.apply(newton_push_protocol::SenderMessage::DestroySurface {
        surface: SurfaceId(1),
    });
    let events = decode_events(
        &changes
            .iter()
            .flat_map(|c| events_for(&h.ctx(), c))
            .collect::<Vec<_>>(),
    );
    let destroy = events
        .iter()
        .position(|e| e.2 == "Destroy")
        .expect("window:destroy");
    let removed = events
        .iter()
        .position(|e| *e == ev(ROOT, "ChildrenChanged", "remove", 0, 0))
        .expect("children-changed:remove on the app root");
    assert!(destroy < removed);
    assert_eq!(
        events.iter().filter(|e| e.3 == "defunct").count(),
        5,
        "every exposed node"
    );
    let root_children: Vec<Ref> = h.ok(ROOT, ACCESSIBLE, "GetChildren", &());
    assert!(root_children.is_empty());
}

#[test]
fn listeners_skip_unwanted_events_at_build_time() {
    let mut h = Harness::basic();
    let mut button = Node::new(Role::Button);
    button.set_label("OK");
    button.set_bounds(accesskit::Rect::new(30.0, 20.0, 110.0, 50.0));
    button.add_action(accesskit::Action::Click);
    button.add_action(accesskit::Action::Focus);
    let changes = h.commit(TreeUpdate {
        nodes: vec![(OK_BUTTON, button)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: OK_BUTTON,
    });
    let all = decode_events(&events_for(&h.ctx(), &changes));
    assert!(all.iter().any(|e| e.2 == "BoundsChanged"), "{all:#?}");
    let mut listeners = EventListeners::new();
    listeners.set_registered(&[(":1.9".into(), "object:state-changed".into())]);
    let wanted = decode_events(&newton_atspi_shim::events_for_listeners(
        &h.ctx(),
        &changes,
        &listeners,
    ));
    assert!(!wanted.iter().any(|e| e.2 == "BoundsChanged"));
    listeners.registered(":1.9", "object:bounds-changed");
    let wanted = decode_events(&newton_atspi_shim::events_for_listeners(
        &h.ctx(),
        &changes,
        &listeners,
    ));
    assert_eq!(wanted, all);
}

#[test]
fn active_descendant_moves_focus_between_items() {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2)]);
    let list = |active: u64| {
        let mut n = Node::new(Role::ListBox);
        n.set_children(vec![NodeId(3), NodeId(4)]);
        n.set_active_descendant(NodeId(active));
        n.add_action(accesskit::Action::Focus);
        n
    };
    let option = |label: &str| {
        let mut n = Node::new(Role::ListBoxOption);
        n.set_label(label);
        n
    };
    let mut h = Harness::custom(full_tree(
        vec![
            (NodeId(1), window),
            (NodeId(2), list(3)),
            (NodeId(3), option("One")),
            (NodeId(4), option("Two")),
        ],
        NodeId(2),
    ));
    let states: atspi_common::StateSet = h.ok(&node(3), ACCESSIBLE, "GetState", &());
    assert!(
        states.contains(atspi_common::State::Focused),
        "the active descendant has focus"
    );
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(2), list(4))],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    });
    let messages = events_for(&h.ctx(), &changes);
    let events = decode_events(&messages);
    let lost = events
        .iter()
        .position(|e| *e == ev(&node(3), "StateChanged", "focused", 0, 0))
        .expect("old item unfocused");
    let changed = events
        .iter()
        .position(|e| *e == ev(&node(2), "ActiveDescendantChanged", "", 1, 0))
        .expect("descendant");
    let gained = events
        .iter()
        .position(|e| *e == ev(&node(4), "StateChanged", "focused", 1, 0))
        .expect("new item focused");
    assert!(
        changed < lost && lost < gained,
        "descendant first, then the focus move: {events:#?}"
    );
    let focus_events = events.iter().filter(|e| e.3 == "focused").count();
    assert_eq!(focus_events, 2, "each focus state once: {events:#?}");
    let child: Ref = any_data(&messages[changed]);
    assert_eq!(child, node_ref(4));
}

#[test]
fn dialogs_activate_with_focus_and_documents_announce_load() {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2), NodeId(3), NodeId(5)]);
    let mut dialog = Node::new(Role::Dialog);
    dialog.set_label("Confirm");
    dialog.set_children(vec![NodeId(4)]);
    let focusable = |label: &str| {
        let mut n = Node::new(Role::Button);
        n.set_label(label);
        n.add_action(accesskit::Action::Focus);
        n
    };
    let mut h = Harness::custom(full_tree(
        vec![
            (NodeId(1), window),
            (NodeId(2), focusable("Open")),
            (NodeId(3), dialog),
            (NodeId(4), focusable("Yes")),
            (NodeId(5), Node::new(Role::Document)),
        ],
        NodeId(2),
    ));
    let states: atspi_common::StateSet = h.ok(&node(3), ACCESSIBLE, "GetState", &());
    assert!(!states.contains(atspi_common::State::Active));
    let changes = h.commit(TreeUpdate {
        nodes: vec![],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(4),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    let active = events
        .iter()
        .position(|e| *e == ev(&node(3), "StateChanged", "active", 1, 0))
        .expect("dialog active");
    let focused = events
        .iter()
        .position(|e| *e == ev(&node(4), "StateChanged", "focused", 1, 0))
        .expect("focus");
    assert!(active < focused);
    let states: atspi_common::StateSet = h.ok(&node(3), ACCESSIBLE, "GetState", &());
    assert!(states.contains(atspi_common::State::Active));
    let changes = h.commit(TreeUpdate {
        nodes: vec![],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert!(
        events.contains(&ev(&node(3), "StateChanged", "active", 0, 0)),
        "{events:#?}"
    );

    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2)]);
    let mut fresh = Harness::custom(full_tree(
        vec![(NodeId(1), Node::new(Role::Window))],
        NodeId(1),
    ));
    let changes = fresh.apply(newton_push_protocol::SenderMessage::CreateSurface {
        surface: SurfaceId(2),
        title: None,
    });
    assert!(changes.is_empty());
    let created = fresh
        .replica
        .commit(
            SurfaceId(2),
            vec![full_tree(
                vec![(NodeId(1), window), (NodeId(2), Node::new(Role::Document))],
                NodeId(2),
            )],
            0,
        )
        .expect("second surface");
    let events = decode_events(&events_for(&fresh.ctx(), &created));
    assert!(
        events.contains(&ev(ROOT, "ChildrenChanged", "add", 1, 0)),
        "the second window is the app root's second child: {events:#?}"
    );
    assert!(
        events.contains(&(
            "/org/a11y/atspi/accessible/2_2".to_owned(),
            "org.a11y.atspi.Event.Document".to_owned(),
            "LoadComplete".to_owned(),
            String::new(),
            0,
            0
        )),
        "{events:#?}"
    );
}

#[test]
fn a_node_that_changes_role_in_place_is_re_added_with_its_new_interfaces() {
    // egui reuses node ids: the same id is a label in one frame and a slider
    // in the next. libatspi keeps interfaces and states from the last cache
    // item, so the bridge must send a fresh one before the role change.
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2)]);
    let mut label = Node::new(Role::Label);
    label.set_value("Brightness");
    let mut h = Harness::custom(full_tree(
        vec![(NodeId(1), window), (NodeId(2), label)],
        NodeId(1),
    ));
    let mut slider = Node::new(Role::Slider);
    slider.set_label("Brightness");
    slider.set_numeric_value(50.0);
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(2), slider)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    });
    let messages = events_for(&h.ctx(), &changes);
    let events = decode_events(&messages);
    let added = events
        .iter()
        .position(|e| e.2 == "AddAccessible")
        .expect("a fresh cache item");
    let role_changed = events
        .iter()
        .position(|e| e.0 == node(2) && e.3 == "accessible-role")
        .expect("accessible-role");
    assert!(added < role_changed, "{events:#?}");
    let (item,): (CacheItem,) = messages[added].body().deserialize().expect("cache item");
    assert_eq!(item.0, node_ref(2));
    assert!(
        item.5.iter().any(|i| i == "org.a11y.atspi.Value"),
        "{:?}",
        item.5
    );
    assert!(
        !item.5.iter().any(|i| i == "org.a11y.atspi.Text"),
        "{:?}",
        item.5
    );
    assert_eq!(item.7, 51, "slider");

    // A plain value change does not re-send the item.
    let mut slider = Node::new(Role::Slider);
    slider.set_label("Brightness");
    slider.set_numeric_value(60.0);
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(2), slider)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert!(
        !events.iter().any(|e| e.2 == "AddAccessible"),
        "{events:#?}"
    );
    assert!(
        events.iter().any(|e| e.3 == "accessible-value"),
        "{events:#?}"
    );

    // A slider that becomes a radio button loses Value: a fresh item, and no
    // value event that would send clients to the interface that is gone.
    let mut radio = Node::new(Role::RadioButton);
    radio.set_label("Small");
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(2), radio)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert!(events.iter().any(|e| e.2 == "AddAccessible"), "{events:#?}");
    assert!(
        !events.iter().any(|e| e.3 == "accessible-value"),
        "{events:#?}"
    );
}

/// A window with a toggle button (2), a text input holding "10.0" (3, its
/// run 4) and a progress indicator (5).
fn toggle_input_progress() -> Vec<(NodeId, Node)> {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2), NodeId(3), NodeId(5)]);
    let mut toggle = Node::new(Role::Button);
    toggle.set_label("Bold");
    toggle.set_toggled(accesskit::Toggled::False);
    toggle.add_action(accesskit::Action::Focus);
    let mut input = Node::new(Role::TextInput);
    input.set_label("Speed");
    input.add_action(accesskit::Action::Focus);
    input.set_children(vec![NodeId(4)]);
    let mut run = Node::new(Role::TextRun);
    run.set_value("10.0");
    run.set_character_lengths(vec![1, 1, 1, 1]);
    let progress = Node::new(Role::ProgressIndicator);
    vec![
        (NodeId(1), window),
        (NodeId(2), toggle),
        (NodeId(3), input),
        (NodeId(4), run),
        (NodeId(5), progress),
    ]
}

fn with_selection(mut input: Node, anchor: usize, focus: usize) -> Node {
    let at = |character_index| accesskit::TextPosition {
        node: NodeId(4),
        character_index,
    };
    input.set_text_selection(accesskit::TextSelection {
        anchor: at(anchor),
        focus: at(focus),
    });
    input
}

fn node_of(nodes: &[(NodeId, Node)], id: u64) -> Node {
    nodes
        .iter()
        .find(|(n, _)| *n == NodeId(id))
        .map(|(_, node)| node.clone())
        .expect("node in the test tree")
}

fn state_events(events: &[Event], path: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.0 == path && e.2 == "StateChanged")
        .map(|e| format!("{}={}", e.3, e.4))
        .collect()
}

#[test]
fn a_toggle_button_changing_state_sends_one_state_change() {
    // Orca 43.1 spoke "pressed" twice when both checked and pressed changed.
    let nodes = toggle_input_progress();
    let mut h = Harness::custom(full_tree(nodes.clone(), NodeId(2)));
    let mut toggle = node_of(&nodes, 2);
    toggle.set_toggled(accesskit::Toggled::True);
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(2), toggle.clone())],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert_eq!(state_events(&events, &node(2)), ["pressed=1"]);
    toggle.set_toggled(accesskit::Toggled::False);
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(2), toggle)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert_eq!(state_events(&events, &node(2)), ["pressed=0"]);
}

#[test]
fn a_selection_collapsing_after_focus_left_sends_no_selection_change() {
    // egui drops a spin button's selected "10.0" a frame after Tab moved
    // focus on; Orca 43.1 said "Text unselected." for it.
    let mut nodes = toggle_input_progress();
    let selected = with_selection(node_of(&nodes, 3), 0, 4);
    nodes[2].1 = selected;
    let mut h = Harness::custom(full_tree(nodes.clone(), NodeId(3)));
    h.commit(TreeUpdate {
        nodes: vec![],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    });
    let collapsed = with_selection(node_of(&nodes, 3), 4, 4);
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(3), collapsed.clone())],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert!(
        !events.iter().any(|e| e.2 == "TextSelectionChanged"),
        "{events:#?}"
    );

    // The same collapse on the focused field is the user's and is sent.
    let mut h = Harness::custom(full_tree(nodes, NodeId(3)));
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(3), collapsed)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(3),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert!(
        events.contains(&ev(&node(3), "TextSelectionChanged", "", 0, 0)),
        "{events:#?}"
    );
}

#[test]
fn a_progress_indicator_losing_its_value_becomes_indeterminate() {
    let mut nodes = toggle_input_progress();
    nodes[4].1.set_numeric_value(11.0);
    let mut h = Harness::custom(full_tree(nodes, NodeId(2)));
    let states: atspi_common::StateSet = h.ok(&node(5), ACCESSIBLE, "GetState", &());
    assert!(!states.contains(atspi_common::State::Indeterminate));
    let changes = h.commit(TreeUpdate {
        nodes: vec![(NodeId(5), Node::new(Role::ProgressIndicator))],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    });
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert!(
        events.contains(&ev(&node(5), "StateChanged", "indeterminate", 1, 0)),
        "{events:#?}"
    );
    let states: atspi_common::StateSet = h.ok(&node(5), ACCESSIBLE, "GetState", &());
    assert!(states.contains(atspi_common::State::Indeterminate));
}

/// A 200×100 window (1) with a button on screen (2) and one scrolled out of
/// view below it (3), focus on `focus`.
fn window_with_a_button_off_screen(focus: u64) -> TreeUpdate {
    let rect = |y0: f64| accesskit::Rect {
        x0: 10.0,
        y0,
        x1: 90.0,
        y1: y0 + 20.0,
    };
    let mut window = Node::new(Role::Window);
    window.set_bounds(accesskit::Rect {
        x0: 0.0,
        y0: 0.0,
        x1: 200.0,
        y1: 100.0,
    });
    window.set_children(vec![NodeId(2), NodeId(3)]);
    let button = |label: &str, y0: f64| {
        let mut b = Node::new(Role::Button);
        b.set_label(label);
        b.set_bounds(rect(y0));
        b.add_action(accesskit::Action::Focus);
        b
    };
    TreeUpdate {
        nodes: vec![
            (NodeId(1), window),
            (NodeId(2), button("Seen", 10.0)),
            (NodeId(3), button("Below", 500.0)),
        ],
        tree: Some(accesskit::TreeInfo::new(NodeId(1))),
        tree_id: TreeId::ROOT,
        focus: NodeId(focus),
    }
}

#[test]
fn a_focused_node_off_screen_is_showing_while_it_has_focus() {
    // A grid moving focus to a cell it has not scrolled into view: Orca 43.1
    // reads a focused cell's row by its showing cells and said nothing.
    let mut h = Harness::custom(window_with_a_button_off_screen(2));
    let showing = |h: &Harness, id: u64| {
        let states: atspi_common::StateSet = h.ok(&node(id), ACCESSIBLE, "GetState", &());
        states.contains(atspi_common::State::Showing)
    };
    assert!(showing(&h, 2), "on screen");
    assert!(!showing(&h, 3), "off screen, not focused");

    let changes = h.commit(window_with_a_button_off_screen(3));
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert_eq!(
        state_events(&events, &node(3)),
        ["showing=1", "focused=1"],
        "showing before focused, so Orca finds it showing"
    );
    assert_eq!(
        state_events(&events, &node(2)),
        ["focused=0"],
        "stays showing"
    );
    assert!(showing(&h, 3), "focused");

    let changes = h.commit(window_with_a_button_off_screen(2));
    let events = decode_events(&events_for(&h.ctx(), &changes));
    assert_eq!(state_events(&events, &node(3)), ["focused=0", "showing=0"]);
    assert!(!showing(&h, 3), "off screen again once focus left");

    // The window losing compositor focus takes the focused state, and with it
    // an off-screen node's showing; gaining it gives both back.
    h.commit(window_with_a_button_off_screen(3));
    let compositor_focus = |h: &mut Harness, surface: Option<SurfaceId>| {
        let changes = h.apply(newton_push_protocol::SenderMessage::Focus { surface });
        let messages = newton_atspi_shim::compositor_focus_events(&h.ctx(), &changes);
        decode_events(&messages)
    };
    let lost = compositor_focus(&mut h, None);
    assert_eq!(state_events(&lost, &node(3)), ["focused=0", "showing=0"]);
    assert!(!showing(&h, 3), "the window lost focus");
    let gained = compositor_focus(&mut h, Some(SurfaceId(1)));
    assert_eq!(state_events(&gained, &node(3)), ["showing=1", "focused=1"]);
    assert!(showing(&h, 3), "the window has focus again");
}

/// A web engine's document (per-block text, docs/interfaces.md): window 1 → document 2 →
/// paragraph 3 ("Hello " then link 5 "there") and heading 7 ("Title"). The caret is in the
/// link's text.
fn web_document(greeting: &str, caret: usize) -> TreeUpdate {
    let run = |text: &str| {
        let mut node = Node::new(Role::TextRun);
        node.set_value(text);
        node.set_character_lengths(vec![1; text.chars().count()]);
        node
    };
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(2)]);
    let mut document = Node::new(Role::Document);
    document.set_children(vec![NodeId(3), NodeId(7)]);
    let at = |character_index| accesskit::TextPosition {
        node: NodeId(6),
        character_index,
    };
    document.set_text_selection(accesskit::TextSelection {
        anchor: at(caret),
        focus: at(caret),
    });
    let mut paragraph = Node::new(Role::Paragraph);
    paragraph.set_children(vec![NodeId(4), NodeId(5)]);
    let mut link = Node::new(Role::Link);
    link.set_children(vec![NodeId(6)]);
    let mut heading = Node::new(Role::Heading);
    heading.set_children(vec![NodeId(8)]);
    TreeUpdate {
        nodes: vec![
            (NodeId(1), window),
            (NodeId(2), document),
            (NodeId(3), paragraph),
            (NodeId(4), run(greeting)),
            (NodeId(5), link),
            (NodeId(6), run("there")),
            (NodeId(7), heading),
            (NodeId(8), run("Title")),
        ],
        tree: Some(accesskit::TreeInfo::new(NodeId(1))),
        tree_id: TreeId::ROOT,
        focus: NodeId(2),
    }
}

/// Under the per-block layout an edit and a caret move go to the block that shows them, with
/// offsets in that block's text, not to the document with offsets in its whole text.
#[test]
fn a_web_document_reports_text_changes_on_the_block() {
    let mut h = Harness::custom(web_document("Hello ", 1));
    h.info.toolkit_name = Some("Chromium".to_owned());
    let changes = h.commit(web_document("Hello, ", 3));
    let messages = events_for(&h.ctx(), &changes);
    let events = decode_events(&messages);
    let (paragraph, link, document) = (node(3), node(5), node(2));
    assert!(
        events.contains(&ev(&paragraph, "TextChanged", "insert", 5, 1)),
        "{events:#?}"
    );
    assert!(
        events.contains(&ev(&link, "TextCaretMoved", "", 3, 0)),
        "{events:#?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| e.0 == document && e.2.starts_with("Text")),
        "the document's own text (one U+FFFC per block) did not change: {events:#?}"
    );
}
