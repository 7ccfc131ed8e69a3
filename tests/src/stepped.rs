//! Replaying a recording step by step from the test itself, so a test can let Orca settle
//! between steps (the `replay` CLI sends everything in one go).

use std::path::Path;
use std::time::Duration;

use newton_producer::Sender;
use newton_push_protocol::{BridgeMessage, RecordedLine, SenderMessage};

use crate::{HarnessError, Result};

const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// A sender connected to the bridge, positioned somewhere in a recording. The application
/// stays on the desktop while this value lives.
pub struct SteppedReplay {
    sender: Sender,
    lines: Vec<RecordedLine>,
    next: usize,
}

impl std::fmt::Debug for SteppedReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SteppedReplay")
            .field("next", &self.next)
            .field("lines", &self.lines.len())
            .finish()
    }
}

impl SteppedReplay {
    /// Loads `recording` and connects to the bridge at `socket` with the recording's hello.
    pub fn connect(socket: &Path, recording: &Path) -> Result<SteppedReplay> {
        let lines = newton_producer::load_recording(recording)
            .map_err(|e| HarnessError::Other(format!("load {}: {e}", recording.display())))?;
        let hello = lines.first().and_then(|l| l.hello.clone()).ok_or_else(|| {
            HarnessError::Other(format!(
                "{}: first line is not a hello",
                recording.display()
            ))
        })?;
        let sender = Sender::connect(socket, hello).map_err(|e| {
            HarnessError::Other(format!(
                "connect to the bridge at {}: {e}",
                socket.display()
            ))
        })?;
        Ok(SteppedReplay {
            sender,
            lines,
            next: 1,
        })
    }

    /// Sends every recorded message up to and including the commit with `serial` (recorded
    /// goodbyes and syncs are left out), then syncs with the bridge. Fails if the commit is not
    /// in the rest of the recording or the bridge rejected anything.
    pub fn send_through_commit(&mut self, serial: u64) -> Result<()> {
        loop {
            let Some(line) = self.lines.get(self.next) else {
                return Err(HarnessError::Other(format!(
                    "recording has no commit {serial} after line {}",
                    self.next
                )));
            };
            self.next += 1;
            let Some(message) = &line.message else {
                continue;
            };
            if matches!(message, SenderMessage::Goodbye | SenderMessage::Sync { .. }) {
                continue;
            }
            self.sender
                .send(message)
                .map_err(|e| HarnessError::Other(format!("send to the bridge: {e}")))?;
            if matches!(message, SenderMessage::Commit { serial: s, .. } if *s == serial) {
                return self.sync();
            }
        }
    }

    /// Waits until the bridge processed everything sent so far; fails on any rejection.
    pub fn sync(&self) -> Result<()> {
        self.sender
            .sync(SYNC_TIMEOUT)
            .map_err(|e| HarnessError::Other(format!("sync with the bridge: {e}")))?;
        while let Some(message) = self
            .sender
            .try_recv()
            .map_err(|e| HarnessError::Other(format!("bridge closed the connection: {e}")))?
        {
            if let BridgeMessage::Rejected {
                serial,
                rule,
                reason,
                ..
            } = &message
            {
                return Err(HarnessError::Other(format!(
                    "bridge rejected commit {serial}: {rule}: {reason}"
                )));
            }
            if let BridgeMessage::Error { reason } = &message {
                return Err(HarnessError::Other(format!("bridge error: {reason}")));
            }
        }
        Ok(())
    }
}
