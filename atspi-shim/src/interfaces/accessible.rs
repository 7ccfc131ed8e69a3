//! `org.a11y.atspi.Accessible` for replica nodes and for the app root.

use std::collections::HashMap;

use accesskit::{Live, Role};
use accesskit_consumer::NodeRef;
use atspi_common::StateSet;

use crate::model::context::{AppContext, NodeCtx};
use crate::model::objects::{self, client_index, to_i32, Parent};
use crate::model::paths::{self, ObjectRef};
use crate::surface::properties::bcp47_to_posix;
use crate::surface::{declare_interface, Target};
use crate::{
    dispatch, interfaces::table_cell, model::error::CallError, model::relations, model::roles,
    model::states,
};

declare_interface! {
    /// Served by every exposed node and by the app root (`Target::App`).
    pub(crate) static ACCESSIBLE = "org.a11y.atspi.Accessible", on any {
        fn GetChildAtIndex(index: i32) -> (child: ObjectRef) = child_at_index;
        fn GetChildren() -> (children: Vec<ObjectRef>) = children;
        fn GetIndexInParent() -> (index: i32) = index_in_parent;
        fn GetRelationSet() -> (relations: Vec<(u32, Vec<ObjectRef>)>) = relation_set;
        fn GetRole() -> (role: u32) = role;
        fn GetRoleName() -> (name: String) = role_name;
        fn GetLocalizedRoleName() -> (name: String) = localized_role_name;
        fn GetState() -> (states: StateSet) = state;
        fn GetAttributes() -> (attributes: HashMap<String, String>) = object_attributes;
        fn GetApplication() -> (application: ObjectRef) = application;
        fn GetInterfaces() -> (interfaces: Vec<String>) = interfaces;
        property version: u32 = crate::surface::interface_version;
        property Name: String = name_of;
        property Description: String = description_of;
        property Parent: ObjectRef = parent;
        property ChildCount: i32 = child_count;
        property Locale: String = locale_of;
        property AccessibleId: String = accessible_id;
        property HelpText: String = help_text;
    }
}

fn child_at_index(target: Target, index: i32) -> Result<ObjectRef, CallError> {
    let wanted = client_index(index)?;
    match target {
        Target::App(app) => objects::root_children(app)
            .nth(wanted)
            .map(|child| child.object_ref()),
        Target::Node(ctx) => {
            objects::child_at(ctx.surface, &ctx.node, wanted).map(|child| ctx.ref_to(&child))
        }
    }
    .ok_or_else(|| out_of_range(index))
}

fn children(target: Target) -> Result<Vec<ObjectRef>, CallError> {
    Ok(match target {
        Target::App(app) => objects::root_children(app)
            .map(|child| child.object_ref())
            .collect(),
        Target::Node(ctx) => objects::exposed_children(&ctx.node)
            .map(|child| ctx.ref_to(&child))
            .collect(),
    })
}

fn index_in_parent(target: Target) -> Result<i32, CallError> {
    Ok(match target {
        // The registry knows our place on the desktop; atk-bridge answers -1 too.
        Target::App(_) => -1,
        Target::Node(ctx) => to_i32(objects::index_in_parent(ctx)),
    })
}

fn relation_set(target: Target) -> Result<Vec<(u32, Vec<ObjectRef>)>, CallError> {
    Ok(match target {
        Target::App(_) => Vec::new(),
        Target::Node(ctx) => relations::relation_set(ctx),
    })
}

fn role(target: Target) -> Result<u32, CallError> {
    Ok(match target {
        Target::App(_) => atspi_common::Role::Application as u32,
        Target::Node(ctx) => roles::atspi_role(&ctx.node) as u32,
    })
}

fn role_name(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(_) => atspi_common::Role::Application.name().to_owned(),
        Target::Node(ctx) => roles::role_name(roles::atspi_role(&ctx.node)).to_owned(),
    })
}

/// An author's role description is what the user should hear.
fn localized_role_name(target: Target) -> Result<String, CallError> {
    match target {
        Target::App(_) => role_name(target),
        Target::Node(ctx) => Ok(ctx
            .node
            .role_description()
            .unwrap_or_else(|| roles::role_name(roles::atspi_role(&ctx.node)))
            .to_owned()),
    }
}

