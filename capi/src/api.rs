//! The exported C functions. Each is a thin shell: check the arguments
//! (crate::ffi), find the handle (crate::handles), call the safe
//! [`crate::producer::Producer`], report a status. Every body runs inside
//! [`crate::ffi::call`], which catches panics.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use newton_push_protocol::{Geometry, KeyEvent};

use crate::ffi::{call, give_string, optional_str, required_str, take_string, Out};
use crate::handles::{self, NewtonProducer};
use crate::producer::{key_kind, message_json, Identity, Producer};
use crate::status::{all_statuses, last_error_ptr, Failure, NewtonStatus};

/// `NewtonKeyEvent.kind` of a key press (or auto-repeat).
pub const NEWTON_KEY_PRESS: u32 = 0;
/// `NewtonKeyEvent.kind` of a key release.
pub const NEWTON_KEY_RELEASE: u32 = 1;
/// A timeout that never runs out, for the functions that wait.
pub const NEWTON_WAIT_FOREVER: u32 = u32::MAX;

/// A key the application received, to forward to the screen reader (values
/// are X11's, as atk-bridge forwards them; docs/protocol.md §6.1).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NewtonKeyEvent {
    /// `NEWTON_KEY_PRESS` or `NEWTON_KEY_RELEASE`.
    pub kind: u32,
    /// X keysym (0xff09 Tab, 0xff8d KP_Enter, 0x61 a).
    pub keysym: u32,
    /// X keycode of the physical key (evdev code + 8).
    pub keycode: u16,
    /// X modifier mask (Shift 1, Lock 2, Control 4, Mod1/Alt 8, Mod2/NumLock
    /// 16, Mod4/Super 64).
    pub modifiers: u16,
    /// Milliseconds from the input event (any fixed origin; wraps).
    pub timestamp_ms: u32,
    /// The text the key produces, UTF-8 ("a"), or NULL when it produces none
    /// (Tab, arrows). Read during the call only.
    pub text: *const c_char,
}

fn timeout(ms: u32) -> Duration {
    if ms == NEWTON_WAIT_FOREVER {
        Duration::MAX
    } else {
        Duration::from_millis(u64::from(ms))
    }
}

fn ok() -> Result<NewtonStatus, Failure> {
    Ok(NewtonStatus::Ok)
}

/// Connects to the bridge, says hello with the application's identity and
/// waits for the bridge's welcome (at most 10 s).
///
/// `socket_path`: the bridge's socket, or NULL for the default
/// (`$NEWTON_ATSPI_SOCKET`, else `$XDG_RUNTIME_DIR/newton-atspi/bridge.sock`).
/// `app_id`: the stable application id (desktop file id), not empty.
/// `name`: the name screen readers say for the application.
/// `pid`: the application's process id, or 0 for this process.
/// `toolkit_name`, `toolkit_version`: NULL when unknown.
/// On success `*out` receives the handle; release it with
/// `newton_producer_destroy`. On failure `*out` is left as it was.
///
/// Fails with NEWTON_STATUS_NO_BRIDGE when no bridge listens (start
/// `newton-atspi-bridge serve`), NEWTON_STATUS_REFUSED when the bridge refused
/// the hello.
///
/// # Safety
/// Each string is NULL or NUL-terminated and readable during the call;
/// `out` is NULL or points to a writable `NewtonProducer`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_connect(
    socket_path: *const c_char,
    app_id: *const c_char,
    name: *const c_char,
    pid: u32,
    toolkit_name: *const c_char,
    toolkit_version: *const c_char,
    out: *mut NewtonProducer,
) -> NewtonStatus {
    call("newton_producer_connect", || {
        let out = Out::new(out, "out")?;
        // SAFETY (each string): the caller's contract above.
        let socket = unsafe { optional_str(socket_path, "socket_path") }?;
        let identity = Identity {
            app_id: unsafe { required_str(app_id, "app_id") }?.to_owned(),
            name: unsafe { required_str(name, "name") }?.to_owned(),
            pid: (pid != 0).then_some(pid),
            toolkit_name: unsafe { optional_str(toolkit_name, "toolkit_name") }?.map(str::to_owned),
            toolkit_version: unsafe { optional_str(toolkit_version, "toolkit_version") }?
                .map(str::to_owned),
        };
        let producer = Producer::connect(socket.map(PathBuf::from), identity)?;
        let handle = handles::insert(producer);
        // SAFETY: `out` was checked by Out::new; writable by the contract.
        unsafe { out.write(handle) };
        ok()
    })
}

