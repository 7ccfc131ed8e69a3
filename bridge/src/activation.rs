//! Socket activation: the listening socket a service manager passes
//! (systemd's `newton-atspi-bridge.socket`, or `systemd-socket-activate`).
//!
//! The service manager binds `%t/newton-atspi/bridge.sock` and keeps it open
//! while the bridge starts, stops and restarts, so a sender that connects
//! meanwhile is queued in the socket's backlog instead of refused. The
//! protocol is `sd_listen_fds(3)`, done by hand (no libsystemd): when
//! `LISTEN_PID` is our pid, `LISTEN_FDS` sockets start at fd 3. The
//! variables are left in the environment (changing it is unsound once other
//! threads run); `LISTEN_PID` already keeps a child from taking them, and
//! the fd is marked close-on-exec so no child inherits it.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;

use rustix::io::{fcntl_setfd, FdFlags};
use rustix::net::{sockopt, AddressFamily, SocketType};

/// Why the passed socket cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    #[error("{variable}={value:?} is not a number; the service manager set it wrongly")]
    BadVariable {
        variable: &'static str,
        value: String,
    },
    #[error(
        "the service manager passed {0} sockets; the bridge takes exactly one \
         (one ListenStream= in newton-atspi-bridge.socket)"
    )]
    NotOne(usize),
    #[error(
        "the socket the service manager passed (fd 3) is not a listening Unix stream socket \
         ({0}); use ListenStream=%t/newton-atspi/bridge.sock"
    )]
    NotAUnixListener(String),
}

/// How many sockets `LISTEN_PID`/`LISTEN_FDS` pass to the process `own_pid`
/// (`sd_listen_fds` semantics: 0 when they are unset or meant for another
/// process).
pub fn passed_count(
    listen_pid: Option<&str>,
    listen_fds: Option<&str>,
    own_pid: u32,
) -> Result<usize, ActivationError> {
    let number = |variable: &'static str, value: &str| {
        value
            .trim()
            .parse::<u64>()
            .map_err(|_| ActivationError::BadVariable {
                variable,
                value: value.to_owned(),
            })
    };
    let Some(pid) = listen_pid else {
        return Ok(0);
    };
    if number("LISTEN_PID", pid)? != u64::from(own_pid) {
        return Ok(0);
    }
    match listen_fds {
        None => Ok(0),
        Some(fds) => Ok(usize::try_from(number("LISTEN_FDS", fds)?).unwrap_or(usize::MAX)),
    }
}

/// The listening socket passed to this process, if any, with the path it
/// is bound to. Takes fd 3 at most once per process.
pub fn passed_listener() -> Result<Option<(UnixListener, Option<PathBuf>)>, ActivationError> {
    let Some(fd) = crate::unsafe_os::take_passed_fd()? else {
        return Ok(None);
    };
    check_listener(&fd)?;
    fcntl_setfd(&fd, FdFlags::CLOEXEC)
        .map_err(|e| ActivationError::NotAUnixListener(format!("cannot set close-on-exec: {e}")))?;
    let listener = UnixListener::from(fd);
    let path = listener
        .local_addr()
        .ok()
        .and_then(|address| address.as_pathname().map(|path| path.to_owned()));
    Ok(Some((listener, path)))
}

fn check_listener(fd: &OwnedFd) -> Result<(), ActivationError> {
    let not = |why: String| ActivationError::NotAUnixListener(why);
    let family = rustix::net::getsockname(fd)
        .map_err(|e| not(format!("not a socket: {e}")))?
        .address_family();
    if family != AddressFamily::UNIX {
        return Err(not(format!("address family {family:?}")));
    }
    let kind = sockopt::socket_type(fd).map_err(|e| not(e.to_string()))?;
    if kind != SocketType::STREAM {
        return Err(not(format!("socket type {kind:?}")));
    }
    if !sockopt::socket_acceptconn(fd).map_err(|e| not(e.to_string()))? {
        return Err(not("it is not listening".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_are_ours_only_when_listen_pid_is_our_pid() {
        assert_eq!(passed_count(None, Some("1"), 42).unwrap(), 0);
        assert_eq!(passed_count(Some("41"), Some("1"), 42).unwrap(), 0);
        assert_eq!(passed_count(Some("42"), None, 42).unwrap(), 0);
        assert_eq!(passed_count(Some("42"), Some("1"), 42).unwrap(), 1);
        assert_eq!(passed_count(Some("42"), Some("0"), 42).unwrap(), 0);
        assert_eq!(passed_count(Some("42"), Some("2"), 42).unwrap(), 2);
    }

    #[test]
    fn malformed_variables_are_errors_that_name_them() {
        let error = passed_count(Some("x"), Some("1"), 42).unwrap_err();
        assert!(error.to_string().starts_with("LISTEN_PID=\"x\""), "{error}");
        let error = passed_count(Some("42"), Some("-1"), 42).unwrap_err();
        assert!(
            error.to_string().starts_with("LISTEN_FDS=\"-1\""),
            "{error}"
        );
    }

    #[test]
    fn a_listening_unix_socket_passes_the_check_and_others_do_not() {
        let dir = std::env::temp_dir().join(format!("newton-activation-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("check.sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        assert!(check_listener(&OwnedFd::from(listener)).is_ok());
        let (one, _two) = std::os::unix::net::UnixStream::pair().unwrap();
        let error = check_listener(&OwnedFd::from(one)).unwrap_err();
        assert!(error.to_string().contains("not listening"), "{error}");
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(check_listener(&OwnedFd::from(file)).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
