//! What every call returns ([`NewtonStatus`]) and the message that goes with
//! it ([`Failure`], kept per thread for `newton_last_error_message`).

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use newton_producer::{ConnectError, SendError};
use newton_push_protocol::{EncodeError, FrameError};

/// What a call did. `NEWTON_STATUS_OK` (0) is success; the two positive
/// values are outcomes that are not errors (nothing to read yet, a wait
/// that ran out); negative values are errors. After any status but
/// `NEWTON_STATUS_OK`, `newton_last_error_message()` says what happened and
/// what to do next.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewtonStatus {
    /// The call did what it says.
    Ok = 0,
    /// `newton_producer_poll`: no bridge message is waiting.
    NoMessage = 1,
    /// A wait (`newton_producer_wait`, `_sync`, `_key_wait`) ran out of time.
    Timeout = 2,
    /// A required pointer argument is NULL.
    NullArgument = -1,
    /// An argument is not acceptable: a string that is not UTF-8, an empty
    /// application id, an unknown key kind, a misaligned pointer, a pointer
    /// `newton_string_free` did not hand out.
    InvalidArgument = -2,
    /// A JSON argument does not parse, or is not an accesskit 0.25
    /// `TreeUpdate` (docs/schema/tree-update.schema.json).
    InvalidJson = -3,
    /// The `NewtonProducer` handle is not (or no longer) a live connection:
    /// never connected, zeroed, or already passed to `newton_producer_destroy`.
    InvalidHandle = -4,
    /// No bridge listens at the socket (or none answered the hello, or the
    /// socket path is unknown because `XDG_RUNTIME_DIR` is unset).
    NoBridge = -5,
    /// The bridge refused the connection (its reason is in the message).
    Refused = -6,
    /// The connection to the bridge has ended; destroy the handle and
    /// connect again when a bridge runs.
    Closed = -7,
    /// Reading or writing the socket failed for another reason.
    Io = -8,
    /// The bridge does not offer what was asked (keys: its welcome did not
    /// list `keyEvents`).
    NotSupported = -9,
    /// The message is larger than the bridge accepts in one frame; split the
    /// update.
    TooLarge = -10,
    /// A bug in this library was caught before it could reach the caller;
    /// the message says where. The handle may still work.
    Internal = -11,
}

/// Every status, for `newton_status_name` and the tests. A function, not a
/// constant: cbindgen would write a constant into the header.
pub fn all_statuses() -> [NewtonStatus; 14] {
    [
        NewtonStatus::Ok,
        NewtonStatus::NoMessage,
        NewtonStatus::Timeout,
        NewtonStatus::NullArgument,
        NewtonStatus::InvalidArgument,
        NewtonStatus::InvalidJson,
        NewtonStatus::InvalidHandle,
        NewtonStatus::NoBridge,
        NewtonStatus::Refused,
        NewtonStatus::Closed,
        NewtonStatus::Io,
        NewtonStatus::NotSupported,
        NewtonStatus::TooLarge,
        NewtonStatus::Internal,
    ]
}

impl NewtonStatus {
    /// The C name of the value, NUL-terminated (for `newton_status_name`).
    pub(crate) fn c_name(self) -> &'static [u8] {
        match self {
            NewtonStatus::Ok => b"NEWTON_STATUS_OK\0",
            NewtonStatus::NoMessage => b"NEWTON_STATUS_NO_MESSAGE\0",
            NewtonStatus::Timeout => b"NEWTON_STATUS_TIMEOUT\0",
            NewtonStatus::NullArgument => b"NEWTON_STATUS_NULL_ARGUMENT\0",
            NewtonStatus::InvalidArgument => b"NEWTON_STATUS_INVALID_ARGUMENT\0",
            NewtonStatus::InvalidJson => b"NEWTON_STATUS_INVALID_JSON\0",
            NewtonStatus::InvalidHandle => b"NEWTON_STATUS_INVALID_HANDLE\0",
            NewtonStatus::NoBridge => b"NEWTON_STATUS_NO_BRIDGE\0",
            NewtonStatus::Refused => b"NEWTON_STATUS_REFUSED\0",
            NewtonStatus::Closed => b"NEWTON_STATUS_CLOSED\0",
            NewtonStatus::Io => b"NEWTON_STATUS_IO\0",
            NewtonStatus::NotSupported => b"NEWTON_STATUS_NOT_SUPPORTED\0",
            NewtonStatus::TooLarge => b"NEWTON_STATUS_TOO_LARGE\0",
            NewtonStatus::Internal => b"NEWTON_STATUS_INTERNAL\0",
        }
    }
}

/// A call that did not end in `NEWTON_STATUS_OK`: the status and what to
/// tell the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The status the call returns.
    pub status: NewtonStatus,
    /// What happened and what to do next (the function name is added by the
    /// caller of [`crate::ffi::call`]).
    pub message: String,
}

impl Failure {
    /// A failure with this status and message.
    pub fn new(status: NewtonStatus, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {}", self.status, self.message)
    }
}

impl From<ConnectError> for Failure {
    fn from(error: ConnectError) -> Self {
        let status = match &error {
            ConnectError::NoBridge { .. }
            | ConnectError::SocketPath(_)
            | ConnectError::WelcomeTimeout { .. } => NewtonStatus::NoBridge,
            ConnectError::Refused { .. } => NewtonStatus::Refused,
            ConnectError::Closed { .. } => NewtonStatus::Closed,
            ConnectError::Io { .. } | ConnectError::Hello(_) => NewtonStatus::Io,
        };
        Failure::new(status, error.to_string())
    }
}

impl From<SendError> for Failure {
    fn from(error: SendError) -> Self {
        let status = match &error {
            SendError::Encode(EncodeError::Frame(
                FrameError::PayloadTooLarge { .. } | FrameError::Oversize { .. },
            )) => NewtonStatus::TooLarge,
            SendError::Encode(_) => NewtonStatus::Internal,
            SendError::Io {
                closed: Some(_), ..
            }
            | SendError::ClosedDuringSync { .. } => NewtonStatus::Closed,
            SendError::Io { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::NotConnected
                ) =>
            {
                NewtonStatus::Closed
            }
            SendError::Io { .. } => NewtonStatus::Io,
            SendError::SyncTimeout { .. } => NewtonStatus::Timeout,
        };
        Failure::new(status, error.to_string())
    }
}

thread_local! {
    /// The message of this thread's last call that did not return OK.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Forgets the last message (every call starts with this).
pub(crate) fn clear_last_error() {
    // try_with: during thread teardown the slot may be gone; nothing to clear then.
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = None;
        }
    });
}

/// Keeps `message` for `newton_last_error_message`. A NUL inside (from a
/// caller's string quoted in it) becomes a space, so the whole text survives.
pub(crate) fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some(text);
        }
    });
}

/// The message kept by [`set_last_error`], or NULL; valid until this
/// thread's next call that clears or sets it.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| match slot.try_borrow() {
            Ok(slot) => slot.as_ref().map_or(std::ptr::null(), |text| text.as_ptr()),
            Err(_) => std::ptr::null(),
        })
        .unwrap_or(std::ptr::null())
}

/// The text kept by [`set_last_error`], for Rust tests.
pub fn last_error_message() -> Option<String> {
    LAST_ERROR
        .try_with(|slot| {
            slot.try_borrow().ok().and_then(|slot| {
                slot.as_ref()
                    .map(|text| text.to_string_lossy().into_owned())
            })
        })
        .ok()
        .flatten()
}