/// Says goodbye to the bridge (the application leaves the desktop), closes
/// the connection and frees everything the handle holds, its descriptor
/// included. The handle is invalid afterwards: every call with it (a second
/// destroy too) returns NEWTON_STATUS_INVALID_HANDLE.
#[no_mangle]
pub extern "C" fn newton_producer_destroy(producer: NewtonProducer) -> NewtonStatus {
    call("newton_producer_destroy", || {
        let producer = handles::remove(producer)?;
        producer.close();
        ok()
    })
}

/// Announces a surface (a window) with a number the application chooses,
/// unique on this connection, and its title (NULL: none). Its first
/// committed update must be a full tree (with `tree` set).
///
/// # Safety
/// `title` is NULL or NUL-terminated and readable during the call.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_create_surface(
    producer: NewtonProducer,
    surface: u32,
    title: *const c_char,
) -> NewtonStatus {
    call("newton_producer_create_surface", || {
        // SAFETY: the caller's contract above.
        let title = unsafe { optional_str(title, "title") }?;
        handles::get(producer)?.create_surface(surface, title)?;
        ok()
    })
}

/// Removes a surface (the window closed).
#[no_mangle]
pub extern "C" fn newton_producer_destroy_surface(
    producer: NewtonProducer,
    surface: u32,
) -> NewtonStatus {
    call("newton_producer_destroy_surface", || {
        handles::get(producer)?.destroy_surface(surface)?;
        ok()
    })
}

/// Buffers one tree update for the surface; nothing changes for screen
/// readers until `newton_producer_commit`. `tree_update_json` is an accesskit
/// 0.25 `TreeUpdate` in JSON (docs/protocol.md §4.3,
/// docs/schema/tree-update.schema.json), exactly what the Python producer
/// sends. It is checked here: text that is not such JSON returns
/// NEWTON_STATUS_INVALID_JSON naming the problem, and nothing is sent. Tree
/// rules (ids, children, focus) are checked by the bridge at the commit; a
/// commit it refuses comes back as a `rejected` message.
///
/// # Safety
/// `tree_update_json` is NULL or NUL-terminated and readable during the call.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_update(
    producer: NewtonProducer,
    surface: u32,
    tree_update_json: *const c_char,
) -> NewtonStatus {
    call("newton_producer_update", || {
        // SAFETY: the caller's contract above.
        let json = unsafe { required_str(tree_update_json, "tree_update_json") }?;
        handles::get(producer)?.update_json(surface, json)?;
        ok()
    })
}

/// Applies the surface's buffered updates as one frame, all or nothing. If
/// `serial_out` is not NULL it receives the commit's serial, which a
/// `rejected` message names if the bridge refuses the frame.
///
/// # Safety
/// `serial_out` is NULL or points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_commit(
    producer: NewtonProducer,
    surface: u32,
    serial_out: *mut u64,
) -> NewtonStatus {
    call("newton_producer_commit", || {
        let out = Out::optional(serial_out, "serial_out")?;
        let serial = handles::get(producer)?.commit(surface)?;
        if let Some(out) = out {
            // SAFETY: checked by Out::optional; writable by the contract.
            unsafe { out.write(serial) };
        }
        ok()
    })
}

/// Tells the bridge which surface has keyboard focus (the active window),
/// as the window system says.
#[no_mangle]
pub extern "C" fn newton_producer_focus(producer: NewtonProducer, surface: u32) -> NewtonStatus {
    call("newton_producer_focus", || {
        handles::get(producer)?.focus(Some(surface))?;
        ok()
    })
}

/// Tells the bridge that no surface of the application has focus.
#[no_mangle]
pub extern "C" fn newton_producer_unfocus(producer: NewtonProducer) -> NewtonStatus {
    call("newton_producer_unfocus", || {
        handles::get(producer)?.focus(None)?;
        ok()
    })
}

/// Tells the bridge where the surface is on screen: its top-left corner,
/// size, and the factor from tree units to screen units (`scale`, 1.0 when
/// they are the same; must be finite and above 0). Tree bounds are relative
/// to the surface.
#[no_mangle]
pub extern "C" fn newton_producer_geometry(
    producer: NewtonProducer,
    surface: u32,
    x: i32,
    y: i32,
    width: u32,
    height: u32,
    scale: f64,
) -> NewtonStatus {
    call("newton_producer_geometry", || {
        let geometry = Geometry {
            x,
            y,
            width,
            height,
            scale,
        };
        handles::get(producer)?.geometry(surface, geometry)?;
        ok()
    })
}

