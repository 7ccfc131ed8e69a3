//! `org.freedesktop.DBus.Introspectable` and the member tables behind it.
//!
//! The XML lists each interface the object implements with its methods
//! (without argument details) and properties; AT clients never introspect,
//! this is for `busctl`/`gdbus` users and debugging.

use std::fmt::Write as _;

use zbus::message::Message;

use crate::context::AppContext;
use crate::dispatch::{self, INTROSPECTABLE_INTERFACE};
use crate::objects::{self, Object};
use crate::paths::NODE_PREFIX;
use crate::reply::method_return;
use crate::{accessible, CallError, Handled};

/// (interface, methods, properties as (name, type, access)).
type InterfaceShape = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str, &'static str)],
);

const SHAPES: &[InterfaceShape] = &[
    (
        "org.a11y.atspi.Accessible",
        &[
            "GetChildAtIndex",
            "GetChildren",
            "GetIndexInParent",
            "GetRelationSet",
            "GetRole",
            "GetRoleName",
            "GetLocalizedRoleName",
            "GetState",
            "GetAttributes",
            "GetApplication",
            "GetInterfaces",
        ],
        &[
            ("Name", "s", "read"),
            ("Description", "s", "read"),
            ("Parent", "(so)", "read"),
            ("ChildCount", "i", "read"),
            ("Locale", "s", "read"),
            ("AccessibleId", "s", "read"),
            ("HelpText", "s", "read"),
        ],
    ),
    (
        "org.a11y.atspi.Application",
        &["GetLocale", "GetApplicationBusAddress"],
        &[
            ("ToolkitName", "s", "read"),
            ("Version", "s", "read"),
            ("ToolkitVersion", "s", "read"),
            ("AtspiVersion", "s", "read"),
            ("InterfaceVersion", "u", "read"),
            ("Id", "i", "readwrite"),
        ],
    ),
    ("org.a11y.atspi.Cache", &["GetItems"], &[]),
    (
        "org.a11y.atspi.Collection",
        &[
            "GetMatches",
            "GetMatchesTo",
            "GetMatchesFrom",
            "GetActiveDescendant",
        ],
        &[],
    ),
    (
        "org.a11y.atspi.Component",
        &[
            "Contains",
            "GetAccessibleAtPoint",
            "GetExtents",
            "GetPosition",
            "GetSize",
            "GetLayer",
            "GetMDIZOrder",
            "GrabFocus",
            "GetAlpha",
            "SetExtents",
            "SetPosition",
            "SetSize",
            "ScrollTo",
            "ScrollToPoint",
        ],
        &[],
    ),
    (
        "org.a11y.atspi.Action",
        &[
            "GetDescription",
            "GetName",
            "GetLocalizedName",
            "GetKeyBinding",
            "GetActions",
            "DoAction",
        ],
        &[("NActions", "i", "read")],
    ),
    (
        "org.a11y.atspi.Value",
        &[],
        &[
            ("MinimumValue", "d", "read"),
            ("MaximumValue", "d", "read"),
            ("MinimumIncrement", "d", "read"),
            ("CurrentValue", "d", "readwrite"),
            ("Text", "s", "read"),
        ],
    ),
    (
        "org.a11y.atspi.Selection",
        &[
            "GetSelectedChild",
            "SelectChild",
            "DeselectSelectedChild",
            "IsChildSelected",
            "SelectAll",
            "ClearSelection",
            "DeselectChild",
        ],
        &[("NSelectedChildren", "i", "read")],
    ),
    (
        "org.a11y.atspi.Image",
        &["GetImageExtents", "GetImagePosition", "GetImageSize"],
        &[
            ("ImageDescription", "s", "read"),
            ("ImageLocale", "s", "read"),
        ],
    ),
    (
        "org.a11y.atspi.Text",
        &[
            "GetStringAtOffset",
            "GetText",
            "SetCaretOffset",
            "GetTextBeforeOffset",
            "GetTextAtOffset",
            "GetTextAfterOffset",
            "GetCharacterAtOffset",
            "GetAttributeValue",
            "GetAttributes",
            "GetDefaultAttributes",
            "GetCharacterExtents",
            "GetOffsetAtPoint",
            "GetNSelections",
            "GetSelection",
            "AddSelection",
            "RemoveSelection",
            "SetSelection",
            "GetRangeExtents",
            "GetBoundedRanges",
            "GetAttributeRun",
            "GetDefaultAttributeSet",
            "ScrollSubstringTo",
            "ScrollSubstringToPoint",
        ],
        &[
            ("CharacterCount", "i", "read"),
            ("CaretOffset", "i", "read"),
        ],
    ),
    (
        "org.a11y.atspi.EditableText",
        &[
            "SetTextContents",
            "InsertText",
            "CopyText",
            "CutText",
            "DeleteText",
            "PasteText",
        ],
        &[],
    ),
    (
        "org.a11y.atspi.Table",
        &[
            "GetAccessibleAt",
            "GetIndexAt",
            "GetRowAtIndex",
            "GetColumnAtIndex",
            "GetRowDescription",
            "GetColumnDescription",
            "GetRowExtentAt",
            "GetColumnExtentAt",
            "GetRowHeader",
            "GetColumnHeader",
            "GetSelectedRows",
            "GetSelectedColumns",
            "IsRowSelected",
            "IsColumnSelected",
            "IsSelected",
            "AddRowSelection",
            "AddColumnSelection",
            "RemoveRowSelection",
            "RemoveColumnSelection",
            "GetRowColumnExtentsAtIndex",
        ],
        &[
            ("NRows", "i", "read"),
            ("NColumns", "i", "read"),
            ("Caption", "(so)", "read"),
            ("Summary", "(so)", "read"),
            ("NSelectedRows", "i", "read"),
            ("NSelectedColumns", "i", "read"),
        ],
    ),
    (
        "org.a11y.atspi.TableCell",
        &[
            "GetRowColumnSpan",
            "GetColumnHeaderCells",
            "GetRowHeaderCells",
        ],
        &[
            ("ColumnSpan", "i", "read"),
            ("RowSpan", "i", "read"),
            ("Position", "(ii)", "read"),
            ("Table", "(so)", "read"),
        ],
    ),
    (
        "org.a11y.atspi.Hypertext",
        &["GetNLinks", "GetLink", "GetLinkIndex"],
        &[],
    ),
    (
        "org.a11y.atspi.Hyperlink",
        &["GetObject", "GetURI", "IsValid"],
        &[
            ("NAnchors", "n", "read"),
            ("StartIndex", "i", "read"),
            ("EndIndex", "i", "read"),
        ],
    ),
    (
        "org.a11y.atspi.Document",
        &[
            "GetLocale",
            "GetAttributeValue",
            "GetAttributes",
            "GetTextSelections",
            "SetTextSelections",
        ],
        &[
            ("CurrentPageNumber", "i", "read"),
            ("PageCount", "i", "read"),
        ],
    ),
];

