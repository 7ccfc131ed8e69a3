//! SenderSession against a ReceiverSession: real bytes both ways.

mod common;

use common::*;
use newton_push_protocol::{
    encode_bridge_payload, encode_frame, BridgeMessage, BridgeStreamError, EncodeError, Encoding,
    FrameError, ReceiverConfig, ReceiverEvent, ReceiverSession, SenderMessage, SenderSession,
    SurfaceId,
};

/// Feeds the sender's bytes to a receiver and returns the receiver's events.
fn deliver(receiver: &mut ReceiverSession, bytes: &[u8]) -> Vec<ReceiverEvent> {
    receiver.feed(bytes)
}

fn welcome_from(receiver: &mut ReceiverSession, sender: &SenderSession) -> Vec<u8> {
    let events = deliver(receiver, &sender.hello_bytes().unwrap());
    match events.into_iter().next() {
        Some(ReceiverEvent::HelloAccepted { welcome, .. }) => welcome,
        other => panic!("{other:?}"),
    }
}

#[test]
fn handshake_then_messages_reach_the_receiver() {
    for encoding in [Encoding::Json, Encoding::Postcard] {
        let mut sender = SenderSession::new(hello(encoding));
        let mut receiver = ReceiverSession::new(ReceiverConfig {
            max_frame_bytes: 4096,
            ..Default::default()
        });
        let welcome = welcome_from(&mut receiver, &sender);
        assert!(
            sender.feed(&welcome).unwrap() == vec![BridgeMessage::welcome(4096)],
            "the welcome is returned"
        );
        assert!(sender.is_welcomed());
        assert_eq!(sender.max_frame_bytes(), 4096);
        let surface = SurfaceId(2);
        let mut bytes = sender
            .encode(&SenderMessage::CreateSurface {
                surface,
                title: None,
            })
            .unwrap();
        bytes.extend(
            sender
                .encode(&SenderMessage::Update {
                    surface,
                    update: full_tree("Go"),
                })
                .unwrap(),
        );
        bytes.extend(
            sender
                .encode(&SenderMessage::Commit { surface, serial: 1 })
                .unwrap(),
        );
        let events = deliver(&mut receiver, &bytes);
        assert!(
            matches!(&events[1], ReceiverEvent::Commit { updates, .. } if updates == &vec![full_tree("Go")])
        );
    }
}

#[test]
fn wanted_state_follows_bridge_messages() {
    let mut sender = SenderSession::new(hello(Encoding::Postcard));
    let mut receiver = ReceiverSession::new(ReceiverConfig::default());
    let welcome = welcome_from(&mut receiver, &sender);
    let surface = SurfaceId(4);
    let mut bytes = welcome;
    bytes.extend(
        receiver
            .encode_bridge_message(&BridgeMessage::UpdatesWanted { surface })
            .unwrap(),
    );
    assert!(!sender.is_wanted(surface), "surfaces start unwanted");
    let messages = sender.feed(&bytes).unwrap();
    assert_eq!(messages[1..], [BridgeMessage::UpdatesWanted { surface }]);
    assert!(sender.is_wanted(surface));
    let unwanted = receiver
        .encode_bridge_message(&BridgeMessage::UpdatesUnwanted { surface })
        .unwrap();
    for byte in &unwanted {
        sender.feed(std::slice::from_ref(byte)).unwrap();
    }
    assert!(!sender.is_wanted(surface));
}

#[test]
fn error_instead_of_welcome_is_returned() {
    let mut sender = SenderSession::new(hello(Encoding::Json));
    let error = BridgeMessage::Error {
        reason: "no".into(),
    };
    let frame = encode_frame(&encode_bridge_payload(&error, Encoding::Json).unwrap()).unwrap();
    assert_eq!(sender.feed(&frame).unwrap(), vec![error]);
    assert!(!sender.is_welcomed());
}

#[test]
fn wrong_welcome_version_and_missing_welcome_are_errors() {
    let mut sender = SenderSession::new(hello(Encoding::Json));
    let welcome = BridgeMessage::Welcome {
        protocol: 7,
        max_frame_bytes: 10,
        accesskit_version: None,
        capabilities: Vec::new(),
    };
    let frame = encode_frame(&encode_bridge_payload(&welcome, Encoding::Json).unwrap()).unwrap();
    assert!(matches!(
        sender.feed(&frame),
        Err(BridgeStreamError::Version(7))
    ));

    let mut sender = SenderSession::new(hello(Encoding::Json));
    let early = BridgeMessage::SyncDone { serial: 1 };
    let frame = encode_frame(&encode_bridge_payload(&early, Encoding::Json).unwrap()).unwrap();
    let error = sender.feed(&frame).unwrap_err();
    assert!(error.to_string().contains("syncDone"), "{error}");
}

