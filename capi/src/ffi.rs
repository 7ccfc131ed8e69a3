//! The boundary with C: the guard every exported function runs its body in,
//! and the checks on what a C caller passes (pointers, strings, out
//! parameters) and on what it hands back (strings to free).
//!
//! This module and `api.rs` are the only ones with unsafe code: reading a
//! caller's `const char *`, writing through its out pointers and taking back
//! a string this library allocated. What C can break and Rust cannot check
//! (a dangling or unterminated string) is documented as each function's
//! Safety section in the header; everything else is checked here and
//! reported as a status.

#![allow(unsafe_code)]

use std::collections::BTreeSet;
use std::ffi::{c_char, CStr, CString};
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard};

use crate::status::{clear_last_error, set_last_error, Failure, NewtonStatus};

/// Runs one exported function's body: clears the thread's last error, turns
/// a [`Failure`] into its status and message (prefixed with `function`), and
/// catches any panic, so that no unwinding reaches C (which would abort the
/// host). A panic leaves the library's state usable: every lock it takes
/// recovers from poisoning and no guarded state is left half-updated.
pub(crate) fn call(
    function: &'static str,
    body: impl FnOnce() -> Result<NewtonStatus, Failure>,
) -> NewtonStatus {
    clear_last_error();
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => status,
        Ok(Err(failure)) => {
            set_last_error(&format!("{function}: {}", failure.message));
            failure.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            set_last_error(&format!(
                "{function}: internal error in libnewton_producer (a bug; please report it with \
                 this message): {what}"
            ));
            NewtonStatus::Internal
        }
    }
}

/// A non-NUL-terminated or freed string cannot be detected; NULL, invalid
/// UTF-8 and misalignment (none for bytes) can.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid and
/// unchanged for the returned lifetime.
pub(crate) unsafe fn required_str<'a>(ptr: *const c_char, name: &str) -> Result<&'a str, Failure> {
    // SAFETY: forwarded from the caller's contract.
    match unsafe { optional_str(ptr, name) }? {
        Some(text) => Ok(text),
        None => Err(Failure::new(
            NewtonStatus::NullArgument,
            format!("`{name}` is NULL; pass a NUL-terminated UTF-8 string"),
        )),
    }
}

/// Like [`required_str`], NULL meaning "not given".
///
/// # Safety
/// As for [`required_str`].
pub(crate) unsafe fn optional_str<'a>(
    ptr: *const c_char,
    name: &str,
) -> Result<Option<&'a str>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null, and the caller guarantees a NUL-terminated string
    // valid for 'a.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str().map(Some).map_err(|error| {
        Failure::new(
            NewtonStatus::InvalidArgument,
            format!(
                "`{name}` is not valid UTF-8 ({error}); pass UTF-8 text (convert with \
                 g_locale_to_utf8, QString::toUtf8 or iconv)"
            ),
        )
    })
}

/// A checked out parameter: non-null and aligned, written only when the call
/// succeeds. Checked before the call does anything, so a bad out pointer
/// never leaves an effect the caller cannot learn about (a connection it
/// has no handle for).
pub(crate) struct Out<T> {
    ptr: NonNull<T>,
}

impl<T> Out<T> {
    /// Checks `ptr` (named `name` in the message).
    pub(crate) fn new(ptr: *mut T, name: &str) -> Result<Self, Failure> {
        let Some(ptr) = NonNull::new(ptr) else {
            return Err(Failure::new(
                NewtonStatus::NullArgument,
                format!("`{name}` is NULL; pass the address of a variable to receive the result"),
            ));
        };
        if !ptr.as_ptr().is_aligned() {
            return Err(Failure::new(
                NewtonStatus::InvalidArgument,
                format!(
                    "`{name}` is not aligned for its type ({} bytes); pass the address of a \
                     variable of that type",
                    std::mem::align_of::<T>()
                ),
            ));
        }
        Ok(Self { ptr })
    }

    /// [`Out::new`] for an optional out parameter (NULL: not wanted).
    pub(crate) fn optional(ptr: *mut T, name: &str) -> Result<Option<Self>, Failure> {
        if ptr.is_null() {
            Ok(None)
        } else {
            Self::new(ptr, name).map(Some)
        }
    }

    /// Stores the result.
    ///
    /// # Safety
    /// The pointer given to [`Out::new`] points to writable memory for one
    /// `T` (what the header asks of every out parameter).
    pub(crate) unsafe fn write(self, value: T) {
        // SAFETY: non-null and aligned (checked in `new`), writable by the
        // caller's contract; `write` does not read or drop the old value,
        // which may be uninitialized.
        unsafe { self.ptr.as_ptr().write(value) }
    }
}

