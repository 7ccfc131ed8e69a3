//! The declared AT-SPI surface against at-spi2-core's interface definitions.
//!
//! `EXPECTED_METHODS` and `EXPECTED_PROPERTIES` are at-spi2-core's
//! `xml/*.xml` (GNOME/at-spi2-core at d7d591cf, the interfaces libatspi and
//! atk-bridge are built from), written down member by member: interface
//! (after `org.a11y.atspi.`), member, in-signature, out-signature / property
//! type and access. Every member the shim declares must be listed there with
//! the same signature, unless it is in `DEVIATIONS`; every listed member must
//! be declared, unless it is in `OMITTED`. Both lists give their reason.

mod common;

use common::{node, Harness, ROOT};
use newton_atspi_shim::declared::{declared, DeclaredMember};
use newton_fixtures::basic_ids::VOLUME_SLIDER;

/// (interface, method, in-signature, out-signature), from `xml/*.xml`.
const EXPECTED_METHODS: &[(&str, &str, &str, &str)] = &[
    ("Accessible", "GetChildAtIndex", "i", "(so)"),
    ("Accessible", "GetChildren", "", "a(so)"),
    ("Accessible", "GetIndexInParent", "", "i"),
    ("Accessible", "GetRelationSet", "", "a(ua(so))"),
    ("Accessible", "GetRole", "", "u"),
    ("Accessible", "GetRoleName", "", "s"),
    ("Accessible", "GetLocalizedRoleName", "", "s"),
    ("Accessible", "GetState", "", "au"),
    ("Accessible", "GetAttributes", "", "a{ss}"),
    ("Accessible", "GetApplication", "", "(so)"),
    ("Accessible", "GetInterfaces", "", "as"),
    ("Action", "GetDescription", "i", "s"),
    ("Action", "GetName", "i", "s"),
    ("Action", "GetLocalizedName", "i", "s"),
    ("Action", "GetKeyBinding", "i", "s"),
    ("Action", "GetActions", "", "a(sss)"),
    ("Action", "DoAction", "i", "b"),
    ("Application", "GetLocale", "u", "s"),
    ("Application", "GetApplicationBusAddress", "", "s"),
    ("Cache", "GetItems", "", "a((so)(so)(so)iiassusau)"),
    ("Collection", "GetMatches", "(aiia{ss}iaiiasib)uib", "a(so)"),
    (
        "Collection",
        "GetMatchesTo",
        "o(aiia{ss}iaiiasib)uubib",
        "a(so)",
    ),
    (
        "Collection",
        "GetMatchesFrom",
        "o(aiia{ss}iaiiasib)uuib",
        "a(so)",
    ),
    ("Collection", "GetActiveDescendant", "", "(so)"),
    ("Component", "Contains", "iiu", "b"),
    ("Component", "GetAccessibleAtPoint", "iiu", "(so)"),
    ("Component", "GetExtents", "u", "(iiii)"),
    ("Component", "GetPosition", "u", "ii"),
    ("Component", "GetSize", "", "ii"),
    ("Component", "GetLayer", "", "u"),
    ("Component", "GetMDIZOrder", "", "n"),
    ("Component", "GrabFocus", "", "b"),
    ("Component", "GetAlpha", "", "d"),
    ("Component", "SetExtents", "iiiiu", "b"),
    ("Component", "SetPosition", "iiu", "b"),
    ("Component", "SetSize", "ii", "b"),
    ("Component", "ScrollTo", "u", "b"),
    ("Component", "ScrollToPoint", "uii", "b"),
    ("Document", "GetLocale", "", "s"),
    ("Document", "GetAttributeValue", "s", "s"),
    ("Document", "GetAttributes", "", "a{ss}"),
    ("Document", "GetTextSelections", "", "a((so)i(so)ib)"),
    ("Document", "SetTextSelections", "a((so)i(so)ib)", "b"),
    ("EditableText", "SetTextContents", "s", "b"),
    ("EditableText", "InsertText", "isi", "b"),
    ("EditableText", "CopyText", "ii", ""),
    ("EditableText", "CutText", "ii", "b"),
    ("EditableText", "DeleteText", "ii", "b"),
    ("EditableText", "PasteText", "i", "b"),
    ("Hyperlink", "GetObject", "i", "(so)"),
    ("Hyperlink", "GetURI", "i", "s"),
    ("Hyperlink", "IsValid", "", "b"),
    ("Hypertext", "GetNLinks", "", "i"),
    ("Hypertext", "GetLink", "i", "(so)"),
    ("Hypertext", "GetLinkIndex", "i", "i"),
    ("Image", "GetImageExtents", "u", "(iiii)"),
    ("Image", "GetImagePosition", "u", "ii"),
    ("Image", "GetImageSize", "", "ii"),
    ("Selection", "GetSelectedChild", "i", "(so)"),
    ("Selection", "SelectChild", "i", "b"),
    ("Selection", "DeselectSelectedChild", "i", "b"),
    ("Selection", "IsChildSelected", "i", "b"),
    ("Selection", "SelectAll", "", "b"),
    ("Selection", "ClearSelection", "", "b"),
    ("Selection", "DeselectChild", "i", "b"),
    ("Table", "GetAccessibleAt", "ii", "(so)"),
    ("Table", "GetIndexAt", "ii", "i"),
    ("Table", "GetRowAtIndex", "i", "i"),
    ("Table", "GetColumnAtIndex", "i", "i"),
    ("Table", "GetRowDescription", "i", "s"),
    ("Table", "GetColumnDescription", "i", "s"),
    ("Table", "GetRowExtentAt", "ii", "i"),
    ("Table", "GetColumnExtentAt", "ii", "i"),
    ("Table", "GetRowHeader", "i", "(so)"),
    ("Table", "GetColumnHeader", "i", "(so)"),
    ("Table", "GetSelectedRows", "", "ai"),
    ("Table", "GetSelectedColumns", "", "ai"),
    ("Table", "IsRowSelected", "i", "b"),
    ("Table", "IsColumnSelected", "i", "b"),
    ("Table", "IsSelected", "ii", "b"),
    ("Table", "AddRowSelection", "i", "b"),
    ("Table", "AddColumnSelection", "i", "b"),
    ("Table", "RemoveRowSelection", "i", "b"),
    ("Table", "RemoveColumnSelection", "i", "b"),
    ("Table", "GetRowColumnExtentsAtIndex", "i", "biiiib"),
    ("TableCell", "GetRowColumnSpan", "", "biiii"),
    ("TableCell", "GetColumnHeaderCells", "", "a(so)"),
    ("TableCell", "GetRowHeaderCells", "", "a(so)"),
    ("Text", "GetStringAtOffset", "iu", "sii"),
    ("Text", "GetText", "ii", "s"),
    ("Text", "SetCaretOffset", "i", "b"),
    ("Text", "GetTextBeforeOffset", "iu", "sii"),
    ("Text", "GetTextAtOffset", "iu", "sii"),
    ("Text", "GetTextAfterOffset", "iu", "sii"),
    ("Text", "GetCharacterAtOffset", "i", "i"),
    ("Text", "GetAttributeValue", "is", "s"),
    ("Text", "GetAttributes", "i", "a{ss}ii"),
    ("Text", "GetDefaultAttributes", "", "a{ss}"),
    ("Text", "GetCharacterExtents", "iu", "iiii"),
    ("Text", "GetOffsetAtPoint", "iiu", "i"),
    ("Text", "GetNSelections", "", "i"),
    ("Text", "GetSelection", "i", "ii"),
    ("Text", "AddSelection", "ii", "b"),
    ("Text", "RemoveSelection", "i", "b"),
    ("Text", "SetSelection", "iii", "b"),
    ("Text", "GetRangeExtents", "iiu", "iiii"),
    ("Text", "GetBoundedRanges", "iiiiuuu", "a(iisv)"),
    ("Text", "GetAttributeRun", "ib", "a{ss}ii"),
    ("Text", "GetDefaultAttributeSet", "", "a{ss}"),
    ("Text", "ScrollSubstringTo", "iiu", "b"),
    ("Text", "ScrollSubstringToPoint", "iiuii", "b"),
];

