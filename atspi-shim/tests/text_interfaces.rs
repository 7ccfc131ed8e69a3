//! The Text family end to end: a tree committed to a real `AppReplica`,
//! AT-SPI method calls through `handle_call`, replies and routed actions
//! checked exactly. Offsets are code points.

use accesskit::{
    Action, ActionData, Node, NodeId, Rect, Role, TextDirection, TextPosition, TextSelection,
    TreeId, TreeInfo, TreeUpdate,
};
use newton_atspi_shim::{handle_call, AppContext, DerivedModels, Handled, HostFacts};
use newton_cache::{AppReplica, Limits};
use newton_push_protocol::{AppInfo, Geometry, SurfaceId};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use zbus::message::{Message, Type as MessageType};
use zvariant::{DynamicType, OwnedObjectPath, OwnedValue, Type};

const UNIQUE_NAME: &str = ":1.9";
const SURFACE: SurfaceId = SurfaceId(1);
const TEXT: &str = "org.a11y.atspi.Text";
const EDITABLE: &str = "org.a11y.atspi.EditableText";
const HYPERTEXT: &str = "org.a11y.atspi.Hypertext";
const HYPERLINK: &str = "org.a11y.atspi.Hyperlink";
const DOCUMENT: &str = "org.a11y.atspi.Document";
const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";

struct App {
    replica: AppReplica,
    info: AppInfo,
    models: DerivedModels,
}

impl App {
    fn new(nodes: Vec<(u64, Node)>) -> Self {
        let mut replica = AppReplica::new(Limits::default());
        replica
            .create_surface(SURFACE, Some("Editor".into()))
            .expect("surface");
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
        replica
            .commit(SURFACE, vec![update], 1024)
            .expect("the test tree is valid");
        let geometry = Geometry {
            x: 100,
            y: 50,
            width: 800,
            height: 600,
            scale: 1.0,
        };
        replica.set_geometry(SURFACE, geometry).expect("geometry");
        let info = AppInfo {
            app_id: "org.example.Editor".into(),
            name: "Editor".into(),
            pid: None,
            toolkit_name: None,
            toolkit_version: None,
        };
        App {
            replica,
            info,
            models: DerivedModels::new(),
        }
    }

    fn handle<B: Serialize + DynamicType>(
        &self,
        node: u64,
        interface: &str,
        member: &str,
        body: &B,
    ) -> Handled {
        self.handle_at(&path(node), Some(interface), member, body)
    }

    /// A call on any object path; `interface` `None` leaves the field out.
    fn handle_at<B: Serialize + DynamicType>(
        &self,
        object: &str,
        interface: Option<&str>,
        member: &str,
        body: &B,
    ) -> Handled {
        let app = AppContext {
            replica: &self.replica,
            info: &self.info,
            unique_name: UNIQUE_NAME,
            desktop: None,
            app_id: 0,
            host: &HOST,
            models: &self.models,
        };
        let builder = Message::method_call(object, member).expect("method call builds");
        let builder = match interface {
            Some(interface) => builder.interface(interface).expect("interface name"),
            None => builder,
        };
        let call = builder.build(body).expect("method call builds");
        handle_call(&app, &call).expect("a method call gets a reply")
    }

    fn ok<R: DeserializeOwned + Type, B: Serialize + DynamicType>(
        &self,
        node: u64,
        interface: &str,
        member: &str,
        body: &B,
    ) -> R {
        self.ok_at(&path(node), Some(interface), member, body)
    }

    /// A call on any object path that must succeed, its reply decoded as `R`.
    fn ok_at<R: DeserializeOwned + Type, B: Serialize + DynamicType>(
        &self,
        object: &str,
        interface: Option<&str>,
        member: &str,
        body: &B,
    ) -> R {
        let handled = self.handle_at(object, interface, member, body);
        let header = handled.reply.header();
        assert_eq!(
            header.message_type(),
            MessageType::MethodReturn,
            "{interface:?}.{member} on {object} failed: {:?} {:?}",
            header.error_name(),
            handled.reply.body().deserialize::<String>().ok()
        );
        handled
            .reply
            .body()
            .deserialize::<R>()
            .expect("reply signature")
    }

    fn error_name<B: Serialize + DynamicType>(
        &self,
        node: u64,
        interface: &str,
        member: &str,
        body: &B,
    ) -> String {
        self.error_name_at(&path(node), interface, member, body)
    }

