//! Method calls against the `basic` fixture's replica, through `handle_call`.

mod common;

use std::collections::HashMap;

use accesskit::{Action, ActionData, NodeId, TreeId};
use atspi_common::{State, StateSet};
use common::*;
use newton_fixtures::basic_ids::{
    CHECK_BOX, NAME_INPUT, NAME_RUN, OK_BUTTON, VOLUME_SLIDER, WINDOW,
};
use zvariant::{OwnedObjectPath, OwnedValue};

const ERR_UNKNOWN_OBJECT: &str = "org.freedesktop.DBus.Error.UnknownObject";
const ERR_INVALID_ARGS: &str = "org.freedesktop.DBus.Error.InvalidArgs";

fn states(h: &Harness, path: &str) -> StateSet {
    h.ok(path, ACCESSIBLE, "GetState", &())
}

#[test]
fn app_root_describes_the_application() {
    let h = Harness::basic();
    assert_eq!(
        h.prop::<String>(ROOT, ACCESSIBLE, "Name"),
        "Newton basic demo"
    );
    assert_eq!(h.prop::<i32>(ROOT, ACCESSIBLE, "ChildCount"), 1);
    let parent: (String, OwnedObjectPath) = h.prop(ROOT, ACCESSIBLE, "Parent");
    assert_eq!((parent.0.as_str(), parent.1.as_str()), DESKTOP);
    assert_eq!(h.ok::<u32, _>(ROOT, ACCESSIBLE, "GetRole", &()), 75);
    let children: Vec<Ref> = h.ok(ROOT, ACCESSIBLE, "GetChildren", &());
    assert_eq!(children, vec![node_ref(WINDOW.0)]);
    let first: Ref = h.ok(ROOT, ACCESSIBLE, "GetChildAtIndex", &(0i32,));
    assert_eq!(first, node_ref(WINDOW.0));
    let interfaces: Vec<String> = h.ok(ROOT, ACCESSIBLE, "GetInterfaces", &());
    assert_eq!(
        interfaces,
        ["org.a11y.atspi.Accessible", "org.a11y.atspi.Application"]
    );
}

#[test]
fn application_interface_and_id() {
    let h = Harness::basic();
    let app = "org.a11y.atspi.Application";
    assert_eq!(h.prop::<String>(ROOT, app, "AtspiVersion"), "2.1");
    assert!(!h.prop::<String>(ROOT, app, "ToolkitName").is_empty());
    assert_eq!(
        h.ok::<String, _>(ROOT, app, "GetApplicationBusAddress", &()),
        ""
    );
    assert!(!h
        .ok::<String, _>(ROOT, app, "GetLocale", &(5u32,))
        .is_empty());

    let handled = h.handle(
        ROOT,
        "org.freedesktop.DBus.Properties",
        "Set",
        &(app, "Id", zvariant::Value::I32(7)),
    );
    assert_eq!(handled.set_app_id, Some(7));
    // The registry sends it without waiting: still reported, reply not wanted.
    let call = method_call(
        ROOT,
        Some("org.freedesktop.DBus.Properties"),
        "Set",
        &(app, "Id", zvariant::Value::I32(9)),
        true,
    );
    let handled = newton_atspi_shim::handle_call(&h.ctx(), &call).expect("side effect reported");
    assert_eq!(handled.set_app_id, Some(9));
    assert!(!handled.reply_wanted);
    // Everything else is read-only.
    let (name, _) = h.err(
        ROOT,
        "org.freedesktop.DBus.Properties",
        "Set",
        &(app, "ToolkitName", zvariant::Value::from("x")),
    );
    assert_eq!(name, "org.freedesktop.DBus.Error.Failed");
    let (name, _) = h.err(
        ROOT,
        "org.freedesktop.DBus.Properties",
        "Set",
        &(app, "Id", zvariant::Value::from("x")),
    );
    assert_eq!(name, ERR_INVALID_ARGS);
}

