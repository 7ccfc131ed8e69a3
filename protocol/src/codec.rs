//! Payload encoding and decoding: the hello (always JSON) and the messages
//! of both directions in the connection's [`Encoding`].

use serde::{de::DeserializeOwned, Serialize};
use thiserror::Error;

use crate::messages::{BridgeMessage, Encoding, Hello, SenderMessage};

/// A payload that could not be encoded or decoded. `what` names the value
/// (e.g. "sender message"), so logs say which frame failed and how.
#[derive(Debug, Error)]
pub enum CodecError {
    /// JSON (de)serialization failed.
    #[error("{what} is not valid JSON for protocol version 1: {source}")]
    Json {
        /// What was being encoded or decoded.
        what: &'static str,
        /// The serde_json error (with line and column).
        #[source]
        source: serde_json::Error,
    },
    /// postcard (de)serialization failed.
    #[error(
        "{what} is not valid postcard for protocol version 1 (accesskit 0.25 schema): {source}"
    )]
    Postcard {
        /// What was being encoded or decoded.
        what: &'static str,
        /// The postcard error.
        #[source]
        source: postcard::Error,
    },
    /// A postcard payload decoded but left bytes over, so it was not one
    /// value of the expected type.
    #[error("{what} has {extra} trailing bytes after a complete postcard value")]
    TrailingBytes {
        /// What was being decoded.
        what: &'static str,
        /// Bytes left over.
        extra: usize,
    },
}

const HELLO: &str = "hello";
const SENDER_MESSAGE: &str = "sender message";
const BRIDGE_MESSAGE: &str = "bridge message";

/// Encodes the hello; the hello is always JSON.
pub fn encode_hello(hello: &Hello) -> Result<Vec<u8>, CodecError> {
    encode(hello, Encoding::Json, HELLO)
}

/// Decodes a hello payload (JSON).
pub fn decode_hello(payload: &[u8]) -> Result<Hello, CodecError> {
    decode(payload, Encoding::Json, HELLO)
}

/// Encodes a sender → bridge message payload.
pub fn encode_sender_message(
    message: &SenderMessage,
    encoding: Encoding,
) -> Result<Vec<u8>, CodecError> {
    encode(message, encoding, SENDER_MESSAGE)
}

/// Decodes a sender → bridge message payload.
pub fn decode_sender_message(
    payload: &[u8],
    encoding: Encoding,
) -> Result<SenderMessage, CodecError> {
    decode(payload, encoding, SENDER_MESSAGE)
}

/// Encodes a bridge → sender message payload.
pub fn encode_bridge_payload(
    message: &BridgeMessage,
    encoding: Encoding,
) -> Result<Vec<u8>, CodecError> {
    encode(message, encoding, BRIDGE_MESSAGE)
}

/// Decodes a bridge → sender message payload.
pub fn decode_bridge_message(
    payload: &[u8],
    encoding: Encoding,
) -> Result<BridgeMessage, CodecError> {
    decode(payload, encoding, BRIDGE_MESSAGE)
}

fn encode<T: Serialize>(
    value: &T,
    encoding: Encoding,
    what: &'static str,
) -> Result<Vec<u8>, CodecError> {
    match encoding {
        Encoding::Json => {
            serde_json::to_vec(value).map_err(|source| CodecError::Json { what, source })
        }
        Encoding::Postcard => {
            postcard::to_allocvec(value).map_err(|source| CodecError::Postcard { what, source })
        }
    }
}