    /// The error name of a call on any object path that must fail.
    fn error_name_at<B: Serialize + DynamicType>(
        &self,
        object: &str,
        interface: &str,
        member: &str,
        body: &B,
    ) -> String {
        let handled = self.handle_at(object, Some(interface), member, body);
        let header = handled.reply.header();
        assert_eq!(header.message_type(), MessageType::Error);
        header
            .error_name()
            .map(|name| name.to_string())
            .unwrap_or_default()
    }

    fn prop(&self, node: u64, interface: &str, name: &str) -> OwnedValue {
        let (value,): (OwnedValue,) = self.ok(node, PROPERTIES, "Get", &(interface, name));
        value
    }

    fn interfaces(&self, node: u64) -> Vec<String> {
        self.ok(node, ACCESSIBLE, "GetInterfaces", &())
    }
}

fn path(node: u64) -> String {
    format!("/org/a11y/atspi/accessible/{}_{node}", SURFACE.0)
}

/// The path of the hyperlink object of link node `node`.
fn hyperlink_path(node: u64) -> String {
    format!("{}_hyperlink", path(node))
}

fn run(text: &str, word_starts: &[u8]) -> Node {
    let mut node = Node::new(Role::TextRun);
    node.set_value(text);
    node.set_character_lengths(text.chars().map(|c| c.len_utf8() as u8).collect::<Vec<_>>());
    if !word_starts.is_empty() {
        node.set_word_starts(word_starts.to_vec());
    }
    node
}

fn int(value: OwnedValue) -> i32 {
    i32::try_from(value).expect("an i32 property")
}

/// Window 0 → text input 1 ("naïve café\n🙂 ok", caret after "café"
/// with "café" selected, geometry on the first run), button 4.
fn editor() -> App {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(1), NodeId(4)]);
    window.set_bounds(Rect {
        x0: 0.0,
        y0: 0.0,
        x1: 800.0,
        y1: 600.0,
    });
    let mut input = Node::new(Role::MultilineTextInput);
    input.set_children(vec![NodeId(2), NodeId(3)]);
    input.set_bounds(Rect {
        x0: 10.0,
        y0: 10.0,
        x1: 300.0,
        y1: 60.0,
    });
    input.set_text_direction(TextDirection::LeftToRight);
    input.set_text_selection(TextSelection {
        anchor: TextPosition {
            node: NodeId(2),
            character_index: 6,
        },
        focus: TextPosition {
            node: NodeId(2),
            character_index: 10,
        },
    });
    let mut first = run("naïve café\n", &[0, 6]);
    first.set_bounds(Rect {
        x0: 10.0,
        y0: 10.0,
        x1: 120.0,
        y1: 30.0,
    });
    first.set_character_positions((0..11).map(|i| i as f32 * 10.0).collect::<Vec<_>>());
    first.set_character_widths(vec![10.0; 11]);
    let second = run("🙂 ok", &[0, 2]);
    tree_app(vec![
        (0, window),
        (1, input),
        (2, first),
        (3, second),
        (4, Node::new(Role::Button)),
    ])
}

fn tree_app(nodes: Vec<(u64, Node)>) -> App {
    App::new(nodes)
}

#[test]
fn text_input_lists_text_and_editable_text() {
    let app = editor();
    let interfaces = app.interfaces(1);
    assert!(interfaces.iter().any(|i| i == TEXT), "{interfaces:?}");
    assert!(interfaces.iter().any(|i| i == EDITABLE), "{interfaces:?}");
    let button = app.interfaces(4);
    assert!(
        !button.iter().any(|i| i == TEXT || i == EDITABLE),
        "{button:?}"
    );
}

