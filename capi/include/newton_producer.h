/*
 * libnewton_producer: the Newton push-protocol sender for C and C++ toolkits.
 * docs/c-api.md explains the calls, ownership and errors; docs/protocol.md the protocol.
 *
 * Every function returning NewtonStatus reports failures as values: a status below 0 (or
 * NEWTON_STATUS_NO_MESSAGE / NEWTON_STATUS_TIMEOUT), with newton_last_error_message() saying what
 * broke and what to do next. No call aborts or unwinds into the caller.
 *
 * Ownership: strings passed in are read during the call only. Strings returned by
 * newton_producer_poll and newton_producer_wait are the caller's, to be freed with
 * newton_string_free; every other returned string is static or owned by the library (see each
 * function). A NewtonProducer is released with newton_producer_destroy.
 *
 * Threads: every function may be called from any thread; one handle may be used by several
 * threads at once.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */

#ifndef NEWTON_PRODUCER_H
#define NEWTON_PRODUCER_H

/* Generated from capi/src by cbindgen 0.29.4; do not edit: change the Rust source, then (cd capi/header && NEWTON_UPDATE_HEADER=1 cargo test) */

#include <stdbool.h>
#include <stdint.h>

/**
 * `NewtonKeyEvent.kind` of a key press (or auto-repeat).
 */
#define NEWTON_KEY_PRESS 0

/**
 * `NewtonKeyEvent.kind` of a key release.
 */
#define NEWTON_KEY_RELEASE 1

/**
 * A timeout that never runs out, for the functions that wait.
 */
#define NEWTON_WAIT_FOREVER UINT32_MAX

/**
 * What a call did. `NEWTON_STATUS_OK` (0) is success; the two positive
 * values are outcomes that are not errors (nothing to read yet, a wait
 * that ran out); negative values are errors. After any status but
 * `NEWTON_STATUS_OK`, `newton_last_error_message()` says what happened and
 * what to do next.
 */
typedef enum NewtonStatus {
  /**
   * The call did what it says.
   */
  NEWTON_STATUS_OK = 0,
  /**
   * `newton_producer_poll`: no bridge message is waiting.
   */
  NEWTON_STATUS_NO_MESSAGE = 1,
  /**
   * A wait (`newton_producer_wait`, `_sync`, `_key_wait`) ran out of time.
   */
  NEWTON_STATUS_TIMEOUT = 2,
  /**
   * A required pointer argument is NULL.
   */
  NEWTON_STATUS_NULL_ARGUMENT = -1,
  /**
   * An argument is not acceptable: a string that is not UTF-8, an empty
   * application id, an unknown key kind, a misaligned pointer, a pointer
   * `newton_string_free` did not hand out.
   */
  NEWTON_STATUS_INVALID_ARGUMENT = -2,
  /**
   * A JSON argument does not parse, or is not an accesskit 0.25
   * `TreeUpdate` (docs/schema/tree-update.schema.json).
   */
  NEWTON_STATUS_INVALID_JSON = -3,
  /**
   * The `NewtonProducer` handle is not (or no longer) a live connection:
   * never connected, zeroed, or already passed to `newton_producer_destroy`.
   */
  NEWTON_STATUS_INVALID_HANDLE = -4,
  /**
   * No bridge listens at the socket (or none answered the hello, or the
   * socket path is unknown because `XDG_RUNTIME_DIR` is unset).
   */
  NEWTON_STATUS_NO_BRIDGE = -5,
  /**
   * The bridge refused the connection (its reason is in the message).
   */
  NEWTON_STATUS_REFUSED = -6,
  /**
   * The connection to the bridge has ended; destroy the handle and
   * connect again when a bridge runs.
   */
  NEWTON_STATUS_CLOSED = -7,
  /**
   * Reading or writing the socket failed for another reason.
   */
  NEWTON_STATUS_IO = -8,
  /**
   * The bridge does not offer what was asked (keys: its welcome did not
   * list `keyEvents`).
   */
  NEWTON_STATUS_NOT_SUPPORTED = -9,
  /**
   * The message is larger than the bridge accepts in one frame; split the
   * update.
   */
  NEWTON_STATUS_TOO_LARGE = -10,
  /**
   * A bug in this library was caught before it could reach the caller;
   * the message says where. The handle may still work.
   */
  NEWTON_STATUS_INTERNAL = -11,
} NewtonStatus;

