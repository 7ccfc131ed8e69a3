//! Machine-wide (per uid) locks, one per Orca installation, that make one version's Orca tests
//! take turns, whether in one test binary or in several.
//!
//! Each Orca runs in a PID namespace of its own (crate::orca), so Orcas cannot see or refuse each
//! other; the lock keeps one version's tests from running several Orcas and their applications
//! at once on a small machine, and lets Orcas of different versions (CI's passes) overlap.

use std::fs::{File, OpenOptions};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::fs::{flock, FlockOperation};

use crate::{HarnessError, Result};

/// Held while an Orca test runs; released on drop (closing the file releases the flock).
#[derive(Debug)]
pub struct OrcaLock {
    _file: File,
    pub path: PathBuf,
}

impl OrcaLock {
    /// Takes the lock file `/tmp/newton-e2e-orca-<uid>-<installation>.lock`, waiting up to
    /// `timeout`.
    pub fn acquire(installation: &str, timeout: Duration) -> Result<OrcaLock> {
        let uid = rustix::process::getuid().as_raw();
        let path = PathBuf::from(format!("/tmp/newton-e2e-orca-{uid}-{installation}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(HarnessError::io(format!(
                "open Orca lock {}",
                path.display()
            )))?;
        let start = Instant::now();
        let mut announced = false;
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(OrcaLock { _file: file, path }),
                Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    return Err(HarnessError::Io {
                        what: format!("flock {}", path.display()),
                        source: e.into(),
                    })
                }
            }
            if !announced {
                eprintln!(
                    "newton-e2e: waiting for the Orca test lock {} (another Orca test runs)",
                    path.display()
                );
                announced = true;
            }
            if start.elapsed() >= timeout {
                return Err(HarnessError::Timeout {
                    what: format!("the Orca test lock {}", path.display()),
                    seconds: timeout.as_secs_f64(),
                    detail: "; another Orca test holds it".into(),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
