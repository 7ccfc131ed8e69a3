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
            sender.feed(&welcome).unwrap()
                == vec![BridgeMessage::Welcome {
                    protocol: 1,
                    max_frame_bytes: 4096,
                    features: vec!["keyEvents".into()],
                }],
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
        features: Vec::new(),
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

#[test]
fn key_events_are_offered_in_the_welcome_and_reach_the_receiver() {
    use newton_push_protocol::{KeyEvent, KeyEventKind};
    for encoding in [Encoding::Json, Encoding::Postcard] {
        let mut sender = SenderSession::new(hello(encoding));
        assert!(
            !sender.accepts_key_events(),
            "nothing offered before the welcome"
        );
        let mut receiver = ReceiverSession::new(ReceiverConfig::default());
        let welcome = welcome_from(&mut receiver, &sender);
        sender.feed(&welcome).unwrap();
        assert!(sender.accepts_key_events(), "{encoding:?}");
        let event = KeyEvent {
            kind: KeyEventKind::Press,
            keysym: 0x61,
            keycode: 38,
            modifiers: 1,
            text: Some("A".into()),
            timestamp_ms: 77,
        };
        let key = sender
            .encode(&SenderMessage::Key {
                serial: 5,
                event: event.clone(),
            })
            .unwrap();
        let events = deliver(&mut receiver, &key);
        assert!(
            matches!(&events[..], [ReceiverEvent::Key { serial: 5, event: got }] if *got == event),
            "{encoding:?}: {events:?}"
        );
    }
}