/// Addresses of the strings handed to C and not yet freed, so that
/// `newton_string_free` refuses a pointer it did not hand out (a double
/// free, a string from elsewhere) instead of corrupting the heap.
static STRINGS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

fn strings() -> MutexGuard<'static, BTreeSet<usize>> {
    STRINGS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Moves `text` to C: a NUL-terminated copy the caller frees with
/// `newton_string_free`. JSON from serde_json never holds a NUL (it escapes
/// control characters); any other NUL becomes a space.
pub(crate) fn give_string(text: String) -> *mut c_char {
    let text = CString::new(text)
        .unwrap_or_else(|error| {
            let bytes = error.into_vec();
            CString::new(
                bytes
                    .into_iter()
                    .map(|b| if b == 0 { b' ' } else { b })
                    .collect::<Vec<_>>(),
            )
            .unwrap_or_default()
        })
        .into_raw();
    strings().insert(text as usize);
    text
}

/// Takes back a string [`give_string`] handed out; refuses any other
/// pointer.
pub(crate) fn take_string(ptr: *mut c_char) -> Result<(), Failure> {
    if ptr.is_null() {
        return Ok(());
    }
    if !strings().remove(&(ptr as usize)) {
        return Err(Failure::new(
            NewtonStatus::InvalidArgument,
            "the pointer is not a string this library handed out, or it was freed already; \
             free each returned string exactly once, and strings from elsewhere with their own \
             free function",
        ));
    }
    // SAFETY: the address came from CString::into_raw in give_string and was
    // still registered, so it has not been taken back before (it was just
    // removed under the lock).
    drop(unsafe { CString::from_raw(ptr) });
    Ok(())
}

/// How many strings C holds now (for the tests' leak checks).
pub fn strings_outstanding() -> usize {
    strings().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::last_error_message;

    #[test]
    fn a_panic_becomes_an_internal_status_with_the_function_and_its_message() {
        let status = call("newton_test", || panic!("boom at {}", 42));
        assert_eq!(status, NewtonStatus::Internal);
        let message = last_error_message().unwrap_or_default();
        assert!(
            message.starts_with("newton_test: internal error"),
            "{message}"
        );
        assert!(message.contains("boom at 42"), "{message}");
        // The next call clears it.
        assert_eq!(
            call("newton_test", || Ok(NewtonStatus::Ok)),
            NewtonStatus::Ok
        );
        assert_eq!(last_error_message(), None);
    }

    #[test]
    fn a_failure_keeps_its_status_and_a_nul_in_its_message_becomes_a_space() {
        let status = call("newton_test", || {
            Err(Failure::new(NewtonStatus::InvalidJson, "bad\0json"))
        });
        assert_eq!(status, NewtonStatus::InvalidJson);
        assert_eq!(
            last_error_message().as_deref(),
            Some("newton_test: bad json")
        );
    }

    #[test]
    fn strings_are_taken_back_once_and_only_if_handed_out() {
        let before = strings_outstanding();
        let text = give_string("{\"a\":1}".into());
        assert_eq!(strings_outstanding(), before + 1);
        assert_eq!(take_string(text), Ok(()));
        assert_eq!(strings_outstanding(), before);
        // Twice, and a pointer never handed out: refused, nothing freed.
        let again = take_string(text).map_err(|failure| failure.status);
        assert_eq!(again, Err(NewtonStatus::InvalidArgument));
        let mut foreign = *b"x\0";
        let foreign = take_string(foreign.as_mut_ptr().cast()).map_err(|f| f.status);
        assert_eq!(foreign, Err(NewtonStatus::InvalidArgument));
        assert_eq!(take_string(std::ptr::null_mut()), Ok(()));
    }

    #[test]
    fn out_parameters_refuse_null_and_misalignment() {
        let null = Out::<u64>::new(std::ptr::null_mut(), "x").map(|_| ());
        assert_eq!(null.map_err(|f| f.status), Err(NewtonStatus::NullArgument));
        let mut words = [0u64; 2];
        let misaligned = words
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_add(1)
            .cast::<u64>();
        let misaligned = Out::new(misaligned, "x").map(|_| ());
        assert_eq!(
            misaligned.map_err(|f| f.status),
            Err(NewtonStatus::InvalidArgument)
        );
        assert!(matches!(
            Out::<u64>::optional(std::ptr::null_mut(), "x"),
            Ok(None)
        ));
    }
}
