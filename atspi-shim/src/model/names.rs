//! The D-Bus names of every interface the shim serves, in one place: the
//! declarations (`interfaces/`), the interface lists of `GetInterfaces` and
//! cache items (`implements.rs`), dispatch and the signals use these.

pub(crate) const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
pub(crate) const ACTION: &str = "org.a11y.atspi.Action";
pub(crate) const APPLICATION: &str = "org.a11y.atspi.Application";
/// Also the interface of the Cache signals (`AddAccessible`, `RemoveAccessible`).
pub(crate) const CACHE: &str = "org.a11y.atspi.Cache";
pub(crate) const COLLECTION: &str = "org.a11y.atspi.Collection";
pub(crate) const COMPONENT: &str = "org.a11y.atspi.Component";
pub(crate) const DOCUMENT: &str = "org.a11y.atspi.Document";
pub(crate) const EDITABLE_TEXT: &str = "org.a11y.atspi.EditableText";
pub(crate) const HYPERLINK: &str = "org.a11y.atspi.Hyperlink";
pub(crate) const HYPERTEXT: &str = "org.a11y.atspi.Hypertext";
pub(crate) const IMAGE: &str = "org.a11y.atspi.Image";
pub(crate) const SELECTION: &str = "org.a11y.atspi.Selection";
pub(crate) const TABLE: &str = "org.a11y.atspi.Table";
pub(crate) const TABLE_CELL: &str = "org.a11y.atspi.TableCell";
pub(crate) const TEXT: &str = "org.a11y.atspi.Text";
pub(crate) const VALUE: &str = "org.a11y.atspi.Value";

/// The standard D-Bus interfaces every object answers.
pub(crate) const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
pub(crate) const PEER: &str = "org.freedesktop.DBus.Peer";
pub(crate) const INTROSPECTABLE: &str = "org.freedesktop.DBus.Introspectable";
