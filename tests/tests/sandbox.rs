//! Sandboxed applications with no D-Bus at all (Newton's promise: a sandboxed application needs no
//! hole into the accessibility bus), and the bridge trusting the kernel's word about a sender's
//! process over its hello's.
//!
//! `newton-live-app` runs under bubblewrap (`bwrap`, Debian's `bubblewrap`) in namespaces of its
//! own (user, pid, network, IPC, UTS, cgroup) with a clean environment and a fresh /tmp. Bound in:
//! /usr (read-only, the libraries and Python), the binary at /app/bin, the bridge's socket at
//! `$XDG_RUNTIME_DIR/newton-atspi/bridge.sock` (as a Flatpak's `--filesystem=` grant puts it,
//! docs/protocol.md §2.4) and the X display's socket (`/tmp/.X11-unix/X<n>`, to open its window).
//! Not bound: the session bus's and the accessibility bus's sockets, /run/user. A probe in the
//! same bwrap invocation, just before the application, tries to open a D-Bus connection to both
//! buses (the addresses passed in, and the one X publishes as `AT_SPI_BUS`) and must fail; the
//! same probe outside must succeed. Then Orca hears the window and a Tab, and pyatspi's actions
//! reach the application.
//!
//! Run with `cargo build -p newton-atspi-bridge -p newton-live-app && cargo test -p newton-e2e
//! --test sandbox`. Needs `bwrap` (scripts/install-deps.sh). NEWTON_E2E_SKIP_ORCA=1 skips Orca's
//! part only (loudly): the sandbox, the probe and pyatspi still run.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use newton_e2e::raw_sender::{hello, RawSender};
use newton_e2e::{
    find_window, orca_tests_skipped, py_script, python, wait_until, workspace_binary_or_panic,
    xdotool, Bridge, Orca, OrcaVersion, SessionOptions, TestSession,
};
use serde_json::Value;

const STEP_TIMEOUT: Duration = Duration::from_secs(30);
const TITLE: &str = "Newton Live";
const BWRAP: &str = "bwrap";
/// The environment variable every child of a test session carries, so teardown finds its
/// descendants (tests/src/session.rs); the sandbox's clean environment keeps only this one.
const SESSION_MARKER: &str = "NEWTON_E2E_SESSION";
/// Where the probe and the application sit inside the sandbox (Flatpak's prefix).
const APP_DIR: &str = "/app/bin";

/// `bwrap` arguments for the sandbox: fresh namespaces, a clean environment, /usr read-only,
/// and only `socket` (as `$XDG_RUNTIME_DIR/newton-atspi/bridge.sock`) and the X display's
/// socket bound in. Runs the probe with `addresses`, then execs the live app.
fn sandboxed(session: &TestSession, socket: &Path, addresses: &[&str]) -> Command {
    let uid = rustix::process::getuid().as_raw();
    let runtime_dir = format!("/run/user/{uid}");
    let display = session.display().expect("the session runs Xvfb");
    let number = display.trim_start_matches(':');
    let x_socket = format!("/tmp/.X11-unix/X{number}");
    let marker = session
        .env()
        .iter()
        .find(|(key, _)| key == SESSION_MARKER)
        .map(|(_, value)| value.clone())
        .expect("the session's marker variable");
    let app = workspace_binary_or_panic("newton-live-app");
    let probe = py_script("bus_probe.py");
    let mut cmd = session.command(BWRAP);
    cmd.args(["--unshare-all", "--die-with-parent", "--new-session"])
        .arg("--clearenv")
        .args(["--ro-bind", "/usr", "/usr"])
        .args(["--symlink", "usr/bin", "/bin"])
        .args(["--symlink", "usr/sbin", "/sbin"])
        .args(["--symlink", "usr/lib", "/lib"])
        .args(["--symlink", "usr/lib64", "/lib64"])
        // The dynamic loader's cache: without it the libraries under /usr/lib/<triplet> that
        // winit loads at run time are not found. Nothing else of /etc.
        .args(["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"])
        .args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"])
        .args(["--bind", &x_socket, &x_socket])
        .args([
            "--perms",
            "0700",
            "--dir",
            &format!("{runtime_dir}/newton-atspi"),
        ])
        .arg("--bind")
        .arg(socket)
        .arg(format!("{runtime_dir}/newton-atspi/bridge.sock"))
        .arg("--ro-bind")
        .arg(&app)
        .arg(format!("{APP_DIR}/newton-live-app"))
        .arg("--ro-bind")
        .arg(&probe)
        .arg(format!("{APP_DIR}/bus_probe.py"))
        .args(["--setenv", "PATH", "/usr/bin:/bin"])
        .args(["--setenv", "HOME", "/tmp"])
        .args(["--setenv", "LANG", "C.UTF-8"])
        .args(["--setenv", "DISPLAY", display])
        .args(["--setenv", "XDG_RUNTIME_DIR", &runtime_dir])
        .args(["--setenv", SESSION_MARKER, &marker])
        .args(["--", "/bin/sh", "-c"])
        .arg(format!(
            "python3 {APP_DIR}/bus_probe.py \"$@\"; exec {APP_DIR}/newton-live-app"
        ))
        .arg("sh")
        .args(addresses);
    cmd
}

