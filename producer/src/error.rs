//! Errors of the sender library, each saying what to do next.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use newton_push_protocol::{EncodeError, SocketPathError};
use thiserror::Error;

/// Connecting to the bridge failed.
#[derive(Debug, Error)]
pub enum ConnectError {
    /// Nothing listens at the socket path.
    #[error(
        "no bridge is listening at {}: {source}; start `newton-atspi-bridge serve`, or check the \
         socket path (--socket, NEWTON_ATSPI_SOCKET)",
        path.display()
    )]
    NoBridge {
        /// The socket path tried.
        path: PathBuf,
        /// The underlying error (refused, not found).
        #[source]
        source: io::Error,
    },
    /// Another IO error while connecting (e.g. permission denied).
    #[error("cannot connect to the bridge at {}: {source}", path.display())]
    Io {
        /// The socket path tried.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// No socket path was given and none could be derived.
    #[error(transparent)]
    SocketPath(#[from] SocketPathError),
    /// Writing the hello failed.
    #[error("sending the hello failed: {0}")]
    Hello(#[source] SendError),
    /// The bridge answered the hello with an `Error`.
    #[error("the bridge refused the hello: {reason}")]
    Refused {
        /// The bridge's reason.
        reason: String,
    },
    /// The connection ended before the Welcome.
    #[error("the bridge closed the connection before welcoming us: {reason}")]
    Closed {
        /// Why, as far as known.
        reason: String,
    },
    /// No Welcome within the allowed time.
    #[error(
        "the bridge did not answer the hello within {waited:?}; is the other end really a \
         newton-atspi-bridge (protocol version 1)?"
    )]
    WelcomeTimeout {
        /// How long we waited.
        waited: Duration,
    },
}

/// Sending a message failed.
#[derive(Debug, Error)]
pub enum SendError {
    /// The message could not be encoded or is over the bridge's frame limit.
    #[error("cannot encode the message: {0}")]
    Encode(#[from] EncodeError),
    /// Writing to the bridge failed.
    #[error("writing to the bridge failed: {source}{}", closed_suffix(closed))]
    Io {
        /// The underlying error.
        #[source]
        source: io::Error,
        /// Why the bridge closed the connection, if it said so.
        closed: Option<String>,
    },
    /// `sync` saw no `SyncDone` in time.
    #[error("the bridge did not confirm sync {serial} within {waited:?}")]
    SyncTimeout {
        /// The sync's serial.
        serial: u64,
        /// How long we waited.
        waited: Duration,
    },
    /// The connection closed while waiting for `SyncDone`.
    #[error("the connection closed before sync {serial} was confirmed: {reason}")]
    ClosedDuringSync {
        /// The sync's serial.
        serial: u64,
        /// Why, as far as known.
        reason: String,
    },
}

fn closed_suffix(closed: &Option<String>) -> String {
    match closed {
        Some(reason) => format!(" (the bridge closed the connection: {reason})"),
        None => String::new(),
    }
}

/// Receiving a bridge message failed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RecvError {
    /// Nothing arrived in time.
    #[error("no message from the bridge in time")]
    Timeout,
    /// The connection is closed and every message was received.
    #[error("the connection to the bridge is closed: {reason}")]
    Closed {
        /// Why, as far as known.
        reason: String,
    },
}
