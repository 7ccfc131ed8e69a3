//! The Newton push protocol, version 1: how a sender (a compositor forwarding
//! an application's pushed trees, a test producer, a replay file or a remote
//! stream) talks to the bridge.
//!
//! This crate is sans-IO: it defines the messages, the length-prefixed
//! framing, and state machines that are fed bytes and return messages.
//! Sockets live in the bridge and the producer library. The normative
//! description is `docs/protocol.md`.
//!
//! * [`frame`]: `u32` little-endian length prefix + payload.
//! * [`codec`]: payloads in JSON or postcard.
//! * [`ReceiverSession`]: the bridge's end (bytes in, [`ReceiverEvent`]s out).
//! * [`SenderSession`]: the sender's end.
//! * [`default_socket_path`]: where the bridge listens.
//! * [`text`]: producer strings escaped and bounded for logs and error frames.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod codec;
pub mod frame;
mod hello;
pub mod messages;
pub mod receiver;
#[cfg(feature = "schema")]
pub mod schema;
pub mod sender;
pub mod socket_path;
pub mod text;

pub use codec::{
    decode_bridge_message, decode_hello, decode_sender_message, encode_bridge_payload,
    encode_hello, encode_sender_message, CodecError,
};
pub use frame::{encode_frame, FrameDecoder, FrameError};
pub use messages::*;
pub use receiver::{
    EncodeError, ProtocolError, ReceiverConfig, ReceiverEvent, ReceiverSession, SurfaceError,
    SurfaceRule, DEFAULT_FRAME_BURST, DEFAULT_HELLO_TIMEOUT, DEFAULT_MAX_FRAMES_PER_SECOND,
    DEFAULT_MAX_HELLO_BYTES, DEFAULT_MAX_PENDING_BYTES_PER_SURFACE,
    DEFAULT_MAX_PENDING_NODES_PER_SURFACE, DEFAULT_MAX_QUEUED_BYTES, DEFAULT_MAX_SURFACES,
    DEFAULT_MAX_UNREAD_REPLY_BYTES,
};
pub use sender::{variant_name, BridgeStreamError, SenderSession};
pub use socket_path::{
    default_socket_path, socket_path_from_env, socket_path_in, SocketPathError, SOCKET_DIR_NAME,
    SOCKET_ENV_VAR, SOCKET_FILE_NAME,
};