fn decode<T: DeserializeOwned>(
    payload: &[u8],
    encoding: Encoding,
    what: &'static str,
) -> Result<T, CodecError> {
    match encoding {
        Encoding::Json => {
            serde_json::from_slice(payload).map_err(|source| CodecError::Json { what, source })
        }
        Encoding::Postcard => {
            let (value, rest) = postcard::take_from_bytes(payload)
                .map_err(|source| CodecError::Postcard { what, source })?;
            match rest.len() {
                0 => Ok(value),
                extra => Err(CodecError::TrailingBytes { what, extra }),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::messages::{AppInfo, Geometry, KeyEvent, KeyEventKind, SurfaceId, PROTOCOL_VERSION};
    use accesskit::{
        Action, ActionData, ActionRequest, Node, NodeId, Rect, Role, TreeId, TreeInfo, TreeUpdate,
    };

    /// A window with a button and a text input, as in the protocol notes.
    pub(crate) fn sample_tree() -> TreeUpdate {
        let mut window = Node::new(Role::Window);
        window.set_children(vec![NodeId(1), NodeId(2)]);
        window.set_label("Hello");
        let mut button = Node::new(Role::Button);
        button.set_label("OK");
        button.add_action(Action::Click);
        button.add_action(Action::Focus);
        button.set_bounds(Rect {
            x0: 10.0,
            y0: 10.0,
            x1: 90.0,
            y1: 40.0,
        });
        let mut input = Node::new(Role::TextInput);
        input.set_value("hé!");
        input.set_hidden();
        TreeUpdate {
            nodes: vec![(NodeId(0), window), (NodeId(1), button), (NodeId(2), input)],
            tree: Some(TreeInfo {
                root: NodeId(0),
                toolkit_name: Some("Newton".into()),
                toolkit_version: Some("0.1".into()),
            }),
            tree_id: TreeId::ROOT,
            focus: NodeId(1),
        }
    }

    fn every_sender_message() -> Vec<SenderMessage> {
        let surface = SurfaceId(7);
        vec![
            SenderMessage::CreateSurface {
                surface,
                title: Some("Main".into()),
            },
            SenderMessage::Update {
                surface,
                update: sample_tree(),
            },
            SenderMessage::Commit {
                surface,
                serial: 42,
            },
            SenderMessage::Focus {
                surface: Some(surface),
            },
            SenderMessage::Focus { surface: None },
            SenderMessage::Geometry {
                surface,
                geometry: Geometry {
                    x: -5,
                    y: 20,
                    width: 800,
                    height: 600,
                    scale: 2.0,
                },
            },
            SenderMessage::DestroySurface { surface },
            SenderMessage::Sync { serial: 9 },
            SenderMessage::Goodbye,
            SenderMessage::Key {
                serial: 10,
                event: KeyEvent {
                    kind: KeyEventKind::Press,
                    keysym: 0xff8d,
                    keycode: 104,
                    modifiers: 0,
                    text: None,
                    timestamp_ms: 123,
                },
            },
        ]
    }

    fn every_bridge_message() -> Vec<BridgeMessage> {
        let surface = SurfaceId(3);
        let request = ActionRequest {
            action: Action::SetValue,
            target_tree: TreeId::ROOT,
            target_node: NodeId(2),
            data: Some(ActionData::Value("typed".into())),
        };
        vec![
            BridgeMessage::welcome(1024),
            BridgeMessage::Welcome {
                protocol: PROTOCOL_VERSION,
                max_frame_bytes: 1024,
                accesskit_version: None,
                capabilities: Vec::new(),
            },
            BridgeMessage::UpdatesWanted { surface },
            BridgeMessage::UpdatesUnwanted { surface },
            BridgeMessage::Action { surface, request },
            BridgeMessage::Rejected {
                surface,
                serial: 4,
                rule: "unknown-surface".into(),
                reason: "never created".into(),
                resync: true,
            },
            BridgeMessage::Error {
                reason: "bad".into(),
            },
            BridgeMessage::SyncDone { serial: 9 },
            BridgeMessage::KeyHandled {
                serial: 10,
                consumed: true,
            },
        ]
    }

    #[test]
    fn sender_messages_round_trip_in_both_encodings() {
        for encoding in [Encoding::Json, Encoding::Postcard] {
            for message in every_sender_message() {
                let bytes = encode_sender_message(&message, encoding).unwrap();
                assert_eq!(
                    decode_sender_message(&bytes, encoding).unwrap(),
                    message,
                    "{encoding:?}"
                );
            }
        }
    }

    #[test]
    fn bridge_messages_round_trip_in_both_encodings() {
        for encoding in [Encoding::Json, Encoding::Postcard] {
            for message in every_bridge_message() {
                let bytes = encode_bridge_payload(&message, encoding).unwrap();
                assert_eq!(
                    decode_bridge_message(&bytes, encoding).unwrap(),
                    message,
                    "{encoding:?}"
                );
            }
        }
    }

    #[test]
    fn postcard_round_trips_a_tree_update_and_is_smaller_than_json() {
        let tree = sample_tree();
        let postcard_bytes = postcard::to_allocvec(&tree).unwrap();
        let back: TreeUpdate = postcard::from_bytes(&postcard_bytes).unwrap();
        assert_eq!(back, tree);
        let json_bytes = serde_json::to_vec(&tree).unwrap();
        assert!(postcard_bytes.len() < json_bytes.len());
    }

    #[test]
    fn hello_is_json_with_camel_case_keys() {
        let hello = Hello {
            protocol: PROTOCOL_VERSION,
            encoding: Encoding::Postcard,
            app: AppInfo {
                app_id: "org.example.App".into(),
                name: "App".into(),
                ..AppInfo::default()
            },
            accesskit_version: None,
        };
        let bytes = encode_hello(&hello).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("\"appId\":\"org.example.App\""), "{text}");
        assert!(text.contains("\"encoding\":\"postcard\""), "{text}");
        assert_eq!(decode_hello(&bytes).unwrap(), hello);
    }

    #[test]
    fn json_wire_shape_is_externally_tagged_camel_case() {
        let bytes = encode_sender_message(
            &SenderMessage::Commit {
                surface: SurfaceId(1),
                serial: 2,
            },
            Encoding::Json,
        )
        .unwrap();
        assert_eq!(bytes, br#"{"commit":{"surface":1,"serial":2}}"#);
        let goodbye = encode_sender_message(&SenderMessage::Goodbye, Encoding::Json).unwrap();
        assert_eq!(goodbye, br#""goodbye""#);
    }

    #[test]
    fn welcome_fields_are_camel_case_and_snake_case_is_still_read() {
        let welcome = BridgeMessage::Welcome {
            protocol: 1,
            max_frame_bytes: 5,
            accesskit_version: Some("0.25.2".into()),
            capabilities: vec!["accesskitVersion".into()],
        };
        let bytes = encode_bridge_payload(&welcome, Encoding::Json).unwrap();
        assert_eq!(
            bytes,
            br#"{"welcome":{"protocol":1,"maxFrameBytes":5,"accesskitVersion":"0.25.2","capabilities":["accesskitVersion"]}}"#
        );
        // Welcomes of bridges older than `accesskitVersion` and `capabilities`
        // still decode, with snake_case too.
        let old = br#"{"welcome":{"protocol":1,"max_frame_bytes":5}}"#;
        assert_eq!(
            decode_bridge_message(old, Encoding::Json).unwrap(),
            BridgeMessage::Welcome {
                protocol: 1,
                max_frame_bytes: 5,
                accesskit_version: None,
                capabilities: Vec::new(),
            }
        );
    }

    #[test]
    fn decode_errors_name_the_value() {
        let error = decode_sender_message(b"{nope", Encoding::Json).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("sender message is not valid JSON"),
            "{error}"
        );
        let error = decode_bridge_message(&[200, 200, 200], Encoding::Postcard).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("bridge message is not valid postcard"),
            "{error}"
        );
    }

    #[test]
    fn postcard_trailing_bytes_are_refused() {
        let mut bytes = encode_sender_message(&SenderMessage::Goodbye, Encoding::Postcard).unwrap();
        bytes.push(0);
        let error = decode_sender_message(&bytes, Encoding::Postcard).unwrap_err();
        assert!(
            matches!(error, CodecError::TrailingBytes { extra: 1, .. }),
            "{error}"
        );
    }
}
