//! `diff` with saved `dump --json` snapshots on both sides: no bus is
//! needed, so this runs the installed binary directly. (Snapshot against a
//! live application goes through the same tree reader on one side and the
//! walker on the other; the walker is covered by the e2e diff tests.)

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_newton-atspi-bridge");

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("newton-snap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn write(&self, file: &str, text: &str) -> String {
        let path = self.0.join(file);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What `dump --json APP` writes: an array with one application.
fn snapshot(button_name: &str) -> String {
    format!(
        r#"[{{"role": "application", "name": "Demo", "states": [], "interfaces": ["Accessible"],
            "children": [{{"role": "frame", "name": "Main", "states": ["showing", "visible"],
              "interfaces": ["Accessible", "Component"], "extents": [0, 0, 640, 480],
              "children": [{{"role": "push button", "name": "{button_name}",
                "states": ["focusable", "showing", "visible"],
                "interfaces": ["Accessible", "Action", "Component"], "actions": ["click"],
                "extents": [10, 10, 80, 24]}}]}}]}}]"#
    )
}

fn diff(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("diff")
        .args(args)
        .env_remove("AT_SPI_BUS_ADDRESS")
        // No bus at all: a snapshot-only diff must not try to reach one.
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/newton-no-bus",
        )
        .output()
        .expect("run the bridge binary")
}

#[test]
fn identical_snapshots_compare_equal_without_a_bus() {
    let dir = Scratch::new("same");
    let a = dir.write("a.json", &snapshot("OK"));
    let b = dir.write("b.json", &snapshot("OK"));
    let out = diff(&[&a, &b]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_changed_name_is_reported_at_its_path_with_exit_status_1() {
    let dir = Scratch::new("changed");
    let a = dir.write("before.json", &snapshot("OK"));
    let b = dir.write("after.json", &snapshot("Cancel"));
    let out = diff(&[&a, &b, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let differences = report["differences"].as_array().unwrap();
    let name = differences
        .iter()
        .find(|d| d["property"] == "name")
        .unwrap_or_else(|| panic!("no name difference: {report:#}"));
    assert_eq!(name["path"], "/0/0");
    assert_eq!((&name["a"], &name["b"]), (&"OK".into(), &"Cancel".into()));
    // The frame's child list shows the renamed child too; nothing else differs.
    assert!(
        differences
            .iter()
            .all(|d| d["property"] == "name" || (d["path"] == "/0" && d["property"] == "children")),
        "{report:#}"
    );
    // --under narrows both snapshots to the same subtree.
    let out = diff(&[&a, &b, "--under", "/0/0", "--ignore", "name"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn unusable_snapshots_are_errors_naming_the_file() {
    let dir = Scratch::new("bad");
    let good = dir.write("good.json", &snapshot("OK"));
    let two = dir.write(
        "two.json",
        &format!("[{0}, {0}]", &snapshot("OK")[1..snapshot("OK").len() - 1]),
    );
    let broken = dir.write("broken.json", "{ not json");
    let missing = dir.0.join("missing.json").to_string_lossy().into_owned();
    for (other, problem) in [
        (&two, "holds 2 applications"),
        (&broken, "not the output of `dump --json`"),
        (&missing, "missing.json"),
    ] {
        let out = diff(&[&good, other]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{other}: {stderr}");
        assert!(stderr.contains(problem), "{other}: {stderr}");
    }
    let out = diff(&[&good, &good, "--under", "/0/5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no child 5"), "{stderr}");
}