/// Waits until the bridge has processed everything sent before (commits
/// applied or rejected), at most `timeout_ms` milliseconds
/// (`NEWTON_WAIT_FOREVER`: no limit). If `rejected_out` is not NULL it
/// receives how many `rejected` messages the bridge sent since the previous
/// sync was answered, i.e. for what was sent since then; every message
/// (those included) stays queued for `newton_producer_poll`.
/// Returns NEWTON_STATUS_TIMEOUT when the bridge did not answer in time.
///
/// # Safety
/// `rejected_out` is NULL or points to a writable `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_sync(
    producer: NewtonProducer,
    timeout_ms: u32,
    rejected_out: *mut u32,
) -> NewtonStatus {
    call("newton_producer_sync", || {
        let out = Out::optional(rejected_out, "rejected_out")?;
        let rejected = handles::get(producer)?.sync(timeout(timeout_ms))?;
        if let Some(out) = out {
            // SAFETY: checked by Out::optional; writable by the contract.
            unsafe { out.write(u32::try_from(rejected).unwrap_or(u32::MAX)) };
        }
        ok()
    })
}

/// Takes the next message from the bridge without waiting.
///
/// NEWTON_STATUS_OK: `*message_json_out` receives it as JSON, in the shape
/// the JSON encoding uses on the wire (docs/protocol.md §4.1, §13):
/// `{"action":{"surface":1,"request":{"action":"click","targetNode":2,…}}}`,
/// `{"updatesWanted":{"surface":1}}` (push a full tree now),
/// `{"updatesUnwanted":{"surface":1}}`,
/// `{"rejected":{"surface":1,"serial":3,"rule":"…","reason":"…","resync":false}}`,
/// `{"keyHandled":{"serial":7,"consumed":true}}` (answer to
/// `newton_producer_key`), `{"error":{"reason":"…"}}` (the bridge closes the
/// connection after it). The string is the caller's: free it with
/// `newton_string_free`. Message names this library does not know may be
/// added by newer bridges; skip them.
/// NEWTON_STATUS_NO_MESSAGE: nothing waits; `*message_json_out` is NULL.
/// NEWTON_STATUS_CLOSED: the connection ended and every message was taken
/// (`*message_json_out` is NULL; the last error says why).
///
/// # Safety
/// `message_json_out` is NULL or points to a writable `char *`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_poll(
    producer: NewtonProducer,
    message_json_out: *mut *mut c_char,
) -> NewtonStatus {
    call("newton_producer_poll", || {
        let out = Out::new(message_json_out, "message_json_out")?;
        let polled = handles::get(producer).and_then(|producer| producer.poll());
        // SAFETY: `out` was checked by Out::new and is writable by the
        // contract above.
        unsafe { deliver(out, polled, "no bridge message is waiting") }
    })
}

/// Like `newton_producer_poll`, but waits up to `timeout_ms` milliseconds
/// (`NEWTON_WAIT_FOREVER`: no limit) for a message; NEWTON_STATUS_TIMEOUT
/// when none came.
///
/// # Safety
/// `message_json_out` is NULL or points to a writable `char *`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_wait(
    producer: NewtonProducer,
    timeout_ms: u32,
    message_json_out: *mut *mut c_char,
) -> NewtonStatus {
    call("newton_producer_wait", || {
        let out = Out::new(message_json_out, "message_json_out")?;
        let polled = handles::get(producer).and_then(|producer| producer.wait(timeout(timeout_ms)));
        // SAFETY: `out` was checked by Out::new and is writable by the
        // contract above.
        match unsafe { deliver(out, polled, "no bridge message came in time") } {
            Err(failure) if failure.status == NewtonStatus::NoMessage => Err(Failure::new(
                NewtonStatus::Timeout,
                format!("no bridge message came within {timeout_ms} ms"),
            )),
            other => other,
        }
    })
}

