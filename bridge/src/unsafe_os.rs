//! The daemon's only unsafe code, in this one module so every other file
//! stays under the crate's `#![deny(unsafe_code)]` with no exception. Three
//! calls have no safe wrapper: glibc's `mallopt(M_ARENA_MAX)` and
//! `malloc_trim` (neither std nor rustix exposes them; used by memory.rs),
//! and taking ownership of fd 3, the listening socket a service manager
//! passes (std owns an inherited descriptor only through `from_raw_fd`; used
//! by activation.rs). Each function checks its own preconditions, so callers
//! need no unsafe.

#![allow(unsafe_code)]

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::activation::{passed_count, ActivationError};

/// `SD_LISTEN_FDS_START`: the first passed fd.
const LISTEN_FDS_START: i32 = 3;

/// `mallopt(M_ARENA_MAX, arenas)`: true when glibc accepted it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn set_arena_max(arenas: i32) -> bool {
    // SAFETY: mallopt takes no pointers; M_ARENA_MAX only bounds how many
    // arenas glibc creates from now on.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) == 1 }
}

/// Other C libraries: nothing to set.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn set_arena_max(_arenas: i32) -> bool {
    true
}

/// `malloc_trim(0)`: true when memory was released.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn malloc_trim() -> bool {
    // SAFETY: malloc_trim takes no pointers and only walks glibc's own
    // arenas under their locks; it is safe to call from any thread at any
    // time.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other C libraries: nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn malloc_trim() -> bool {
    false
}

/// The one socket the service manager passed to this process (fd 3), owned;
/// `None` when none was passed (`LISTEN_PID`/`LISTEN_FDS` unset or meant for
/// another process) or it was already taken. Takes fd 3 at most once per
/// process.
pub fn take_passed_fd() -> Result<Option<OwnedFd>, ActivationError> {
    static TAKEN: AtomicBool = AtomicBool::new(false);
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    match passed_count(pid.as_deref(), fds.as_deref(), std::process::id())? {
        0 => return Ok(None),
        1 => {}
        other => return Err(ActivationError::NotOne(other)),
    }
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Ok(None);
    }
    // SAFETY: sd_listen_fds(3): the service manager opened fd 3 for this
    // process (LISTEN_PID is ours, checked above) and nothing else in the
    // bridge owns it; TAKEN makes sure it is wrapped only once.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(LISTEN_FDS_START) }))
}