fn state(target: Target) -> Result<StateSet, CallError> {
    Ok(match target {
        Target::App(_) => root_states(),
        Target::Node(ctx) => states::state_set(ctx),
    })
}

fn object_attributes(target: Target) -> Result<HashMap<String, String>, CallError> {
    Ok(match target {
        Target::App(app) => HashMap::from([("toolkit".to_owned(), toolkit_name(app).to_owned())]),
        Target::Node(ctx) => attributes(ctx),
    })
}

fn application(target: Target) -> Result<ObjectRef, CallError> {
    Ok(match target {
        Target::App(app) => app.root_ref(),
        Target::Node(ctx) => ctx.app.root_ref(),
    })
}

fn interfaces(target: Target) -> Result<Vec<String>, CallError> {
    let names = match target {
        Target::App(_) => dispatch::root_interface_names(),
        Target::Node(ctx) => dispatch::node_interface_names(ctx),
    };
    Ok(names.into_iter().map(str::to_owned).collect())
}

fn name_of(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(app) => app.info.name.clone(),
        Target::Node(ctx) => name(ctx),
    })
}

fn description_of(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(_) => String::new(),
        Target::Node(ctx) => description(&ctx.node),
    })
}

fn parent(target: Target) -> Result<ObjectRef, CallError> {
    Ok(match target {
        Target::App(app) => paths::desktop_ref(app.desktop),
        Target::Node(ctx) => parent_ref(ctx),
    })
}

fn child_count(target: Target) -> Result<i32, CallError> {
    Ok(to_i32(match target {
        Target::App(app) => objects::root_children(app).count(),
        Target::Node(ctx) => objects::child_count(ctx.surface, &ctx.node),
    }))
}

pub(crate) fn locale_of(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(app) => app.host.object_locale().to_owned(),
        Target::Node(ctx) => locale(ctx),
    })
}

fn accessible_id(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(_) => String::new(),
        Target::Node(ctx) => ctx.node.author_id().unwrap_or_default().to_owned(),
    })
}

fn help_text(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(_) => String::new(),
        Target::Node(ctx) => ctx.node.data().tooltip().unwrap_or_default().to_owned(),
    })
}

pub(crate) fn supported(_ctx: &NodeCtx) -> bool {
    true
}

/// The accessible name: a Label's text is its value; everything else uses
/// its label (own or via labelled_by). A window without a label takes the
/// surface title.
pub(crate) fn name(ctx: &NodeCtx) -> String {
    let node = &ctx.node;
    let computed = if node.label_comes_from_value() {
        node.value()
    } else {
        node.label()
    };
    let name = match computed {
        Some(name) => name,
        None if node.is_root() => ctx.surface.title().unwrap_or_default().to_owned(),
        None => String::new(),
    };
    crate::model::budgets::bounded_name(name)
}

pub(crate) fn description(node: &NodeRef) -> String {
    crate::model::budgets::bounded_name(node.description().unwrap_or_default())
}

/// The node's language (inherited), else the session's locale.
fn locale(ctx: &NodeCtx) -> String {
    let node = &ctx.node;
    let mut current = Some(*node);
    while let Some(n) = current {
        if let Some(language) = n.data().language() {
            return bcp47_to_posix(language);
        }
        current = n.parent();
    }
    ctx.app.host.object_locale().to_owned()
}

pub(crate) fn parent_ref(ctx: &NodeCtx) -> ObjectRef {
    match objects::parent(ctx) {
        Parent::AppRoot => ctx.app.root_ref(),
        Parent::Node(parent) => ctx.ref_to(&parent),
    }
}

/// The app root is always enabled and showing.
pub(crate) fn root_states() -> atspi_common::StateSet {
    use atspi_common::State;
    atspi_common::StateSet::new(State::Enabled | State::Sensitive | State::Showing | State::Visible)
}

pub(crate) fn toolkit_name<'a>(app: &'a AppContext) -> &'a str {
    app.info
        .toolkit_name
        .as_deref()
        .filter(|name| !name.is_empty())
        .unwrap_or("Newton")
}