/// Writes a polled message (or NULL: the out parameter never keeps a stale
/// pointer the caller might free twice) to `out` and picks the status.
///
/// # Safety
/// `out` points to a writable `char *` (Out::write's contract).
unsafe fn deliver(
    out: Out<*mut c_char>,
    polled: Result<Option<newton_push_protocol::BridgeMessage>, Failure>,
    none: &str,
) -> Result<NewtonStatus, Failure> {
    match polled {
        Ok(Some(message)) => {
            let json = message_json(&message)?;
            // SAFETY: this function's contract.
            unsafe { out.write(give_string(json)) };
            ok()
        }
        Ok(None) => {
            // SAFETY: as above.
            unsafe { out.write(std::ptr::null_mut()) };
            Err(Failure::new(NewtonStatus::NoMessage, none))
        }
        Err(failure) => {
            // SAFETY: as above.
            unsafe { out.write(std::ptr::null_mut()) };
            Err(failure)
        }
    }
}

/// A descriptor for the host's main loop (poll(2), GLib's
/// `g_unix_fd_add`, Qt's `QSocketNotifier`): readable while a message waits
/// for `newton_producer_poll`, and once the connection has ended. When it
/// is readable, call `newton_producer_poll` until it returns
/// NEWTON_STATUS_NO_MESSAGE (or NEWTON_STATUS_CLOSED); never read it
/// yourself. It belongs to the handle: do not close it; remove it from the
/// main loop before `newton_producer_destroy`, which closes it.
///
/// # Safety
/// `fd_out` is NULL or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_fd(
    producer: NewtonProducer,
    fd_out: *mut c_int,
) -> NewtonStatus {
    call("newton_producer_fd", || {
        let out = Out::new(fd_out, "fd_out")?;
        let fd = handles::get(producer)?.fd();
        // SAFETY: checked by Out::new; writable by the contract.
        unsafe { out.write(fd) };
        ok()
    })
}

/// Whether the bridge wants updates for the surface now, i.e. a screen
/// reader listens. While it does not, build no trees for the surface; when
/// an `updatesWanted` message comes, push a full tree.
///
/// # Safety
/// `wanted_out` is NULL or points to a writable `bool`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_is_wanted(
    producer: NewtonProducer,
    surface: u32,
    wanted_out: *mut bool,
) -> NewtonStatus {
    call("newton_producer_is_wanted", || {
        let out = Out::new(wanted_out, "wanted_out")?;
        let wanted = handles::get(producer)?.is_wanted(surface);
        // SAFETY: checked by Out::new; writable by the contract.
        unsafe { out.write(wanted) };
        ok()
    })
}

/// Whether the bridge forwards keys to screen readers (its welcome listed
/// `keyEvents`). When it does not, `newton_producer_key` returns
/// NEWTON_STATUS_NOT_SUPPORTED.
///
/// # Safety
/// `accepts_out` is NULL or points to a writable `bool`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_accepts_keys(
    producer: NewtonProducer,
    accepts_out: *mut bool,
) -> NewtonStatus {
    call("newton_producer_accepts_keys", || {
        let out = Out::new(accepts_out, "accepts_out")?;
        let accepts = handles::get(producer)?.accepts_keys();
        // SAFETY: checked by Out::new; writable by the contract.
        unsafe { out.write(accepts) };
        ok()
    })
}

/// Reads a `NewtonKeyEvent` from C.
///
/// # Safety
/// `event` is NULL or points to a readable `NewtonKeyEvent` whose `text` is
/// NULL or NUL-terminated, all readable during the call.
unsafe fn read_key(event: *const NewtonKeyEvent) -> Result<KeyEvent, Failure> {
    if event.is_null() {
        return Err(Failure::new(
            NewtonStatus::NullArgument,
            "`event` is NULL; pass the address of a NewtonKeyEvent",
        ));
    }
    if !event.is_aligned() {
        return Err(Failure::new(
            NewtonStatus::InvalidArgument,
            "`event` is not aligned for a NewtonKeyEvent",
        ));
    }
    // SAFETY: non-null, aligned, readable by the contract; every bit pattern
    // is a valid NewtonKeyEvent (integers and a pointer), so the copy is sound
    // whatever C stored.
    let event = unsafe { event.read() };
    // SAFETY: `text` is NULL or NUL-terminated by the contract.
    let text = unsafe { optional_str(event.text, "event->text") }?;
    Ok(KeyEvent {
        kind: key_kind(event.kind)?,
        keysym: event.keysym,
        keycode: event.keycode,
        modifiers: event.modifiers,
        text: text.map(str::to_owned),
        timestamp_ms: event.timestamp_ms,
    })
}