#[test]
fn refuses_to_encode_over_the_bridge_limit() {
    let mut sender = SenderSession::new(hello(Encoding::Json));
    let mut receiver = ReceiverSession::new(ReceiverConfig {
        max_frame_bytes: 400,
        ..Default::default()
    });
    sender.feed(&welcome_from(&mut receiver, &sender)).unwrap();
    let big = SenderMessage::Update {
        surface: SurfaceId(1),
        update: full_tree(&"x".repeat(800)),
    };
    let error = sender.encode(&big).unwrap_err();
    assert!(
        matches!(
            error,
            EncodeError::Frame(FrameError::PayloadTooLarge { max: 400, .. })
        ),
        "{error}"
    );
}

#[test]
fn garbage_from_the_bridge_is_an_error_not_a_panic() {
    let mut sender = SenderSession::new(hello(Encoding::Json));
    assert!(sender.feed(&encode_frame(b"\xff\xfe").unwrap()).is_err());
}

/// A newer bridge's messages this sender does not know are skipped, in both
/// encodings; the known ones around them still arrive, and malformed known
/// messages stay errors.
#[test]
fn unknown_bridge_messages_are_skipped_not_fatal() {
    for encoding in [Encoding::Json, Encoding::Postcard] {
        let mut sender = SenderSession::new(hello(encoding));
        let mut receiver = ReceiverSession::new(ReceiverConfig::default());
        let welcome = welcome_from(&mut receiver, &sender);
        sender.feed(&welcome).unwrap();
        let unknown: Vec<u8> = match encoding {
            Encoding::Json => {
                br#"{"keyEventAck":{"surface":1,"serial":3,"future":[1,2]}}"#.to_vec()
            }
            // Variant index 42 (varint) and a body this sender cannot read.
            Encoding::Postcard => vec![42, 1, 2, 3],
        };
        let known = BridgeMessage::SyncDone { serial: 5 };
        let mut bytes = encode_frame(&unknown).unwrap();
        bytes.extend(encode_frame(&encode_bridge_payload(&known, encoding).unwrap()).unwrap());
        if encoding == Encoding::Json {
            bytes.extend(encode_frame(br#""somethingNew""#).unwrap());
        }
        assert_eq!(sender.feed(&bytes).unwrap(), vec![known], "{encoding:?}");
        assert!(sender.is_welcomed());
        let expected: &[&str] = match encoding {
            Encoding::Json => &["keyEventAck", "somethingNew"],
            Encoding::Postcard => &["#42"],
        };
        assert_eq!(sender.take_skipped(), expected);

        let broken: &[u8] = match encoding {
            Encoding::Json => br#"{"syncDone":{"serial":"five"}}"#,
            Encoding::Postcard => &[6],
        };
        assert!(
            sender.feed(&encode_frame(broken).unwrap()).is_err(),
            "a known message with a bad body is still an error ({encoding:?})"
        );
    }
}

#[test]
fn sender_announces_its_accesskit_version_and_reads_capabilities() {
    let mut plain = hello(Encoding::Json);
    plain.accesskit_version = None;
    let mut sender = SenderSession::new(plain);
    let bytes = sender.hello_bytes().unwrap();
    let text = String::from_utf8_lossy(&bytes[4..]).into_owned();
    assert!(
        text.contains(&format!(
            "\"accesskitVersion\":\"{}\"",
            newton_push_protocol::ACCESSKIT_VERSION
        )),
        "{text}"
    );
    let mut receiver = ReceiverSession::new(ReceiverConfig::default());
    let welcome = welcome_from(&mut receiver, &sender);
    sender.feed(&welcome).unwrap();
    assert_eq!(
        sender.capabilities(),
        newton_push_protocol::BRIDGE_CAPABILITIES
    );
    assert!(sender.has_capability(newton_push_protocol::CAPABILITY_ACCESSKIT_VERSION));
    assert!(!sender.has_capability("noSuchThing"));
}
