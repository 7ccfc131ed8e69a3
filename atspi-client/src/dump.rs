//! The walker behind `dump` and `diff`: walk any AT-SPI application as a
//! client sees it and render its tree (text or JSON). Works on every AT-SPI
//! application, bridged or not.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::wire::{CacheItem, ObjectRef};
use futures::future::LocalBoxFuture;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

pub use crate::calls::ROOT;
use crate::calls::{accessible, action, cache, component, text, value, NULL_PATH};

/// One object as an AT sees it. Deserializable so a saved `dump --json`
/// snapshot can be compared (`diff snapshot.json APP`); keys a snapshot
/// omits take their empty value, as serialization omits them.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq, Default)]
#[serde(default)]
pub struct DumpNode {
    pub role: String,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub states: Vec<String>,
    pub interfaces: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caret: Option<i32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// `Value.MinimumValue`, for objects with the Value interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    /// `Value.MaximumValue`, for objects with the Value interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extents: Option<(i32, i32, i32, i32)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<DumpNode>,
}

/// Limits a walk so a huge or cyclic application cannot run forever.
#[derive(Clone, Copy, Debug)]
pub struct WalkLimits {
    pub max_depth: usize,
    pub max_nodes: usize,
}

impl Default for WalkLimits {
    fn default() -> Self {
        Self {
            max_depth: 64,
            max_nodes: 20_000,
        }
    }
}

/// The desktop's applications: (bus name, name).
pub async fn applications(conn: &zbus::Connection) -> zbus::Result<Vec<(String, String)>> {
    let children = crate::calls::desktop_applications(conn).await?;
    let mut apps = Vec::new();
    for (bus, path) in children {
        let name = accessible::NAME
            .get(conn, &bus, path.as_str())
            .await
            .unwrap_or_default();
        apps.push((bus, name));
    }
    Ok(apps)
}

/// Objects described at once during a walk. Each description is a handful
/// of calls sent together, so a walk keeps the application busy instead of
/// waiting out one bus round trip per call; the order of the result does
/// not depend on it.
const PARALLEL_OBJECTS: usize = 8;

/// Walks one application from its root.
pub async fn walk_application(conn: &zbus::Connection, bus: &str, limits: WalkLimits) -> DumpNode {
    walk_from(conn, bus, ROOT, limits).await
}

/// Walks the subtree of one object of application `bus`, as
/// [`walk_application`] walks the whole application.
pub async fn walk_from(
    conn: &zbus::Connection,
    bus: &str,
    path: &str,
    limits: WalkLimits,
) -> DumpNode {
    walk_from_reporting(conn, bus, path, limits, &|_| ()).await
}

/// [`walk_from`], calling `visited` with the number of objects read so far
/// after each one (for progress output; it should be cheap).
pub async fn walk_from_reporting(
    conn: &zbus::Connection,
    bus: &str,
    path: &str,
    limits: WalkLimits,
    visited: &dyn Fn(usize),
) -> DumpNode {
    let walker = Walker {
        conn,
        bus,
        max_depth: limits.max_depth,
        budget: Cell::new(limits.max_nodes.saturating_sub(1)),
        permits: async_lock::Semaphore::new(PARALLEL_OBJECTS),
        visited: Cell::new(0),
        report: visited,
    };
    walker.walk(path.to_owned(), 0).await
}

/// The object path at `indices` below the application root of `bus`,
/// following `GetChildAtIndex` (an object of another connection ends it).
pub async fn object_at(
    conn: &zbus::Connection,
    bus: &str,
    indices: &[i32],
) -> Result<String, String> {
    let mut path = ROOT.to_owned();
    for (depth, &index) in indices.iter().enumerate() {
        let (child_bus, child_path) = accessible::GET_CHILD_AT_INDEX
            .call(conn, bus, &path, &(index,))
            .await
            .map_err(|e| format!("GetChildAtIndex({index}) at level {depth}: {e}"))?;
        if child_bus != bus || child_path.as_str() == NULL_PATH {
            let count = accessible::CHILD_COUNT.get(conn, bus, &path).await.ok();
            let count = count.map_or_else(|| "an unknown number of".to_owned(), |n| n.to_string());
            return Err(format!(
                "no child {index} at level {depth} (the object has {count} children there)"
            ));
        }
        path = child_path.to_string();
    }
    Ok(path)
}

