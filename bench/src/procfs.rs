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

/// Where a process's resident memory is, from /proc/PID/status and /proc/PID/smaps: what the
/// memory-rounds benchmark reports to tell allocator retention from a leak.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct MemoryParts {
    /// Anonymous resident bytes (heap, arenas, stacks).
    pub anon: u64,
    /// File-backed resident bytes (the binary's and libraries' pages touched so far).
    pub file: u64,
    /// Resident bytes of the main arena (`[heap]`).
    pub main_heap: u64,
    /// Resident bytes of the other anonymous mappings (thread arenas, thread stacks, mmapped
    /// blocks).
    pub other_anon: u64,
    /// Threads.
    pub threads: u64,
}

/// The process's [`MemoryParts`].
pub fn memory_parts(pid: u32) -> Result<MemoryParts> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| fail(format!("cannot read /proc/{pid}/status: {e}")))?;
    let smaps = fs::read_to_string(format!("/proc/{pid}/smaps"))
        .map_err(|e| fail(format!("cannot read /proc/{pid}/smaps: {e}")))?;
    let mut parts = MemoryParts {
        anon: field_kb(&status, "RssAnon:").unwrap_or(0) * 1024,
        file: field_kb(&status, "RssFile:").unwrap_or(0) * 1024,
        threads: status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0),
        ..MemoryParts::default()
    };
    // A mapping header is "start-end perms offset dev inode [path]"; its "Rss:" line follows.
    let mut kind = "";
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            let fields: Vec<&str> = line.split_whitespace().collect();
            kind = match (fields.get(4), fields.get(5)) {
                (_, Some(&"[heap]")) => "heap",
                (Some(&"0"), None) => "anon",
                _ => "",
            };
        } else if let Some(kb) = line.strip_prefix("Rss:") {
            let bytes = kb
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
                * 1024;
            match kind {
                "heap" => parts.main_heap += bytes,
                "anon" => parts.other_anon += bytes,
                _ => {}
            }
        }
    }
    Ok(parts)
}
