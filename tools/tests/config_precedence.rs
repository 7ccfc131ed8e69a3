//! The installed binary's configuration precedence, end to end: command
//! line > environment > user file (`$XDG_CONFIG_HOME/newton-atspi-bridge/
//! bridge.conf`) > built-in default, shown by `serve --print-config`; and an
//! unusable file stops the daemon with exit status 2 before it starts.
//! (System file below user file is covered by the unit tests in
//! `src/config.rs`: /etc cannot be redirected here.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_newton-atspi-bridge");

/// A config home holding `newton-atspi-bridge/bridge.conf` with `text`.
struct ConfigHome(PathBuf);

impl ConfigHome {
    fn new(name: &str, text: &str) -> Self {
        let home = std::env::temp_dir().join(format!("newton-cfg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(home.join("newton-atspi-bridge")).unwrap();
        std::fs::write(home.join("newton-atspi-bridge/bridge.conf"), text).unwrap();
        ConfigHome(home)
    }
    fn file(&self) -> PathBuf {
        self.0.join("newton-atspi-bridge/bridge.conf")
    }
}

impl Drop for ConfigHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the binary with only the given environment (no inherited
/// `NEWTON_ATSPI_*`), `XDG_CONFIG_HOME` pointing at `home`.
fn run(home: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command
        .env_clear()
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_RUNTIME_DIR", home)
        .args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run the bridge binary")
}

/// The source comment above `key = …` and the value, from --print-config.
fn setting(stdout: &str, key: &str) -> (String, String) {
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("{key} missing from:\n{stdout}"));
    let value = lines[at][key.len() + 3..].to_owned();
    let source = lines[at - 1].trim_start_matches("# ").to_owned();
    (source, value)
}

#[test]
fn command_line_beats_environment_beats_user_file_beats_default() {
    let home = ConfigHome::new(
        "order",
        "# limits for this user\nmax-nodes = 1000\nmax-depth = 9\nfps-burst = 3\nallow-uid = 0,7\n",
    );
    let out = run(
        &home.0,
        &[
            ("NEWTON_ATSPI_MAX_DEPTH", "12"),
            ("NEWTON_ATSPI_FPS_BURST", "5"),
        ],
        &["serve", "--fps-burst", "4", "--print-config"],
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let file = home.file().display().to_string();
    assert_eq!(
        setting(&stdout, "max-nodes"),
        (format!("{file}:2"), "1000".into())
    );
    assert_eq!(
        setting(&stdout, "max-depth"),
        ("environment (NEWTON_ATSPI_MAX_DEPTH)".into(), "12".into())
    );
    assert_eq!(
        setting(&stdout, "fps-burst"),
        ("command line".into(), "4".into())
    );
    assert_eq!(
        setting(&stdout, "allow-uid"),
        (format!("{file}:5"), "0,7".into())
    );
    assert_eq!(
        setting(&stdout, "max-fps"),
        ("built-in default".into(), "60".into())
    );
    assert!(stdout.contains(&format!("Configuration files read: {file}")));
}

#[test]
fn the_printed_settings_are_a_valid_configuration_file() {
    let home = ConfigHome::new(
        "roundtrip",
        "max-queued-bytes = 4096\nallow-exe = /bin/a:/bin/b\n",
    );
    let out = run(&home.0, &[], &["serve", "--print-config"]);
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let again = ConfigHome::new("roundtrip2", &printed);
    let out = run(&again.0, &[], &["serve", "--print-config"]);
    assert!(out.status.success(), "{out:?}");
    let reprinted = String::from_utf8(out.stdout).unwrap();
    assert_eq!(setting(&reprinted, "max-queued-bytes").1, "4096");
    assert_eq!(setting(&reprinted, "allow-exe").1, "/bin/a:/bin/b");
}

#[test]
fn an_invalid_file_or_variable_stops_serve_with_status_2() {
    let home = ConfigHome::new("bad", "max-nodes = 1000\nmax-depht = 3\n");
    let file = home.file().display().to_string();
    // A bare invocation runs `serve`: it reads the file too.
    for args in [&[][..], &["serve"][..]] {
        let out = run(&home.0, &[], args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stderr.contains(&format!("{file}:2: unknown setting `max-depht`")),
            "{stderr}"
        );
    }
    // Other subcommands do not read it: `status` still helps diagnose.
    let out = run(&home.0, &[], &["status"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("max-depht"), "{stderr}");

    let ok = ConfigHome::new("badenv", "");
    let out = run(
        &ok.0,
        &[("NEWTON_ATSPI_MAX_NODES", "lots")],
        &["serve", "--print-config"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("--max-nodes"));
}
