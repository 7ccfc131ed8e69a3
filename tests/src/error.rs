//! One error type for the harness; every message says what failed and where to look.

use std::path::PathBuf;

/// Harness result.
pub type Result<T, E = HarnessError> = std::result::Result<T, E>;

/// What went wrong while bringing up or driving a test session.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("could not start `{program}` ({source}); is its Debian package installed? (scripts/install-deps.sh)")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("service `{service}` failed: {reason}\n--- stderr of {service} ({stderr_path}) ---\n{stderr}")]
    Service {
        service: String,
        reason: String,
        stderr_path: PathBuf,
        stderr: String,
    },
    #[error("timed out after {seconds:.1} s waiting for {what}{detail}")]
    Timeout {
        what: String,
        seconds: f64,
        detail: String,
    },
    #[error("D-Bus call failed: {what}: {source}")]
    Dbus {
        what: String,
        #[source]
        source: Box<zbus::Error>,
    },
    #[error("{0}")]
    Other(String),
}

impl HarnessError {
    /// Wraps an I/O error with what the harness was trying to do.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HarnessError {
        let what = what.into();
        move |source| HarnessError::Io { what, source }
    }

    /// Wraps a zbus error with the call that failed.
    pub fn dbus(what: String) -> impl FnOnce(zbus::Error) -> HarnessError {
        move |source| HarnessError::Dbus {
            what,
            source: Box::new(source),
        }
    }
}
