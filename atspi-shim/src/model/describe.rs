//! What an object says about itself: its name, description, locale, object
//! attributes and toolkit (Accessible, Image, Application, Collection's
//! match, cache items and events).

use std::collections::HashMap;

use accesskit::{Live, Role};
use accesskit_consumer::NodeRef;

use crate::model::budgets::bounded_name;
use crate::model::context::{AppContext, NodeCtx};
use crate::model::exposure::exposure_filter;
use crate::model::grid::{self, Grid};
use crate::model::objects::{self, Parent};
use crate::model::paths::ObjectRef;

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
    bounded_name(name)
}

pub(crate) fn description(node: &NodeRef) -> String {
    bounded_name(node.description().unwrap_or_default())
}

/// The node's language (inherited), else the session's locale.
pub(crate) fn locale(ctx: &NodeCtx) -> String {
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
            .and_then(|_| node.size_of_set_from_container(&exposure_filter))
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
    if grid::in_table(&ctx.node) {
        if let Some(index) = table_index(ctx) {
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

/// A BCP 47 tag ("en-US") in the POSIX form AT-SPI uses ("en_US").
pub(crate) fn bcp47_to_posix(tag: &str) -> String {
    tag.replace('-', "_")
}

/// The cell's index in its table's `Table.GetIndexAt` numbering
/// (`row * NColumns + column`), if the table places it inside its grid.
pub(crate) fn table_index(ctx: &NodeCtx) -> Option<usize> {
    let table = grid::table_of(&ctx.node)?;
    let grid = Grid::cached(&table, ctx.models());
    let cell = grid.cell_of(&ctx.node)?;
    (cell.row < grid.row_count && cell.column < grid.column_count).then(|| {
        cell.row
            .saturating_mul(grid.column_count)
            .saturating_add(cell.column)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_tags_become_posix_locales() {
        assert_eq!(bcp47_to_posix("en-US"), "en_US");
        assert_eq!(bcp47_to_posix("fr"), "fr");
    }
}
