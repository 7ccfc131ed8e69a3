//! `status`: asks the running daemon for its status document (see
//! `control.rs`) and prints it, as a summary or as the JSON itself.

use std::error::Error;
use std::fmt::Write as _;
use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::cli::StatusArgs;
use newton_atspi_daemon::control::{status_socket_path, StatusDocument};

/// How long the daemon may take to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(args: StatusArgs) -> Result<(), Box<dyn Error>> {
    let socket = match args.socket {
        Some(path) => path,
        None => newton_push_protocol::default_socket_path()?,
    };
    let text = fetch(&socket)?;
    let document: StatusDocument = serde_json::from_str(&text).map_err(|e| {
        format!("the bridge's status is not understood ({e}); is it another version?")
    })?;
    let output = if args.json {
        serde_json::to_string_pretty(&document)? + "\n"
    } else {
        summary(&document)
    };
    crate::print_out(&output)?;
    Ok(())
}

/// Reads the daemon's one JSON document.
fn fetch(sender_socket: &Path) -> Result<String, String> {
    let path = status_socket_path(sender_socket);
    let mut stream = UnixStream::connect(&path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => format!(
            "no bridge is running (nothing answers at {}); start it with `newton-atspi-bridge serve` \
             or `systemctl --user start newton-atspi-bridge`",
            path.display()
        ),
        _ => format!("cannot reach the bridge at {}: {e}", path.display()),
    })?;
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .map_err(|e| format!("the bridge did not answer at {}: {e}", path.display()))?;
    Ok(text)
}

/// The human summary: the daemon, the totals, one line per application.
pub fn summary(status: &StatusDocument) -> String {
    let mut out = String::new();
    let totals = &status.totals;
    let _ = writeln!(
        out,
        "newton-atspi-bridge {} (pid {}), up {}",
        status.version,
        status.pid,
        uptime(status.uptime_seconds)
    );
    let _ = writeln!(out, "  sender socket: {}", status.socket);
    let _ = writeln!(
        out,
        "  accessibility bus: {} (assistive technology listening: {})",
        status.a11y_bus,
        if status.at_present { "yes" } else { "no" }
    );
    let _ = writeln!(
        out,
        "  senders: {} connected ({} since start, {} refused)",
        status.senders, status.senders_total, status.senders_refused
    );
    let _ = writeln!(
        out,
        "  {} application(s), {} surface(s), {} node(s); {} update(s) applied, {} rejected, \
         {} held back by the frame-rate limit",
        totals.apps,
        totals.surfaces,
        totals.nodes,
        totals.commits_applied,
        totals.commits_rejected,
        status.commits_held_back
    );
    if status.bus_connections_lost > 0 {
        let _ = writeln!(
            out,
            "  application bus connections closed by the bus (and reconnected): {}",
            status.bus_connections_lost
        );
    }
    if let Some(last) = &status.last_rejection {
        let _ = writeln!(
            out,
            "  last rejection: {} broke `{}`: {}",
            last.app, last.rule, last.reason
        );
    }
    for app in &status.apps {
        // The kernel's pid; the hello's only where it says otherwise (a
        // sandbox's own pid namespace, a compositor naming the application).
        let pid = match (app.pid, app.claimed_pid) {
            (Some(pid), Some(claimed)) if claimed != pid => {
                format!(", pid {pid}, its hello claims pid {claimed}")
            }
            (Some(pid), _) => format!(", pid {pid}"),
            (None, Some(claimed)) => format!(", its hello claims pid {claimed}"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "  \u{2022} {} ({}{pid}, {}): {} surface(s), {} node(s), {} applied, {} rejected",
            app.name,
            app.app_id,
            if app.bus_connected {
                app.bus_name.as_str()
            } else {
                "off the bus, reconnecting"
            },
            app.surfaces,
            app.nodes,
            app.commits_applied,
            app.commits_rejected
        );
    }
    out
}

fn uptime(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use newton_atspi_daemon::control::{AppStatus, LastRejection, Totals};

    #[test]
    fn without_a_bridge_the_error_says_how_to_start_one() {
        let dir = std::env::temp_dir().join(format!("newton-status-{}", std::process::id()));
        let error = fetch(&dir.join("bridge.sock")).unwrap_err();
        assert!(error.contains("newton-atspi-bridge serve"), "{error}");
        assert!(!error.contains('\n'), "one line: {error}");
    }

    #[test]
    fn reads_the_document_from_the_status_socket() {
        let dir = std::env::temp_dir().join(format!("newton-status-ok-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sender_socket = dir.join("bridge.sock");
        let listener =
            std::os::unix::net::UnixListener::bind(status_socket_path(&sender_socket)).unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            std::io::Write::write_all(&mut stream, b"{\"answer\":1}\n").unwrap();
        });
        assert_eq!(fetch(&sender_socket).unwrap(), "{\"answer\":1}\n");
        server.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_summary_lists_totals_rejection_and_applications() {
        let status = StatusDocument {
            bus_connections_lost: 0,
            version: "0.1.0".into(),
            pid: 7,
            uptime_seconds: 3725,
            socket: "/run/user/1000/newton-atspi/bridge.sock".into(),
            a11y_bus: "unix:path=/tmp/a11y".into(),
            at_present: false,
            senders: 1,
            senders_total: 4,
            senders_refused: 3,
            commits_held_back: 120,
            totals: Totals {
                apps: 1,
                surfaces: 2,
                nodes: 50,
                commits_applied: 9,
                commits_rejected: 2,
            },
            last_rejection: Some(LastRejection {
                app: "Editor".into(),
                rule: "unknown-node".into(),
                reason: "node 9 is not in the tree".into(),
            }),
            apps: vec![
                AppStatus {
                    bus_connected: true,
                    name: "Editor".into(),
                    app_id: "org.example.Editor".into(),
                    pid: Some(42),
                    uid: Some(1000),
                    claimed_pid: Some(42),
                    bus_name: ":1.7".into(),
                    surfaces: 2,
                    nodes: 50,
                    commits_applied: 9,
                    commits_rejected: 2,
                },
                AppStatus {
                    bus_connected: true,
                    name: "Sandboxed".into(),
                    app_id: "org.example.Sandboxed".into(),
                    pid: Some(40123),
                    uid: Some(1000),
                    claimed_pid: Some(2),
                    bus_name: ":1.8".into(),
                    surfaces: 0,
                    nodes: 0,
                    commits_applied: 0,
                    commits_rejected: 0,
                },
            ],
        };
        let text = summary(&status);
        assert!(text.contains("up 1 h 2 min"), "{text}");
        assert!(text.contains("listening: no"));
        assert!(text.contains(
            "1 application(s), 2 surface(s), 50 node(s); 9 update(s) applied, 2 rejected, 120 \
             held back by the frame-rate limit"
        ));
        assert!(
            text.contains("1 connected (4 since start, 3 refused)"),
            "{text}"
        );
        assert!(text.contains("last rejection: Editor broke `unknown-node`"));
        assert!(text.contains("Editor (org.example.Editor, pid 42, :1.7)"));
        assert!(
            text.contains(
                "Sandboxed (org.example.Sandboxed, pid 40123, its hello claims pid 2, :1.8)"
            ),
            "{text}"
        );
    }
}
