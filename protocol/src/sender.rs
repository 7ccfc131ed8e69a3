//! The sender's side of a connection: builds the hello, frames outgoing
//! messages and decodes what the bridge sends back.

use std::collections::HashSet;

use thiserror::Error;

use crate::codec::{decode_bridge_message, encode_hello, encode_sender_message, CodecError};
use crate::frame::{encode_frame, FrameDecoder, FrameError};
use crate::messages::{
    BridgeMessage, Encoding, Hello, SenderMessage, SurfaceId, DEFAULT_MAX_FRAME_BYTES,
    FEATURE_KEY_EVENTS, PROTOCOL_VERSION,
};
use crate::receiver::EncodeError;

/// A problem with what the bridge sent. All are fatal for the connection.
#[derive(Debug, Error)]
pub enum BridgeStreamError {
    /// The bridge's framing is broken.
    #[error("the bridge sent a bad frame: {0}")]
    Frame(#[from] FrameError),
    /// A bridge frame did not decode.
    #[error("the bridge sent an undecodable message: {0}")]
    Decode(#[from] CodecError),
    /// The first bridge message was neither `Welcome` nor `Error`.
    #[error("the bridge's first message must be welcome or error, got {0}")]
    NoWelcome(&'static str),
    /// The bridge speaks another protocol version.
    #[error(
        "the bridge speaks protocol version {0}, this sender speaks {PROTOCOL_VERSION}; \
         use matching versions of the bridge and the sender"
    )]
    Version(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    AwaitingWelcome,
    Open { max_frame_bytes: u32 },
    Failed,
}

/// Sans-IO state machine of the sender's end of a connection.
///
/// Messages may be encoded right after the hello, before the Welcome
/// arrives (pipelining, e.g. over a pipe); until then the frame limit is
/// assumed to be [`DEFAULT_MAX_FRAME_BYTES`].
#[derive(Debug)]
pub struct SenderSession {
    hello: Hello,
    decoder: FrameDecoder,
    state: State,
    wanted: HashSet<SurfaceId>,
    key_events: bool,
}

impl SenderSession {
    /// A session for `hello`; write [`SenderSession::hello_bytes`] first.
    pub fn new(hello: Hello) -> Self {
        Self {
            hello,
            decoder: FrameDecoder::new(DEFAULT_MAX_FRAME_BYTES),
            state: State::AwaitingWelcome,
            wanted: HashSet::new(),
            key_events: false,
        }
    }

    /// The framed hello (always JSON).
    pub fn hello_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        Ok(encode_frame(&encode_hello(&self.hello)?)?)
    }

    /// The hello this session announces.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// The encoding chosen in the hello.
    pub fn encoding(&self) -> Encoding {
        self.hello.encoding
    }

    /// True once the bridge's Welcome arrived.
    pub fn is_welcomed(&self) -> bool {
        matches!(self.state, State::Open { .. })
    }

    /// The bridge's frame limit: from the Welcome, else the default.
    pub fn max_frame_bytes(&self) -> u32 {
        match self.state {
            State::Open { max_frame_bytes } => max_frame_bytes,
            _ => DEFAULT_MAX_FRAME_BYTES,
        }
    }

    /// Whether the bridge currently wants updates for `surface`. Surfaces
    /// start unwanted; `UpdatesWanted`/`UpdatesUnwanted` toggle them.
    pub fn is_wanted(&self, surface: SurfaceId) -> bool {
        self.wanted.contains(&surface)
    }

    /// Whether the bridge's welcome offered key forwarding
    /// ([`FEATURE_KEY_EVENTS`]). False until the welcome arrives.
    pub fn accepts_key_events(&self) -> bool {
        self.key_events
    }

    /// Encodes and frames one message. Refuses payloads over the bridge's
    /// frame limit, so the sender gets a clear error instead of being
    /// disconnected. Forgets the wanted state of destroyed surfaces.
    pub fn encode(&mut self, message: &SenderMessage) -> Result<Vec<u8>, EncodeError> {
        let payload = encode_sender_message(message, self.hello.encoding)?;
        let max = self.max_frame_bytes();
        if payload.len() > max as usize {
            return Err(FrameError::PayloadTooLarge {
                len: payload.len(),
                max,
            }
            .into());
        }
        if let SenderMessage::DestroySurface { surface } = message {
            self.wanted.remove(surface);
        }
        Ok(encode_frame(&payload)?)
    }

    /// Feeds bytes read from the bridge; returns its messages in order,
    /// `Welcome` included (the session also records its frame limit).
    /// After an error the session stays failed and ignores later bytes.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<BridgeMessage>, BridgeStreamError> {
        let mut payloads = Vec::new();
        let framing = self.decoder.feed(bytes, &mut payloads);
        let mut messages = Vec::new();
        for payload in payloads {
            if let Some(message) = self.handle_payload(&payload)? {
                messages.push(message);
            }
        }
        framing?;
        Ok(messages)
    }

    fn handle_payload(
        &mut self,
        payload: &[u8],
    ) -> Result<Option<BridgeMessage>, BridgeStreamError> {
        let result = match self.state {
            // The bridge's reply to the hello is JSON, whatever the encoding.
            State::AwaitingWelcome => decode_bridge_message(payload, Encoding::Json)
                .map_err(BridgeStreamError::from)
                .and_then(|message| self.expect_welcome(message)),
            State::Open { .. } => decode_bridge_message(payload, self.hello.encoding)
                .map(|message| self.track_wanted(message))
                .map_err(BridgeStreamError::from),
            State::Failed => Ok(None),
        };
        if result.is_err() {
            self.state = State::Failed;
        }
        result
    }

    fn expect_welcome(
        &mut self,
        message: BridgeMessage,
    ) -> Result<Option<BridgeMessage>, BridgeStreamError> {
        match message {
            BridgeMessage::Welcome {
                protocol,
                max_frame_bytes,
                ref features,
            } if protocol == PROTOCOL_VERSION => {
                self.key_events = features.iter().any(|f| f == FEATURE_KEY_EVENTS);
                self.state = State::Open { max_frame_bytes };
                Ok(Some(message))
            }
            BridgeMessage::Welcome { protocol, .. } => Err(BridgeStreamError::Version(protocol)),
            BridgeMessage::Error { .. } => {
                self.state = State::Failed;
                Ok(Some(message))
            }
            other => Err(BridgeStreamError::NoWelcome(variant_name(&other))),
        }
    }

    fn track_wanted(&mut self, message: BridgeMessage) -> Option<BridgeMessage> {
        match &message {
            BridgeMessage::UpdatesWanted { surface } => {
                self.wanted.insert(*surface);
            }
            BridgeMessage::UpdatesUnwanted { surface } => {
                self.wanted.remove(surface);
            }
            _ => {}
        }
        Some(message)
    }
}

/// The wire name of a bridge message's variant, for error messages.
pub fn variant_name(message: &BridgeMessage) -> &'static str {
    match message {
        BridgeMessage::Welcome { .. } => "welcome",
        BridgeMessage::UpdatesWanted { .. } => "updatesWanted",
        BridgeMessage::UpdatesUnwanted { .. } => "updatesUnwanted",
        BridgeMessage::Action { .. } => "action",
        BridgeMessage::Rejected { .. } => "rejected",
        BridgeMessage::Error { .. } => "error",
        BridgeMessage::SyncDone { .. } => "syncDone",
        BridgeMessage::KeyHandled { .. } => "keyHandled",
    }
}