#[test]
fn text_properties_and_offsets_are_code_points() {
    let app = editor();
    assert_eq!(int(app.prop(1, TEXT, "CharacterCount")), 15);
    assert_eq!(int(app.prop(1, TEXT, "CaretOffset")), 10);
    let all: String = app.ok(1, TEXT, "GetText", &(0, -1));
    assert_eq!(all, "naïve café\n🙂 ok");
    let line: (String, i32, i32) = app.ok(1, TEXT, "GetTextAtOffset", &(3, 5u32));
    assert_eq!(line, ("naïve café\n".into(), 0, 11));
    let line: (String, i32, i32) = app.ok(1, TEXT, "GetTextAtOffset", &(15, 5u32));
    assert_eq!(line, ("🙂 ok".into(), 11, 15));
    let word: (String, i32, i32) = app.ok(1, TEXT, "GetStringAtOffset", &(8, 1u32));
    assert_eq!(word, ("café\n".into(), 6, 11));
    let ch: (String, i32, i32) = app.ok(1, TEXT, "GetTextAtOffset", &(11, 0u32));
    assert_eq!(ch, ("🙂".into(), 11, 12));
    let selection: (i32, i32) = app.ok(1, TEXT, "GetSelection", &(0,));
    assert_eq!(selection, (6, 10));
    let extents: (i32, i32, i32, i32) = app.ok(1, TEXT, "GetCharacterExtents", &(2, 0u32));
    assert_eq!(extents, (130, 60, 10, 20));
    let extents: (i32, i32, i32, i32) = app.ok(1, TEXT, "GetCharacterExtents", &(2, 1u32));
    assert_eq!(extents, (30, 10, 10, 20));
    let offset: i32 = app.ok(1, TEXT, "GetOffsetAtPoint", &(135, 65, 0u32));
    assert_eq!(offset, 2);
}

#[test]
fn set_caret_offset_routes_set_text_selection() {
    let app = editor();
    let handled = app.handle(1, TEXT, "SetCaretOffset", &(12,));
    assert!(handled.reply.body().deserialize::<bool>().expect("b"));
    let action = handled.action.expect("an action for the application");
    assert_eq!(action.action, Action::SetTextSelection);
    assert_eq!(action.target_node, NodeId(1));
    let caret = TextPosition {
        node: NodeId(3),
        character_index: 1,
    };
    assert_eq!(
        action.data,
        Some(ActionData::SetTextSelection(TextSelection {
            anchor: caret,
            focus: caret
        }))
    );
}

#[test]
fn bad_text_calls_get_precise_errors() {
    let app = editor();
    assert_eq!(
        app.error_name(1, TEXT, "GetTextAtOffset", &(0, 9u32)),
        "org.freedesktop.DBus.Error.InvalidArgs"
    );
    assert_eq!(
        app.error_name(1, TEXT, "GetTextAtOffset", &("zero",)),
        "org.freedesktop.DBus.Error.InvalidArgs"
    );
    assert_eq!(
        app.error_name(1, TEXT, "Frobnicate", &()),
        "org.freedesktop.DBus.Error.UnknownMethod"
    );
    assert_eq!(
        app.error_name(4, TEXT, "GetText", &(0, -1)),
        "org.freedesktop.DBus.Error.UnknownInterface"
    );
    assert_eq!(
        app.error_name(1, EDITABLE, "PasteText", &(0,)),
        "org.freedesktop.DBus.Error.NotSupported"
    );
    let out_of_range: (String, i32, i32) = app.ok(1, TEXT, "GetTextAtOffset", &(99, 1u32));
    assert_eq!(out_of_range, (String::new(), -1, -1));
}

#[test]
fn editable_text_sends_the_new_value() {
    let app = editor();
    let handled = app.handle(1, EDITABLE, "InsertText", &(11, "→", -1));
    assert!(handled.reply.body().deserialize::<bool>().expect("b"));
    let action = handled.action.expect("a SetValue action");
    assert_eq!(action.action, Action::SetValue);
    assert_eq!(
        action.data,
        Some(ActionData::Value("naïve café\n→🙂 ok".into()))
    );
}

/// Window 0 → paragraph 1 "Read the manual today." with a link 3 on
/// "the manual" (two runs), and a web document 10 with a title and URL.
fn web() -> App {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(10)]);
    let mut document = Node::new(Role::RootWebArea);
    document.set_label("Manual");
    document.set_url("https://example.org/manual");
    document.set_language("de");
    document.set_children(vec![NodeId(1)]);
    let mut paragraph = Node::new(Role::Label);
    paragraph.set_children(vec![NodeId(2), NodeId(3), NodeId(6)]);
    let mut link = Node::new(Role::Link);
    link.set_url("https://example.org/manual.pdf");
    link.set_children(vec![NodeId(4), NodeId(5)]);
    tree_app(vec![
        (0, window),
        (10, document),
        (1, paragraph),
        (2, run("Read ", &[0])),
        (3, link),
        (4, run("the ", &[0])),
        (5, run("manual", &[0])),
        (6, run(" today.", &[1])),
    ])
}

