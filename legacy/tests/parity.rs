//! Structural parity: the same recording exposed by accesskit_unix inside
//! `newton-legacy-reference` and by the bridge (`serve` + `replay`), walked
//! with raw AT-SPI calls on a private session, must differ only in the ways
//! docs/compat.md documents (encoded in `support::compare`).
//!
//! Needs dbus-daemon and at-spi2-core (scripts/install-deps.sh) and the
//! bridge binary (`cargo build -p newton-atspi-bridge`).

// Each test binary uses its own part of the shared support module.
#[allow(dead_code)]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use newton_e2e::{
    fixture, wait_until, Bridge, BusClient, SessionOptions, SteppedReplay, TestSession,
};
use zbus::zvariant::OwnedObjectPath;

use support::compare::differences;
use support::walk::{find_app, walk_app, Obj};
use support::{name_and_serials, Legacy};

const FIXTURES: [&str; 6] = [
    "generated-small/basic.jsonl",
    "generated-small/doc-small.jsonl",
    "generated-small/grid-small.jsonl",
    "egui/egui-form-focus.jsonl",
    "egui/egui-widgets.jsonl",
    "egui/egui-demo-tour.jsonl",
];

fn session() -> TestSession {
    TestSession::start(SessionOptions {
        xvfb: false,
        ..SessionOptions::default()
    })
    .expect("private session (dbus-daemon, at-spi-bus-launcher, at-spi2-registryd)")
}

fn legacy_name(name: &str) -> String {
    format!("{name} (legacy)")
}

/// Walks the application called `name`, waiting for it to appear.
fn walk_named(session: &TestSession, client: &BusClient, name: &str) -> Obj {
    let mut bus = None;
    wait_until(
        &format!("application {name:?} on the desktop"),
        session.ready_timeout(),
        || {
            bus = find_app(client, name);
            Ok(bus.is_some())
        },
    )
    .expect("application on the desktop");
    walk_app(client, &bus.unwrap_or_default())
}

fn report(label: &str, diffs: &[String]) -> String {
    format!(
        "{label}: {} undocumented difference(s):\n  {}",
        diffs.len(),
        diffs.join("\n  ")
    )
}

