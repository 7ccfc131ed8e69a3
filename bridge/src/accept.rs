//! Descriptors: how many connections the bridge takes, and what it does
//! when the process runs out of file descriptors.
//!
//! * At start the soft `RLIMIT_NOFILE` is raised to the hard limit
//!   ([`raise_fd_limit`]); the sender limit defaults to what that leaves
//!   room for ([`default_max_senders`]).
//! * [`ConnectionTable`] (pure) admits a connection only under a total and
//!   a per-key limit, counted from accept until the connection closes:
//!   senders per uid (rule `max-senders`; a refused sender gets an `error`
//!   frame naming the rule), peer-to-peer clients bridge-wide per uid and
//!   per application per process (`p2p.rs`). What it counts ([`Counted`])
//!   gives each refusal its rule and advice.
//! * [`accept_with_backoff`] never spins: when `accept` fails for want of
//!   descriptors (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) it pauses that
//!   listener, 10 ms doubling to 1 s, and logs one line per cause per
//!   interval with the count. Connections wait in the listen backlog
//!   meanwhile and are taken as soon as descriptors are free again.

use std::collections::HashMap;
use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_io::Async;
use tracing::{info, warn};

use crate::logging::LogLimiter;

/// Descriptors kept for everything that is not a sender: bus connections of
/// the daemon itself, the status socket, the executor, logging, `/proc`.
pub const FD_RESERVE: u64 = 64;
/// Descriptors one connected application costs: its sender socket, its
/// accessibility-bus connection, its peer-to-peer listener and one
/// peer-to-peer client (Orca).
pub const FDS_PER_SENDER: u64 = 4;
/// Bounds of the default sender limit, whatever the descriptor limit.
const MIN_SENDERS: u64 = 8;
const MAX_DEFAULT_SENDERS: u64 = 4096;

/// The soft file-descriptor limit as it is (an embedded daemon leaves the
/// application's limit alone).
pub fn fd_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the soft
/// limit in force afterwards (unchanged when it cannot be read or raised).
pub fn raise_fd_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    let Some(hard) = limit.maximum else {
        return soft;
    };
    if soft >= hard {
        return soft;
    }
    let raised = rustix::process::Rlimit {
        current: Some(hard),
        maximum: Some(hard),
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => {
            info!(
                from = soft,
                to = hard,
                "raised the soft file-descriptor limit to the hard limit"
            );
            hard
        }
        Err(e) => {
            warn!(
                soft,
                hard, "could not raise the file-descriptor limit ({e})"
            );
            soft
        }
    }
}

/// The sender limit a descriptor limit leaves room for.
pub fn default_max_senders(fd_limit: u64) -> usize {
    let room = fd_limit.saturating_sub(FD_RESERVE) / FDS_PER_SENDER;
    room.clamp(MIN_SENDERS, MAX_DEFAULT_SENDERS) as usize
}

/// What a [`ConnectionTable`] counts, in the words its refusals use: the
/// rule each limit is named by and what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// What holds the connections: "the bridge", "this application".
    pub whole: &'static str,
    /// What is counted: "sender connections".
    pub noun: &'static str,
    /// What the per-key limit is per: "uid", "process".
    pub key: &'static str,
    /// The rule and the advice of the total limit.
    pub total_rule: &'static str,
    pub total_advice: &'static str,
    /// The rule and the advice of the per-key limit.
    pub key_rule: &'static str,
    pub key_advice: &'static str,
}

/// Sender connections, bridge-wide and per uid (`--max-senders`).
pub const SENDERS: Counted = Counted {
    whole: "the bridge",
    noun: "sender connections",
    key: "uid",
    total_rule: "max-senders",
    total_advice: "close unused senders, or raise --max-senders (and the unit's LimitNOFILE)",
    key_rule: "max-senders",
    key_advice: "close unused senders, or raise --max-senders-per-uid",
};

/// Why a connection was not admitted by the connection limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitRefusal {
    #[error(
        "{} already serves {open} {}, its limit (rule {}); {}",
        .counted.whole, .counted.noun, .counted.total_rule, .counted.total_advice
    )]
    Total { open: usize, counted: Counted },
    #[error(
        "{} {key} already has {open} {}, the per-{} limit (rule {}); {}",
        .counted.key, .counted.noun, .counted.key, .counted.key_rule, .counted.key_advice
    )]
    PerKey {
        key: u32,
        open: usize,
        counted: Counted,
    },
}

