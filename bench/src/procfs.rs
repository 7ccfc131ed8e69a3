//! What the kernel says about a process: resident memory, CPU time, context switches.

use std::fs;

use crate::{fail, Result};

/// VmRSS in bytes.
pub fn rss_bytes(pid: u32) -> Result<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| fail(format!("cannot read /proc/{pid}/status: {e}")))?;
    field_kb(&status, "VmRSS:")
        .map(|kb| kb * 1024)
        .ok_or_else(|| fail(format!("no VmRSS in /proc/{pid}/status")))
}

fn field_kb(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// User + system CPU time of every thread, in seconds.
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| fail(format!("cannot read /proc/{pid}/stat: {e}")))?;
    // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| fail(format!("unreadable /proc/{pid}/stat")))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let hz = rustix::param::clock_ticks_per_second() as f64;
    Ok((ticks(11) + ticks(12)) as f64 / hz)
}

/// Context switches (voluntary + involuntary) summed over every thread: each is a wakeup or a
/// preemption of the process.
pub fn context_switches(pid: u32) -> Result<u64> {
    let dir = format!("/proc/{pid}/task");
    let tasks = fs::read_dir(&dir).map_err(|e| fail(format!("cannot list {dir}: {e}")))?;
    let mut total = 0;
    for task in tasks.flatten() {
        let Ok(status) = fs::read_to_string(task.path().join("status")) else {
            continue; // a thread that just exited
        };
        for key in ["voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"] {
            total += field_kb(&status, key).unwrap_or(0);
        }
    }
    Ok(total)
}

/// Context switches per thread, by thread name (`comm`), to tell which thread wakes up.
pub fn context_switches_by_thread(pid: u32) -> Vec<(String, u64)> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut threads: Vec<(String, u64)> = tasks
        .flatten()
        .filter_map(|task| {
            let status = fs::read_to_string(task.path().join("status")).ok()?;
            let name = fs::read_to_string(task.path().join("comm")).ok()?;
            let tid = task.file_name().to_string_lossy().into_owned();
            let switches = ["voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"]
                .iter()
                .map(|key| field_kb(&status, key).unwrap_or(0))
                .sum();
            Some((format!("{} ({tid})", name.trim()), switches))
        })
        .collect();
    threads.sort();
    threads
}
