//! The C library's example (capi/examples/hello.c), compiled with `cc` against
//! libnewton_producer through newton-producer.pc as a C developer builds it, pushes a window
//! with a push button and a check box through the bridge; a real Orca (43.1, or 48.1 with
//! NEWTON_ORCA_ROOT) speaks it while pyatspi's DoAction moves the focus ("focus") and toggles
//! and presses ("click"): each request reaches the C program, which prints a line and pushes
//! the change. SIGTERM ends it with a goodbye.
//!
//! Needs the bridge binary (`cargo build -p newton-atspi-bridge`); the library is built with
//! this test (newton-producer-c is a dev-dependency). Orca tests take a machine-wide lock;
//! NEWTON_E2E_SKIP_ORCA=1 skips them (loudly).

#[path = "../../capi/tests/support/mod.rs"]
mod c_library;

use newton_e2e::utterance_position;
use std::time::Duration;

use newton_e2e::{
    orca_tests_skipped, py_script, python, wait_until, Bridge, Orca, OrcaVersion, SessionOptions,
    TestSession,
};

const APP: &str = "Newton C hello";
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

fn output(session: &TestSession) -> String {
    std::fs::read_to_string(session.dir().join("logs").join("c-hello.out")).unwrap_or_default()
}

/// Waits until the C program printed `line`.
fn wait_for_line(session: &mut TestSession, pid: u32, line: &str) {
    wait_until(&format!("hello.c to print {line:?}"), STEP_TIMEOUT, || {
        session.ensure_running(pid)?;
        Ok(output(session).lines().any(|l| l == line))
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}; hello.c printed:\n{}\nand on stderr:\n{}",
            output(session),
            session.stderr_of("c-hello")
        )
    });
}

/// pyatspi's DoAction of `action` on the object with `role` and `name`, as an AT calls it.
fn do_action(session: &mut TestSession, role: &str, name: &str, action: &str) {
    let mut cmd = session.command(python());
    cmd.arg(py_script("do_action.py")).args([
        "--app", APP, "--role", role, "--name", name, "--action", action,
    ]);
    let out = session
        .run_ok(&format!("do-{action}"), cmd, STEP_TIMEOUT)
        .unwrap_or_else(|e| panic!("DoAction {action} on {role} {name:?}: {e}"));
    assert!(out.contains("\"done\": true"), "{out}");
}

#[test]
fn orca_speaks_the_c_example_and_its_action_requests_reach_it() {
    if orca_tests_skipped() {
        eprintln!("\n!!!!! NEWTON_E2E_SKIP_ORCA=1: SKIPPING ORCA TEST — Orca behaviour is NOT being verified !!!!!\n");
        return;
    }
    let build = c_library::scratch_dir("c-hello");
    let program = c_library::compile(
        &c_library::capi_dir().join("examples/hello.c"),
        &build,
        c_library::Linking::Shared,
    );

    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let orca = Orca::start(&mut session).expect("start Orca");
    let mut app = session.command(&program);
    app.env("NEWTON_ATSPI_SOCKET", &bridge.socket);
    let pid = session.spawn("c-hello", app).expect("start hello.c");
    wait_for_line(&mut session, pid, "ready");
    session
        .wait_for_app(APP, pid)
        .expect("the C example appears on the desktop through the bridge");
    orca.wait_idle(&mut session)
        .expect("Orca settles after the window appeared");

    // Focus moves to the check box; clicking toggles it; the button is pressed; focus returns.
    do_action(&mut session, "check box", "Enable feature", "focus");
    wait_for_line(&mut session, pid, "focus Enable feature");
    orca.wait_idle(&mut session).expect("Orca settles");
    do_action(&mut session, "check box", "Enable feature", "click");
    wait_for_line(&mut session, pid, "toggled true");
    orca.wait_idle(&mut session).expect("Orca settles");
    do_action(&mut session, "push button", "OK", "click");
    wait_for_line(&mut session, pid, "clicked OK");
    do_action(&mut session, "push button", "OK", "focus");
    wait_for_line(&mut session, pid, "focus OK");
    orca.wait_idle(&mut session).expect("Orca settles");

    let speech = orca
        .stop(&mut session)
        .expect("stop Orca and read its speech");
    let out = output(&session);
    eprintln!("Orca said: {:#?}", speech.utterances);
    eprintln!("hello.c printed:\n{out}");

    let version = OrcaVersion::current().expect("Orca version");
    let button = format!("OK {}", version.push_button());
    let u = &speech.utterances;
    let window =
        utterance_position(u, 0, APP).unwrap_or_else(|| panic!("the window not spoken: {u:?}"));
    let first = utterance_position(u, window, &button)
        .unwrap_or_else(|| panic!("the first focus (OK) not spoken: {u:?}"));
    let check = utterance_position(u, first, "Enable feature check box")
        .unwrap_or_else(|| panic!("the focus move to the check box not spoken: {u:?}"));
    assert!(
        u[check].contains("not checked"),
        "the check box starts unchecked: {:?}",
        u[check]
    );
    let toggled = u
        .iter()
        .skip(check + 1)
        .position(|x| x.contains("checked") && !x.contains("not checked"))
        .map(|at| at + check + 1)
        .unwrap_or_else(|| panic!("the toggle (DoAction click) not spoken: {u:?}"));
    utterance_position(u, toggled, &button)
        .unwrap_or_else(|| panic!("the focus move back to OK not spoken: {u:?}"));

    // SIGTERM: a goodbye, the application leaves the desktop.
    let status = session.stop(pid, Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "hello.c exit {status:?}: {}",
        session.stderr_of("c-hello")
    );
    assert!(output(&session).lines().any(|l| l == "goodbye"), "{out}");
    wait_until("the application to leave the desktop", STEP_TIMEOUT, || {
        Ok(session.apps_named(APP)? == 0)
    })
    .expect("hello.c's goodbye removes it from the desktop");
    session
        .ensure_running(bridge.pid())
        .expect("the bridge survived");
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
    let _ = std::fs::remove_dir_all(&build);
}