/// (interface, property, type, access), from `xml/*.xml`.
const EXPECTED_PROPERTIES: &[(&str, &str, &str, &str)] = &[
    ("Accessible", "version", "u", "read"),
    ("Accessible", "Name", "s", "read"),
    ("Accessible", "Description", "s", "read"),
    ("Accessible", "Parent", "(so)", "read"),
    ("Accessible", "ChildCount", "i", "read"),
    ("Accessible", "Locale", "s", "read"),
    ("Accessible", "AccessibleId", "s", "read"),
    ("Accessible", "HelpText", "s", "read"),
    ("Action", "version", "u", "read"),
    ("Action", "NActions", "i", "read"),
    ("Application", "ToolkitName", "s", "read"),
    ("Application", "Version", "s", "read"),
    ("Application", "ToolkitVersion", "s", "read"),
    ("Application", "AtspiVersion", "s", "read"),
    ("Application", "InterfaceVersion", "u", "read"),
    ("Application", "Id", "i", "readwrite"),
    ("Cache", "version", "u", "read"),
    ("Collection", "version", "u", "read"),
    ("Component", "version", "u", "read"),
    ("Document", "version", "u", "read"),
    ("Document", "CurrentPageNumber", "i", "read"),
    ("Document", "PageCount", "i", "read"),
    ("EditableText", "version", "u", "read"),
    ("Hyperlink", "version", "u", "read"),
    ("Hyperlink", "NAnchors", "n", "read"),
    ("Hyperlink", "StartIndex", "i", "read"),
    ("Hyperlink", "EndIndex", "i", "read"),
    ("Hypertext", "version", "u", "read"),
    ("Image", "version", "u", "read"),
    ("Image", "ImageDescription", "s", "read"),
    ("Image", "ImageLocale", "s", "read"),
    ("Selection", "version", "u", "read"),
    ("Selection", "NSelectedChildren", "i", "read"),
    ("Table", "version", "u", "read"),
    ("Table", "NRows", "i", "read"),
    ("Table", "NColumns", "i", "read"),
    ("Table", "Caption", "(so)", "read"),
    ("Table", "Summary", "(so)", "read"),
    ("Table", "NSelectedRows", "i", "read"),
    ("Table", "NSelectedColumns", "i", "read"),
    ("TableCell", "version", "u", "read"),
    ("TableCell", "ColumnSpan", "i", "read"),
    ("TableCell", "Position", "(ii)", "read"),
    ("TableCell", "RowSpan", "i", "read"),
    ("TableCell", "Table", "(so)", "read"),
    ("Text", "version", "u", "read"),
    ("Text", "CharacterCount", "i", "read"),
    ("Text", "CaretOffset", "i", "read"),
    ("Value", "version", "u", "read"),
    ("Value", "MinimumValue", "d", "read"),
    ("Value", "MaximumValue", "d", "read"),
    ("Value", "MinimumIncrement", "d", "read"),
    ("Value", "CurrentValue", "d", "readwrite"),
    ("Value", "Text", "s", "read"),
];

