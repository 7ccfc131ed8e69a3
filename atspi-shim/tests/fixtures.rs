//! Every small fixture, frame by frame: events build, and every object the
//! cache lists answers every member of every interface it advertises
//! (clients trust `GetInterfaces`), consistently with its cache item.

mod common;

use std::collections::HashMap;

use common::*;
use newton_atspi_shim::events_for;
use zvariant::OwnedValue;

/// Argument-free or simple calls per interface that must succeed.
fn probe(h: &Harness, path: &str, interface: &str) {
    let _: HashMap<String, OwnedValue> = h.ok(
        path,
        "org.freedesktop.DBus.Properties",
        "GetAll",
        &(interface,),
    );
    match interface {
        "org.a11y.atspi.Accessible" => {
            let _: Vec<Ref> = h.ok(path, interface, "GetChildren", &());
            let _: Vec<(u32, Vec<Ref>)> = h.ok(path, interface, "GetRelationSet", &());
            let _: HashMap<String, String> = h.ok(path, interface, "GetAttributes", &());
            let _: String = h.ok(path, interface, "GetLocalizedRoleName", &());
        }
        "org.a11y.atspi.Component" => {
            let _: (i32, i32, i32, i32) = h.ok(path, interface, "GetExtents", &(0u32,));
            let _: (i32, i32, i32, i32) = h.ok(path, interface, "GetExtents", &(1u32,));
            let _: Ref = h.ok(
                path,
                interface,
                "GetAccessibleAtPoint",
                &(10i32, 10i32, 1u32),
            );
        }
        "org.a11y.atspi.Action" => {
            let actions: Vec<(String, String, String)> = h.ok(path, interface, "GetActions", &());
            assert!(
                !actions.is_empty(),
                "{path} advertises Action without actions"
            );
        }
        "org.a11y.atspi.Text" => {
            let count: i32 = h.prop(path, interface, "CharacterCount");
            let text: String = h.ok(path, interface, "GetText", &(0i32, -1i32));
            assert_eq!(text.chars().count() as i32, count, "{path}");
        }
        "org.a11y.atspi.Table" => {
            let _: Vec<i32> = h.ok(path, interface, "GetSelectedRows", &());
        }
        "org.a11y.atspi.TableCell" => {
            let span: (i32, i32, i32, i32) = h.ok(path, interface, "GetRowColumnSpan", &());
            assert!(span.0 >= 0, "{path} is a cell of no table position");
        }
        "org.a11y.atspi.Collection" => {
            let rule = (
                vec![0i32, 0],
                1i32,
                HashMap::<String, String>::new(),
                1i32,
                vec![0i32; 5],
                2i32,
                Vec::<String>::new(),
                1i32,
                false,
            );
            let _: Vec<Ref> = h.ok(path, interface, "GetMatches", &(rule, 1u32, 1i32, true));
        }
        _ => {}
    }
}

fn check_everything(h: &Harness, fixture: &str) {
    let items: Vec<CacheItem> = h.ok(CACHE, "org.a11y.atspi.Cache", "GetItems", &());
    for item in items.iter().skip(1) {
        let path = item.0 .1.as_str();
        let interfaces: Vec<String> = h.ok(path, ACCESSIBLE, "GetInterfaces", &());
        assert_eq!(interfaces, item.5, "{fixture} {path}");
        assert_eq!(
            h.prop::<String>(path, ACCESSIBLE, "Name"),
            item.6,
            "{fixture} {path}"
        );
        assert_eq!(
            h.ok::<u32, _>(path, ACCESSIBLE, "GetRole", &()),
            item.7,
            "{fixture} {path}"
        );
        assert_eq!(
            h.ok::<i32, _>(path, ACCESSIBLE, "GetIndexInParent", &()),
            item.3,
            "{fixture} {path}"
        );
        assert_eq!(
            h.prop::<i32>(path, ACCESSIBLE, "ChildCount"),
            item.4,
            "{fixture} {path}"
        );
        let parent: Ref = h.prop(path, ACCESSIBLE, "Parent");
        assert_eq!(parent, item.2, "{fixture} {path}");
        for interface in &interfaces {
            probe(h, path, interface);
        }
    }
}

#[test]
fn every_small_fixture_answers_every_advertised_interface() {
    for (name, generate) in newton_fixtures::small_generators() {
        let mut h = Harness::from_stream(generate(), 0);
        let mut frames = 0;
        while let Some(changes) = h.next_commit() {
            frames += 1;
            for change_set in &changes {
                let _ = events_for(&h.ctx(), change_set);
            }
            check_everything(&h, name);
        }
        assert!(frames > 0, "{name} has frames");
    }
}