#[test]
fn window_is_an_active_frame_under_the_root() {
    let h = Harness::basic();
    let window = node(WINDOW.0);
    assert_eq!(h.ok::<u32, _>(&window, ACCESSIBLE, "GetRole", &()), 23);
    assert_eq!(h.prop::<String>(&window, ACCESSIBLE, "Name"), "Demo");
    let parent: (String, OwnedObjectPath) = h.prop(&window, ACCESSIBLE, "Parent");
    assert_eq!(parent.1.as_str(), ROOT);
    assert_eq!(
        h.ok::<i32, _>(&window, ACCESSIBLE, "GetIndexInParent", &()),
        0
    );
    let set = states(&h, &window);
    assert!(
        set.contains(State::Active) && set.contains(State::Showing) && set.contains(State::Enabled)
    );
    let children: Vec<Ref> = h.ok(&window, ACCESSIBLE, "GetChildren", &());
    assert_eq!(
        children,
        [OK_BUTTON, CHECK_BOX, NAME_INPUT, VOLUME_SLIDER].map(|id| node_ref(id.0))
    );
    assert_eq!(h.prop::<i32>(&window, ACCESSIBLE, "ChildCount"), 4);
}

#[test]
fn children_indices_and_text_runs() {
    let h = Harness::basic();
    assert_eq!(
        h.ok::<i32, _>(&node(VOLUME_SLIDER.0), ACCESSIBLE, "GetIndexInParent", &()),
        3
    );
    let third: Ref = h.ok(&node(WINDOW.0), ACCESSIBLE, "GetChildAtIndex", &(2i32,));
    assert_eq!(third, node_ref(NAME_INPUT.0));
    // The text run belongs to the input's text: not a child, not an object.
    assert_eq!(
        h.prop::<i32>(&node(NAME_INPUT.0), ACCESSIBLE, "ChildCount"),
        0
    );
    let (name, text) = h.err(&node(NAME_RUN.0), ACCESSIBLE, "GetRole", &());
    assert_eq!(name, ERR_UNKNOWN_OBJECT);
    assert!(text.contains("Object does not exist at path"), "{text}");
}

#[test]
fn roles_names_and_states_of_controls() {
    let h = Harness::basic();
    let button = node(OK_BUTTON.0);
    assert_eq!(h.ok::<u32, _>(&button, ACCESSIBLE, "GetRole", &()), 43);
    assert_eq!(
        h.ok::<String, _>(&button, ACCESSIBLE, "GetLocalizedRoleName", &()),
        "push button"
    );
    assert_eq!(h.prop::<String>(&button, ACCESSIBLE, "Name"), "OK");
    let set = states(&h, &button);
    assert!(
        set.contains(State::Focusable) && set.contains(State::Focused),
        "{set:?}"
    );

    let check = node(CHECK_BOX.0);
    assert_eq!(h.ok::<u32, _>(&check, ACCESSIBLE, "GetRole", &()), 7);
    let set = states(&h, &check);
    assert!(
        set.contains(State::Checkable)
            && !set.contains(State::Checked)
            && !set.contains(State::Focused)
    );

    let input = node(NAME_INPUT.0);
    assert_eq!(h.ok::<u32, _>(&input, ACCESSIBLE, "GetRole", &()), 79);
    let set = states(&h, &input);
    assert!(set.contains(State::Editable) && set.contains(State::SingleLine));

    assert_eq!(
        h.ok::<u32, _>(&node(VOLUME_SLIDER.0), ACCESSIBLE, "GetRole", &()),
        51
    );
}

#[test]
fn interfaces_match_what_works() {
    let h = Harness::basic();
    let slider: Vec<String> = h.ok(&node(VOLUME_SLIDER.0), ACCESSIBLE, "GetInterfaces", &());
    for iface in [
        "org.a11y.atspi.Accessible",
        "org.a11y.atspi.Action",
        "org.a11y.atspi.Component",
        "org.a11y.atspi.Value",
    ] {
        assert!(
            slider.iter().any(|i| i == iface),
            "{iface} missing from {slider:?}"
        );
    }
    assert!(!slider.iter().any(|i| i == "org.a11y.atspi.Selection"));
    let (name, _) = h.err(&node(OK_BUTTON.0), "org.a11y.atspi.Value", "GetAll", &());
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownInterface");
}

