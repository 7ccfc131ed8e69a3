//! A real Orca against the GTK3 reference app: proves the headless Orca recipe (private
//! session, dummy speech, debug-file speech capture, key input) on this machine, for the host's
//! Orca 43.1 and for Orca 48.1 from `NEWTON_ORCA_ROOT`.
//!
//! Run alone with `cargo test -p newton-e2e --test orca_gtk`. Orca tests take a machine-wide
//! lock and run one at a time. Set NEWTON_E2E_SKIP_ORCA=1 to skip them (loudly).

use std::time::Duration;

use newton_e2e::{
    find_window, orca_tests_skipped, py_script, python, Orca, OrcaVersion, SessionOptions,
    TestSession,
};

const STEP_TIMEOUT: Duration = Duration::from_secs(30);

fn skip_loudly() -> bool {
    if orca_tests_skipped() {
        eprintln!("\n!!!!! NEWTON_E2E_SKIP_ORCA=1: SKIPPING ORCA TEST — Orca behaviour is NOT being verified !!!!!\n");
        return true;
    }
    false
}

/// Starts the session and the GTK app, waits until it is on the a11y bus, returns the X window
/// id of "BridgeTest".
fn session_with_gtk_app() -> (TestSession, String) {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let mut app = session.command(python());
    app.arg(py_script("gtk_reference_app.py"));
    let pid = session
        .spawn("gtk-app", app)
        .expect("start the GTK reference app");
    session
        .wait_for_app("BridgeTest", pid)
        .expect("GTK app registers on the a11y bus");
    let window = find_window(&mut session, "BridgeTest").expect("find the BridgeTest window");
    (session, window)
}

fn xdotool(session: &mut TestSession, label: &str, args: &[&str]) {
    newton_e2e::xdotool(session, label, args).expect("xdotool succeeds");
}

fn inject_keys(session: &mut TestSession, label: &str, keys: &[&str]) -> String {
    let mut cmd = session.command(python());
    cmd.arg(py_script("inject_key.py")).args(keys);
    session
        .run_ok(label, cmd, STEP_TIMEOUT)
        .expect("inject_key.py succeeds")
}

#[test]
fn orca_speaks_gtk_focus_changes_and_registry_injected_commands() {
    if skip_loudly() {
        return;
    }
    let (mut session, window) = session_with_gtk_app();
    let orca = Orca::start(&mut session).expect("start Orca");

    xdotool(
        &mut session,
        "xdotool-focus",
        &["windowfocus", "--sync", &window],
    );
    orca.wait_idle(&mut session)
        .expect("Orca settles after the window got focus");
    // Real X key: GTK moves focus from the entry to the OK button; atk-bridge forwards the key.
    xdotool(
        &mut session,
        "xdotool-tab",
        &["key", "--window", &window, "Tab"],
    );
    orca.wait_idle(&mut session)
        .expect("Orca settles after Tab");
    // An Orca command, KP_Enter (basic Where Am I): Orca 43.1 reads keys only from the
    // registry, so it goes there without real input; Orca 48.1 reads the X server itself and
    // gets a real X key.
    let orca_version = OrcaVersion::current().expect("which Orca runs");
    let injected = if orca_version.reads_keys_from_x() {
        orca.press(&mut session, "key-kp-enter", "KP_Enter")
            .expect("press KP_Enter");
        String::new()
    } else {
        inject_keys(&mut session, "inject-kp-enter", &["KP_Enter"])
    };
    orca.wait_idle(&mut session)
        .expect("Orca settles after KP_Enter");

    let speech = orca
        .stop(&mut session)
        .expect("stop Orca and read its speech");
    eprintln!("Orca said: {:#?}", speech.utterances);
    eprintln!("inject_key.py: {injected}");
    assert!(
        speech.said("Screen reader on."),
        "no start-up message: {:?}",
        speech.utterances
    );
    let frame = orca_version.window("BridgeTest");
    assert!(
        speech.said(&frame),
        "window focus not presented: {:?}",
        speech.utterances
    );
    let ok_at = speech
        .utterances
        .iter()
        .position(|u| speech.is(u, &format!("OK {}.", orca_version.push_button())));
    let ok_at = ok_at.unwrap_or_else(|| panic!("Tab to OK not presented: {:?}", speech.utterances));
    assert!(
        orca_version.reads_keys_from_x() || injected.contains("KP_Enter press consumed=True"),
        "Orca did not consume KP_Enter: {injected}"
    );
    assert!(
        speech.utterances[ok_at + 1..]
            .iter()
            .any(|u| u.contains("OK")),
        "Where Am I after KP_Enter did not mention OK: {:?}",
        speech.utterances
    );

    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}