#[test]
fn links_are_exposed_through_hypertext_and_hyperlink() {
    let app = web();
    assert!(app.interfaces(1).iter().any(|i| i == HYPERTEXT));
    assert!(app.interfaces(3).iter().any(|i| i == HYPERLINK));
    let count: i32 = app.ok(1, HYPERTEXT, "GetNLinks", &());
    assert_eq!(count, 1);
    let (link,): ((String, OwnedObjectPath),) = app.ok(1, HYPERTEXT, "GetLink", &(0,));
    assert_eq!(
        (link.0.as_str(), link.1.as_str()),
        (UNIQUE_NAME, hyperlink_path(3).as_str())
    );
    let index: i32 = app.ok(1, HYPERTEXT, "GetLinkIndex", &(7,));
    assert_eq!(index, 0);
    assert_eq!(int(app.prop(3, HYPERLINK, "StartIndex")), 5);
    assert_eq!(int(app.prop(3, HYPERLINK, "EndIndex")), 15);
    let uri: String = app.ok(3, HYPERLINK, "GetURI", &(0,));
    assert_eq!(uri, "https://example.org/manual.pdf");
}

/// GetLink's object: a hyperlink apart from the link's accessible (libatspi
/// caches both kinds in one table keyed by path), serving only Hyperlink.
#[test]
fn hyperlink_object_serves_only_hyperlink() {
    let app = web();
    let link = hyperlink_path(3);
    let get = |name: &str| -> OwnedValue {
        let (value,): (OwnedValue,) = app.ok_at(&link, Some(PROPERTIES), "Get", &(HYPERLINK, name));
        value
    };
    assert_eq!(int(get("StartIndex")), 5);
    assert_eq!(int(get("EndIndex")), 15);
    assert_eq!(i16::try_from(get("NAnchors")).expect("n"), 1);
    let all: BTreeMap<String, OwnedValue> =
        app.ok_at(&link, Some(PROPERTIES), "GetAll", &(HYPERLINK,));
    assert_eq!(
        all.keys().map(String::as_str).collect::<Vec<_>>(),
        ["EndIndex", "NAnchors", "StartIndex", "version"]
    );
    let (object,): ((String, OwnedObjectPath),) =
        app.ok_at(&link, Some(HYPERLINK), "GetObject", &(0,));
    assert_eq!(
        (object.0.as_str(), object.1.as_str()),
        (UNIQUE_NAME, path(3).as_str())
    );
    let uri: String = app.ok_at(&link, None, "GetURI", &(0,));
    assert_eq!(uri, "https://example.org/manual.pdf");
    assert!(app.ok_at::<bool, _>(&link, Some(HYPERLINK), "IsValid", &()));
    let () = app.ok_at(&link, Some("org.freedesktop.DBus.Peer"), "Ping", &());
    let xml: String = app.ok_at(
        &link,
        Some("org.freedesktop.DBus.Introspectable"),
        "Introspect",
        &(),
    );
    assert!(xml.contains(HYPERLINK), "{xml}");
    assert!(!xml.contains(ACCESSIBLE), "{xml}");
    assert!(!xml.contains(TEXT), "{xml}");
    assert_eq!(
        app.error_name_at(&link, ACCESSIBLE, "GetRole", &()),
        "org.freedesktop.DBus.Error.UnknownInterface"
    );
    assert_eq!(
        app.error_name_at(&link, PROPERTIES, "Get", &(ACCESSIBLE, "Name")),
        "org.freedesktop.DBus.Error.UnknownInterface"
    );
    // Only link nodes have a hyperlink object.
    assert_eq!(
        app.error_name_at(&hyperlink_path(1), HYPERLINK, "IsValid", &()),
        "org.freedesktop.DBus.Error.UnknownObject"
    );
    assert_eq!(
        app.error_name_at(&hyperlink_path(99), HYPERLINK, "IsValid", &()),
        "org.freedesktop.DBus.Error.UnknownObject"
    );
}

