//! Shared pieces of the parity tests: the legacy reference as a child and a
//! raw walker.

pub mod walk;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use newton_e2e::TestSession;
use newton_push_protocol::SenderMessage;

/// How long the legacy reference may take to answer one line (the first
/// frame of doc-100k, 100,002 objects, takes accesskit_unix a while).
const LINE_TIMEOUT: Duration = Duration::from_secs(600);

/// A running `newton-legacy-reference`, its stdout read line by line.
pub struct Legacy {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr_path: std::path::PathBuf,
}

impl Legacy {
    /// Starts the reference on `fixture` with `args`, its stderr in the
    /// session's logs as `<label>.err`.
    pub fn start(session: &TestSession, label: &str, fixture: &Path, args: &[&str]) -> Legacy {
        let stderr_path = session.dir().join("logs").join(format!("{label}.err"));
        let stderr = File::create(&stderr_path).expect("create the legacy stderr log");
        let mut cmd = session.command(env!("CARGO_BIN_EXE_newton-legacy-reference"));
        cmd.arg(fixture)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut child = cmd.spawn().expect("start newton-legacy-reference");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Legacy {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr_path,
        }
    }

    /// Waits for the line `wanted`, failing (with the reference's stderr) on
    /// an `error:` line, an early exit or silence.
    pub fn expect_line(&mut self, wanted: &str) {
        let start = Instant::now();
        loop {
            let left = LINE_TIMEOUT.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) if line == wanted => return,
                Ok(line) if line.starts_with("error") => {
                    panic!("legacy reference said {line:?}; stderr:\n{}", self.stderr())
                }
                Ok(_) => continue,
                Err(_) => panic!(
                    "legacy reference did not say {wanted:?}; stderr:\n{}",
                    self.stderr()
                ),
            }
        }
    }

    /// The next stdout line, whatever it is.
    pub fn next_line(&mut self) -> String {
        match self.lines.recv_timeout(LINE_TIMEOUT) {
            Ok(line) => line,
            Err(_) => panic!("legacy reference fell silent; stderr:\n{}", self.stderr()),
        }
    }

    /// Everything the reference wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr()
    }

    /// Sends one `--step` command.
    pub fn command(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("started with piped stdin");
        writeln!(stdin, "{line}").expect("write to the legacy reference");
        stdin.flush().expect("flush the legacy reference's stdin");
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }
}

impl Drop for Legacy {
    fn drop(&mut self) {
        // Our own child, by handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The recording's application name (from its hello) and commit serials.
pub fn name_and_serials(fixture: &Path) -> (String, Vec<u64>) {
    let lines = newton_producer::load_recording(fixture).expect("load the fixture");
    let name = lines
        .first()
        .and_then(|l| l.hello.as_ref())
        .map(|h| h.app.name.clone())
        .expect("the fixture starts with a hello");
    let serials = lines
        .iter()
        .filter_map(|l| match &l.message {
            Some(SenderMessage::Commit { serial, .. }) => Some(*serial),
            _ => None,
        })
        .collect();
    (name, serials)
}