#[test]
fn extents_in_screen_window_and_parent_coordinates() {
    let h = Harness::basic();
    let button = node(OK_BUTTON.0);
    let component = "org.a11y.atspi.Component";
    // The fixture places the surface at (100, 50).
    let screen: (i32, i32, i32, i32) = h.ok(&button, component, "GetExtents", &(0u32,));
    assert_eq!(screen, (120, 70, 80, 30));
    let window: (i32, i32, i32, i32) = h.ok(&button, component, "GetExtents", &(1u32,));
    assert_eq!(window, (20, 20, 80, 30));
    let parent: (i32, i32, i32, i32) = h.ok(&button, component, "GetExtents", &(2u32,));
    assert_eq!(parent, (20, 20, 80, 30));
    let position: (i32, i32) = h.ok(&button, component, "GetPosition", &(0u32,));
    assert_eq!(position, (120, 70));
    assert!(h.ok::<bool, _>(&button, component, "Contains", &(130i32, 80i32, 0u32)));
    assert!(!h.ok::<bool, _>(&button, component, "Contains", &(30i32, 30i32, 0u32)));
    let hit: Ref = h.ok(
        &node(WINDOW.0),
        component,
        "GetAccessibleAtPoint",
        &(130i32, 80i32, 0u32),
    );
    assert_eq!(hit, node_ref(OK_BUTTON.0));
    let hit: Ref = h.ok(
        &node(WINDOW.0),
        component,
        "GetAccessibleAtPoint",
        &(30i32, 30i32, 1u32),
    );
    assert_eq!(hit, node_ref(OK_BUTTON.0));
    let miss: Ref = h.ok(
        &node(WINDOW.0),
        component,
        "GetAccessibleAtPoint",
        &(5i32, 5i32, 1u32),
    );
    assert_eq!(miss.1.as_str(), "/org/a11y/atspi/null");
    assert_eq!(
        h.ok::<u32, _>(&node(WINDOW.0), component, "GetLayer", &()),
        7
    );
    assert_eq!(h.ok::<u32, _>(&button, component, "GetLayer", &()), 3);
    let (name, _) = h.err(&button, component, "GetExtents", &(9u32,));
    assert_eq!(name, ERR_INVALID_ARGS);
}

#[test]
fn a_container_without_bounds_is_a_component_enclosing_its_children() {
    use accesskit::{NodeId, Role};
    // egui wraps rows in bound-less GenericContainers; Orca's flat review
    // skips any object whose extents it cannot read, and all inside it.
    let mut row = accesskit::Node::new(Role::GenericContainer);
    row.set_children(vec![NodeId(3), NodeId(4)]);
    let mut empty = accesskit::Node::new(Role::GenericContainer);
    empty.set_children(vec![]);
    let mut window = make(Role::Window, Some("W"), (0.0, 0.0, 400.0, 300.0));
    window.set_children(vec![NodeId(2), NodeId(5)]);
    let tree = full_tree(
        vec![
            (NodeId(1), window),
            (NodeId(2), row),
            (
                NodeId(3),
                make(Role::Button, Some("A"), (10.0, 20.0, 30.0, 10.0)),
            ),
            (
                NodeId(4),
                make(Role::Button, Some("B"), (50.0, 25.0, 20.0, 15.0)),
            ),
            (NodeId(5), empty),
        ],
        NodeId(3),
    );
    let h = Harness::custom(tree);
    let component = "org.a11y.atspi.Component";
    for id in [2, 5] {
        let interfaces: Vec<String> = h.ok(&node(id), ACCESSIBLE, "GetInterfaces", &());
        assert!(
            interfaces.iter().any(|i| i == component),
            "node {id}: {interfaces:?}"
        );
    }
    let row_screen: (i32, i32, i32, i32) = h.ok(&node(2), component, "GetExtents", &(0u32,));
    assert_eq!(row_screen, (110, 70, 60, 20));
    // A child's PARENT coordinates are relative to the enclosing box.
    let b_in_row: (i32, i32, i32, i32) = h.ok(&node(4), component, "GetExtents", &(2u32,));
    assert_eq!(b_in_row, (40, 5, 20, 15));
    // Nothing inside: an empty box at the surface origin, which Orca accepts
    // for an object with children and skips for one without.
    let empty_screen: (i32, i32, i32, i32) = h.ok(&node(5), component, "GetExtents", &(0u32,));
    assert_eq!(empty_screen, (100, 50, 0, 0));
    let hit: Ref = h.ok(
        &node(1),
        component,
        "GetAccessibleAtPoint",
        &(155i32, 80i32, 0u32),
    );
    assert_eq!(hit, node_ref(4));
}

