//! `session -- COMMAND` end to end: the command runs inside private buses
//! with the registry, IsEnabled=true and a bridge; an application replayed
//! into the bridge's socket is on that desktop; the command's exit status is
//! passed through; everything is stopped afterwards. Needs at-spi2-core,
//! dbus-daemon and gdbus (scripts/install-deps.sh).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_newton-atspi-bridge");

fn session(script: &str) -> std::process::Output {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/generated-small/basic.jsonl");
    Command::new(BIN)
        .args(["session", "--", "sh", "-c", script])
        .env("BIN", BIN)
        .env("FIXTURE", fixture)
        // Nothing of a desktop this test may run inside reaches the command.
        .env_remove("AT_SPI_BUS_ADDRESS")
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/newton-not-this-bus",
        )
        .output()
        .expect("run the bridge binary")
}

#[test]
fn a_replayed_application_is_on_the_private_desktop_with_is_enabled_true() {
    let script = r#"
        set -e
        echo "runtime=$XDG_RUNTIME_DIR"
        gdbus call --session --dest org.a11y.Bus --object-path /org/a11y/bus \
            --method org.freedesktop.DBus.Properties.Get org.a11y.Status IsEnabled
        "$BIN" replay "$FIXTURE" --socket "$NEWTON_ATSPI_SOCKET" --fast --stay &
        replay=$!
        # The same live application on both sides: 0 once it is there.
        "$BIN" diff --wait-for "Newton basic demo" --timeout 30 "Newton basic demo" "Newton basic demo"
        kill $replay
        exit 7
    "#;
    let out = session(script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(7),
        "the command's status:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("(<true>,)"),
        "IsEnabled is true:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("0 difference"),
        "the app was walked:\n{stdout}\n{stderr}"
    );
    let runtime = stdout
        .lines()
        .find_map(|l| l.strip_prefix("runtime="))
        .expect("the command printed its runtime directory");
    assert!(
        !Path::new(runtime).exists(),
        "the session's directory is removed"
    );
}

#[test]
fn a_command_killed_by_a_signal_gives_128_plus_its_number() {
    let out = session("kill -TERM $$; sleep 30");
    assert_eq!(out.status.code(), Some(128 + 15), "{out:?}");
}

#[test]
fn sigterm_to_the_session_reaches_the_command_and_the_session_ends() {
    let ready = std::env::temp_dir().join(format!("newton-session-ready-{}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    let mut child = Command::new(BIN)
        .args([
            "session",
            "--",
            "sh",
            "-c",
            "echo $XDG_RUNTIME_DIR > \"$READY\"; exec sleep 60",
        ])
        .env("READY", &ready)
        .env_remove("AT_SPI_BUS_ADDRESS")
        .spawn()
        .expect("run the bridge binary");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&ready).map_or(true, |t| t.trim().is_empty()) {
        assert!(
            started.elapsed().as_secs() < 30,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let runtime = std::fs::read_to_string(&ready).unwrap().trim().to_owned();
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    let _ = std::fs::remove_file(&ready);
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "the command got SIGTERM: {status:?}"
    );
    assert!(started.elapsed().as_secs() < 30, "not the sleep's own end");
    assert!(
        !Path::new(&runtime).exists(),
        "the session's directory is removed"
    );
}
