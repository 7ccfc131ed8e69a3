//! The sender's side of a connection: builds the hello, frames outgoing
//! messages and decodes what the bridge sends back.

use std::collections::HashSet;

use thiserror::Error;

use crate::codec::{decode_bridge_message, encode_hello, encode_sender_message, CodecError};
use crate::frame::{encode_frame, FrameDecoder, FrameError};
use crate::messages::{
    BridgeMessage, Encoding, Hello, SenderMessage, SurfaceId, ACCESSKIT_VERSION,
    DEFAULT_MAX_FRAME_BYTES, FEATURE_KEY_EVENTS, PROTOCOL_VERSION,
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

/// Wire names of the bridge messages this crate knows, in declaration order
/// (the postcard variant index is the position). A message with another
/// name or a higher index comes from a newer bridge and is skipped.
const BRIDGE_MESSAGE_NAMES: [&str; 7] = [
    "welcome",
    "updatesWanted",
    "updatesUnwanted",
    "action",
    "rejected",
    "error",
    "syncDone",
];

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
    capabilities: Vec<String>,
    skipped: Vec<String>,
}

impl SenderSession {
    /// A session for `hello`; write [`SenderSession::hello_bytes`] first.
    /// A hello without `accesskit_version` announces [`ACCESSKIT_VERSION`],
    /// the version this crate encodes tree payloads with.
    pub fn new(mut hello: Hello) -> Self {
        hello
            .accesskit_version
            .get_or_insert_with(|| ACCESSKIT_VERSION.to_owned());
        Self {
            hello,
            decoder: FrameDecoder::new(DEFAULT_MAX_FRAME_BYTES),
            state: State::AwaitingWelcome,
            wanted: HashSet::new(),
            capabilities: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// The capabilities the bridge listed in its Welcome (empty before it,
    /// and from bridges older than the field).
    pub fn capabilities(&self) -> &[String] {
        &self.capabilities
    }

    /// Whether the bridge's Welcome listed `capability`.
    pub fn has_capability(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// Bridge messages skipped because this crate does not know them (a
    /// newer bridge's), oldest first, each named as it was on the wire
    /// (`#N` for a postcard variant index). Callers may log and clear it
    /// with [`SenderSession::take_skipped`].
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Takes the list of skipped messages (for logging).
    pub fn take_skipped(&mut self) -> Vec<String> {
        std::mem::take(&mut self.skipped)
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
        self.has_capability(FEATURE_KEY_EVENTS)
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
            State::Open { .. } => match decode_bridge_message(payload, self.hello.encoding) {
                Ok(message) => Ok(self.track_wanted(message)),
                Err(error) => match unknown_message_name(payload, self.hello.encoding) {
                    Some(name) => {
                        self.skipped.push(name);
                        Ok(None)
                    }
                    None => Err(error.into()),
                },
            },
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
                ref capabilities,
                ..
            } if protocol == PROTOCOL_VERSION => {
                self.capabilities = capabilities.clone();
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

/// The name of a bridge message this crate does not know, when `payload`
/// is one: a JSON string or one-key object whose name is not a known
/// message, or a postcard payload whose variant index is past the known
/// ones. Anything else (garbage, a known message with a bad body) is `None`:
/// those stay errors. Unknown messages are skipped whole, which is safe
/// because a frame holds exactly one message.
fn unknown_message_name(payload: &[u8], encoding: Encoding) -> Option<String> {
    let name = match encoding {
        Encoding::Json => match serde_json::from_slice(payload).ok()? {
            serde_json::Value::String(name) => name,
            serde_json::Value::Object(map) if map.len() == 1 => map.keys().next()?.clone(),
            _ => return None,
        },
        Encoding::Postcard => {
            let index = postcard_variant_index(payload)?;
            if index < BRIDGE_MESSAGE_NAMES.len() as u64 {
                return None;
            }
            return Some(format!("#{index}"));
        }
    };
    (!BRIDGE_MESSAGE_NAMES.contains(&name.as_str())).then_some(name)
}

/// The leading varint of a postcard enum: its variant index.
fn postcard_variant_index(payload: &[u8]) -> Option<u64> {
    let mut index = 0u64;
    for (i, byte) in payload.iter().take(5).enumerate() {
        index |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(index);
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode_bridge_payload;
    use crate::messages::SurfaceId;

    /// `BRIDGE_MESSAGE_NAMES` must follow the enum: each variant's JSON key
    /// and postcard index.
    #[test]
    fn known_names_follow_the_message_enum() {
        let surface = SurfaceId(1);
        let every = [
            BridgeMessage::welcome(1),
            BridgeMessage::UpdatesWanted { surface },
            BridgeMessage::UpdatesUnwanted { surface },
            BridgeMessage::Action {
                surface,
                request: accesskit::ActionRequest {
                    action: accesskit::Action::Click,
                    target_tree: accesskit::TreeId::ROOT,
                    target_node: accesskit::NodeId(1),
                    data: None,
                },
            },
            BridgeMessage::Rejected {
                surface,
                serial: 0,
                rule: String::new(),
                reason: String::new(),
                resync: false,
            },
            BridgeMessage::Error {
                reason: String::new(),
            },
            BridgeMessage::SyncDone { serial: 0 },
        ];
        assert_eq!(every.len(), BRIDGE_MESSAGE_NAMES.len());
        for (index, message) in every.iter().enumerate() {
            assert_eq!(variant_name(message), BRIDGE_MESSAGE_NAMES[index]);
            let json = encode_bridge_payload(message, Encoding::Json).unwrap();
            let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
            assert!(value.get(BRIDGE_MESSAGE_NAMES[index]).is_some(), "{value}");
            let postcard = encode_bridge_payload(message, Encoding::Postcard).unwrap();
            assert_eq!(postcard_variant_index(&postcard), Some(index as u64));
            assert_eq!(unknown_message_name(&json, Encoding::Json), None);
            assert_eq!(unknown_message_name(&postcard, Encoding::Postcard), None);
        }
    }
}