const STANDARD_INTERFACES: &str = concat!(
    "  <interface name=\"org.freedesktop.DBus.Peer\">\n",
    "    <method name=\"Ping\"/>\n    <method name=\"GetMachineId\"/>\n  </interface>\n",
    "  <interface name=\"org.freedesktop.DBus.Introspectable\">\n",
    "    <method name=\"Introspect\"/>\n  </interface>\n",
    "  <interface name=\"org.freedesktop.DBus.Properties\">\n",
    "    <method name=\"Get\"/>\n    <method name=\"GetAll\"/>\n    <method name=\"Set\"/>\n  </interface>\n",
);

/// Whether `interface` declares method `member` (for calls that carry no
/// interface field).
pub(crate) fn declares_method(interface: &str, member: &str) -> bool {
    SHAPES
        .iter()
        .any(|(name, methods, _)| *name == interface && methods.contains(&member))
}

pub(crate) fn call(
    app: &AppContext,
    path: &str,
    member: &str,
    call: &Message,
) -> Result<Handled, CallError> {
    if member != "Introspect" {
        return Err(CallError::UnknownMethod {
            interface: INTROSPECTABLE_INTERFACE.to_owned(),
            member: member.to_owned(),
        });
    }
    accessible::no_args(call)?;
    let xml = introspect(app, path)?;
    Ok(Handled::reply(method_return(call, &(xml,))?))
}

fn introspect(app: &AppContext, path: &str) -> Result<String, CallError> {
    let mut xml = String::from(
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n \
         \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n",
    );
    xml.push_str(STANDARD_INTERFACES);
    match intermediate_children(path) {
        Some(children) => {
            for child in children {
                let _ = writeln!(xml, "  <node name=\"{child}\"/>");
            }
        }
        None => {
            let interfaces: Vec<&'static str> = match objects::resolve(app, path)? {
                Object::Root => dispatch::ROOT_INTERFACES.to_vec(),
                Object::Cache => vec!["org.a11y.atspi.Cache"],
                Object::Node(ctx) => dispatch::node_interface_names(&ctx),
                Object::Hyperlink(_) => dispatch::HYPERLINK_OBJECT_INTERFACES.to_vec(),
            };
            for interface in interfaces {
                write_interface(&mut xml, interface);
            }
        }
    }
    xml.push_str("</node>\n");
    Ok(xml)
}

/// Child nodes of the path prefixes above our objects (node paths are not
/// enumerated: there can be 100k of them).
fn intermediate_children(path: &str) -> Option<&'static [&'static str]> {
    match path {
        "/" => Some(&["org"]),
        "/org" => Some(&["a11y"]),
        "/org/a11y" => Some(&["atspi"]),
        "/org/a11y/atspi" => Some(&["accessible", "cache"]),
        p if p == NODE_PREFIX.trim_end_matches('/') => Some(&["root"]),
        _ => None,
    }
}

fn write_interface(xml: &mut String, interface: &str) {
    let _ = writeln!(xml, "  <interface name=\"{interface}\">");
    if let Some((_, methods, properties)) = SHAPES.iter().find(|(name, _, _)| *name == interface) {
        for method in *methods {
            let _ = writeln!(xml, "    <method name=\"{method}\"/>");
        }
        for (name, kind, access) in *properties {
            let _ = writeln!(
                xml,
                "    <property name=\"{name}\" type=\"{kind}\" access=\"{access}\"/>"
            );
        }
    }
    xml.push_str("  </interface>\n");
}
