//! `--profile DIR`: the bridge's hot paths under `perf record` (software cpu-clock, call
//! graphs), one recording per loop, each summarised by `perf report` into DIR/<loop>.txt.
//! Used to explain the targets the suite reports as not met.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use crate::dbus::{Query, ISSUE_QUERIES};
use crate::world::World;
use crate::{fail, fixtures, queries, updates, Result};

const LOOP_SECONDS: f64 = 10.0;

/// Runs the profiled loops on a 100k-node document and a 100k-node list.
pub fn run(out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)
        .map_err(|e| fail(format!("cannot create {}: {e}", out.display())))?;
    let world = World::start(out.join("fixtures"))?;
    std::fs::create_dir_all(&world.files).map_err(|e| fail(e.to_string()))?;
    let doc = fixtures::doc(4_000);
    let doc = doc.renamed(&format!("bench doc {}", doc.nodes));
    let app = world.attach(&doc)?;
    let nodes = queries::doc_nodes(&world.client, &app.root)?;
    let pid = world.bridge_pid;

    let loops: [(&str, &[Query]); 4] = [
        ("ping", &[Query::Ping]),
        ("queries-non-text", &ISSUE_QUERIES[..5]),
        (
            "get-string-at-offset-100k-document",
            &[Query::GetStringAtOffset],
        ),
        (
            "get-extents-and-child",
            &[Query::GetExtents, Query::GetChildAtIndex],
        ),
    ];
    for (name, members) in loops {
        let perf = PerfRecording::start(pid, &out.join(format!("{name}.data")))?;
        let start = Instant::now();
        let mut calls = 0usize;
        while start.elapsed().as_secs_f64() < LOOP_SECONDS {
            for &query in members {
                let obj = if query == Query::Ping {
                    &app.root
                } else {
                    nodes.for_query(query)
                };
                let _ = world.client.query(obj, query);
                calls += 1;
            }
        }
        perf.finish(out, name)?;
        eprintln!("profiled {name}: {calls} calls in {LOOP_SECONDS} s");
    }
    drop(app);

    let list = fixtures::list(99_998).renamed("bench list 100000");
    let app = world.attach(&list)?;
    let perf = PerfRecording::start(pid, &out.join("updates-100k.data"))?;
    let result = updates::measure(&world.client, &app, &list, 99_998, 2_000, 0)?;
    perf.finish(out, "updates-100k")?;
    eprintln!(
        "profiled updates-100k: median {:.3} ms",
        result.latency.median_us / 1e3
    );
    println!("profiles: {}", out.display());
    Ok(())
}

/// `perf record -p PID` running in the background until finished with SIGINT.
struct PerfRecording {
    child: Child,
    data: PathBuf,
}

impl PerfRecording {
    fn start(pid: u32, data: &Path) -> Result<PerfRecording> {
        let child = Command::new("perf")
            .args(["record", "-e", "cpu-clock", "-F", "999", "-g", "-p"])
            .arg(pid.to_string())
            .arg("-o")
            .arg(data)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| fail(format!("cannot start perf (is it installed?): {e}")))?;
        // perf needs a moment to attach before the loop starts.
        std::thread::sleep(Duration::from_millis(500));
        Ok(PerfRecording {
            child,
            data: data.to_owned(),
        })
    }

    /// Stops the recording and writes `perf report` (self time, then with children) beside it.
    fn finish(mut self, out: &Path, name: &str) -> Result<()> {
        if let Some(pid) = i32::try_from(self.child.id()).ok().and_then(Pid::from_raw) {
            let _ = kill_process(pid, Signal::INT);
        }
        let _ = self.child.wait();
        let mut text = String::new();
        for mode in ["--no-children", "--children"] {
            let report = Command::new("perf")
                .args([
                    "report",
                    "--stdio",
                    mode,
                    "--percent-limit",
                    "1.5",
                    "-g",
                    "none",
                    "-i",
                ])
                .arg(&self.data)
                .output()
                .map_err(|e| fail(format!("cannot run perf report: {e}")))?;
            text.push_str(&String::from_utf8_lossy(&report.stdout));
        }
        let path = out.join(format!("{name}.txt"));
        std::fs::write(&path, text)
            .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))
    }
}
