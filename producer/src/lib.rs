//! Sender side of the Newton push protocol: one application's connection to
//! `newton-atspi-bridge` over its Unix socket or any byte stream, with
//! blocking std IO and a background reader thread; plus reading, writing and
//! replaying recorded streams.
//!
//! [`Sender`] is one connection; [`ReconnectingSender`] survives bridge
//! restarts (docs/protocol.md §2.3): it records what was sent in a
//! [`ResendState`] and, after a jittered, capped [`Backoff`], connects again
//! and brings the new bridge to the same surfaces, trees and focus. Both
//! sans-IO pieces are public so other senders (a toolkit adapter) can reuse
//! them with their own IO.
//!
//! ```no_run
//! use newton_producer::Sender;
//! use newton_push_protocol::{AppInfo, Encoding, Hello, SurfaceId};
//! # fn tree() -> accesskit::TreeUpdate { unimplemented!() }
//! let app = AppInfo { app_id: "org.example.App".into(), name: "App".into(), ..Default::default() };
//! let hello = Hello::new(Encoding::Postcard, app);
//! let sender = Sender::connect_default(hello)?;
//! let surface = SurfaceId(1);
//! sender.create_surface(surface, Some("Main window"))?;
//! sender.update(surface, tree())?;
//! sender.commit(surface)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backoff;
mod error;
mod reader;
pub mod reconnect;
pub mod recording;
pub mod replay;
pub mod resend;
mod sender;

pub use backoff::Backoff;
pub use error::{ConnectError, RecvError, SendError};
pub use reconnect::{ConnectionEvent, ReconnectOptions, ReconnectingSender};
pub use recording::{
    load_recording, parse_recording, write_recorded_line, write_recording, RecordingError,
};
pub use replay::{
    replay_file, replay_into, replay_lines, Rejection, ReplayError, ReplayOptions, ReplaySummary,
    ReplayTarget, Timing,
};
pub use resend::ResendState;
pub use sender::{Sender, DEFAULT_WELCOME_TIMEOUT};