/// `GetAttributes`: the object attributes Orca reads.
pub(crate) fn attributes(ctx: &NodeCtx) -> HashMap<String, String> {
    let node = &ctx.node;
    let data = node.data();
    let mut attrs = HashMap::new();
    let mut put = |key: &str, value: String| {
        attrs.insert(key.to_owned(), value);
    };
    put("toolkit", toolkit_name(ctx.app).to_owned());
    if let Some(level) = node.level() {
        put("level", level.to_string());
    }
    if let Some(position) = node.position_in_set() {
        put("posinset", position.to_string());
    }
    if let Some(size) = node.size_of_set().or_else(|| {
        node.position_in_set()
            .and_then(|_| node.size_of_set_from_container(&objects::exposure_filter))
    }) {
        put("setsize", size.to_string());
    }
    // AccessKit indices are 0-based; ARIA-style attributes are 1-based.
    if let Some(text) = node.row_index_text() {
        put("rowindextext", text.to_owned());
    }
    if let Some(text) = node.column_index_text() {
        put("colindextext", text.to_owned());
    }
    if let Some(row) = data.row_index() {
        put("rowindex", row.saturating_add(1).to_string());
    }
    if let Some(column) = data.column_index() {
        put("colindex", column.saturating_add(1).to_string());
    }
    // egui sends an empty placeholder on every text edit: it says nothing,
    // and an AT that presents placeholders would announce a blank.
    if let Some(placeholder) = data.placeholder().filter(|p| !p.is_empty()) {
        put("placeholder-text", placeholder.to_owned());
    }
    if let Some(shortcut) = data.keyboard_shortcut() {
        put("keyshortcuts", shortcut.to_owned());
    }
    if let Some(description) = node.role_description() {
        put("roledescription", description.to_owned());
    }
    if let Some(class) = node.class_name() {
        put("class", class.to_owned());
    }
    if let Some(id) = node.html_id() {
        put("id", id.to_owned());
    }
    if let Some(tag) = data.html_tag() {
        put("tag", tag.to_owned());
    }
    if let Some(popup) = node.has_popup() {
        put("haspopup", format!("{popup:?}").to_lowercase());
    }
    // Orca 43.1 (script_utilities.cellIndex) reads a cell's row and column
    // through Table.GetRowAtIndex/GetColumnAtIndex of this index, and without
    // it uses GetIndexInParent, which for a cell inside a row is its column.
    if table_cell::supported(ctx) {
        if let Some(index) = table_cell::table_index(ctx) {
            put("table-cell-index", index.to_string());
        }
    }
    if let Some(xml_role) = xml_role(node.role()) {
        put("xml-roles", xml_role.to_owned());
    }
    put_live_attributes(node, &mut put);
    if matches!(node.role(), Role::Heading) && node.level().is_none() {
        put("level", "1".to_owned());
    }
    attrs
}

/// The ARIA role name Orca reads from `xml-roles`, for roles whose AT-SPI
/// role loses the distinction (every landmark is LANDMARK, for instance).
fn xml_role(role: Role) -> Option<&'static str> {
    Some(match role {
        Role::Banner | Role::Header => "banner",
        Role::Complementary => "complementary",
        Role::ContentInfo | Role::Footer => "contentinfo",
        Role::Main => "main",
        Role::Navigation => "navigation",
        Role::Region => "region",
        Role::Search => "search",
        Role::Form => "form",
        Role::Grid => "grid",
        Role::TreeGrid => "treegrid",
        Role::Alert => "alert",
        Role::AlertDialog => "alertdialog",
        Role::Dialog => "dialog",
        Role::Feed => "feed",
        Role::Log => "log",
        Role::Marquee => "marquee",
        Role::Status => "status",
        Role::Timer => "timer",
        Role::Tooltip => "tooltip",
        Role::Switch => "switch",
        Role::TabPanel => "tabpanel",
        _ => return None,
    })
}

fn put_live_attributes(node: &NodeRef, put: &mut impl FnMut(&str, String)) {
    let politeness = |live: Live| match live {
        Live::Off => "off",
        Live::Polite => "polite",
        Live::Assertive => "assertive",
    };
    if let Some(own) = node.data().live() {
        put("live", politeness(own).to_owned());
    }
    let inherited = node.live();
    if inherited != Live::Off {
        put("container-live", politeness(inherited).to_owned());
        if node.is_live_atomic() {
            put("container-atomic", "true".to_owned());
        }
    }
    if node.is_live_atomic() {
        put("atomic", "true".to_owned());
    }
}

pub(crate) fn out_of_range(index: i32) -> CallError {
    CallError::InvalidArgs(format!("child index {index} is out of range"))
}