/**
 * A connection to the bridge, as C holds it: an opaque number (0 is never
 * valid, so a zero-initialized handle is safely invalid). Copy it freely;
 * it stays valid until `newton_producer_destroy`.
 */
typedef struct NewtonProducer {
  /**
   * Opaque; do not interpret or change it.
   */
  uint64_t id;
} NewtonProducer;

/**
 * A key the application received, to forward to the screen reader (values
 * are X11's, as atk-bridge forwards them; docs/protocol.md §6.1).
 */
typedef struct NewtonKeyEvent {
  /**
   * `NEWTON_KEY_PRESS` or `NEWTON_KEY_RELEASE`.
   */
  uint32_t kind;
  /**
   * X keysym (0xff09 Tab, 0xff8d KP_Enter, 0x61 a).
   */
  uint32_t keysym;
  /**
   * X keycode of the physical key (evdev code + 8).
   */
  uint16_t keycode;
  /**
   * X modifier mask (Shift 1, Lock 2, Control 4, Mod1/Alt 8, Mod2/NumLock
   * 16, Mod4/Super 64).
   */
  uint16_t modifiers;
  /**
   * Milliseconds from the input event (any fixed origin; wraps).
   */
  uint32_t timestamp_ms;
  /**
   * The text the key produces, UTF-8 ("a"), or NULL when it produces none
   * (Tab, arrows). Read during the call only.
   */
  const char *text;
} NewtonKeyEvent;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * Connects to the bridge, says hello with the application's identity and
 * waits for the bridge's welcome (at most 10 s).
 *
 * `socket_path`: the bridge's socket, or NULL for the default
 * (`$NEWTON_ATSPI_SOCKET`, else `$XDG_RUNTIME_DIR/newton-atspi/bridge.sock`).
 * `app_id`: the stable application id (desktop file id), not empty.
 * `name`: the name screen readers say for the application.
 * `pid`: the application's process id, or 0 for this process.
 * `toolkit_name`, `toolkit_version`: NULL when unknown.
 * On success `*out` receives the handle; release it with
 * `newton_producer_destroy`. On failure `*out` is left as it was.
 *
 * Fails with NEWTON_STATUS_NO_BRIDGE when no bridge listens (start
 * `newton-atspi-bridge serve`), NEWTON_STATUS_REFUSED when the bridge refused
 * the hello.
 *
 * # Safety
 * Each string is NULL or NUL-terminated and readable during the call;
 * `out` is NULL or points to a writable `NewtonProducer`.
 */
enum NewtonStatus newton_producer_connect(const char *socket_path,
                                          const char *app_id,
                                          const char *name,
                                          uint32_t pid,
                                          const char *toolkit_name,
                                          const char *toolkit_version,
                                          struct NewtonProducer *out);

/**
 * Says goodbye to the bridge (the application leaves the desktop), closes
 * the connection and frees everything the handle holds, its descriptor
 * included. The handle is invalid afterwards: every call with it (a second
 * destroy too) returns NEWTON_STATUS_INVALID_HANDLE.
 */
enum NewtonStatus newton_producer_destroy(struct NewtonProducer producer);

/**
 * Announces a surface (a window) with a number the application chooses,
 * unique on this connection, and its title (NULL: none). Its first
 * committed update must be a full tree (with `tree` set).
 *
 * # Safety
 * `title` is NULL or NUL-terminated and readable during the call.
 */
enum NewtonStatus newton_producer_create_surface(struct NewtonProducer producer,
                                                 uint32_t surface,
                                                 const char *title);

/**
 * Removes a surface (the window closed).
 */
enum NewtonStatus newton_producer_destroy_surface(struct NewtonProducer producer,
                                                  uint32_t surface);

/**
 * Buffers one tree update for the surface; nothing changes for screen
 * readers until `newton_producer_commit`. `tree_update_json` is an accesskit
 * 0.25 `TreeUpdate` in JSON (docs/protocol.md §4.3,
 * docs/schema/tree-update.schema.json), exactly what the Python producer
 * sends. It is checked here: text that is not such JSON returns
 * NEWTON_STATUS_INVALID_JSON naming the problem, and nothing is sent. Tree
 * rules (ids, children, focus) are checked by the bridge at the commit; a
 * commit it refuses comes back as a `rejected` message.
 *
 * # Safety
 * `tree_update_json` is NULL or NUL-terminated and readable during the call.
 */