impl LimitRefusal {
    /// The rule this refusal names (the log's rate-limiting cause).
    pub fn rule(&self) -> &'static str {
        match self {
            LimitRefusal::Total { counted, .. } => counted.total_rule,
            LimitRefusal::PerKey { counted, .. } => counted.key_rule,
        }
    }
}

/// Open connections, total and per key (a uid, a pid), pure; the daemon
/// holds each behind a mutex ([`Connections`]).
#[derive(Debug)]
pub struct ConnectionTable {
    counted: Counted,
    max_total: usize,
    max_per_key: usize,
    total: usize,
    per_key: HashMap<u32, usize>,
}

impl ConnectionTable {
    pub fn new(counted: Counted, max_total: usize, max_per_key: usize) -> Self {
        Self {
            counted,
            max_total,
            max_per_key,
            total: 0,
            per_key: HashMap::new(),
        }
    }

    /// Counts a new connection of `key`, or says which limit it is over.
    pub fn admit(&mut self, key: u32) -> Result<(), LimitRefusal> {
        let counted = self.counted;
        if self.total >= self.max_total {
            return Err(LimitRefusal::Total {
                open: self.total,
                counted,
            });
        }
        let of_key = self.per_key.get(&key).copied().unwrap_or(0);
        if of_key >= self.max_per_key {
            return Err(LimitRefusal::PerKey {
                key,
                open: of_key,
                counted,
            });
        }
        self.total += 1;
        self.per_key.insert(key, of_key + 1);
        Ok(())
    }

    /// A connection of `key` closed.
    pub fn release(&mut self, key: u32) {
        self.total = self.total.saturating_sub(1);
        if let Some(count) = self.per_key.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                self.per_key.remove(&key);
            }
        }
    }

    #[cfg(test)]
    pub fn open(&self) -> usize {
        self.total
    }
}

/// A shared [`ConnectionTable`].
#[derive(Clone)]
pub struct Connections(Arc<Mutex<ConnectionTable>>);

/// One admitted connection; dropping it releases its place.
pub struct Admitted {
    table: Connections,
    key: u32,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.table.lock().release(self.key);
    }
}

