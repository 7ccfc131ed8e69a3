//! Sender side of the Newton push protocol: one application's connection to
//! `newton-atspi-bridge` over its Unix socket or any byte stream, with
//! blocking std IO and a background reader thread; plus reading, writing and
//! replaying recorded streams.
//!
//! ```no_run
//! use newton_producer::Sender;
//! use newton_push_protocol::{AppInfo, Encoding, Hello, SurfaceId, PROTOCOL_VERSION};
//! # fn tree() -> accesskit::TreeUpdate { unimplemented!() }
//! let hello = Hello {
//!     protocol: PROTOCOL_VERSION,
//!     encoding: Encoding::Postcard,
//!     app: AppInfo { app_id: "org.example.App".into(), name: "App".into(), ..Default::default() },
//! };
//! let sender = Sender::connect_default(hello)?;
//! let surface = SurfaceId(1);
//! sender.create_surface(surface, Some("Main window"))?;
//! sender.update(surface, tree())?;
//! sender.commit(surface)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod reader;
pub mod recording;
pub mod replay;
mod sender;

pub use error::{ConnectError, RecvError, SendError};
pub use recording::{
    load_recording, parse_recording, write_recorded_line, write_recording, RecordingError,
};
pub use replay::{
    replay_file, replay_into, replay_lines, Rejection, ReplayError, ReplayOptions, ReplaySummary,
    Timing,
};
pub use sender::{Sender, DEFAULT_WELCOME_TIMEOUT};