enum NewtonStatus newton_producer_update(struct NewtonProducer producer,
                                         uint32_t surface,
                                         const char *tree_update_json);

/**
 * Applies the surface's buffered updates as one frame, all or nothing. If
 * `serial_out` is not NULL it receives the commit's serial, which a
 * `rejected` message names if the bridge refuses the frame.
 *
 * # Safety
 * `serial_out` is NULL or points to a writable `uint64_t`.
 */
enum NewtonStatus newton_producer_commit(struct NewtonProducer producer,
                                         uint32_t surface,
                                         uint64_t *serial_out);

/**
 * Tells the bridge which surface has keyboard focus (the active window),
 * as the window system says.
 */
enum NewtonStatus newton_producer_focus(struct NewtonProducer producer,
                                        uint32_t surface);

/**
 * Tells the bridge that no surface of the application has focus.
 */
enum NewtonStatus newton_producer_unfocus(struct NewtonProducer producer);

/**
 * Tells the bridge where the surface is on screen: its top-left corner,
 * size, and the factor from tree units to screen units (`scale`, 1.0 when
 * they are the same; must be finite and above 0). Tree bounds are relative
 * to the surface.
 */
enum NewtonStatus newton_producer_geometry(struct NewtonProducer producer,
                                           uint32_t surface,
                                           int32_t x,
                                           int32_t y,
                                           uint32_t width,
                                           uint32_t height,
                                           double scale);

/**
 * Waits until the bridge has processed everything sent before (commits
 * applied or rejected), at most `timeout_ms` milliseconds
 * (`NEWTON_WAIT_FOREVER`: no limit). If `rejected_out` is not NULL it
 * receives how many `rejected` messages the bridge sent since the previous
 * sync was answered, i.e. for what was sent since then; every message
 * (those included) stays queued for `newton_producer_poll`.
 * Returns NEWTON_STATUS_TIMEOUT when the bridge did not answer in time.
 *
 * # Safety
 * `rejected_out` is NULL or points to a writable `uint32_t`.
 */
enum NewtonStatus newton_producer_sync(struct NewtonProducer producer,
                                       uint32_t timeout_ms,
                                       uint32_t *rejected_out);

/**
 * Takes the next message from the bridge without waiting.
 *
 * NEWTON_STATUS_OK: `*message_json_out` receives it as JSON, in the shape
 * the JSON encoding uses on the wire (docs/protocol.md §4.1, §13):
 * `{"action":{"surface":1,"request":{"action":"click","targetNode":2,…}}}`,
 * `{"updatesWanted":{"surface":1}}` (push a full tree now),
 * `{"updatesUnwanted":{"surface":1}}`,
 * `{"rejected":{"surface":1,"serial":3,"rule":"…","reason":"…","resync":false}}`,
 * `{"keyHandled":{"serial":7,"consumed":true}}` (answer to
 * `newton_producer_key`), `{"error":{"reason":"…"}}` (the bridge closes the
 * connection after it). The string is the caller's: free it with
 * `newton_string_free`. Message names this library does not know may be
 * added by newer bridges; skip them.
 * NEWTON_STATUS_NO_MESSAGE: nothing waits; `*message_json_out` is NULL.
 * NEWTON_STATUS_CLOSED: the connection ended and every message was taken
 * (`*message_json_out` is NULL; the last error says why).
 *
 * # Safety
 * `message_json_out` is NULL or points to a writable `char *`.
 */
enum NewtonStatus newton_producer_poll(struct NewtonProducer producer,
                                       char **message_json_out);

/**
 * Like `newton_producer_poll`, but waits up to `timeout_ms` milliseconds
 * (`NEWTON_WAIT_FOREVER`: no limit) for a message; NEWTON_STATUS_TIMEOUT
 * when none came.
 *
 * # Safety
 * `message_json_out` is NULL or points to a writable `char *`.
 */
enum NewtonStatus newton_producer_wait(struct NewtonProducer producer,
                                       uint32_t timeout_ms,
                                       char **message_json_out);