struct Walker<'a> {
    conn: &'a zbus::Connection,
    bus: &'a str,
    max_depth: usize,
    /// Objects that may still be visited; each is reserved when its parent
    /// lists it, in child order.
    budget: Cell<usize>,
    permits: async_lock::Semaphore,
    /// Objects read so far, and who is told.
    visited: Cell<usize>,
    report: &'a dyn Fn(usize),
}

impl Walker<'_> {
    fn walk(&self, path: String, depth: usize) -> LocalBoxFuture<'_, DumpNode> {
        Box::pin(async move {
            let descend = depth < self.max_depth && self.budget.get() > 0;
            let (mut node, kids) = {
                let _permit = self.permits.acquire().await;
                let kids = async {
                    if descend {
                        Some(children(self.conn, self.bus, &path).await)
                    } else {
                        None
                    }
                };
                futures::join!(describe(self.conn, self.bus, &path), kids)
            };
            self.visited.set(self.visited.get() + 1);
            (self.report)(self.visited.get());
            let kids = match kids {
                None => return node,
                Some(Ok(kids)) => kids,
                Some(Err(e)) => {
                    node.errors.push(format!("GetChildren: {e}"));
                    return node;
                }
            };
            let mut walks = Vec::with_capacity(kids.len());
            for (child_bus, child_path) in kids {
                // Objects served by another connection (embedded sockets) are not followed.
                if child_bus != self.bus {
                    continue;
                }
                if self.budget.get() == 0 {
                    node.errors
                        .push("node budget exhausted; children omitted".into());
                    break;
                }
                self.budget.set(self.budget.get() - 1);
                walks.push(self.walk(child_path.to_string(), depth + 1));
            }
            node.children = futures::stream::iter(walks)
                .buffered(PARALLEL_OBJECTS)
                .collect()
                .await;
            node
        })
    }
}

/// Reads one application's tree with a single `Cache.GetItems` call (the
/// root object itself with ordinary calls): structure, role, name,
/// description, states and interfaces of every object, in a fraction of a
/// full walk's time. Text, caret, actions, value, extents and relations are
/// not read (left empty). Children come in `index in parent` order; objects
/// whose parent is not in the cache are not reached, and the node budget
/// applies as in a walk.
pub async fn cache_tree(conn: &zbus::Connection, bus: &str, limits: WalkLimits) -> DumpNode {
    let mut root = describe(conn, bus, ROOT).await;
    root.text = None;
    root.caret = None;
    root.actions.clear();
    (root.value, root.minimum, root.maximum, root.extents) = (None, None, None, None);
    root.relations.clear();
    let items = match cache::GET_ITEMS.call_fixed(conn, bus, &()).await {
        Ok(items) => items,
        Err(e) => {
            root.errors.push(format!("Cache.GetItems: {e}"));
            return root;
        }
    };
    let mut by_parent: BTreeMap<String, Vec<(i32, usize)>> = BTreeMap::new();
    for (index, item) in items.iter().enumerate() {
        let ((_, path), _, (_, parent), index_in_parent, ..) = item;
        if path.as_str() == ROOT {
            continue;
        }
        by_parent
            .entry(parent.to_string())
            .or_default()
            .push((*index_in_parent, index));
    }
    for children in by_parent.values_mut() {
        children.sort();
    }
    let mut budget = limits.max_nodes.saturating_sub(1);
    root.children = cache_children(
        ROOT,
        &items,
        &by_parent,
        1,
        limits.max_depth,
        &mut budget,
        &mut root.errors,
    );
    root
}