/// The probe's report from `output` (its "bus-probe {json}" line).
fn probe_report(output: &str) -> Option<Value> {
    output
        .lines()
        .find_map(|line| line.strip_prefix("bus-probe "))
        .and_then(|json| serde_json::from_str(json).ok())
}

fn app_output(session: &TestSession) -> String {
    std::fs::read_to_string(session.dir().join("logs").join("sandboxed.out")).unwrap_or_default()
}

/// Waits until the app printed `line` (it prints one line per thing it handled).
fn wait_for_app_line(session: &TestSession, line: &str) {
    wait_until(&format!("the app to print {line:?}"), STEP_TIMEOUT, || {
        Ok(app_output(session).lines().any(|l| l == line))
    })
    .unwrap_or_else(|e| panic!("{e}; the app printed:\n{}", app_output(session)));
}

/// `/proc/PID/status`'s field `name`, split on whitespace.
fn proc_status(pid: u32, name: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .map(|value| value.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Whether `ancestor` is `pid` or one of its ancestors.
fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut current = pid;
    for _ in 0..64 {
        if current == ancestor {
            return true;
        }
        match proc_status(current, "PPid")
            .first()
            .and_then(|p| p.parse().ok())
        {
            Some(parent) if parent > 1 => current = parent,
            _ => return false,
        }
    }
    false
}

/// The one application `status` lists, named `name`.
fn status_app(session: &mut TestSession, socket: &Path, name: &str) -> Value {
    let status = session.bridge_status(socket).expect("status --json");
    let apps = status["apps"].as_array().cloned().unwrap_or_default();
    let mut named = apps.into_iter().filter(|app| app["name"] == name);
    let app = named
        .next()
        .unwrap_or_else(|| panic!("status lists no {name:?}: {status}"));
    assert!(named.next().is_none(), "{name:?} listed twice: {status}");
    app
}

#[test]
fn a_sandboxed_app_with_no_bus_is_heard_by_orca_and_driven_through_the_socket_alone() {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let session_bus = session.session_bus_address().to_owned();
    let a11y_bus = session
        .a11y_bus_address()
        .expect("the session runs AT-SPI")
        .to_owned();

    // The probe works: outside the sandbox, with the session's environment, both buses answer.
    let mut outside = session.command(python());
    outside
        .arg(py_script("bus_probe.py"))
        .args([&session_bus, &a11y_bus]);
    let outside = session
        .run_ok("bus-probe-outside", outside, STEP_TIMEOUT)
        .expect("run the probe outside the sandbox");
    let outside = probe_report(&outside).unwrap_or_else(|| panic!("no probe report: {outside}"));
    let buses = outside["buses"].as_array().cloned().unwrap_or_default();
    assert!(
        buses.len() >= 2 && buses.iter().all(|bus| bus["reachable"] == true),
        "outside the sandbox the probe must reach every bus (else it proves nothing inside): \
         {outside}"
    );

    let cmd = sandboxed(&session, &bridge.socket, &[&session_bus, &a11y_bus]);
    let sandbox = session
        .spawn("sandboxed", cmd)
        .expect("start bwrap (scripts/install-deps.sh installs bubblewrap)");
    wait_until(
        "the probe inside the sandbox to report",
        STEP_TIMEOUT,
        || {
            session.ensure_running(sandbox)?;
            Ok(probe_report(&app_output(&session)).is_some())
        },
    )
    .unwrap_or_else(|e| panic!("{e}; bwrap's stderr:\n{}", session.stderr_of("sandboxed")));
    let inside = probe_report(&app_output(&session)).expect("the probe's report");
    eprintln!("outside the sandbox: {outside}\ninside: {inside}");
    assert_eq!(
        inside["env"],
        serde_json::json!({}),
        "no bus variable inside: {inside}"
    );
    assert_eq!(
        inside["interfaces"],
        serde_json::json!(["lo"]),
        "no network inside, only its own loopback: {inside}"
    );
    let buses = inside["buses"].as_array().cloned().unwrap_or_default();
    for address in [&session_bus, &a11y_bus] {
        assert!(
            buses.iter().any(|bus| bus["address"] == **address),
            "the probe did not try {address}: {inside}"
        );
    }
    for bus in &buses {
        assert_eq!(
            bus["reachable"], false,
            "the sandbox reached a bus: {bus}; whole report: {inside}"
        );
        // Refused at connect (no such socket in the sandbox), not later by the bus (an
        // authentication failure would mean the socket was reachable after all).
        assert!(
            bus["error"]
                .as_str()
                .is_some_and(|error| error.contains("Could not connect")),
            "the probe failed otherwise than at connect: {bus}; whole report: {inside}"
        );
    }
    // The accessibility bus's address is published on the X root window, which the sandbox
    // can read (it has the display): when it is, the probe tried that address too.
    if let Some(published) = outside["x11AtSpiBus"].as_str() {
        assert_eq!(
            inside["x11AtSpiBus"], published,
            "the sandbox reads the same X display: {inside}"
        );
    }

    session
        .wait_for_app(TITLE, sandbox)
        .expect("the sandboxed app appears on the desktop through the bridge");

    // The bridge reports the process the kernel names, not the hello's pid: inside its pid
    // namespace the app is a small pid; outside it is another, a descendant of bwrap.
    let listed = status_app(&mut session, &bridge.socket, TITLE);
    let pid = listed["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or_else(|| panic!("status gives no pid: {listed}"));
    let claimed = listed["claimedPid"]
        .as_u64()
        .unwrap_or_else(|| panic!("status gives no claimed pid: {listed}"));
    let ns_pids = proc_status(pid, "NSpid");
    assert_eq!(
        ns_pids,
        [pid.to_string(), claimed.to_string()],
        "status's pid {pid} is the app as the bridge's pid namespace sees it, and its hello's pid \
         {claimed} the same process inside the sandbox's: {listed}"
    );
    assert_ne!(u64::from(pid), claimed, "{listed}");
    assert!(
        descends_from(pid, sandbox),
        "pid {pid} runs under the bwrap started as {sandbox}"
    );
    assert_eq!(
        listed["uid"],
        rustix::process::getuid().as_raw(),
        "the sandbox's user namespace maps the uid back to the bridge's: {listed}"
    );

    let window = find_window(&mut session, TITLE).expect("find the Newton Live window");
    if orca_tests_skipped() {
        eprintln!("\n!!!!! NEWTON_E2E_SKIP_ORCA=1: SKIPPING ORCA'S PART — Orca hearing the sandboxed app is NOT being verified !!!!!\n");
    } else {
        let orca = Orca::start(&mut session).expect("start Orca");
        wait_for_app_line(&session, "tree requested");
        xdotool(&mut session, "focus", &["windowfocus", "--sync", &window])
            .expect("focus the window");
        orca.wait_idle(&mut session)
            .expect("Orca settles after the window got focus");
        xdotool(
            &mut session,
            "key-Tab",
            &["key", "--window", &window, "Tab"],
        )
        .expect("press Tab");
        wait_for_app_line(&session, "focus Cancel");
        orca.wait_idle(&mut session)
            .expect("Orca settles after Tab");
        let speech = orca
            .stop(&mut session)
            .expect("stop Orca and read its speech");
        let u = &speech.utterances;
        eprintln!("Orca said: {u:#?}");
        let button = OrcaVersion::current().expect("Orca version").push_button();
        let window_at = u
            .iter()
            .position(|said| said.contains(TITLE))
            .unwrap_or_else(|| panic!("the window is not spoken: {u:?}"));
        assert!(
            u[window_at..]
                .iter()
                .any(|said| said.contains(&format!("Cancel {button}"))),
            "Tab to Cancel not spoken after the window: {u:?}"
        );
    }

    // pyatspi drives the sandboxed app: its actions travel bridge → socket → app.
    let mut drive = session.command(python());
    drive.arg(py_script("live_app_drive.py"));
    let (status, stdout) = session
        .run("live-app-drive", drive, Duration::from_secs(90))
        .expect("run live_app_drive.py");
    let out = app_output(&session);
    assert!(
        status.success(),
        "live_app_drive.py failed: {stdout}\nthe app printed:\n{out}"
    );
    for line in ["activated OK", "toggled true", "text \"hello\" caret 2"] {
        assert!(
            out.lines().any(|l| l == line),
            "the sandboxed app did not print {line:?}:\n{out}"
        );
    }
    session
        .ensure_running(sandbox)
        .expect("the sandboxed app still runs");

    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}

/// A hello claiming a pid that is not the sender's: `status` reports the kernel's pid (this test
/// process, which holds the connection) and shows the claim only as `claimedPid`; on the
/// accessibility bus the application's connection is the bridge's own (GetConnectionUnixProcessID
/// gives the bridge's pid), so no AT ever sees the claim either.
#[test]
fn a_hello_claiming_another_pid_is_reported_with_the_kernels_pid() {
    const NAME: &str = "Claims pid 2";
    const CLAIM: u32 = 2;
    let mut session = TestSession::start(SessionOptions {
        xvfb: false,
        ..SessionOptions::default()
    })
    .expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let mut claim = hello(NAME);
    claim.app.pid = Some(CLAIM);
    let sender = RawSender::connect_with_hello(&bridge.socket, &claim);
    session
        .wait_for_app(NAME, bridge.pid())
        .expect("the application appears");

    let listed = status_app(&mut session, &bridge.socket, NAME);
    assert_eq!(
        listed["pid"],
        std::process::id(),
        "the kernel's pid: {listed}"
    );
    assert_eq!(listed["claimedPid"], CLAIM, "the claim, apart: {listed}");
    assert_eq!(
        listed["uid"],
        rustix::process::getuid().as_raw(),
        "{listed}"
    );
    let text = {
        let mut cmd = session.command(newton_e2e::bridge_binary().expect("the bridge binary"));
        cmd.args(["status", "--socket"]).arg(&bridge.socket);
        session
            .run_ok("status-text", cmd, STEP_TIMEOUT)
            .expect("status")
    };
    assert!(
        text.contains(&format!(
            "pid {}, its hello claims pid {CLAIM}",
            std::process::id()
        )),
        "{text}"
    );

    let client = session.a11y_client().expect("a11y client");
    let names = client.applications_named(NAME).expect("find the app");
    assert_eq!(names.len(), 1, "{names:?}");
    assert_eq!(
        client
            .pid_of(&names[0])
            .expect("GetConnectionUnixProcessID"),
        bridge.pid(),
        "the app's bus connection is the bridge's"
    );
    drop(sender);
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}
