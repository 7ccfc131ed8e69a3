//! Replaying a recorded stream into a bridge.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use newton_push_protocol::{
    BridgeMessage, Encoding, Hello, RecordedLine, SenderMessage, SurfaceId,
};
use thiserror::Error;

use crate::error::{ConnectError, RecvError, SendError};
use crate::reconnect::{ConnectionEvent, ReconnectingSender};
use crate::recording::{load_recording, RecordingError};
use crate::sender::Sender;

/// What a replay sends through: a [`Sender`], or a [`ReconnectingSender`]
/// so the replayed application comes back after a bridge restart.
pub trait ReplayTarget {
    /// Sends one recorded message as is.
    fn send_message(&self, message: &SenderMessage) -> Result<(), SendError>;
    /// `Sync` and wait for `SyncDone`.
    fn sync_with_bridge(&self, timeout: Duration) -> Result<u64, SendError>;
    /// The next bridge message already received, if any.
    fn next_bridge_message(&self) -> Result<Option<BridgeMessage>, RecvError>;
}

impl ReplayTarget for Sender {
    fn send_message(&self, message: &SenderMessage) -> Result<(), SendError> {
        self.send(message)
    }
    fn sync_with_bridge(&self, timeout: Duration) -> Result<u64, SendError> {
        self.sync(timeout)
    }
    fn next_bridge_message(&self) -> Result<Option<BridgeMessage>, RecvError> {
        self.try_recv()
    }
}

impl ReplayTarget for ReconnectingSender {
    fn send_message(&self, message: &SenderMessage) -> Result<(), SendError> {
        self.send(message)
    }
    fn sync_with_bridge(&self, timeout: Duration) -> Result<u64, SendError> {
        self.sync(timeout)
    }
    /// Bridge messages only: connection changes are the reconnecting
    /// sender's own business during a replay.
    fn next_bridge_message(&self) -> Result<Option<BridgeMessage>, RecvError> {
        while let Some(event) = self.try_recv()? {
            if let ConnectionEvent::Message(message) = event {
                return Ok(Some(message));
            }
        }
        Ok(None)
    }
}

/// How fast to replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Timing {
    /// Sleep until each line's `at_ms` (relative to the replay's start).
    Recorded,
    /// Send everything at once.
    #[default]
    AsFastAsPossible,
}

/// Replay settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ReplayOptions {
    /// Recorded or as-fast-as-possible timing.
    pub timing: Timing,
    /// When set, `Sync` before any `Goodbye` and at the end, waiting at most
    /// this long for `SyncDone`, so every commit is known to be applied (or
    /// rejected) when the replay returns and all rejections are counted.
    pub wait_for_acks: Option<Duration>,
    /// Overrides the recording's hello encoding on the wire.
    pub encoding: Option<Encoding>,
    /// Leaves out the recording's `goodbye` lines, so the application stays
    /// on the desktop while the caller keeps the sender (`replay --stay`;
    /// use [`replay_into`]).
    pub skip_goodbye: bool,
}

/// A commit the bridge rejected during the replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The surface.
    pub surface: SurfaceId,
    /// The rejected commit's serial.
    pub serial: u64,
    /// The broken rule.
    pub rule: String,
    /// The bridge's explanation.
    pub reason: String,
    /// Whether the bridge asked for a full tree.
    pub resync: bool,
}

/// What a replay did.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ReplaySummary {
    /// Sender messages sent (the hello and syncs excluded).
    pub messages_sent: usize,
    /// Of which commits.
    pub commits: usize,
    /// Rejections received (complete only with `wait_for_acks`).
    pub rejections: Vec<Rejection>,
    /// Action requests received (ignored by the replayer).
    pub actions_received: usize,
    /// Whether the final sync was confirmed.
    pub synced: bool,
    /// Time from connecting to the end.
    pub elapsed: Duration,
}

/// A replay that could not finish.
#[derive(Debug, Error)]
pub enum ReplayError {
    /// The recording could not be read.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// The recording does not start with a hello.
    #[error("the recording's first line must be the hello")]
    NoHello,
    /// Connecting failed.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// Sending a line failed.
    #[error("replaying recording line {line} failed: {source}")]
    Send {
        /// 1-based index of the recorded line (blank lines not counted).
        line: usize,
        /// The failure.
        #[source]
        source: SendError,
    },
    /// The bridge ended the connection with an error.
    #[error("the bridge reported a fatal error: {reason}")]
    Bridge {
        /// The bridge's reason.
        reason: String,
    },
}

/// Loads `path` and replays it through the sender `connect` makes from the
/// recording's hello (with the encoding override applied).
pub fn replay_file<F>(
    path: impl AsRef<Path>,
    connect: F,
    options: ReplayOptions,
) -> Result<ReplaySummary, ReplayError>
where
    F: FnOnce(Hello) -> Result<Sender, ConnectError>,
{
    let lines = load_recording(path)?;
    replay_lines(&lines, connect, options)
}