/**
 * A descriptor for the host's main loop (poll(2), GLib's
 * `g_unix_fd_add`, Qt's `QSocketNotifier`): readable while a message waits
 * for `newton_producer_poll`, and once the connection has ended. When it
 * is readable, call `newton_producer_poll` until it returns
 * NEWTON_STATUS_NO_MESSAGE (or NEWTON_STATUS_CLOSED); never read it
 * yourself. It belongs to the handle: do not close it; remove it from the
 * main loop before `newton_producer_destroy`, which closes it.
 *
 * # Safety
 * `fd_out` is NULL or points to a writable `int`.
 */
enum NewtonStatus newton_producer_fd(struct NewtonProducer producer,
                                     int *fd_out);

/**
 * Whether the bridge wants updates for the surface now, i.e. a screen
 * reader listens. While it does not, build no trees for the surface; when
 * an `updatesWanted` message comes, push a full tree.
 *
 * # Safety
 * `wanted_out` is NULL or points to a writable `bool`.
 */
enum NewtonStatus newton_producer_is_wanted(struct NewtonProducer producer,
                                            uint32_t surface,
                                            bool *wanted_out);

/**
 * Whether the bridge forwards keys to screen readers (its welcome listed
 * `keyEvents`). When it does not, `newton_producer_key` returns
 * NEWTON_STATUS_NOT_SUPPORTED.
 *
 * # Safety
 * `accepts_out` is NULL or points to a writable `bool`.
 */
enum NewtonStatus newton_producer_accepts_keys(struct NewtonProducer producer,
                                               bool *accepts_out);

/**
 * Forwards a key the application received to the screen readers, without
 * waiting: the answer comes later from `newton_producer_poll` as
 * `{"keyHandled":{"serial":S,"consumed":B}}` with the serial written to
 * `serial_out` (if not NULL). When `consumed` is true a screen reader used
 * the key (e.g. Orca's Insert+Tab): the application must not act on it.
 *
 * # Safety
 * `event` is NULL or points to a readable `NewtonKeyEvent` (its `text` NULL
 * or NUL-terminated); `serial_out` is NULL or points to a writable
 * `uint64_t`.
 */
enum NewtonStatus newton_producer_key(struct NewtonProducer producer,
                                      const struct NewtonKeyEvent *event,
                                      uint64_t *serial_out);

/**
 * Forwards a key and waits up to `timeout_ms` milliseconds for the screen
 * readers' answer: `*consumed_out` is true when one consumed it (then the
 * application must not act on it). On NEWTON_STATUS_TIMEOUT (and every
 * other failure) treat the key as not consumed. Other messages arriving
 * meanwhile stay queued. atk-bridge waits the same way, with a timeout.
 *
 * # Safety
 * As for `newton_producer_key`; `consumed_out` is NULL or points to a
 * writable `bool`.
 */
enum NewtonStatus newton_producer_key_wait(struct NewtonProducer producer,
                                           const struct NewtonKeyEvent *event,
                                           uint32_t timeout_ms,
                                           bool *consumed_out);

/**
 * Frees a string this library returned (`newton_producer_poll`,
 * `newton_producer_wait`). NULL is accepted and does nothing. A pointer this
 * library did not hand out, or one already freed, is refused with
 * NEWTON_STATUS_INVALID_ARGUMENT and left alone (never passed to free()).
 */
enum NewtonStatus newton_string_free(char *string);

/**
 * What went wrong in this thread's last call that did not return
 * NEWTON_STATUS_OK: which function, what broke and what to do next; NULL
 * after a call that succeeded. The text belongs to the library and stays
 * valid until this thread's next call of a function that returns a
 * `NewtonStatus`; copy it to keep it. Do not free it.
 */
const char *newton_last_error_message(void);

/**
 * The name of a status value ("NEWTON_STATUS_CLOSED"), or
 * "NEWTON_STATUS_UNKNOWN" for a value that is none. Static text; do not
 * free it.
 */
const char *newton_status_name(int status);

/**
 * This library's version ("0.1.0"). Static text; do not free it.
 */
const char *newton_producer_version(void);

/**
 * The accesskit release whose JSON shape tree updates must have ("0.25.2";
 * the bridge accepts any 0.25.x). Static text; do not free it.
 */
const char *newton_producer_accesskit_version(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* NEWTON_PRODUCER_H */