/// Found by the `atspi_calls` fuzz target (input
/// `fuzz/regressions/atspi_calls/hidden-link`): a link in a hidden subtree
/// still counted as a link of the enclosing text, and `GetLink` handed out
/// its hyperlink object, which does not exist (hidden nodes are not
/// exposed). A hidden link's runs are plain text; an exposed link around it
/// owns them.
#[test]
fn hidden_links_are_not_handed_out() {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(1)]);
    let mut paragraph = Node::new(Role::Label);
    paragraph.set_children(vec![NodeId(2), NodeId(3), NodeId(5), NodeId(7)]);
    let mut hidden = Node::new(Role::Link);
    hidden.set_hidden();
    hidden.set_children(vec![NodeId(4)]);
    let mut shown = Node::new(Role::Link);
    shown.set_children(vec![NodeId(6)]);
    // An exposed link whose inner link is hidden: the outer one owns the run.
    let mut outer = Node::new(Role::Link);
    outer.set_children(vec![NodeId(8)]);
    let mut inner = Node::new(Role::Link);
    inner.set_hidden();
    inner.set_children(vec![NodeId(9)]);
    let app = tree_app(vec![
        (0, window),
        (1, paragraph),
        (2, run("See ", &[0])),
        (3, hidden),
        (4, run("secret", &[0])),
        (5, shown),
        (6, run(" this", &[1])),
        (7, outer),
        (8, inner),
        (9, run(" too", &[1])),
    ]);
    let count: i32 = app.ok(1, HYPERTEXT, "GetNLinks", &());
    assert_eq!(count, 2);
    let mut starts = Vec::new();
    for index in 0..count {
        let (link,): ((String, OwnedObjectPath),) = app.ok(1, HYPERTEXT, "GetLink", &(index,));
        let (start,): (OwnedValue,) = app.ok_at(
            link.1.as_str(),
            Some(PROPERTIES),
            "Get",
            &(HYPERLINK, "StartIndex"),
        );
        starts.push((link.1.to_string(), int(start)));
    }
    assert_eq!(
        starts,
        [(hyperlink_path(5), 10), (hyperlink_path(7), 15)],
        "the hidden link's text is plain text"
    );
    let index: i32 = app.ok(1, HYPERTEXT, "GetLinkIndex", &(5,));
    assert_eq!(index, -1);
    assert_eq!(
        app.error_name_at(&hyperlink_path(3), HYPERLINK, "IsValid", &()),
        "org.freedesktop.DBus.Error.UnknownObject"
    );
}

/// Found by the `atspi_calls` fuzz target (input
/// `fuzz/regressions/atspi_calls/nul-in-string`): a producer string with a
/// NUL made the shim build replies D-Bus forbids (strings cannot hold NUL;
/// the bus drops a connection sending one). The replica turns NUL into a
/// space, so every answer is a valid message and offsets are unchanged.
#[test]
fn nul_in_producer_strings_never_reaches_a_reply() {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(1)]);
    let mut input = Node::new(Role::TextInput);
    input.set_label("na\0me");
    input.set_language("d\0e");
    input.set_children(vec![NodeId(2), NodeId(3)]);
    let app = tree_app(vec![
        (0, window),
        (1, input),
        (2, run("a\0b ", &[0])),
        (3, run("c\0", &[0])),
    ]);
    let name: OwnedValue = app.ok(1, PROPERTIES, "Get", &(ACCESSIBLE, "Name"));
    assert_eq!(String::try_from(name).expect("a string"), "na me");
    let text: String = app.ok(1, TEXT, "GetText", &(0, -1));
    assert_eq!(text, "a b c ");
    let (word, start, end): (String, i32, i32) = app.ok(1, TEXT, "GetTextAtOffset", &(4, 1u32));
    assert_eq!((word.as_str(), start, end), ("c ", 4, 6));
    let (attributes, _, _): (BTreeMap<String, String>, i32, i32) =
        app.ok(1, TEXT, "GetAttributeRun", &(0, true));
    assert!(
        attributes.values().all(|v| !v.contains('\0')),
        "{attributes:?}"
    );
}