/// Replays already loaded lines (see [`replay_file`]).
pub fn replay_lines<F>(
    lines: &[RecordedLine],
    connect: F,
    options: ReplayOptions,
) -> Result<ReplaySummary, ReplayError>
where
    F: FnOnce(Hello) -> Result<Sender, ConnectError>,
{
    let mut hello = lines
        .first()
        .and_then(|line| line.hello.clone())
        .ok_or(ReplayError::NoHello)?;
    if let Some(encoding) = options.encoding {
        hello.encoding = encoding;
    }
    let started = Instant::now();
    let sender = connect(hello)?;
    replay_messages(&sender, lines, options, started)
}

/// Replays the messages of `lines` (the hello line is skipped) through a
/// sender the caller connected and keeps, e.g. to stay on the desktop
/// afterwards. Timing is relative to this call.
pub fn replay_into(
    sender: &dyn ReplayTarget,
    lines: &[RecordedLine],
    options: ReplayOptions,
) -> Result<ReplaySummary, ReplayError> {
    replay_messages(sender, lines, options, Instant::now())
}

fn replay_messages(
    sender: &dyn ReplayTarget,
    lines: &[RecordedLine],
    options: ReplayOptions,
    started: Instant,
) -> Result<ReplaySummary, ReplayError> {
    let mut replay = Replay {
        sender,
        options,
        started,
        summary: ReplaySummary::default(),
    };
    let mut ended_with_goodbye = false;
    for (index, line) in lines.iter().enumerate() {
        let Some(message) = &line.message else {
            continue;
        };
        let is_goodbye = matches!(message, SenderMessage::Goodbye);
        if is_goodbye && options.skip_goodbye {
            continue;
        }
        ended_with_goodbye = is_goodbye;
        replay.line(index + 1, line.at_ms, message)?;
    }
    if !ended_with_goodbye {
        replay.sync_if_asked(lines.len())?;
    }
    replay.drain()?;
    replay.summary.elapsed = started.elapsed();
    Ok(replay.summary)
}

/// One replay in progress.
struct Replay<'a> {
    sender: &'a dyn ReplayTarget,
    options: ReplayOptions,
    started: Instant,
    summary: ReplaySummary,
}

impl Replay<'_> {
    fn line(
        &mut self,
        line: usize,
        at_ms: u64,
        message: &SenderMessage,
    ) -> Result<(), ReplayError> {
        self.wait_until(at_ms);
        if matches!(message, SenderMessage::Goodbye) {
            // After a goodbye the bridge reads nothing more: sync first.
            self.sync_if_asked(line)?;
        }
        self.sender
            .send_message(message)
            .map_err(|source| ReplayError::Send { line, source })?;
        self.summary.messages_sent += 1;
        if matches!(message, SenderMessage::Commit { .. }) {
            self.summary.commits += 1;
        }
        self.drain()
    }

    fn wait_until(&self, at_ms: u64) {
        if self.options.timing == Timing::Recorded {
            let due = self.started + Duration::from_millis(at_ms);
            thread::sleep(due.saturating_duration_since(Instant::now()));
        }
    }

    fn sync_if_asked(&mut self, line: usize) -> Result<(), ReplayError> {
        if let Some(timeout) = self.options.wait_for_acks {
            self.sender
                .sync_with_bridge(timeout)
                .map_err(|source| self.send_error(line, source))?;
            self.summary.synced = true;
        }
        Ok(())
    }

    /// A send failure, or the bridge's own fatal error when it explains it.
    fn send_error(&mut self, line: usize, source: SendError) -> ReplayError {
        match self.drain() {
            Err(bridge) => bridge,
            Ok(()) => ReplayError::Send { line, source },
        }
    }

    /// Takes every message that already arrived and accounts for it.
    fn drain(&mut self) -> Result<(), ReplayError> {
        loop {
            match self.sender.next_bridge_message() {
                Ok(Some(message)) => self.account(message)?,
                Ok(None) | Err(RecvError::Closed { .. }) | Err(RecvError::Timeout) => return Ok(()),
            }
        }
    }

    fn account(&mut self, message: BridgeMessage) -> Result<(), ReplayError> {
        match message {
            BridgeMessage::Rejected {
                surface,
                serial,
                rule,
                reason,
                resync,
            } => {
                self.summary.rejections.push(Rejection {
                    surface,
                    serial,
                    rule,
                    reason,
                    resync,
                });
            }
            BridgeMessage::Action { .. } => self.summary.actions_received += 1,
            BridgeMessage::Error { reason } => return Err(ReplayError::Bridge { reason }),
            _ => {}
        }
        Ok(())
    }
}
