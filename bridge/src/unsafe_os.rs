//! The daemon's only unsafe code, in this one module so every other file
//! stays under the crate's `#![deny(unsafe_code)]` with no exception. Four
//! calls have no safe wrapper that fits: glibc's `mallopt(M_ARENA_MAX)` and
//! `malloc_trim` (neither std nor rustix exposes them; used by memory.rs),
//! taking ownership of fd 3, the listening socket a service manager passes
//! (std owns an inherited descriptor only through `from_raw_fd`; used by
//! activation.rs), and reading a socket peer's credentials (`SO_PEERCRED`:
//! rustix's `UCred` holds the pid as a non-zero type, but the kernel reports
//! pid 0 for a peer outside the bridge's pid namespace; used by socket.rs).
//! Each function checks its own preconditions, so callers need no unsafe.

#![allow(unsafe_code)]

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
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

/// A connected Unix socket's peer as the kernel reports it (`SO_PEERCRED`),
/// translated into this process's namespaces: `(pid, uid)`. The pid is
/// `None` when the peer's process is not visible from this pid namespace
/// (the kernel then reports 0: a bridge inside a container, its sender
/// outside).
pub fn peer_credentials(socket: impl AsFd) -> std::io::Result<(Option<u32>, u32)> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the descriptor is borrowed, so open for the call; `cred` is a
    // plain C struct of three integers (every bit pattern is a value) that
    // the kernel fills up to `len` bytes, and `len` says its exact size.
    let status = unsafe {
        libc::getsockopt(
            socket.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if status != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if len as usize != std::mem::size_of::<libc::ucred>() {
        return Err(std::io::Error::other(format!(
            "SO_PEERCRED returned {len} bytes, not a ucred's {}",
            std::mem::size_of::<libc::ucred>()
        )));
    }
    let pid = u32::try_from(cred.pid).ok().filter(|pid| *pid != 0);
    Ok((pid, cred.uid))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_socket_pairs_peer_is_this_process() {
        let (one, _other) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        let (pid, uid) = super::peer_credentials(&one).expect("SO_PEERCRED on a socket pair");
        assert_eq!(pid, Some(std::process::id()));
        assert_eq!(uid, rustix::process::getuid().as_raw());
    }

    #[test]
    fn a_descriptor_that_is_no_socket_is_an_error() {
        let file = std::fs::File::open("/proc/self/stat").expect("open a file");
        assert!(super::peer_credentials(&file).is_err());
    }
}
