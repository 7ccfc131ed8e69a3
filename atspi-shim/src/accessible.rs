//! `org.a11y.atspi.Accessible` for replica nodes and for the app root.

use std::collections::HashMap;

use accesskit::{Live, Role};
use accesskit_consumer::NodeRef;
use zbus::message::Message;
use zvariant::OwnedValue;

use crate::context::{AppContext, NodeCtx};
use crate::objects::{self, client_index, to_i32, Parent};
use crate::paths::{self, ObjectRef};
use crate::properties::{bcp47_to_posix, owned, owned_ref};
use crate::reply::{args, method_return};
use crate::{dispatch, relations, roles, states, table_cell, CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Accessible";
pub(crate) const PROPERTIES: &[&str] = &[
    "Name",
    "Description",
    "Parent",
    "ChildCount",
    "Locale",
    "AccessibleId",
    "HelpText",
];

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
    crate::budgets::bounded_name(name)
}

pub(crate) fn description(node: &NodeRef) -> String {
    crate::budgets::bounded_name(node.description().unwrap_or_default())
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

pub(crate) fn property(ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    let node = &ctx.node;
    match name {
        "Name" => owned(self::name(ctx)),
        "Description" => owned(description(node)),
        "Parent" => owned_ref(parent_ref(ctx)),
        "ChildCount" => owned(to_i32(objects::child_count(ctx.surface, node))),
        "Locale" => owned(locale(ctx)),
        "AccessibleId" => owned(node.author_id().unwrap_or_default().to_owned()),
        "HelpText" => owned(node.data().tooltip().unwrap_or_default().to_owned()),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}

pub(crate) fn call(ctx: &NodeCtx, member: &str, call: &Message) -> Result<Handled, CallError> {
    let reply = match member {
        "GetChildAtIndex" => {
            let (index,): (i32,) = args(call)?;
            let wanted = client_index(index)?;
            let child = objects::child_at(ctx.surface, &ctx.node, wanted)
                .ok_or_else(|| out_of_range(index))?;
            method_return(call, &(ctx.ref_to(&child),))?
        }
        "GetChildren" => {
            no_args(call)?;
            let children: Vec<ObjectRef> = objects::exposed_children(&ctx.node)
                .map(|c| ctx.ref_to(&c))
                .collect();
            method_return(call, &(children,))?
        }
        "GetIndexInParent" => {
            no_args(call)?;
            method_return(call, &(to_i32(objects::index_in_parent(ctx)),))?
        }
        "GetRelationSet" => {
            no_args(call)?;
            method_return(call, &(relations::relation_set(ctx),))?
        }
        "GetRole" => {
            no_args(call)?;
            method_return(call, &(roles::atspi_role(&ctx.node) as u32,))?
        }
        "GetRoleName" => {
            no_args(call)?;
            method_return(call, &(roles::role_name(roles::atspi_role(&ctx.node)),))?
        }
        "GetLocalizedRoleName" => {
            // An author's role description is what the user should hear.
            no_args(call)?;
            let name = ctx
                .node
                .role_description()
                .unwrap_or_else(|| roles::role_name(roles::atspi_role(&ctx.node)));
            method_return(call, &(name,))?
        }
        "GetState" => {
            no_args(call)?;
            method_return(call, &(states::state_set(ctx),))?
        }
        "GetAttributes" => {
            no_args(call)?;
            method_return(call, &(attributes(ctx),))?
        }
        "GetApplication" => {
            no_args(call)?;
            method_return(call, &(ctx.app.root_ref(),))?
        }
        "GetInterfaces" => {
            no_args(call)?;
            method_return(call, &(dispatch::node_interface_names(ctx),))?
        }
        _ => return Err(unknown_method(member)),
    };
    Ok(Handled::reply(reply))
}

/// The app root's Accessible properties.
pub(crate) fn root_property(app: &AppContext, name: &str) -> Result<OwnedValue, CallError> {
    match name {
        "Name" => owned(app.info.name.clone()),
        "Description" | "AccessibleId" | "HelpText" => owned(String::new()),
        "Parent" => owned_ref(paths::desktop_ref(app.desktop)),
        "ChildCount" => owned(to_i32(objects::root_children(app).count())),
        "Locale" => owned(app.host.object_locale().to_owned()),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}

/// The app root's Accessible methods.
pub(crate) fn root_call(
    app: &AppContext,
    member: &str,
    call: &Message,
) -> Result<Handled, CallError> {
    let reply = match member {
        "GetChildAtIndex" => {
            let (index,): (i32,) = args(call)?;
            let wanted = client_index(index)?;
            let child = objects::root_children(app)
                .nth(wanted)
                .ok_or_else(|| out_of_range(index))?;
            method_return(call, &(child.object_ref(),))?
        }
        "GetChildren" => {
            no_args(call)?;
            let children: Vec<ObjectRef> = objects::root_children(app)
                .map(|c| c.object_ref())
                .collect();
            method_return(call, &(children,))?
        }
        "GetIndexInParent" => {
            no_args(call)?;
            // The registry knows our place on the desktop; atk-bridge answers -1 too.
            method_return(call, &(-1i32,))?
        }
        "GetRelationSet" => {
            no_args(call)?;
            method_return(call, &(Vec::<(u32, Vec<ObjectRef>)>::new(),))?
        }
        "GetRole" => {
            no_args(call)?;
            method_return(call, &(atspi_common::Role::Application as u32,))?
        }
        "GetRoleName" | "GetLocalizedRoleName" => {
            no_args(call)?;
            method_return(call, &(atspi_common::Role::Application.name(),))?
        }
        "GetState" => {
            no_args(call)?;
            method_return(call, &(root_states(),))?
        }
        "GetAttributes" => {
            no_args(call)?;
            let mut attrs = HashMap::new();
            attrs.insert("toolkit".to_owned(), toolkit_name(app).to_owned());
            method_return(call, &(attrs,))?
        }
        "GetApplication" => {
            no_args(call)?;
            method_return(call, &(app.root_ref(),))?
        }
        "GetInterfaces" => {
            no_args(call)?;
            method_return(call, &(dispatch::ROOT_INTERFACES.to_vec(),))?
        }
        _ => return Err(unknown_method(member)),
    };
    Ok(Handled::reply(reply))
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

/// Members without arguments still reject a wrong signature.
pub(crate) fn no_args(call: &Message) -> Result<(), CallError> {
    let signature = call.body().signature().to_string();
    if signature.is_empty() {
        Ok(())
    } else {
        Err(CallError::InvalidArgs(format!(
            "expected no arguments, got signature \u{201c}{signature}\u{201d}"
        )))
    }
}

pub(crate) fn out_of_range(index: i32) -> CallError {
    CallError::InvalidArgs(format!("child index {index} is out of range"))
}

pub(crate) fn unknown_method(member: &str) -> CallError {
    CallError::UnknownMethod {
        interface: INTERFACE.to_owned(),
        member: member.to_owned(),
    }
}