#[test]
fn actions_and_do_action() {
    let h = Harness::basic();
    let button = node(OK_BUTTON.0);
    let action = "org.a11y.atspi.Action";
    assert_eq!(h.prop::<i32>(&button, action, "NActions"), 2);
    let list: Vec<(String, String, String)> = h.ok(&button, action, "GetActions", &());
    let names: Vec<&str> = list.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["click", "focus"]);
    assert_eq!(
        h.ok::<String, _>(&button, action, "GetName", &(0i32,)),
        "click"
    );
    let handled = h.handle(&button, action, "DoAction", &(0i32,));
    assert_eq!(handled.reply.body().deserialize::<bool>().ok(), Some(true));
    let request = handled.action.expect("an action request");
    assert_eq!(request.action, Action::Click);
    assert_eq!(request.target_node, OK_BUTTON);
    assert_eq!(request.target_tree, TreeId::ROOT);
    let (name, _) = h.err(&button, action, "DoAction", &(2i32,));
    assert_eq!(name, ERR_INVALID_ARGS);
    let (name, _) = h.err(&button, action, "GetName", &(-1i32,));
    assert_eq!(name, ERR_INVALID_ARGS);

    let slider: Vec<(String, String, String)> =
        h.ok(&node(VOLUME_SLIDER.0), action, "GetActions", &());
    let names: Vec<&str> = slider.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["focus", "increment", "decrement"]);

    let handled = h.handle(&button, "org.a11y.atspi.Component", "GrabFocus", &());
    assert_eq!(
        handled.action.map(|a| (a.action, a.target_node)),
        Some((Action::Focus, OK_BUTTON))
    );
}

#[test]
fn value_interface_reads_and_sets() {
    let h = Harness::basic();
    let slider = node(VOLUME_SLIDER.0);
    let value = "org.a11y.atspi.Value";
    assert_eq!(h.prop::<f64>(&slider, value, "CurrentValue"), 50.0);
    assert_eq!(h.prop::<f64>(&slider, value, "MinimumValue"), 0.0);
    assert_eq!(h.prop::<f64>(&slider, value, "MaximumValue"), 100.0);
    assert_eq!(h.prop::<f64>(&slider, value, "MinimumIncrement"), 1.0);
    let all: HashMap<String, OwnedValue> = h.ok(
        &slider,
        "org.freedesktop.DBus.Properties",
        "GetAll",
        &(value,),
    );
    assert_eq!(all.len(), 6, "version and the five values: {all:?}");
    let handled = h.handle(
        &slider,
        "org.freedesktop.DBus.Properties",
        "Set",
        &(value, "CurrentValue", zvariant::Value::F64(75.0)),
    );
    let request = handled.action.expect("SetValue request");
    assert_eq!(request.action, Action::SetValue);
    assert_eq!(request.target_node, VOLUME_SLIDER);
    assert_eq!(request.data, Some(ActionData::NumericValue(75.0)));
}