/// Members the shim deliberately does not serve: (interface, member, reason).
/// None today: every interface's `version` property (at-spi2-core 2.58's XML)
/// is served since at-spi2-core 2.62 became a platform the bridge is tested on.
const OMITTED: &[(&str, &str, &str)] = &[];

/// Members the shim serves with another signature than the XML's:
/// (interface, member, signature served, reason).
const DEVIATIONS: &[(&str, &str, &str, &str)] = &[(
    "TableCell",
    "GetRowColumnSpan",
    "iiii",
    "libatspi reads \"=>iiii\" and atk-bridge sends four INT32; the XML's leading boolean \
     (\"biiii\") makes every libatspi client fail with a signature mismatch",
)];

fn short(interface: &str) -> &str {
    interface
        .strip_prefix("org.a11y.atspi.")
        .unwrap_or(interface)
}

fn omitted(interface: &str, member: &str) -> bool {
    OMITTED
        .iter()
        .any(|(i, m, _)| *i == interface && *m == member)
}

fn deviation(interface: &str, member: &str) -> Option<&'static str> {
    DEVIATIONS
        .iter()
        .find(|(i, m, _, _)| *i == interface && *m == member)
        .map(|(_, _, signature, _)| *signature)
}

#[test]
fn every_declared_method_has_at_spi2_cores_signature() {
    let mut problems = Vec::new();
    for member in declared() {
        let DeclaredMember::Method {
            interface,
            name,
            in_signature,
            out_signature,
        } = member
        else {
            continue;
        };
        let interface = short(interface);
        let Some((_, _, want_in, want_out)) = EXPECTED_METHODS
            .iter()
            .find(|(i, m, _, _)| *i == interface && *m == name)
        else {
            problems.push(format!("{interface}.{name} is not in at-spi2-core's XML"));
            continue;
        };
        let want_out = deviation(interface, name).unwrap_or(want_out);
        if in_signature != *want_in || out_signature != want_out {
            problems.push(format!(
                "{interface}.{name}: declared ({in_signature}) -> ({out_signature}), \
                 expected ({want_in}) -> ({want_out})"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_declared_property_has_at_spi2_cores_type_and_access() {
    let mut problems = Vec::new();
    for member in declared() {
        let DeclaredMember::Property {
            interface,
            name,
            signature,
            writable,
        } = member
        else {
            continue;
        };
        let interface = short(interface);
        let Some((_, _, want_type, want_access)) = EXPECTED_PROPERTIES
            .iter()
            .find(|(i, p, _, _)| *i == interface && *p == name)
        else {
            problems.push(format!("{interface}.{name} is not in at-spi2-core's XML"));
            continue;
        };
        let access = if writable { "readwrite" } else { "read" };
        if signature != *want_type || access != *want_access {
            problems.push(format!(
                "{interface}.{name}: declared {signature} {access}, \
                 expected {want_type} {want_access}"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_at_spi2_core_member_is_declared_or_omitted_with_a_reason() {
    let declared: Vec<(String, String)> = declared()
        .into_iter()
        .map(|member| match member {
            DeclaredMember::Method {
                interface, name, ..
            }
            | DeclaredMember::Property {
                interface, name, ..
            } => (short(interface).to_owned(), name.to_owned()),
        })
        .collect();
    let is_declared =
        |interface: &str, member: &str| declared.iter().any(|(i, m)| i == interface && m == member);
    let expected = EXPECTED_METHODS
        .iter()
        .map(|(i, m, _, _)| (*i, *m))
        .chain(EXPECTED_PROPERTIES.iter().map(|(i, p, _, _)| (*i, *p)));
    let mut problems = Vec::new();
    for (interface, member) in expected {
        match (is_declared(interface, member), omitted(interface, member)) {
            (false, false) => problems.push(format!("{interface}.{member} is not declared")),
            (true, true) => problems.push(format!(
                "{interface}.{member} is declared but listed as omitted"
            )),
            _ => {}
        }
    }
    for (interface, member, reason) in OMITTED {
        assert!(!reason.is_empty(), "{interface}.{member}: no reason");
    }
    for (interface, member, _, reason) in DEVIATIONS {
        assert!(!reason.is_empty(), "{interface}.{member}: no reason");
        assert!(
            is_declared(interface, member),
            "{interface}.{member} deviates but is not declared"
        );
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_interface_of_the_xml_is_declared() {
    let names: Vec<String> = newton_atspi_shim::declared::interfaces()
        .iter()
        .map(|i| short(i.name).to_owned())
        .collect();
    for (interface, _, _, _) in EXPECTED_METHODS {
        assert!(names.iter().any(|n| n == interface), "{interface}");
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "an interface declared twice: {names:?}"
    );
}

fn introspect(h: &Harness, path: &str) -> String {
    h.ok(
        path,
        "org.freedesktop.DBus.Introspectable",
        "Introspect",
        &(),
    )
}

#[test]
fn introspection_gives_argument_names_types_and_directions() {
    let h = Harness::basic();
    let slider = introspect(&h, &node(VOLUME_SLIDER.0));
    for line in [
        r#"<interface name="org.a11y.atspi.Component">"#,
        r#"<method name="GetAccessibleAtPoint">"#,
        r#"<arg name="coord_type" type="u" direction="in"/>"#,
        r#"<arg name="object" type="(so)" direction="out"/>"#,
        r#"<method name="GetPosition">"#,
        r#"<arg name="y" type="i" direction="out"/>"#,
        r#"<property name="CurrentValue" type="d" access="readwrite"/>"#,
        r#"<property name="Parent" type="(so)" access="read"/>"#,
        r#"<arg name="rule" type="(aiia{ss}iaiiasib)" direction="in"/>"#,
        r#"<arg name="value" type="v" direction="out"/>"#,
    ] {
        assert!(slider.contains(line), "{line} missing from\n{slider}");
    }
    let root = introspect(&h, ROOT);
    for line in [
        r#"<interface name="org.a11y.atspi.Application">"#,
        r#"<arg name="lctype" type="u" direction="in"/>"#,
        r#"<property name="Id" type="i" access="readwrite"/>"#,
    ] {
        assert!(root.contains(line), "{line} missing from\n{root}");
    }
    assert!(!root.contains("org.a11y.atspi.Component"), "{root}");
}

#[test]
fn value_introspects_its_six_properties_and_no_method() {
    let h = Harness::basic();
    let xml = introspect(&h, &node(VOLUME_SLIDER.0));
    let value = xml
        .split("<interface name=\"org.a11y.atspi.Value\">")
        .nth(1)
        .and_then(|rest| rest.split("</interface>").next())
        .expect("the slider has Value");
    assert_eq!(
        value.matches("<property ").count(),
        6,
        "Value's six properties (version and the five values): {value}"
    );
    assert!(!value.contains("<method"), "Value has no methods: {value}");
}

/// at-spi2-core 2.58's XML gives every interface but Application a `version`
/// property; the bridge answers 1 (libatspi 2.62's `ATSPI_<INTERFACE>_VERSION`)
/// for each one an object has, through Properties.Get.
#[test]
fn every_interface_of_an_object_answers_its_version() {
    let h = Harness::basic();
    let path = node(VOLUME_SLIDER.0);
    for interface in ["Accessible", "Component", "Value", "Action"] {
        let version: u32 = h.prop(&path, &format!("org.a11y.atspi.{interface}"), "version");
        assert_eq!(version, 1, "{interface}.version");
    }
}

/// The declaration owns writability: every property declared writable is
/// set through `Properties.Set` (and Introspect says `readwrite`), and every
/// other declared property of the same objects answers that it is read-only.
#[test]
fn properties_declared_writable_are_settable_and_no_other() {
    let h = Harness::basic();
    let slider = node(VOLUME_SLIDER.0);
    let writable: Vec<(&str, &str)> = declared()
        .into_iter()
        .filter_map(|member| match member {
            DeclaredMember::Property {
                interface,
                name,
                writable: true,
                ..
            } => Some((interface, name)),
            _ => None,
        })
        .collect();
    assert_eq!(
        writable,
        [
            ("org.a11y.atspi.Application", "Id"),
            ("org.a11y.atspi.Value", "CurrentValue"),
        ],
        "the writable properties are the XML's readwrite ones"
    );
    let set = |path: &str, interface: &str, name: &str, value: zvariant::Value| {
        h.handle(
            path,
            "org.freedesktop.DBus.Properties",
            "Set",
            &(interface, name, value),
        )
    };
    let id = set(
        ROOT,
        "org.a11y.atspi.Application",
        "Id",
        zvariant::Value::I32(7),
    );
    assert_eq!(id.set_app_id, Some(7), "Application.Id is written");
    let value = set(
        &slider,
        "org.a11y.atspi.Value",
        "CurrentValue",
        zvariant::Value::F64(75.0),
    );
    assert!(
        value.action.is_some(),
        "Value.CurrentValue asks the producer"
    );
    for (path, interface, name, sample) in [
        (
            ROOT,
            "org.a11y.atspi.Application",
            "ToolkitName",
            zvariant::Value::from("x"),
        ),
        (
            slider.as_str(),
            "org.a11y.atspi.Value",
            "MaximumValue",
            zvariant::Value::F64(1.0),
        ),
        (
            slider.as_str(),
            "org.a11y.atspi.Accessible",
            "Name",
            zvariant::Value::from("x"),
        ),
        (
            slider.as_str(),
            "org.a11y.atspi.Value",
            "version",
            zvariant::Value::U32(2),
        ),
    ] {
        let (error, text) = h.err(
            path,
            "org.freedesktop.DBus.Properties",
            "Set",
            &(interface, name, sample),
        );
        assert!(
            text.contains("read-only"),
            "{interface}.{name}: {error} {text}"
        );
    }
}
