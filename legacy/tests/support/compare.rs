//! Legacy (accesskit_unix) tree versus bridged tree, modulo the differences
//! docs/compat.md documents — each one a named, explicit rule here, so an
//! undocumented difference fails the test.

use super::walk::Obj;

/// Structural panels: accesskit_unix filters `GenericContainer` nodes out
/// (their children move up) even when they carry a label or description;
/// the bridge exposes them as panels, named when labelled. Panels are
/// spliced out on both sides (egui's `Pane`, an unnamed panel on both, goes
/// too, symmetrically), so panel names are not compared.
pub fn flatten_structural_panels(obj: &Obj) -> Obj {
    let mut out = obj.clone();
    out.children = Vec::new();
    for child in &obj.children {
        let child = flatten_structural_panels(child);
        if child.role == "panel" {
            out.children.extend(child.children);
        } else {
            out.children.push(child);
        }
    }
    out
}

/// Role pairs (legacy, bridged) AT-SPI leaves to the implementation.
const ROLE_CHOICES: [(&str, &str); 5] = [
    // accesskit_unix uses the deprecated header roles.
    ("column header", "table column header"),
    ("row header", "table row header"),
    // A multi-line text input: GTK's text view is "text", accesskit_unix says "entry".
    ("entry", "text"),
    // accesskit_unix makes every Window a frame; the bridge keeps "frame" for the surface.
    ("frame", "window"),
    // accesskit ColorWell.
    ("button", "color chooser"),
];

/// Interfaces only the bridge implements (or implements for more nodes).
const BRIDGE_ONLY_INTERFACES: [&str; 9] = [
    "Collection",
    "Table",
    "TableCell",
    "Hypertext",
    "Document",
    "Action",
    "Text",
    "EditableText",
    "Hyperlink",
];

/// Actions only the bridge offers.
const BRIDGE_ONLY_ACTIONS: [&str; 3] = ["focus", "increment", "decrement"];

/// Every difference not covered by a documented rule, one line each.
pub fn differences(legacy: &Obj, bridged: &Obj) -> Vec<String> {
    let legacy = flatten_structural_panels(legacy);
    let bridged = flatten_structural_panels(bridged);
    let mut out = Vec::new();
    compare(&legacy, &bridged, "", 0, &mut out);
    out
}

fn compare(legacy: &Obj, bridged: &Obj, parent: &str, depth: usize, out: &mut Vec<String>) {
    let here = format!("{parent}/{}:{}", bridged.role, bridged.name);
    let mut differ = |what: String| out.push(format!("{here}: {what}"));
    if legacy.role != bridged.role
        && !ROLE_CHOICES.contains(&(legacy.role.as_str(), bridged.role.as_str()))
    {
        differ(format!("role {:?} vs {:?}", legacy.role, bridged.role));
    }
    // The application's name is chosen per copy; an unnamed window takes
    // the compositor's title on the bridge.
    let window_title = depth == 1 && legacy.name.is_empty();
    if depth > 0 && legacy.name != bridged.name && !window_title {
        differ(format!("name {:?} vs {:?}", legacy.name, bridged.name));
    }
    if legacy.description != bridged.description {
        differ(format!(
            "description {:?} vs {:?}",
            legacy.description, bridged.description
        ));
    }
    if depth > 0 {
        compare_states(legacy, bridged, &mut differ);
    }
    for interface in legacy.interfaces.difference(&bridged.interfaces) {
        differ(format!("interface {interface} only on the legacy side"));
    }
    for interface in bridged.interfaces.difference(&legacy.interfaces) {
        if !BRIDGE_ONLY_INTERFACES.contains(&interface.as_str()) {
            differ(format!("interface {interface} only on the bridged side"));
        }
    }
    if legacy.text.is_some() && legacy.text != bridged.text {
        differ(format!("text {:?} vs {:?}", legacy.text, bridged.text));
    }
    if legacy.caret.is_some() && bridged.caret.is_some() && legacy.caret != bridged.caret {
        differ(format!("caret {:?} vs {:?}", legacy.caret, bridged.caret));
    }
    compare_actions(legacy, bridged, &mut differ);
    compare_value(legacy, bridged, &mut differ);
    compare_extents(legacy, bridged, &mut differ);
    for relation in legacy.relations.difference(&bridged.relations) {
        differ(format!("relation {relation} only on the legacy side"));
    }
    for error in legacy.errors.iter().chain(&bridged.errors) {
        differ(format!("error {error}"));
    }
    let names = |o: &Obj| -> Vec<String> {
        o.children
            .iter()
            .map(|c| format!("{}:{}", c.role, c.name))
            .collect()
    };
    if legacy.children.len() != bridged.children.len() {
        differ(format!(
            "children {:?} vs {:?}",
            names(legacy),
            names(bridged)
        ));
        return;
    }
    for (l, b) in legacy.children.iter().zip(&bridged.children) {
        compare(l, b, &here, depth + 1, out);
    }
}