#[test]
fn errors_for_bad_paths_indices_and_signatures() {
    let h = Harness::basic();
    for path in [
        "/org/a11y/atspi/accessible/1_999",
        "/org/a11y/atspi/accessible/7_1",
        "/org/a11y/atspi/accessible/x",
    ] {
        let (name, text) = h.err(path, ACCESSIBLE, "GetRole", &());
        assert_eq!(name, ERR_UNKNOWN_OBJECT);
        assert_eq!(
            text,
            format!("Object does not exist at path \u{201c}{path}\u{201d}")
        );
    }
    let window = node(WINDOW.0);
    let (name, text) = h.err(&window, ACCESSIBLE, "GetChildAtIndex", &(4i32,));
    assert_eq!(name, ERR_INVALID_ARGS, "{text}");
    let (name, _) = h.err(&window, ACCESSIBLE, "GetChildAtIndex", &(-1i32,));
    assert_eq!(name, ERR_INVALID_ARGS);
    let (name, _) = h.err(&window, ACCESSIBLE, "GetChildAtIndex", &("zero",));
    assert_eq!(name, ERR_INVALID_ARGS);
    let (name, _) = h.err(&window, ACCESSIBLE, "GetRole", &(1i32,));
    assert_eq!(name, ERR_INVALID_ARGS);
    let (name, _) = h.err(&window, ACCESSIBLE, "Frobnicate", &());
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownMethod");
    let (name, _) = h.err(&window, "org.example.Nope", "GetRole", &());
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownInterface");
    let (name, _) = h.err(
        &window,
        "org.freedesktop.DBus.Properties",
        "Get",
        &(ACCESSIBLE, "Nope"),
    );
    assert_eq!(name, "org.freedesktop.DBus.Error.UnknownProperty");
    // No reply wanted and no side effect: nothing to send.
    let call = method_call(&window, Some(ACCESSIBLE), "GetRole", &(), true);
    assert!(newton_atspi_shim::handle_call(&h.ctx(), &call).is_none());
}

#[test]
fn peer_introspection_and_calls_without_interface() {
    let h = Harness::basic();
    let _: () = h.ok("/", "org.freedesktop.DBus.Peer", "Ping", &());
    let id: String = h.ok("/", "org.freedesktop.DBus.Peer", "GetMachineId", &());
    assert_eq!(id.len(), 32);
    let xml: String = h.ok(
        &node(OK_BUTTON.0),
        "org.freedesktop.DBus.Introspectable",
        "Introspect",
        &(),
    );
    assert!(
        xml.contains("org.a11y.atspi.Action") && xml.contains("GetChildAtIndex"),
        "{xml}"
    );
    let call = method_call(&node(OK_BUTTON.0), None, "GetRole", &(), false);
    let reply = newton_atspi_shim::handle_call(&h.ctx(), &call)
        .expect("reply")
        .reply;
    assert_eq!(reply.body().deserialize::<u32>().ok(), Some(43));
}

#[test]
fn cache_get_items_lists_every_object() {
    let h = Harness::basic();
    let reply = h
        .handle(CACHE, "org.a11y.atspi.Cache", "GetItems", &())
        .reply;
    assert_eq!(
        reply.body().signature().to_string(),
        "a((so)(so)(so)iiassusau)"
    );
    let items: Vec<CacheItem> = reply.body().deserialize().expect("items");
    assert_eq!(
        items.len(),
        6,
        "app root + window + 4 controls; the text run is not exposed"
    );
    let root = &items[0];
    assert_eq!(root.0 .1.as_str(), ROOT);
    assert_eq!(root.2 .1.as_str(), DESKTOP.1);
    assert_eq!((root.4, root.7), (1, 75));
    let window = &items[1];
    assert_eq!(window.0, node_ref(WINDOW.0));
    assert_eq!(window.2 .1.as_str(), ROOT);
    assert_eq!((window.3, window.4, window.7), (0, 4, 23));
    let slider = items
        .iter()
        .find(|i| i.0 == node_ref(VOLUME_SLIDER.0))
        .expect("slider item");
    assert_eq!(slider.2, node_ref(WINDOW.0));
    assert_eq!((slider.3, slider.4), (3, 0));
    assert_eq!(slider.6, "Volume");
    assert!(slider.5.iter().all(|i| i.starts_with("org.a11y.atspi.")));
    assert_eq!(slider.9.len(), 2);
    // Items agree with the per-object answers.
    for item in &items[1..] {
        let path = item.0 .1.as_str();
        let set: StateSet = h.ok(path, ACCESSIBLE, "GetState", &());
        assert_eq!(
            u64::from(item.9[0]) | (u64::from(item.9[1]) << 32),
            set.bits(),
            "{path}"
        );
        let interfaces: Vec<String> = h.ok(path, ACCESSIBLE, "GetInterfaces", &());
        assert_eq!(item.5, interfaces);
        assert_eq!(
            item.3,
            h.ok::<i32, _>(path, ACCESSIBLE, "GetIndexInParent", &())
        );
    }
}