#[test]
fn the_last_frame_of_every_fixture_differs_only_as_documented() {
    let mut session = session();
    let bridge = Bridge::start(&mut session).expect("bridge");
    let client = session.a11y_client().expect("a11y client");
    let mut failures = Vec::new();
    for relative in FIXTURES {
        let path = fixture(relative);
        let (name, _) = name_and_serials(&path);
        let mut legacy = Legacy::start(
            &session,
            "legacy",
            &path,
            &["--app-name", &legacy_name(&name)],
        );
        legacy.expect_line("idle");
        let replay = bridge
            .replay_and_stay(&mut session, "replay", &path, &name)
            .expect("replay into the bridge");
        let legacy_tree = walk_named(&session, &client, &legacy_name(&name));
        let bridged_tree = walk_named(&session, &client, &name);
        assert!(
            legacy_tree.children.len() == 1 && bridged_tree.children.len() == 1,
            "{relative}: one window on each side"
        );
        if relative.ends_with("basic.jsonl") {
            print_latencies(&client, &legacy_name(&name), &name);
        }
        let diffs = differences(&legacy_tree, &bridged_tree);
        println!("{relative}: {} objects compared", count(&bridged_tree));
        if !diffs.is_empty() {
            failures.push(report(relative, &diffs));
        }
        session.stop(replay.pid, Duration::from_secs(5));
        drop(legacy);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

#[test]
fn every_commit_differs_only_as_documented() {
    let mut session = session();
    let bridge = Bridge::start(&mut session).expect("bridge");
    let client = session.a11y_client().expect("a11y client");
    let mut failures = Vec::new();
    for relative in [
        "generated-small/basic.jsonl",
        "generated-small/doc-small.jsonl",
        "generated-small/grid-small.jsonl",
        "egui/egui-form-focus.jsonl",
        "egui/egui-widgets.jsonl",
    ] {
        let path = fixture(relative);
        failures.extend(compare_every_commit(
            &session,
            &client,
            &bridge.socket,
            &path,
            relative,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

fn compare_every_commit(
    session: &TestSession,
    client: &BusClient,
    socket: &Path,
    path: &Path,
    label: &str,
) -> Vec<String> {
    let (name, serials) = name_and_serials(path);
    let mut legacy = Legacy::start(
        session,
        "legacy-step",
        path,
        &["--step", "--app-name", &legacy_name(&name)],
    );
    let mut replay = SteppedReplay::connect(socket, path).expect("connect a stepped replay");
    let mut failures = Vec::new();
    for (index, serial) in serials.iter().enumerate() {
        if index == 0 {
            legacy.expect_line("ready");
        } else {
            legacy.command("next");
            legacy.expect_line(&format!("applied {serial}"));
        }
        replay
            .send_through_commit(*serial)
            .expect("bridge applies the commit");
        let legacy_tree = walk_named(session, client, &legacy_name(&name));
        let bridged_tree = walk_named(session, client, &name);
        let diffs = differences(&legacy_tree, &bridged_tree);
        if !diffs.is_empty() {
            failures.push(report(&format!("{label} after commit {serial}"), &diffs));
        }
    }
    legacy.command("next");
    legacy.expect_line("end");
    println!(
        "{label}: {} commits compared (legacy pid {})",
        serials.len(),
        legacy.pid()
    );
    failures
}

fn count(obj: &Obj) -> usize {
    1 + obj.children.iter().map(count).sum::<usize>()
}

/// Prints (never asserts) median latencies of four calls on the window
/// object of each copy, 200 calls each.
fn print_latencies(client: &BusClient, legacy: &str, bridged: &str) {
    for (label, app) in [("legacy (accesskit_unix)", legacy), ("bridged", bridged)] {
        let Some(bus) = find_app(client, app) else {
            continue;
        };
        let Ok((_, window)) = client.call::<_, (String, OwnedObjectPath)>(
            &bus,
            "/org/a11y/atspi/accessible/root",
            "org.a11y.atspi.Accessible",
            "GetChildAtIndex",
            &(0i32,),
        ) else {
            continue;
        };
        let window = window.as_str();
        let accessible = "org.a11y.atspi.Accessible";
        let name = median_micros(|| {
            client
                .call::<_, zbus::zvariant::OwnedValue>(
                    &bus,
                    window,
                    "org.freedesktop.DBus.Properties",
                    "Get",
                    &(accessible, "Name"),
                )
                .is_ok()
        });
        let role = median_micros(|| {
            client
                .call::<_, u32>(&bus, window, accessible, "GetRole", &())
                .is_ok()
        });
        let state = median_micros(|| {
            client
                .call::<_, Vec<u32>>(&bus, window, accessible, "GetState", &())
                .is_ok()
        });
        let child = median_micros(|| {
            client
                .call::<_, (String, OwnedObjectPath)>(
                    &bus,
                    window,
                    accessible,
                    "GetChildAtIndex",
                    &(0i32,),
                )
                .is_ok()
        });
        println!(
            "median latency, {label}, 200 calls each: Name {name} µs, GetRole {role} µs, GetState {state} µs, GetChildAtIndex {child} µs"
        );
    }
}

fn median_micros(mut call: impl FnMut() -> bool) -> String {
    let mut times = Vec::with_capacity(200);
    for _ in 0..200 {
        let start = Instant::now();
        if !call() {
            return "(call failed)".into();
        }
        times.push(start.elapsed());
    }
    times.sort();
    times
        .get(times.len() / 2)
        .map_or_else(String::new, |t| format!("{:.0}", t.as_secs_f64() * 1e6))
}

/// basic.jsonl with a second surface (a copy of the first tree, titled
/// "Second") that takes the keyboard focus: two adapters in one process on
/// the legacy side, two surfaces of one application on the bridged side.
fn two_surface_recording(dir: &Path) -> std::path::PathBuf {
    use newton_push_protocol::{RecordedLine, SenderMessage, SurfaceId};
    let lines = newton_producer::load_recording(fixture("generated-small/basic.jsonl"))
        .expect("load basic");
    let second = SurfaceId(2);
    let first_update = lines
        .iter()
        .find_map(|l| match &l.message {
            Some(SenderMessage::Update { update, .. }) => Some(update.clone()),
            _ => None,
        })
        .expect("basic has an update");
    let line = |message| RecordedLine {
        at_ms: 0,
        hello: None,
        message: Some(message),
    };
    let mut out = Vec::new();
    for l in lines {
        let first_commit = matches!(l.message, Some(SenderMessage::Commit { serial: 1, .. }));
        let goodbye = matches!(l.message, Some(SenderMessage::Goodbye));
        if !goodbye {
            out.push(l);
        }
        if first_commit {
            out.push(line(SenderMessage::CreateSurface {
                surface: second,
                title: Some("Second".into()),
            }));
            out.push(line(SenderMessage::Update {
                surface: second,
                update: first_update.clone(),
            }));
            out.push(line(SenderMessage::Commit {
                surface: second,
                serial: 100,
            }));
        }
    }
    out.push(line(SenderMessage::Focus {
        surface: Some(second),
    }));
    let path = dir.join("two-surfaces.jsonl");
    newton_producer::write_recording(&path, &out).expect("write the two-surface recording");
    path
}

#[test]
fn two_surfaces_are_two_windows_on_both_sides() {
    let mut session = session();
    let bridge = Bridge::start(&mut session).expect("bridge");
    let client = session.a11y_client().expect("a11y client");
    let path = two_surface_recording(session.dir());
    let (name, _) = name_and_serials(&path);
    let mut legacy = Legacy::start(
        &session,
        "legacy-two",
        &path,
        &["--app-name", &legacy_name(&name)],
    );
    legacy.expect_line("idle");
    let replay = bridge
        .replay_and_stay(&mut session, "replay-two", &path, &name)
        .expect("replay into the bridge");
    let legacy_tree = walk_named(&session, &client, &legacy_name(&name));
    let bridged_tree = walk_named(&session, &client, &name);
    for tree in [&legacy_tree, &bridged_tree] {
        let active: Vec<bool> = tree
            .children
            .iter()
            .map(|w| w.states.contains("active"))
            .collect();
        // The focus moved to the second surface.
        assert_eq!(active, [false, true], "{tree:#?}");
    }
    let diffs = differences(&legacy_tree, &bridged_tree);
    assert!(diffs.is_empty(), "{}", report("two surfaces", &diffs));
    session.stop(replay.pid, Duration::from_secs(5));
    drop(legacy);
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}
