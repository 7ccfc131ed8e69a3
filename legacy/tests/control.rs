//! The reference's controls and side channels on a private session:
//! `--frames`, `--step` with `goto`, the application name, and action
//! requests logged as JSON lines.

// Each test binary uses its own part of the shared support module.
#[allow(dead_code)]
mod support;

use std::time::Duration;

use newton_e2e::{fixture, wait_until, BusClient, SessionOptions, TestSession};

use newton_atspi_client::calls::{accessible, action, ROOT};
use support::walk::{find_app, walk_app, Obj};
use support::Legacy;

fn session() -> TestSession {
    TestSession::start(SessionOptions {
        xvfb: false,
        ..SessionOptions::default()
    })
    .expect("private session (dbus-daemon, at-spi-bus-launcher, at-spi2-registryd)")
}

fn find<'a>(obj: &'a Obj, role: &str, name: &str) -> Option<&'a Obj> {
    if obj.role == role && obj.name == name {
        return Some(obj);
    }
    obj.children.iter().find_map(|c| find(c, role, name))
}

fn walk(client: &BusClient, app: &str) -> Obj {
    let bus = find_app(client, app).expect("application on the desktop");
    walk_app(client, &bus)
}

fn checked(client: &BusClient, app: &str) -> bool {
    let tree = walk(client, app);
    find(&tree, "check box", "Enable feature")
        .expect("check box in basic")
        .states
        .contains("checked")
}

#[test]
fn frames_step_goto_name_and_action_log() {
    let session = session();
    let client = session.a11y_client().expect("a11y client");
    let basic = fixture("generated-small/basic.jsonl");

    // --frames 2: the check box (checked at commit 3) is not checked yet.
    {
        let mut legacy = Legacy::start(&session, "frames", &basic, &["--frames", "2"]);
        legacy.expect_line("applied 2");
        legacy.expect_line("idle");
        // The default name is the hello's.
        assert!(!checked(&client, "Newton basic demo"));
    }

    // --step: goto forwards applies up to that commit; backwards is refused.
    let mut legacy = Legacy::start(
        &session,
        "step",
        &basic,
        &["--step", "--app-name", "Stepped basic"],
    );
    legacy.expect_line("ready");
    assert!(!checked(&client, "Stepped basic"));
    legacy.command("goto 3");
    legacy.expect_line("applied 3");
    assert!(checked(&client, "Stepped basic"));
    legacy.command("goto 1");
    let refusal = legacy.next_line();
    assert!(
        refusal.starts_with("error: commit 1 is not ahead"),
        "{refusal}"
    );
    legacy.command("frobnicate");
    assert!(legacy.next_line().starts_with("error: unknown command"));

    // An AT's DoAction reaches the action handler and is logged, not applied.
    let bus = find_app(&client, "Stepped basic").expect("stepped app");
    let ok_path = object_path_of(&client, &bus, "button", "OK");
    let done = client
        .call(&action::DO_ACTION, &bus, &ok_path, &(0,))
        .expect("DoAction on OK");
    assert!(done);
    wait_until("the click to be logged", Duration::from_secs(10), || {
        Ok(legacy.stderr_text().lines().any(|l| {
            l.starts_with('{') && l.contains("\"actionRequest\"") && l.contains("\"click\"")
        }))
    })
    .expect("action request logged as a JSON line");

    legacy.command("quit");
    drop(legacy);
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

/// The object path of the first object with `role` and `name`, found by a
/// walk that keeps paths.
fn object_path_of(client: &BusClient, bus: &str, role: &str, name: &str) -> String {
    let mut stack = vec![ROOT.to_string()];
    while let Some(path) = stack.pop() {
        let role_number = client
            .call(&accessible::GET_ROLE, bus, &path, &())
            .unwrap_or(0);
        let this_role = atspi_common::Role::try_from(role_number)
            .map(|r| r.name().to_string())
            .unwrap_or_default();
        let this_name = client
            .get(&accessible::NAME, bus, &path)
            .unwrap_or_default();
        if this_role == role && this_name == name {
            return path;
        }
        let children = client
            .call(&accessible::GET_CHILDREN, bus, &path, &())
            .unwrap_or_default();
        stack.extend(children.into_iter().map(|(_, p)| p.to_string()));
    }
    panic!("no {role} {name:?} in the application");
}