#[test]
fn removed_nodes_stop_resolving() {
    let mut h = Harness::basic();
    let mut window = accesskit::Node::new(accesskit::Role::Window);
    window.set_label("Demo");
    window.set_children(vec![OK_BUTTON, CHECK_BOX, NAME_INPUT]);
    h.commit(accesskit::TreeUpdate {
        nodes: vec![(WINDOW, window)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus: OK_BUTTON,
    });
    let (name, _) = h.err(&node(VOLUME_SLIDER.0), ACCESSIBLE, "GetRole", &());
    assert_eq!(name, ERR_UNKNOWN_OBJECT);
    assert_eq!(h.prop::<i32>(&node(WINDOW.0), ACCESSIBLE, "ChildCount"), 3);
    let _ = NodeId(0);
}

/// Issue 15 mapping fixes, as egui 0.37 builds these nodes: an inner window,
/// a colour button, a spinner (a progress indicator without value), a drag
/// value without bounds and one whose value lies beyond its bounds.
fn egui_widgets_tree() -> Harness {
    use accesskit::Role;
    let mut root = make(Role::Window, None, (0.0, 0.0, 800.0, 600.0));
    root.set_children(vec![NodeId(2)]);
    let mut settings = make(Role::Window, Some("Settings"), (10.0, 10.0, 300.0, 300.0));
    settings.set_children(vec![NodeId(3), NodeId(4), NodeId(5), NodeId(6)]);
    let mut colour = make(Role::ColorWell, Some("Color"), (20.0, 20.0, 40.0, 20.0));
    colour.set_value("#add7e580");
    let spinner = make(Role::ProgressIndicator, None, (20.0, 50.0, 20.0, 20.0));
    let mut unbounded = make(Role::SpinButton, Some("Speed"), (20.0, 80.0, 60.0, 20.0));
    unbounded.set_numeric_value(250.0);
    unbounded.set_value("250.0");
    let mut beyond = make(Role::SpinButton, Some("Zoom"), (20.0, 110.0, 60.0, 20.0));
    beyond.set_numeric_value(-5.0);
    beyond.set_min_numeric_value(0.0);
    beyond.set_max_numeric_value(100.0);
    Harness::custom(full_tree(
        vec![
            (NodeId(1), root),
            (NodeId(2), settings),
            (NodeId(3), colour),
            (NodeId(4), spinner),
            (NodeId(5), unbounded),
            (NodeId(6), beyond),
        ],
        NodeId(1),
    ))
}

#[test]
fn inner_windows_are_frames_and_colour_buttons_push_buttons() {
    let h = egui_widgets_tree();
    let role = |id| h.ok::<String, _>(&node(id), ACCESSIBLE, "GetRoleName", &());
    assert_eq!(role(1), "frame");
    assert_eq!(
        role(2),
        "frame",
        "Orca names a frame ancestor, not a window"
    );
    assert_eq!(
        role(3),
        "push button",
        "Orca says a color chooser's name never"
    );
    assert_eq!(h.prop::<String>(&node(3), ACCESSIBLE, "Name"), "Color");
}

#[test]
fn a_spinner_is_indeterminate() {
    let h = egui_widgets_tree();
    let states: StateSet = h.ok(&node(4), ACCESSIBLE, "GetState", &());
    assert!(states.contains(State::Indeterminate), "{states:?}");
    assert_eq!(
        h.ok::<String, _>(&node(4), ACCESSIBLE, "GetRoleName", &()),
        "progress bar"
    );
}

#[test]
fn value_bounds_are_never_invented_and_always_hold_the_value() {
    let h = egui_widgets_tree();
    let value = "org.a11y.atspi.Value";
    let read = |id, name| h.prop::<f64>(&node(id), value, name);
    assert_eq!(read(5, "CurrentValue"), 250.0);
    assert_eq!(read(5, "MinimumValue"), -f64::MAX, "no bound: unbounded");
    assert_eq!(read(5, "MaximumValue"), f64::MAX, "no bound: unbounded");
    assert_eq!(read(6, "CurrentValue"), -5.0);
    assert_eq!(read(6, "MinimumValue"), -5.0, "widened to hold the value");
    assert_eq!(read(6, "MaximumValue"), 100.0);
}
