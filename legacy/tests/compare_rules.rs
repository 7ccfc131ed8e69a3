//! The documented-differences comparison itself: excused differences pass,
//! anything else is reported (no buses needed).

// Each test binary uses its own part of the shared support module.
#[allow(dead_code)]
mod support;

use std::collections::BTreeSet;

use support::compare::differences;
use support::walk::Obj;

fn obj(role: &str, name: &str, children: Vec<Obj>) -> Obj {
    Obj {
        role: role.into(),
        name: name.into(),
        description: String::new(),
        states: BTreeSet::new(),
        interfaces: ["Accessible".to_string()].into(),
        text: None,
        caret: None,
        actions: Vec::new(),
        value: None,
        extents: None,
        relations: BTreeSet::new(),
        errors: Vec::new(),
        children,
    }
}

fn app(window: Obj) -> Obj {
    obj("application", "app", vec![window])
}

#[test]
fn documented_differences_are_excused() {
    let mut legacy_button = obj("button", "OK", vec![]);
    legacy_button.actions = vec!["click".into()];
    legacy_button.extents = Some((8, 8, 33, 20));
    let mut bridged_button = obj("button", "OK", vec![]);
    bridged_button.actions = vec!["click".into(), "focus".into()];
    bridged_button.interfaces.insert("Collection".into());
    bridged_button
        .relations
        .insert("labelled-by \u{2192} x".into());
    bridged_button.extents = Some((8, 8, 34, 20));
    let legacy = app(obj("frame", "", vec![legacy_button]));
    // The bridge names the window from the surface title and keeps a
    // GenericContainer as a panel.
    let bridged = app(obj(
        "frame",
        "Form",
        vec![obj("panel", "", vec![bridged_button])],
    ));
    assert_eq!(differences(&legacy, &bridged), Vec::<String>::new());
}

#[test]
fn anything_else_is_reported() {
    let legacy = app(obj("frame", "W", vec![obj("button", "OK", vec![])]));
    let bridged = app(obj("frame", "W", vec![obj("button", "Cancel", vec![])]));
    let diffs = differences(&legacy, &bridged);
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert!(diffs[0].contains("name \"OK\" vs \"Cancel\""), "{diffs:?}");

    let mut legacy_button = obj("button", "OK", vec![]);
    legacy_button.actions = vec!["click".into()];
    let legacy = app(obj("frame", "W", vec![legacy_button]));
    let bridged = app(obj("frame", "W", vec![obj("button", "OK", vec![])]));
    let diffs = differences(&legacy, &bridged);
    assert!(diffs.iter().any(|d| d.contains("actions")), "{diffs:?}");
}