fn cache_children(
    parent: &str,
    items: &[CacheItem],
    by_parent: &BTreeMap<String, Vec<(i32, usize)>>,
    depth: usize,
    max_depth: usize,
    budget: &mut usize,
    errors: &mut Vec<String>,
) -> Vec<DumpNode> {
    let Some(children) = by_parent.get(parent) else {
        return Vec::new();
    };
    if depth > max_depth {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(children.len());
    for (_, index) in children {
        if *budget == 0 {
            errors.push("node budget exhausted; children omitted".into());
            break;
        }
        *budget -= 1;
        let Some(((_, path), _, _, _, _, interfaces, name, role, description, states)) =
            items.get(*index)
        else {
            continue;
        };
        let mut interfaces = interfaces.clone();
        interfaces.sort();
        let mut node_errors = Vec::new();
        let children = cache_children(
            path.as_str(),
            items,
            by_parent,
            depth + 1,
            max_depth,
            budget,
            &mut node_errors,
        );
        out.push(DumpNode {
            role: role_name(*role),
            name: name.clone(),
            description: description.clone(),
            states: state_names(states),
            interfaces,
            text: None,
            caret: None,
            actions: Vec::new(),
            value: None,
            minimum: None,
            maximum: None,
            extents: None,
            relations: Vec::new(),
            errors: node_errors,
            children,
        });
    }
    out
}

async fn describe(conn: &zbus::Connection, bus: &str, path: &str) -> DumpNode {
    let role = async {
        match accessible::GET_ROLE_NAME.call(conn, bus, path, &()).await {
            Ok(role) => Ok(role),
            // As libatspi does: applications without GetRoleName (accesskit_unix,
            // AccessKit #241) are read through GetRole and AT-SPI's role names.
            Err(name_error) => accessible::GET_ROLE
                .call(conn, bus, path, &())
                .await
                .map(role_name)
                .map_err(|_| name_error),
        }
    };
    let interfaces = async {
        let mut interfaces = accessible::GET_INTERFACES
            .call(conn, bus, path, &())
            .await
            .unwrap_or_default();
        interfaces.sort();
        interfaces
    };
    let (role, name, description, states, interfaces, relations) = futures::join!(
        role,
        accessible::NAME.get(conn, bus, path),
        accessible::DESCRIPTION.get(conn, bus, path),
        accessible::GET_STATE.call(conn, bus, path, &()),
        interfaces,
        relations_of(conn, bus, path),
    );
    let mut errors = Vec::new();
    let mut note = |what: &str, e: zbus::Error| errors.push(format!("{what}: {e}"));
    let role = role.unwrap_or_else(|e| {
        note("GetRoleName", e);
        String::new()
    });
    let name = name.unwrap_or_else(|e| {
        note("Name", e);
        String::new()
    });
    let description = description.unwrap_or_default();
    let states = match states {
        Ok(bits) => state_names(&bits),
        Err(e) => {
            note("GetState", e);
            Vec::new()
        }
    };
    let has = |short: &str| {
        interfaces
            .iter()
            .any(|i| i.strip_prefix("org.a11y.atspi.") == Some(short))
    };
    let (has_text, has_value) = (has("Text"), has("Value"));
    let (text, caret, actions, value, minimum, maximum, extents) = futures::join!(
        async {
            if has_text {
                text_of(conn, bus, path).await
            } else {
                None
            }
        },
        async {
            if has_text {
                text::CARET_OFFSET.get(conn, bus, path).await.ok()
            } else {
                None
            }
        },
        async {
            if has("Action") {
                actions_of(conn, bus, path).await
            } else {
                Vec::new()
            }
        },
        async {
            if has_value {
                value::CURRENT_VALUE.get(conn, bus, path).await.ok()
            } else {
                None
            }
        },
        async {
            if has_value {
                value::MINIMUM_VALUE.get(conn, bus, path).await.ok()
            } else {
                None
            }
        },
        async {
            if has_value {
                value::MAXIMUM_VALUE.get(conn, bus, path).await.ok()
            } else {
                None
            }
        },
        async {
            if has("Component") {
                component::GET_EXTENTS
                    .call(conn, bus, path, &(0u32,))
                    .await
                    .ok()
            } else {
                None
            }
        },
    );
    DumpNode {
        role,
        name,
        description,
        states,
        interfaces,
        text,
        caret,
        actions,
        value,
        minimum,
        maximum,
        extents,
        relations,
        errors,
        children: Vec::new(),
    }
}

/// AT-SPI's name of role number `number`, as libatspi's
/// `atspi_role_get_name` gives it (atspi-common's table says "button" for
/// PUSH_BUTTON, libatspi and ATK "push button"; every other entry matches).
fn role_name(number: u32) -> String {
    match atspi_common::Role::try_from(number) {
        Ok(atspi_common::Role::Button) => "push button".to_owned(),
        Ok(role) => role.name().to_owned(),
        Err(_) => format!("role-{number}"),
    }
}

async fn children(conn: &zbus::Connection, bus: &str, path: &str) -> zbus::Result<Vec<ObjectRef>> {
    accessible::GET_CHILDREN.call(conn, bus, path, &()).await
}

async fn text_of(conn: &zbus::Connection, bus: &str, path: &str) -> Option<String> {
    text::GET_TEXT.call(conn, bus, path, &(0, -1)).await.ok()
}

async fn actions_of(conn: &zbus::Connection, bus: &str, path: &str) -> Vec<String> {
    action::GET_ACTIONS
        .call(conn, bus, path, &())
        .await
        .map(|actions| actions.into_iter().map(|(name, _, _)| name).collect())
        .unwrap_or_default()
}

async fn relations_of(conn: &zbus::Connection, bus: &str, path: &str) -> Vec<String> {
    let Ok(relations) = accessible::GET_RELATION_SET
        .call(conn, bus, path, &())
        .await
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (kind, targets) in relations {
        for (target_bus, target_path) in targets {
            let target = accessible::NAME
                .get(conn, &target_bus, target_path.as_str())
                .await
                .unwrap_or_default();
            out.push(format!(
                "{} \u{2192} \u{201c}{target}\u{201d}",
                relation_name(kind)
            ));
        }
    }
    out
}

/// AT-SPI relation type names (atspi-constants.h order).
pub fn relation_name(kind: u32) -> String {
    const NAMES: [&str; 24] = [
        "null",
        "label-for",
        "labelled-by",
        "controller-for",
        "controlled-by",
        "member-of",
        "tooltip-for",
        "node-child-of",
        "node-parent-of",
        "extended",
        "flows-to",
        "flows-from",
        "subwindow-of",
        "embeds",
        "embedded-by",
        "popup-for",
        "parent-window-of",
        "description-for",
        "described-by",
        "details",
        "details-for",
        "error-message",
        "error-for",
        "last-defined",
    ];
    NAMES
        .get(kind as usize)
        .map(|n| n.to_string())
        .unwrap_or_else(|| format!("relation-{kind}"))
}

/// AT-SPI state nicks by bit number (atspi-constants.h).
const STATE_NICKS: [&str; 44] = [
    "invalid",
    "active",
    "armed",
    "busy",
    "checked",
    "collapsed",
    "defunct",
    "editable",
    "enabled",
    "expandable",
    "expanded",
    "focusable",
    "focused",
    "has-tooltip",
    "horizontal",
    "iconified",
    "modal",
    "multi-line",
    "multiselectable",
    "opaque",
    "pressed",
    "resizable",
    "selectable",
    "selected",
    "sensitive",
    "showing",
    "single-line",
    "stale",
    "transient",
    "vertical",
    "visible",
    "manages-descendants",
    "indeterminate",
    "required",
    "truncated",
    "animated",
    "invalid-entry",
    "supports-autocompletion",
    "selectable-text",
    "is-default",
    "visited",
    "checkable",
    "has-popup",
    "read-only",
];

fn state_names(bits: &[u32]) -> Vec<String> {
    let mut names = Vec::new();
    for (word_index, word) in bits.iter().enumerate().take(2) {
        for bit in 0..32 {
            if word & (1 << bit) != 0 {
                let index = word_index * 32 + bit;
                names.push(
                    STATE_NICKS
                        .get(index)
                        .map(|n| n.to_string())
                        .unwrap_or_else(|| format!("state-{index}")),
                );
            }
        }
    }
    names
}

/// Renders trees as `dump --json` prints them: a JSON array with one object
/// per application. This shape is stable (scripts and golden files rely on
/// it); each object has, in this order:
///
/// * `role` (AT-SPI role name), `name`: always;
/// * `description`: omitted when empty;
/// * `states` (nicks in AT-SPI bit order), `interfaces` (sorted, full
///   names): always, possibly empty;
/// * `text` (whole text), `caret`, `value` (current value), `minimum`,
///   `maximum` (the value's limits): only for objects with the Text or
///   Value interface;
/// * `actions` (names), `relations` (`"kind → “target name”"`): omitted
///   when empty;
/// * `extents`: `[x, y, width, height]` in screen coordinates, only for
///   objects with the Component interface;
/// * `errors`: calls that failed while walking, omitted when none;
/// * `children`: the same objects, in AT-SPI child order; omitted when none.
///
/// New optional keys may be added; existing ones keep their meaning.
pub fn to_json(trees: &[DumpNode]) -> serde_json::Result<String> {
    let mut json = serde_json::to_string_pretty(trees)?;
    json.push('\n');
    Ok(json)
}

/// Renders a tree as indented text, one object per line.
pub fn to_text(node: &DumpNode) -> String {
    let mut out = String::new();
    write_text(node, 0, &mut out);
    out
}

fn write_text(node: &DumpNode, depth: usize, out: &mut String) {
    let indent = "  ".repeat(depth);
    let _ = write!(out, "{indent}{} \u{201c}{}\u{201d}", node.role, node.name);
    if !node.states.is_empty() {
        let _ = write!(out, " [{}]", node.states.join(", "));
    }
    let mut details: BTreeMap<&str, String> = BTreeMap::new();
    if let Some(text) = &node.text {
        details.insert("text", format!("{text:?}"));
    }
    if let Some(caret) = node.caret.filter(|c| *c >= 0) {
        details.insert("caret", caret.to_string());
    }
    if let Some(value) = node.value {
        details.insert("value", value.to_string());
    }
    if !node.actions.is_empty() {
        details.insert("actions", node.actions.join("/"));
    }
    for (key, value) in details {
        let _ = write!(out, " {key}={value}");
    }
    out.push('\n');
    for relation in &node.relations {
        let _ = writeln!(out, "{indent}    {relation}");
    }
    for error in &node.errors {
        let _ = writeln!(out, "{indent}    error: {error}");
    }
    for child in &node.children {
        write_text(child, depth + 1, out);
    }
}

/// Picks the applications named `wanted`: an exact name match, else the one
/// application whose name contains it.
pub fn select_apps(
    apps: Vec<(String, String)>,
    wanted: Option<&str>,
) -> Result<Vec<(String, String)>, String> {
    let Some(wanted) = wanted else {
        return Ok(apps);
    };
    let exact: Vec<_> = apps
        .iter()
        .filter(|(_, name)| name == wanted)
        .cloned()
        .collect();
    if !exact.is_empty() {
        return Ok(exact);
    }
    let partial: Vec<_> = apps
        .iter()
        .filter(|(_, name)| name.contains(wanted))
        .cloned()
        .collect();
    match partial.len() {
        1 => Ok(partial),
        0 => {
            let names: Vec<_> = apps
                .iter()
                .map(|(_, n)| format!("\u{201c}{n}\u{201d}"))
                .collect();
            Err(format!(
                "no application named \u{201c}{wanted}\u{201d}; the desktop has: {}",
                names.join(", ")
            ))
        }
        _ => Err(format!(
            "\u{201c}{wanted}\u{201d} matches several applications; give the full name"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf() -> DumpNode {
        DumpNode {
            role: "push button".into(),
            name: "OK".into(),
            description: String::new(),
            states: vec!["enabled".into(), "focusable".into()],
            interfaces: vec![
                "org.a11y.atspi.Accessible".into(),
                "org.a11y.atspi.Action".into(),
            ],
            text: None,
            caret: None,
            actions: vec!["click".into()],
            value: None,
            minimum: None,
            maximum: None,
            extents: Some((10, 20, 80, 24)),
            relations: Vec::new(),
            errors: Vec::new(),
            children: Vec::new(),
        }
    }

    #[test]
    fn json_shape_is_stable() {
        let mut root = leaf();
        root.role = "application".into();
        root.description = "An app".into();
        root.text = Some("hi".into());
        root.caret = Some(1);
        root.children = vec![leaf()];
        let json = to_json(&[root]).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        // serde_json without preserve_order sorts keys; the text keeps the struct order.
        let first_line_of = |key: &str| json.find(&format!("\"{key}\"")).unwrap();
        assert!(first_line_of("role") < first_line_of("name"));
        assert!(first_line_of("states") < first_line_of("children"));
        let mut root_keys = keys(&value[0]);
        root_keys.sort();
        assert_eq!(
            root_keys,
            [
                "actions",
                "caret",
                "children",
                "description",
                "extents",
                "interfaces",
                "name",
                "role",
                "states",
                "text"
            ]
        );
        let mut leaf_keys = keys(&value[0]["children"][0]);
        leaf_keys.sort();
        assert_eq!(
            leaf_keys,
            ["actions", "extents", "interfaces", "name", "role", "states"]
        );
        assert_eq!(
            value[0]["children"][0]["extents"],
            serde_json::json!([10, 20, 80, 24])
        );
        assert!(json.ends_with("]\n"));
    }
}