/// Found by the `atspi_calls` fuzz target (input
/// `fuzz/regressions/atspi_calls/nested-hypertext`): a text holding another
/// text listed the inner text's links at its own offsets, while the
/// hyperlink object counted in the inner text, so `StartIndex` did not lead
/// back to the link (`GetLinkIndex` said -1). A link belongs to its nearest
/// text-bearing ancestor only.
#[test]
fn a_link_belongs_to_its_nearest_text_only() {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(10)]);
    let mut document = Node::new(Role::Document);
    document.set_children(vec![NodeId(11), NodeId(1)]);
    let mut paragraph = Node::new(Role::Label);
    paragraph.set_children(vec![NodeId(2), NodeId(3)]);
    let mut link = Node::new(Role::Link);
    link.set_children(vec![NodeId(4)]);
    let app = tree_app(vec![
        (0, window),
        (10, document),
        (11, run("Intro. ", &[0])),
        (1, paragraph),
        (2, run("Read ", &[0])),
        (3, link),
        (4, run("this", &[0])),
    ]);
    let outer: String = app.ok(10, TEXT, "GetText", &(0, -1));
    assert_eq!(
        outer, "Intro. Read this",
        "the outer text shows the inner runs"
    );
    let count: i32 = app.ok(1, HYPERTEXT, "GetNLinks", &());
    assert_eq!(count, 1);
    assert_eq!(int(app.prop(3, HYPERLINK, "StartIndex")), 5);
    let index: i32 = app.ok(1, HYPERTEXT, "GetLinkIndex", &(5,));
    assert_eq!(index, 0);
    // The document does not list the paragraph's link.
    if app.interfaces(10).iter().any(|i| i == HYPERTEXT) {
        let outer_links: i32 = app.ok(10, HYPERTEXT, "GetNLinks", &());
        assert_eq!(outer_links, 0);
    }
}

#[test]
fn web_document_exposes_document() {
    let app = web();
    assert!(app.interfaces(10).iter().any(|i| i == DOCUMENT));
    let locale: String = app.ok(10, DOCUMENT, "GetLocale", &());
    assert_eq!(locale, "de");
    let attributes: BTreeMap<String, String> = app.ok(10, DOCUMENT, "GetAttributes", &());
    assert_eq!(
        attributes.get("DocURL").map(String::as_str),
        Some("https://example.org/manual")
    );
    assert_eq!(attributes.get("Title").map(String::as_str), Some("Manual"));
    assert_eq!(int(app.prop(10, DOCUMENT, "PageCount")), -1);
}

/// Window 0 → password field 1 (run "s3cr3t"), label 3 with a value and no
/// runs, read-only input 4.
fn form() -> App {
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(1), NodeId(3), NodeId(4)]);
    let mut password = Node::new(Role::PasswordInput);
    password.set_children(vec![NodeId(2)]);
    let mut label = Node::new(Role::Label);
    label.set_value("Total: 3 items. Ready?");
    let mut read_only = Node::new(Role::TextInput);
    read_only.set_read_only();
    read_only.set_value("locked");
    tree_app(vec![
        (0, window),
        (1, password),
        (2, run("s3cr3t", &[0])),
        (3, label),
        (4, read_only),
    ])
}

#[test]
fn password_text_is_masked_end_to_end() {
    let app = form();
    assert_eq!(int(app.prop(1, TEXT, "CharacterCount")), 6);
    let text: String = app.ok(1, TEXT, "GetText", &(0, -1));
    assert_eq!(text, "••••••");
    let word: (String, i32, i32) = app.ok(1, TEXT, "GetStringAtOffset", &(3, 1u32));
    assert_eq!(word, ("••••••".into(), 0, 6));
    assert_eq!(
        app.error_name(1, EDITABLE, "DeleteText", &(0, 1)),
        "org.freedesktop.DBus.Error.NotSupported"
    );
}

#[test]
fn plain_label_and_read_only_input() {
    let app = form();
    assert!(app.interfaces(3).iter().any(|i| i == TEXT));
    let sentence: (String, i32, i32) = app.ok(3, TEXT, "GetTextAtOffset", &(2, 3u32));
    assert_eq!(sentence, ("Total: 3 items. ".into(), 0, 16));
    let sentence: (String, i32, i32) = app.ok(3, TEXT, "GetTextAfterOffset", &(2, 3u32));
    assert_eq!(sentence, ("Ready?".into(), 16, 22));
    let all: BTreeMap<String, OwnedValue> = app.ok(3, PROPERTIES, "GetAll", &(TEXT,));
    assert_eq!(
        all.len(),
        3,
        "version, CharacterCount, CaretOffset: {all:?}"
    );
    assert_eq!(int(all["CharacterCount"].try_clone().expect("clone")), 22);
    assert_eq!(int(all["CaretOffset"].try_clone().expect("clone")), -1);
    let interfaces = app.interfaces(4);
    assert!(interfaces.iter().any(|i| i == TEXT), "{interfaces:?}");
    assert!(!interfaces.iter().any(|i| i == EDITABLE), "{interfaces:?}");
}

/// The "C" locale and the placeholder machine id: what a host without either
/// gives, and independent of the environment the tests run in.
static HOST: std::sync::LazyLock<HostFacts> = std::sync::LazyLock::new(HostFacts::default);