impl Connections {
    pub fn new(counted: Counted, max_total: usize, max_per_key: usize) -> Self {
        Self(Arc::new(Mutex::new(ConnectionTable::new(
            counted,
            max_total,
            max_per_key,
        ))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ConnectionTable> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn admit(&self, key: u32) -> Result<Admitted, LimitRefusal> {
        self.lock().admit(key)?;
        Ok(Admitted {
            table: self.clone(),
            key,
        })
    }
}

/// Pause after an accept failure: 10 ms, doubling to 1 s while failures go
/// on; back to nothing after a success.
#[derive(Debug, Default)]
pub struct Backoff {
    delay: Option<Duration>,
}

const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

impl Backoff {
    /// The pause after one more failure.
    pub fn fail(&mut self) -> Duration {
        let next = self
            .delay
            .map_or(FIRST_PAUSE, |d| (d * 2).min(LONGEST_PAUSE));
        self.delay = Some(next);
        next
    }

    pub fn succeed(&mut self) {
        self.delay = None;
    }
}

/// Whether an accept error means the process (or system) is out of
/// descriptors or buffers: the listener stays readable, so retrying at
/// once would spin.
pub fn is_exhaustion(error: &io::Error) -> bool {
    use rustix::io::Errno;
    let Some(code) = error.raw_os_error() else {
        return false;
    };
    [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
        .iter()
        .any(|errno| errno.raw_os_error() == code)
}

/// Shared rate limit for accept-loop warnings (every listener).
pub type AcceptLog = Arc<Mutex<LogLimiter>>;

/// Logs `message` for `cause` unless a line for it went out within the
/// interval; the count of lines held back rides on the next one.
pub fn warn_limited(log: &AcceptLog, cause: &'static str, message: &dyn std::fmt::Display) {
    let verdict = log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .check(cause, Instant::now());
    if let Some(suppressed) = verdict {
        warn!(cause, suppressed, "{message}");
    }
}

/// The next connection on `listener`. Failures never spin: running out of
/// descriptors pauses this listener with [`Backoff`]; any other error
/// (a peer gone before accept) pauses 10 ms. `what` names the listener in
/// the log.
pub async fn accept_with_backoff(
    listener: &Async<UnixListener>,
    backoff: &mut Backoff,
    log: &AcceptLog,
    what: &'static str,
) -> UnixStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                backoff.succeed();
                match stream.into_inner() {
                    Ok(stream) => return stream,
                    Err(e) => {
                        warn_limited(log, what, &format!("{what}: accepted socket unusable: {e}"))
                    }
                }
            }
            Err(e) if is_exhaustion(&e) => {
                let pause = backoff.fail();
                warn_limited(
                    log,
                    "fd-exhaustion",
                    &format!(
                        "{what}: accept failed: {e}; pausing this listener {} ms (up to 1 s \
                         while it lasts); connections wait in the backlog; existing \
                         applications are served meanwhile",
                        pause.as_millis()
                    ),
                );
                async_io::Timer::after(pause).await;
            }
            Err(e) => {
                warn_limited(log, what, &format!("{what}: accept failed: {e}"));
                async_io::Timer::after(FIRST_PAUSE).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_sender_limit_leaves_room_under_the_fd_limit() {
        assert_eq!(default_max_senders(1024), 240);
        assert!(default_max_senders(1024) as u64 * FDS_PER_SENDER + FD_RESERVE <= 1024);
        assert_eq!(default_max_senders(256), 48);
        assert_eq!(default_max_senders(16), MIN_SENDERS as usize);
        assert_eq!(default_max_senders(1 << 20), MAX_DEFAULT_SENDERS as usize);
    }

    #[test]
    fn total_and_per_uid_limits_refuse_with_their_rule_and_recover() {
        let mut table = ConnectionTable::new(SENDERS, 3, 2);
        table.admit(1000).unwrap();
        table.admit(1000).unwrap();
        let refused = table.admit(1000).unwrap_err();
        assert_eq!(
            refused,
            LimitRefusal::PerKey {
                key: 1000,
                open: 2,
                counted: SENDERS
            }
        );
        assert_eq!(
            refused.to_string(),
            "uid 1000 already has 2 sender connections, the per-uid limit (rule max-senders); \
             close unused senders, or raise --max-senders-per-uid"
        );
        table.admit(0).unwrap();
        let refused = table.admit(0).unwrap_err();
        assert_eq!(
            refused,
            LimitRefusal::Total {
                open: 3,
                counted: SENDERS
            }
        );
        assert_eq!(refused.rule(), "max-senders");
        assert!(refused
            .to_string()
            .starts_with("the bridge already serves 3 sender connections, its limit"));
        table.release(1000);
        table.admit(0).unwrap();
        assert_eq!(table.open(), 3);
        for uid in [1000, 0, 0] {
            table.release(uid);
        }
        assert_eq!(table.open(), 0);
        assert!(table.per_key.is_empty());
    }

    #[test]
    fn an_admitted_connection_releases_its_place_when_dropped() {
        let connections = Connections::new(SENDERS, 1, 1);
        let first = connections.admit(7).unwrap();
        assert!(connections.admit(7).is_err());
        drop(first);
        assert!(connections.admit(7).is_ok());
    }

    #[test]
    fn backoff_doubles_to_a_second_and_resets() {
        let mut backoff = Backoff::default();
        let pauses: Vec<u128> = (0..9).map(|_| backoff.fail().as_millis()).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        backoff.succeed();
        assert_eq!(backoff.fail(), FIRST_PAUSE);
    }

    #[test]
    fn running_out_of_descriptors_is_recognised() {
        assert!(is_exhaustion(&io::Error::from_raw_os_error(24)));
        assert!(is_exhaustion(&io::Error::from_raw_os_error(23)));
        assert!(!is_exhaustion(&io::Error::from_raw_os_error(103)));
    }
}