fn compare_states(legacy: &Obj, bridged: &Obj, differ: &mut impl FnMut(String)) {
    for state in bridged.states.difference(&legacy.states) {
        let allowed = match state.as_str() {
            // The bridge: any node whose text has ranges can hold a selection.
            "selectable-text" => bridged.interfaces.contains("Text"),
            // egui's selectable labels: toggle buttons, checkable, checked when pressed.
            "checkable" => bridged.role == "toggle button",
            "checked" => bridged.role == "toggle button" && legacy.states.contains("pressed"),
            // accesskit_unix drops `expanded` entirely.
            "expandable" | "expanded" | "collapsed" => true,
            _ => false,
        };
        if !allowed {
            differ(format!("state {state} only on the bridged side"));
        }
    }
    for state in legacy.states.difference(&bridged.states) {
        // accesskit_unix says selectable-text for every text input, even one
        // (a spin button) it gives no Text interface.
        let allowed = state == "selectable-text" && !legacy.interfaces.contains("Text");
        if !allowed {
            differ(format!("state {state} only on the legacy side"));
        }
    }
}

fn compare_actions(legacy: &Obj, bridged: &Obj, differ: &mut impl FnMut(String)) {
    let bridged_core: Vec<&String> = bridged
        .actions
        .iter()
        .filter(|a| !BRIDGE_ONLY_ACTIONS.contains(&a.as_str()) || legacy.actions.contains(a))
        .collect();
    let legacy_all: Vec<&String> = legacy.actions.iter().collect();
    if bridged_core != legacy_all {
        differ(format!(
            "actions {:?} vs {:?}",
            legacy.actions, bridged.actions
        ));
    }
}

fn compare_value(legacy: &Obj, bridged: &Obj, differ: &mut impl FnMut(String)) {
    match (legacy.value, bridged.value) {
        (None, None) => {}
        (Some(l), Some(b)) => {
            // accesskit_unix answers ±f64::MAX for a missing limit; the
            // bridge picks 0/100 (or the current value) instead.
            let unbounded = |x: f64| x.abs() == f64::MAX;
            let same = |x: f64, y: f64| (x - y).abs() < 1e-9;
            let min_ok = same(l.1, b.1) || unbounded(l.1);
            let max_ok = same(l.2, b.2) || unbounded(l.2);
            if !same(l.0, b.0) || !min_ok || !max_ok {
                differ(format!("value {l:?} vs {b:?}"));
            }
        }
        (l, b) => differ(format!("value {l:?} vs {b:?}")),
    }
}

fn compare_extents(legacy: &Obj, bridged: &Obj, differ: &mut impl FnMut(String)) {
    let Some(l) = legacy.extents else {
        return;
    };
    let Some(b) = bridged.extents else {
        differ(format!("extents {l:?} only on the legacy side"));
        return;
    };
    // Integer extents force a rounding choice: accesskit_unix truncates,
    // the bridge rounds.
    let close = |x: i32, y: i32| (x - y).abs() <= 1;
    if !(close(l.0, b.0) && close(l.1, b.1) && close(l.2, b.2) && close(l.3, b.3)) {
        differ(format!("extents {l:?} vs {b:?}"));
    }
}