/// Forwards a key the application received to the screen readers, without
/// waiting: the answer comes later from `newton_producer_poll` as
/// `{"keyHandled":{"serial":S,"consumed":B}}` with the serial written to
/// `serial_out` (if not NULL). When `consumed` is true a screen reader used
/// the key (e.g. Orca's Insert+Tab): the application must not act on it.
///
/// # Safety
/// `event` is NULL or points to a readable `NewtonKeyEvent` (its `text` NULL
/// or NUL-terminated); `serial_out` is NULL or points to a writable
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_key(
    producer: NewtonProducer,
    event: *const NewtonKeyEvent,
    serial_out: *mut u64,
) -> NewtonStatus {
    call("newton_producer_key", || {
        let out = Out::optional(serial_out, "serial_out")?;
        // SAFETY: the caller's contract above.
        let event = unsafe { read_key(event) }?;
        let serial = handles::get(producer)?.key(event)?;
        if let Some(out) = out {
            // SAFETY: checked by Out::optional; writable by the contract.
            unsafe { out.write(serial) };
        }
        ok()
    })
}

/// Forwards a key and waits up to `timeout_ms` milliseconds for the screen
/// readers' answer: `*consumed_out` is true when one consumed it (then the
/// application must not act on it). On NEWTON_STATUS_TIMEOUT (and every
/// other failure) treat the key as not consumed. Other messages arriving
/// meanwhile stay queued. atk-bridge waits the same way, with a timeout.
///
/// # Safety
/// As for `newton_producer_key`; `consumed_out` is NULL or points to a
/// writable `bool`.
#[no_mangle]
pub unsafe extern "C" fn newton_producer_key_wait(
    producer: NewtonProducer,
    event: *const NewtonKeyEvent,
    timeout_ms: u32,
    consumed_out: *mut bool,
) -> NewtonStatus {
    call("newton_producer_key_wait", || {
        let out = Out::new(consumed_out, "consumed_out")?;
        // SAFETY: the caller's contract above.
        let event = unsafe { read_key(event) }?;
        let consumed = handles::get(producer)?.key_wait(event, timeout(timeout_ms))?;
        // SAFETY: checked by Out::new; writable by the contract.
        unsafe { out.write(consumed) };
        ok()
    })
}

/// Frees a string this library returned (`newton_producer_poll`,
/// `newton_producer_wait`). NULL is accepted and does nothing. A pointer this
/// library did not hand out, or one already freed, is refused with
/// NEWTON_STATUS_INVALID_ARGUMENT and left alone (never passed to free()).
#[no_mangle]
pub extern "C" fn newton_string_free(string: *mut c_char) -> NewtonStatus {
    call("newton_string_free", || {
        take_string(string)?;
        ok()
    })
}

/// What went wrong in this thread's last call that did not return
/// NEWTON_STATUS_OK: which function, what broke and what to do next; NULL
/// after a call that succeeded. The text belongs to the library and stays
/// valid until this thread's next call of a function that returns a
/// `NewtonStatus`; copy it to keep it. Do not free it.
#[no_mangle]
pub extern "C" fn newton_last_error_message() -> *const c_char {
    last_error_ptr()
}

/// The name of a status value ("NEWTON_STATUS_CLOSED"), or
/// "NEWTON_STATUS_UNKNOWN" for a value that is none. Static text; do not
/// free it.
#[no_mangle]
pub extern "C" fn newton_status_name(status: c_int) -> *const c_char {
    let name = all_statuses()
        .into_iter()
        .find(|known| *known as c_int == status)
        .map_or(&b"NEWTON_STATUS_UNKNOWN\0"[..], |known| known.c_name());
    name.as_ptr().cast()
}

/// This library's version ("0.1.0"). Static text; do not free it.
#[no_mangle]
pub extern "C" fn newton_producer_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The accesskit release whose JSON shape tree updates must have ("0.25.2";
/// the bridge accepts any 0.25.x). Static text; do not free it.
#[no_mangle]
pub extern "C" fn newton_producer_accesskit_version() -> *const c_char {
    static VERSION: OnceLock<Vec<u8>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            let mut bytes = newton_push_protocol::ACCESSKIT_VERSION.as_bytes().to_vec();
            bytes.push(0);
            bytes
        })
        .as_ptr()
        .cast()
}
