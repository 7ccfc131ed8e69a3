//! The background thread turning bridge bytes into messages.

use std::io::Read;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use newton_push_protocol::{BridgeMessage, SenderSession};

/// What the reader thread reports, in stream order.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// The Welcome arrived.
    Welcomed,
    /// A bridge message (Welcome excluded).
    Message(BridgeMessage),
    /// The connection ended; the string says why. Always the last item.
    Closed(String),
}

const READ_CHUNK: usize = 64 * 1024;

/// Starts the reader thread.
pub(crate) fn spawn_reader(
    read: Box<dyn Read + Send>,
    session: Arc<Mutex<SenderSession>>,
    to_inbox: mpsc::Sender<Incoming>,
    closed: Arc<Mutex<Option<String>>>,
) -> std::io::Result<JoinHandle<()>> {
    thread::Builder::new()
        .name("newton-producer-reader".into())
        .spawn(move || {
            let reason = read_loop(read, &session, &to_inbox);
            if let Ok(mut closed) = closed.lock() {
                *closed = Some(reason.clone());
            }
            // The inbox may already be gone; nothing left to tell then.
            let _ = to_inbox.send(Incoming::Closed(reason));
        })
}

/// Reads until the stream ends or breaks; returns why it stopped.
fn read_loop(
    mut read: Box<dyn Read + Send>,
    session: &Mutex<SenderSession>,
    to_inbox: &mpsc::Sender<Incoming>,
) -> String {
    let mut buffer = vec![0u8; READ_CHUNK];
    loop {
        let count = match read.read(&mut buffer) {
            Ok(0) => return "the bridge closed the connection".into(),
            Ok(count) => count,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return format!("reading from the bridge failed: {error}"),
        };
        let chunk = buffer.get(..count).unwrap_or_default();
        if let Err(reason) = deliver(chunk, session, to_inbox) {
            return reason;
        }
    }
}

/// Decodes one chunk and forwards its messages; `Err` ends the loop.
fn deliver(
    chunk: &[u8],
    session: &Mutex<SenderSession>,
    to_inbox: &mpsc::Sender<Incoming>,
) -> Result<(), String> {
    let decoded = session
        .lock()
        .map_err(|_| "the sender session lock was poisoned".to_string())?
        .feed(chunk);
    for message in decoded.map_err(|error| error.to_string())? {
        match message {
            BridgeMessage::Welcome { .. } => send(to_inbox, Incoming::Welcomed)?,
            BridgeMessage::Error { reason } => {
                let error = BridgeMessage::Error {
                    reason: reason.clone(),
                };
                send(to_inbox, Incoming::Message(error))?;
                return Err(format!("the bridge reported an error: {reason}"));
            }
            other => send(to_inbox, Incoming::Message(other))?,
        }
    }
    Ok(())
}

fn send(to_inbox: &mpsc::Sender<Incoming>, item: Incoming) -> Result<(), String> {
    to_inbox
        .send(item)
        .map_err(|_| "the sender was dropped".to_string())
}
