//! ReceiverSession: the bridge's end, fed real encoded bytes.

mod common;

use common::*;
use newton_push_protocol::{
    decode_bridge_message, encode_frame, BridgeMessage, Encoding, FrameDecoder, ProtocolError,
    ReceiverConfig, ReceiverEvent, ReceiverSession, SenderMessage, SurfaceId, SurfaceRule,
    PROTOCOL_VERSION,
};
use std::time::{Duration, Instant};

fn feed_all(session: &mut ReceiverSession, bytes: &[u8]) -> Vec<ReceiverEvent> {
    session.feed(bytes)
}

fn open_session(encoding: Encoding) -> ReceiverSession {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let events = session.feed(&hello_frame(encoding));
    assert!(
        matches!(events.as_slice(), [ReceiverEvent::HelloAccepted { .. }]),
        "{events:?}"
    );
    session
}

/// Decodes one framed bridge message written by the session.
fn decode_reply(frame: &[u8], encoding: Encoding) -> BridgeMessage {
    let mut decoder = FrameDecoder::new(u32::MAX);
    let mut payloads = Vec::new();
    decoder.feed(frame, &mut payloads).unwrap();
    assert_eq!(payloads.len(), 1);
    decode_bridge_message(&payloads[0], encoding).unwrap()
}

fn fatal_error(events: &[ReceiverEvent]) -> (&ProtocolError, &[u8]) {
    match events.last() {
        Some(ReceiverEvent::Fatal { error, reply }) => (error, reply),
        other => panic!("expected a fatal event, got {other:?}"),
    }
}

fn surface_rule(event: &ReceiverEvent) -> SurfaceRule {
    match event {
        ReceiverEvent::SurfaceError(error) => error.rule,
        other => panic!("expected a surface error, got {other:?}"),
    }
}

#[test]
fn hello_is_accepted_and_welcome_is_json_even_for_postcard() {
    let mut session = ReceiverSession::new(ReceiverConfig {
        max_frame_bytes: 1000,
        ..Default::default()
    });
    let events = session.feed(&hello_frame(Encoding::Postcard));
    let [ReceiverEvent::HelloAccepted {
        app,
        encoding,
        welcome,
    }] = events.as_slice()
    else {
        panic!("{events:?}");
    };
    assert_eq!(app, &hello(Encoding::Postcard).app);
    assert_eq!(*encoding, Encoding::Postcard);
    let welcome = decode_reply(welcome, Encoding::Json);
    assert_eq!(welcome, BridgeMessage::welcome(1000));
    assert_eq!(session.encoding(), Some(Encoding::Postcard));
}

#[test]
fn full_stream_yields_events_in_order_with_buffered_commits() {
    for encoding in [Encoding::Json, Encoding::Postcard] {
        let mut session = ReceiverSession::new(ReceiverConfig::default());
        let events = feed_all(&mut session, &sample_stream(encoding));
        let names: Vec<&str> = events.iter().map(event_name).collect();
        assert_eq!(
            names,
            [
                "hello",
                "created",
                "commit",
                "commit",
                "focus",
                "geometry",
                "sync",
                "destroyed",
                "goodbye"
            ],
            "{encoding:?}"
        );
        let ReceiverEvent::Commit {
            surface,
            serial,
            updates,
            encoded_bytes,
            ..
        } = &events[3]
        else {
            panic!("{:?}", events[3]);
        };
        assert_eq!((*surface, *serial), (SurfaceId(1), 2));
        assert_eq!(updates, &vec![relabel("Yes"), relabel("No")]);
        assert!(*encoded_bytes > 0);
        assert!(session.is_closed());
    }
}

fn event_name(event: &ReceiverEvent) -> &'static str {
    match event {
        ReceiverEvent::HelloAccepted { .. } => "hello",
        ReceiverEvent::SurfaceCreated { .. } => "created",
        ReceiverEvent::Commit { .. } => "commit",
        ReceiverEvent::Focus { .. } => "focus",
        ReceiverEvent::Geometry { .. } => "geometry",
        ReceiverEvent::SurfaceDestroyed { .. } => "destroyed",
        ReceiverEvent::Sync { .. } => "sync",
        ReceiverEvent::Goodbye => "goodbye",
        ReceiverEvent::SurfaceError(_) => "surface-error",
        ReceiverEvent::Fatal { .. } => "fatal",
        ReceiverEvent::Key { .. } => "key",
    }
}

#[test]
fn byte_at_a_time_gives_the_same_events() {
    let stream = sample_stream(Encoding::Postcard);
    let whole = format!(
        "{:?}",
        ReceiverSession::new(ReceiverConfig::default()).feed(&stream)
    );
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let mut events = Vec::new();
    for byte in &stream {
        events.extend(session.feed(std::slice::from_ref(byte)));
    }
    assert_eq!(format!("{events:?}"), whole);
}

#[test]
fn updates_stay_invisible_until_commit() {
    let mut session = open_session(Encoding::Json);
    let surface = SurfaceId(5);
    let mut bytes = message_frame(
        &SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        Encoding::Json,
    );
    bytes.extend(message_frame(
        &SenderMessage::Update {
            surface,
            update: full_tree("A"),
        },
        Encoding::Json,
    ));
    let events = session.feed(&bytes);
    assert_eq!(events.len(), 1, "only the creation is reported: {events:?}");
    assert!(session.pending_bytes(surface) > 0);
    let events = session.feed(&message_frame(
        &SenderMessage::Commit { surface, serial: 9 },
        Encoding::Json,
    ));
    assert!(matches!(&events[..], [ReceiverEvent::Commit { updates, .. }] if updates.len() == 1));
    assert_eq!(session.pending_bytes(surface), 0);
}

#[test]
fn message_before_hello_is_fatal_with_json_error_reply() {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let events = session.feed(&message_frame(&SenderMessage::Goodbye, Encoding::Json));
    let (error, reply) = fatal_error(&events);
    assert!(
        matches!(error, ProtocolError::MessageBeforeHello),
        "{error}"
    );
    let BridgeMessage::Error { reason } = decode_reply(reply, Encoding::Json) else {
        panic!()
    };
    assert!(reason.contains("hello"), "{reason}");
    assert!(session.is_closed());
    assert!(
        session.feed(&hello_frame(Encoding::Json)).is_empty(),
        "closed sessions ignore input"
    );
}

#[test]
fn wrong_version_gets_error_then_close() {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let frame = encode_frame(br#"{"protocol":2,"encoding":"json","app":{"appId":"a","name":"A"}}"#)
        .unwrap();
    let events = session.feed(&frame);
    let (error, reply) = fatal_error(&events);
    assert!(
        matches!(error, ProtocolError::UnsupportedVersion { got: 2 }),
        "{error}"
    );
    let BridgeMessage::Error { reason } = decode_reply(reply, Encoding::Json) else {
        panic!()
    };
    assert!(
        reason.contains("version 2") && reason.contains("speaks version 1"),
        "{reason}"
    );
}

#[test]
fn bad_hello_is_fatal() {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let events = session.feed(&encode_frame(br#"{"protocol":1}"#).unwrap());
    let (error, _) = fatal_error(&events);
    assert!(matches!(error, ProtocolError::BadHello { .. }), "{error}");
    assert!(error.to_string().contains("app"), "{error}");
}

#[test]
fn undecodable_payload_is_fatal_and_replied_in_session_encoding() {
    let mut session = open_session(Encoding::Postcard);
    let events = session.feed(&encode_frame(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).unwrap());
    let (error, reply) = fatal_error(&events);
    assert!(
        matches!(error, ProtocolError::UndecodablePayload { frame: 1, .. }),
        "{error}"
    );
    assert!(matches!(
        decode_reply(reply, Encoding::Postcard),
        BridgeMessage::Error { .. }
    ));
}

#[test]
fn oversize_frame_is_fatal_before_payload_arrives() {
    let mut session = ReceiverSession::new(ReceiverConfig {
        max_frame_bytes: 1000,
        ..Default::default()
    });
    let mut bytes = hello_frame(Encoding::Json);
    assert!(bytes.len() < 1000 + 4);
    bytes.extend(1001u32.to_le_bytes());
    let events = session.feed(&bytes);
    assert_eq!(events.len(), 2, "{events:?}");
    let (error, _) = fatal_error(&events);
    assert!(error.to_string().contains("1001"), "{error}");
}

#[test]
fn unknown_surface_is_not_fatal() {
    let mut session = open_session(Encoding::Json);
    let ghost = SurfaceId(77);
    let messages = [
        SenderMessage::Update {
            surface: ghost,
            update: full_tree("x"),
        },
        SenderMessage::Commit {
            surface: ghost,
            serial: 4,
        },
        SenderMessage::Focus {
            surface: Some(ghost),
        },
        SenderMessage::DestroySurface { surface: ghost },
    ];
    for message in &messages {
        let events = session.feed(&message_frame(message, Encoding::Json));
        assert_eq!(events.len(), 1);
        assert_eq!(surface_rule(&events[0]), SurfaceRule::UnknownSurface);
    }
    let events = session.feed(&message_frame(&messages[1], Encoding::Json));
    let ReceiverEvent::SurfaceError(error) = &events[0] else {
        panic!()
    };
    let BridgeMessage::Rejected {
        serial,
        rule,
        resync,
        ..
    } = error.to_rejected()
    else {
        panic!()
    };
    assert_eq!(
        (serial, rule.as_str(), resync),
        (4, "unknown-surface", false)
    );
    assert!(!session.is_closed());
}

#[test]
fn duplicate_surface_and_bad_geometry_are_surface_errors() {
    let mut session = open_session(Encoding::Json);
    let surface = SurfaceId(1);
    let create = message_frame(
        &SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        Encoding::Json,
    );
    session.feed(&create);
    assert_eq!(
        surface_rule(&session.feed(&create)[0]),
        SurfaceRule::SurfaceExists
    );
    let geometry = newton_push_protocol::Geometry {
        scale: f64::NAN,
        ..Default::default()
    };
    let events = session.feed(&message_frame(
        &SenderMessage::Geometry { surface, geometry },
        Encoding::Postcard,
    ));
    // Sent in the wrong encoding on purpose: JSON session, postcard bytes.
    assert!(
        matches!(events.last(), Some(ReceiverEvent::Fatal { .. })),
        "{events:?}"
    );
}

#[test]
fn non_finite_scale_is_rejected() {
    let mut session = open_session(Encoding::Postcard);
    let surface = SurfaceId(1);
    session.feed(&message_frame(
        &SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        Encoding::Postcard,
    ));
    let geometry = newton_push_protocol::Geometry {
        scale: f64::INFINITY,
        ..Default::default()
    };
    let events = session.feed(&message_frame(
        &SenderMessage::Geometry { surface, geometry },
        Encoding::Postcard,
    ));
    assert_eq!(surface_rule(&events[0]), SurfaceRule::BadGeometry);
}

#[test]
fn pending_overflow_fails_the_commit_and_recovers_after() {
    let limit = 300;
    let mut session = ReceiverSession::new(ReceiverConfig {
        max_pending_bytes_per_surface: limit,
        ..Default::default()
    });
    session.feed(&hello_frame(Encoding::Json));
    let surface = SurfaceId(1);
    session.feed(&message_frame(
        &SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        Encoding::Json,
    ));
    let update = message_frame(
        &SenderMessage::Update {
            surface,
            update: relabel("a label"),
        },
        Encoding::Json,
    );
    let copies = limit / update.len() + 2;
    for _ in 0..copies {
        assert!(session.feed(&update).is_empty());
        assert!(session.pending_bytes(surface) <= limit);
    }
    let events = session.feed(&message_frame(
        &SenderMessage::Commit { surface, serial: 8 },
        Encoding::Json,
    ));
    let ReceiverEvent::SurfaceError(error) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(
        (error.rule, error.serial),
        (SurfaceRule::PendingOverflow, Some(8))
    );
    assert!(
        error.to_rejected()
            == BridgeMessage::Rejected {
                surface,
                serial: 8,
                rule: "pending-overflow".into(),
                reason: error.reason.clone(),
                resync: true,
            }
    );
    // The next frame starts clean.
    session.feed(&update);
    let events = session.feed(&message_frame(
        &SenderMessage::Commit { surface, serial: 9 },
        Encoding::Json,
    ));
    assert!(
        matches!(&events[..], [ReceiverEvent::Commit { updates, .. }] if updates.len() == 1),
        "{events:?}"
    );
}

#[test]
fn surface_limit_is_enforced() {
    let mut session = ReceiverSession::new(ReceiverConfig {
        max_surfaces: 2,
        ..Default::default()
    });
    session.feed(&hello_frame(Encoding::Json));
    for id in 0..2 {
        let events = session.feed(&message_frame(
            &SenderMessage::CreateSurface {
                surface: SurfaceId(id),
                title: None,
            },
            Encoding::Json,
        ));
        assert!(matches!(events[0], ReceiverEvent::SurfaceCreated { .. }));
    }
    let events = session.feed(&message_frame(
        &SenderMessage::CreateSurface {
            surface: SurfaceId(9),
            title: None,
        },
        Encoding::Json,
    ));
    assert_eq!(surface_rule(&events[0]), SurfaceRule::TooManySurfaces);
}

#[test]
fn destroy_drops_uncommitted_updates() {
    let mut session = open_session(Encoding::Json);
    let surface = SurfaceId(1);
    let create = message_frame(
        &SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        Encoding::Json,
    );
    session.feed(&create);
    session.feed(&message_frame(
        &SenderMessage::Update {
            surface,
            update: full_tree("a"),
        },
        Encoding::Json,
    ));
    session.feed(&message_frame(
        &SenderMessage::DestroySurface { surface },
        Encoding::Json,
    ));
    session.feed(&create);
    let events = session.feed(&message_frame(
        &SenderMessage::Commit { surface, serial: 1 },
        Encoding::Json,
    ));
    assert!(
        matches!(&events[..], [ReceiverEvent::Commit { updates, .. }] if updates.is_empty()),
        "{events:?}"
    );
}

#[test]
fn bridge_messages_use_the_session_encoding() {
    let session = open_session(Encoding::Postcard);
    let message = BridgeMessage::UpdatesWanted {
        surface: SurfaceId(3),
    };
    let frame = session.encode_bridge_message(&message).unwrap();
    assert_eq!(decode_reply(&frame, Encoding::Postcard), message);
}

fn commit_rule_after_updates(
    config: ReceiverConfig,
    surfaces: &[SurfaceId],
    copies: usize,
) -> Vec<ReceiverEvent> {
    let mut session = ReceiverSession::new(config);
    session.feed(&hello_frame(Encoding::Postcard));
    for &surface in surfaces {
        session.feed(&message_frame(
            &SenderMessage::CreateSurface {
                surface,
                title: None,
            },
            Encoding::Postcard,
        ));
    }
    for _ in 0..copies {
        for &surface in surfaces {
            let update = SenderMessage::Update {
                surface,
                update: full_tree("many nodes"),
            };
            assert!(session
                .feed(&message_frame(&update, Encoding::Postcard))
                .is_empty());
        }
    }
    let mut events = Vec::new();
    for &surface in surfaces {
        let commit = SenderMessage::Commit {
            surface,
            serial: u64::from(surface.0),
        };
        events.extend(session.feed(&message_frame(&commit, Encoding::Postcard)));
    }
    events
}

#[test]
fn pending_node_limit_bounds_decoded_memory() {
    // Each full tree has 2 nodes: 3 trees exceed a limit of 5.
    let config = ReceiverConfig {
        max_pending_nodes_per_surface: 5,
        ..Default::default()
    };
    let events = commit_rule_after_updates(config, &[SurfaceId(1)], 3);
    let ReceiverEvent::SurfaceError(error) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(error.rule, SurfaceRule::PendingOverflow);
    assert!(
        error.reason.contains("5 nodes per surface"),
        "{}",
        error.reason
    );
    let events = commit_rule_after_updates(config, &[SurfaceId(1)], 2);
    assert!(
        matches!(events[0], ReceiverEvent::Commit { .. }),
        "{events:?}"
    );
}

#[test]
fn connection_wide_pending_limit_spans_surfaces() {
    let one_update = message_frame(
        &SenderMessage::Update {
            surface: SurfaceId(1),
            update: full_tree("many nodes"),
        },
        Encoding::Postcard,
    )
    .len()
        - 4;
    // Room for three updates in total, two per surface: the third surface's
    // update overflows, the first two commit.
    let config = ReceiverConfig {
        max_queued_bytes: one_update * 2 + one_update / 2,
        ..Default::default()
    };
    let events = commit_rule_after_updates(config, &[SurfaceId(1), SurfaceId(2), SurfaceId(3)], 1);
    assert!(
        matches!(events[0], ReceiverEvent::Commit { .. }),
        "{events:?}"
    );
    assert!(
        matches!(events[1], ReceiverEvent::Commit { .. }),
        "{events:?}"
    );
    let ReceiverEvent::SurfaceError(error) = &events[2] else {
        panic!("{events:?}")
    };
    assert!(
        error.reason.contains("across all surfaces"),
        "{}",
        error.reason
    );
}

// --- frame-rate limit and queued bytes -------------------------------------------------

fn rate_limited_session(frames_per_second: u32, burst: u32, queued: usize) -> ReceiverSession {
    let mut session = ReceiverSession::new(ReceiverConfig {
        max_frames_per_second: frames_per_second,
        frame_burst: burst,
        max_queued_bytes: queued,
        ..Default::default()
    });
    session.feed(&hello_frame(Encoding::Postcard));
    session
}

fn send(session: &mut ReceiverSession, message: SenderMessage, at: Instant) -> Vec<ReceiverEvent> {
    session.feed_at(&message_frame(&message, Encoding::Postcard), at)
}

fn update_and_commit(
    session: &mut ReceiverSession,
    update: accesskit::TreeUpdate,
    serial: u64,
    at: Instant,
) -> Vec<ReceiverEvent> {
    let surface = SurfaceId(1);
    let mut events = send(session, SenderMessage::Update { surface, update }, at);
    events.extend(send(session, SenderMessage::Commit { surface, serial }, at));
    events
}

#[test]
fn commits_over_the_frame_rate_are_coalesced_in_order_and_lose_nothing() {
    let t0 = Instant::now();
    let mut session = rate_limited_session(10, 2, usize::MAX);
    let surface = SurfaceId(1);
    send(
        &mut session,
        SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        t0,
    );
    // The burst of two goes through at once.
    let events = update_and_commit(&mut session, full_tree("A"), 1, t0);
    assert!(
        matches!(
            events.as_slice(),
            [ReceiverEvent::Commit {
                serial: 1,
                coalesced: 1,
                ..
            }]
        ),
        "{events:?}"
    );
    let events = update_and_commit(&mut session, relabel("B"), 2, t0);
    assert!(
        matches!(events.as_slice(), [ReceiverEvent::Commit { serial: 2, .. }]),
        "{events:?}"
    );
    // Over the rate: held back, coalesced, the sync waits behind them.
    assert!(update_and_commit(&mut session, relabel("C"), 3, t0).is_empty());
    assert!(update_and_commit(&mut session, relabel("D"), 4, t0).is_empty());
    assert!(send(&mut session, SenderMessage::Sync { serial: 9 }, t0).is_empty());
    // Compositor facts are not held back.
    let events = send(
        &mut session,
        SenderMessage::Focus {
            surface: Some(surface),
        },
        t0,
    );
    assert!(
        matches!(events.as_slice(), [ReceiverEvent::Focus { .. }]),
        "{events:?}"
    );
    assert_eq!(session.coalesced_commits(), 2);
    assert!(session.queued_bytes() > 0);
    let deadline = session.next_deadline().expect("commits wait");
    assert_eq!(deadline, t0 + Duration::from_millis(100));
    assert!(session.poll_at(t0 + Duration::from_millis(50)).is_empty());
    let events = session.poll_at(deadline);
    let [ReceiverEvent::Commit {
        serial: 4,
        updates,
        coalesced: 2,
        ..
    }, ReceiverEvent::Sync { serial: 9 }] = events.as_slice()
    else {
        panic!("{events:?}")
    };
    assert_eq!(updates, &vec![relabel("C"), relabel("D")]);
    assert_eq!(session.queued_bytes(), 0);
    assert_eq!(session.next_deadline(), None);
    // After a quiet spell the next commit goes straight through again.
    let later = deadline + Duration::from_secs(1);
    let events = update_and_commit(&mut session, relabel("E"), 5, later);
    assert!(
        matches!(
            events.as_slice(),
            [ReceiverEvent::Commit {
                serial: 5,
                coalesced: 1,
                ..
            }]
        ),
        "{events:?}"
    );
}

#[test]
fn waiting_commits_are_handed_out_before_later_bytes() {
    let t0 = Instant::now();
    let mut session = rate_limited_session(10, 1, usize::MAX);
    let surface = SurfaceId(1);
    send(
        &mut session,
        SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        t0,
    );
    update_and_commit(&mut session, full_tree("A"), 1, t0);
    assert!(update_and_commit(&mut session, relabel("B"), 2, t0).is_empty());
    // Bytes fed after the deadline: the waiting commit comes first, then
    // the new one waits for the following token.
    let t1 = t0 + Duration::from_millis(100);
    let events = update_and_commit(&mut session, relabel("C"), 3, t1);
    assert!(
        matches!(events.as_slice(), [ReceiverEvent::Commit { serial: 2, .. }]),
        "{events:?}"
    );
    let events = session.poll_at(t1 + Duration::from_millis(100));
    assert!(
        matches!(events.as_slice(), [ReceiverEvent::Commit { serial: 3, .. }]),
        "{events:?}"
    );
}

#[test]
fn destroying_a_surface_drops_its_waiting_commits_and_answers_syncs() {
    let t0 = Instant::now();
    let mut session = rate_limited_session(1, 1, usize::MAX);
    let surface = SurfaceId(1);
    send(
        &mut session,
        SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        t0,
    );
    update_and_commit(&mut session, full_tree("A"), 1, t0);
    assert!(update_and_commit(&mut session, relabel("B"), 2, t0).is_empty());
    assert!(send(&mut session, SenderMessage::Sync { serial: 7 }, t0).is_empty());
    let events = send(&mut session, SenderMessage::DestroySurface { surface }, t0);
    assert!(
        matches!(
            events.as_slice(),
            [
                ReceiverEvent::SurfaceDestroyed { .. },
                ReceiverEvent::Sync { serial: 7 }
            ]
        ),
        "{events:?}"
    );
    assert_eq!(session.queued_bytes(), 0);
    assert_eq!(session.next_deadline(), None);
}

#[test]
fn queued_bytes_over_the_limit_reject_with_resync_and_recover() {
    let t0 = Instant::now();
    let one_update = message_frame(
        &SenderMessage::Update {
            surface: SurfaceId(1),
            update: relabel("x"),
        },
        Encoding::Postcard,
    )
    .len()
        - 4;
    // Room for two waiting updates; the third overflows.
    let mut session = rate_limited_session(1, 1, one_update * 2 + one_update / 2);
    let surface = SurfaceId(1);
    send(
        &mut session,
        SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        t0,
    );
    let events = update_and_commit(&mut session, relabel("x"), 1, t0);
    assert!(
        matches!(events.as_slice(), [ReceiverEvent::Commit { .. }]),
        "{events:?}"
    );
    assert!(update_and_commit(&mut session, relabel("x"), 2, t0).is_empty());
    assert!(update_and_commit(&mut session, relabel("x"), 3, t0).is_empty());
    let events = update_and_commit(&mut session, relabel("x"), 4, t0);
    let [ReceiverEvent::SurfaceError(error)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(error.rule, SurfaceRule::QueuedBytes);
    assert_eq!(error.serial, Some(4));
    assert!(error.reason.contains("queued-bytes"), "{}", error.reason);
    let BridgeMessage::Rejected { rule, resync, .. } = error.to_rejected() else {
        panic!("not a rejection")
    };
    assert_eq!(rule, "queued-bytes");
    assert!(resync);
    // The waiting commits were discarded with it; nothing is queued.
    assert_eq!(session.queued_bytes(), 0);
    assert_eq!(session.next_deadline(), None);
    // The resync goes through at the next token.
    let t1 = t0 + Duration::from_secs(1);
    let events = update_and_commit(&mut session, full_tree("again"), 5, t1);
    assert!(
        matches!(events.as_slice(), [ReceiverEvent::Commit { serial: 5, .. }]),
        "{events:?}"
    );
}

#[test]
fn a_zero_frame_rate_means_no_limit() {
    let t0 = Instant::now();
    let mut session = rate_limited_session(0, 1, usize::MAX);
    let surface = SurfaceId(1);
    send(
        &mut session,
        SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        t0,
    );
    update_and_commit(&mut session, full_tree("A"), 1, t0);
    for serial in 2..1000 {
        let events = update_and_commit(&mut session, relabel("B"), serial, t0);
        assert!(
            matches!(
                events.as_slice(),
                [ReceiverEvent::Commit { coalesced: 1, .. }]
            ),
            "{events:?}"
        );
    }
    assert_eq!(session.coalesced_commits(), 0);
}

#[test]
fn a_sync_behind_commits_discarded_by_the_queue_limit_is_answered_at_once() {
    let t0 = Instant::now();
    let one_update = message_frame(
        &SenderMessage::Update {
            surface: SurfaceId(1),
            update: relabel("x"),
        },
        Encoding::Postcard,
    )
    .len()
        - 4;
    let mut session = rate_limited_session(1, 1, one_update + one_update / 2);
    let surface = SurfaceId(1);
    send(
        &mut session,
        SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        t0,
    );
    update_and_commit(&mut session, relabel("x"), 1, t0);
    assert!(update_and_commit(&mut session, relabel("x"), 2, t0).is_empty());
    assert!(send(&mut session, SenderMessage::Sync { serial: 8 }, t0).is_empty());
    // This update overflows: the waiting commit is discarded, nothing waits
    // any more, so the sync before it is answered now.
    let events = send(
        &mut session,
        SenderMessage::Update {
            surface,
            update: relabel("x"),
        },
        t0,
    );
    assert!(
        matches!(events.as_slice(), [ReceiverEvent::Sync { serial: 8 }]),
        "{events:?}"
    );
    assert_eq!(session.next_deadline(), None);
}

/// Found by the `protocol_session` fuzz target (input
/// `protocol/tests/data/fuzz-answers-after-close.bin`): answers to events
/// returned by the feed that closed the session (a `Rejected`, a
/// `SyncDone`) were encoded in JSON once the session was closed, so a
/// postcard sender could not read them, nor the `Error` after them.
#[test]
fn answers_encoded_after_the_closing_feed_keep_the_session_encoding() {
    for encoding in [Encoding::Postcard, Encoding::Json] {
        let mut session = open_session(encoding);
        let mut stream = message_frame(
            &SenderMessage::Commit {
                surface: SurfaceId(9),
                serial: 4,
            },
            encoding,
        );
        stream.extend(message_frame(&SenderMessage::Sync { serial: 5 }, encoding));
        stream.extend(encode_frame(b"\xff\xff\xff").unwrap());
        let events = feed_all(&mut session, &stream);
        assert!(session.is_closed());
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(surface_rule(&events[0]), SurfaceRule::UnknownSurface);
        let ReceiverEvent::SurfaceError(error) = &events[0] else {
            unreachable!()
        };
        // The bridge encodes its answers after the whole feed.
        let rejected = session.encode_bridge_message(&error.to_rejected()).unwrap();
        assert!(matches!(
            decode_reply(&rejected, encoding),
            BridgeMessage::Rejected { serial: 4, .. }
        ));
        let done = session
            .encode_bridge_message(&BridgeMessage::SyncDone { serial: 5 })
            .unwrap();
        assert_eq!(
            decode_reply(&done, encoding),
            BridgeMessage::SyncDone { serial: 5 }
        );
        let (_, reply) = fatal_error(&events);
        assert!(matches!(
            decode_reply(reply, encoding),
            BridgeMessage::Error { .. }
        ));
    }
}

/// The committed fuzz inputs that found bugs replay through the same
/// checks the fuzz target makes: every answer decodes on a sender.
#[test]
fn fuzz_found_inputs_answer_in_the_senders_encoding() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let stream = std::fs::read(dir.join("fuzz-answers-after-close.bin")).unwrap();
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let events = session.feed(&stream);
    let Some(ReceiverEvent::HelloAccepted { encoding, app, .. }) = events.first() else {
        panic!("{events:?}");
    };
    let mut sender = newton_push_protocol::SenderSession::new(newton_push_protocol::Hello {
        protocol: PROTOCOL_VERSION,
        encoding: *encoding,
        app: app.clone(),
        accesskit_version: None,
    });
    let mut answers = Vec::new();
    for event in &events {
        match event {
            ReceiverEvent::HelloAccepted { welcome, .. } => answers.extend(welcome),
            ReceiverEvent::SurfaceError(error) => {
                answers.extend(session.encode_bridge_message(&error.to_rejected()).unwrap())
            }
            ReceiverEvent::Sync { serial } => answers.extend(
                session
                    .encode_bridge_message(&BridgeMessage::SyncDone { serial: *serial })
                    .unwrap(),
            ),
            ReceiverEvent::Fatal { reply, .. } => answers.extend(reply),
            _ => {}
        }
    }
    assert!(session.is_closed());
    sender.feed(&answers).expect("every answer decodes");
}

// ---------------------------------------------------------------------------------------------
// Before the hello: size and time bounds; after it: answers never dropped.
// ---------------------------------------------------------------------------------------------

fn error_reason(reply: &[u8]) -> String {
    match decode_reply(reply, Encoding::Json) {
        BridgeMessage::Error { reason } => reason,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn a_first_frame_announcing_more_than_a_hello_is_refused_before_it_is_buffered() {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    // 60 MB announced (under the 64 MiB frame limit), one chunk of it sent.
    let mut bytes = (60u32 * 1024 * 1024).to_le_bytes().to_vec();
    bytes.extend(std::iter::repeat_n(b'{', 64 * 1024));
    let events = session.feed(&bytes);
    let (error, reply) = fatal_error(&events);
    assert!(
        matches!(error, ProtocolError::HelloTooLarge { announced, max }
            if *announced == 60 * 1024 * 1024 && *max == newton_push_protocol::DEFAULT_MAX_HELLO_BYTES),
        "{error:?}"
    );
    assert!(error_reason(reply).contains("rule `hello-too-large`"));
    assert!(session.is_closed());
    assert!(session.feed(b"more").is_empty());
}

#[test]
fn a_complete_hello_over_the_limit_is_refused_and_not_echoed() {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let name = "\n".repeat(10 * 1024 * 1024);
    let payload = format!(r#"{{"protocol":1,"app":{{"appId":"a","name":"{name}"}}}}"#);
    let events = session.feed(&encode_frame(payload.as_bytes()).unwrap());
    let (error, reply) = fatal_error(&events);
    assert!(
        matches!(error, ProtocolError::HelloTooLarge { .. }),
        "{error:?}"
    );
    assert!(reply.len() < 4096, "reply of {} bytes", reply.len());
}

#[test]
fn a_bad_hello_quoting_a_huge_value_gets_a_bounded_escaped_reason() {
    let mut session = ReceiverSession::new(ReceiverConfig {
        max_hello_bytes: u32::MAX,
        ..ReceiverConfig::default()
    });
    let value = "\u{1b}[31m\n".repeat(200_000);
    let payload = serde_json::to_vec(&serde_json::json!({"protocol": 1,
        "app": {"appId": "a", "name": "A", "pid": value}}))
    .unwrap();
    let events = session.feed(&encode_frame(&payload).unwrap());
    let (_, reply) = fatal_error(&events);
    let reason = error_reason(reply);
    assert!(reason.len() <= 2100, "reason of {} bytes", reason.len());
    assert!(
        !reason.contains('\n') && !reason.contains('\u{1b}'),
        "{reason}"
    );
    assert!(reason.contains("rule `hello`"), "{reason}");
}

#[test]
fn no_hello_within_the_timeout_ends_the_session() {
    let start = Instant::now();
    let config = ReceiverConfig {
        hello_timeout: Some(Duration::from_secs(10)),
        ..ReceiverConfig::default()
    };
    let mut session = ReceiverSession::new_at(config, start);
    assert_eq!(
        session.next_deadline(),
        Some(start + Duration::from_secs(10))
    );
    // Half a hello, trickled: not complete, not due yet.
    let hello = hello_frame(Encoding::Json);
    let half = hello.len() / 2;
    assert!(session
        .feed_at(&hello[..half], start + Duration::from_secs(9))
        .is_empty());
    assert!(session.poll_at(start + Duration::from_secs(9)).is_empty());
    let events = session.poll_at(start + Duration::from_secs(10));
    let (error, reply) = fatal_error(&events);
    assert!(
        matches!(error, ProtocolError::HelloTimeout { seconds: 10 }),
        "{error:?}"
    );
    assert!(error_reason(reply).contains("rule `hello-timeout`"));
    assert!(session.is_closed());
    assert_eq!(session.next_deadline(), None);
}

#[test]
fn a_trickling_sender_hits_the_hello_timeout_on_its_next_bytes() {
    let start = Instant::now();
    let mut session = ReceiverSession::new_at(ReceiverConfig::default(), start);
    let events = session.feed_at(b"\x10", start + Duration::from_secs(11));
    let (error, _) = fatal_error(&events);
    assert!(
        matches!(error, ProtocolError::HelloTimeout { .. }),
        "{error:?}"
    );
}

#[test]
fn the_hello_timeout_no_longer_applies_once_the_hello_is_in() {
    let start = Instant::now();
    let mut session = ReceiverSession::new_at(ReceiverConfig::default(), start);
    let events = session.feed_at(&hello_frame(Encoding::Json), start);
    assert!(matches!(
        events.as_slice(),
        [ReceiverEvent::HelloAccepted { .. }]
    ));
    assert_eq!(session.next_deadline(), None);
    assert!(session
        .poll_at(start + Duration::from_secs(3600))
        .is_empty());
    assert!(!session.is_closed());
}

#[test]
fn hello_followed_by_a_big_frame_in_one_chunk_is_fine() {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let mut bytes = hello_frame(Encoding::Json);
    bytes.extend(message_frame(
        &SenderMessage::CreateSurface {
            surface: SurfaceId(1),
            title: Some("t".repeat(200_000)),
        },
        Encoding::Json,
    ));
    let events = session.feed(&bytes);
    let names: Vec<&str> = events.iter().map(event_name).collect();
    assert_eq!(names, ["hello", "created"]);
}

#[test]
fn unread_replies_over_the_limit_close_with_their_rule() {
    let mut session = ReceiverSession::new(ReceiverConfig {
        max_unread_reply_bytes: 1000,
        ..ReceiverConfig::default()
    });
    session.feed(&hello_frame(Encoding::Postcard));
    assert!(session.check_unread_replies(1000).is_none());
    let Some(ReceiverEvent::Fatal { error, reply }) = session.check_unread_replies(1001) else {
        panic!("expected a fatal event");
    };
    assert!(matches!(
        error,
        ProtocolError::UnreadReplies {
            queued: 1001,
            max: 1000
        }
    ));
    // In the session's encoding, like every answer after the hello.
    match decode_reply(&reply, Encoding::Postcard) {
        BridgeMessage::Error { reason } => assert!(reason.contains("rule `unread-replies`")),
        other => panic!("{other:?}"),
    }
    assert!(session.is_closed());
    assert!(session.check_unread_replies(5000).is_none());
}

#[test]
fn hello_with_another_accesskit_minor_is_refused_naming_both_versions() {
    for encoding in ["json", "postcard"] {
        let mut session = ReceiverSession::new(ReceiverConfig::default());
        let hello = format!(
            r#"{{"protocol":1,"encoding":"{encoding}","accesskitVersion":"0.26.0","app":{{"appId":"a","name":"A"}}}}"#
        );
        let events = feed_all(&mut session, &encode_frame(hello.as_bytes()).unwrap());
        let (error, reply) = fatal_error(&events);
        assert!(
            matches!(error, ProtocolError::IncompatibleAccesskit { got } if got == "0.26.0"),
            "{error}"
        );
        // Refusals of a hello are JSON whatever encoding it asked for.
        let BridgeMessage::Error { reason } = decode_reply(reply, Encoding::Json) else {
            panic!()
        };
        assert!(
            reason.contains("rule `accesskit-version`")
                && reason.contains("\"0.26.0\"")
                && reason.contains(newton_push_protocol::ACCESSKIT_VERSION),
            "{reason}"
        );
    }
}

#[test]
fn welcome_announces_accesskit_version_and_capabilities() {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let events = session.feed(&hello_frame(Encoding::Json));
    let [ReceiverEvent::HelloAccepted { welcome, .. }] = events.as_slice() else {
        panic!("{events:?}");
    };
    let BridgeMessage::Welcome {
        accesskit_version,
        capabilities,
        ..
    } = decode_reply(welcome, Encoding::Json)
    else {
        panic!()
    };
    assert_eq!(
        accesskit_version.as_deref(),
        Some(newton_push_protocol::ACCESSKIT_VERSION)
    );
    assert_eq!(capabilities, newton_push_protocol::BRIDGE_CAPABILITIES);
}

/// The version the hello announces is the accesskit the workspace builds
/// with: `ACCESSKIT_VERSION` must follow the pin in Cargo.toml/Cargo.lock.
#[test]
fn accesskit_version_constant_matches_the_lock_file() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .expect("read the workspace Cargo.lock");
    let locked = lock
        .split("[[package]]")
        .find(|package| package.contains("\nname = \"accesskit\"\n"))
        .and_then(|package| package.lines().find(|l| l.starts_with("version = ")))
        .map(|line| line.trim_start_matches("version = ").trim_matches('"'))
        .expect("accesskit in Cargo.lock");
    assert_eq!(locked, newton_push_protocol::ACCESSKIT_VERSION);
}

#[test]
fn a_huge_accesskit_version_is_not_echoed_whole() {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let version = "9".repeat(10_000);
    let hello = format!(
        r#"{{"protocol":1,"accesskitVersion":"{version}","app":{{"appId":"a","name":"A"}}}}"#
    );
    let events = feed_all(&mut session, &encode_frame(hello.as_bytes()).unwrap());
    let (error, reply) = fatal_error(&events);
    assert_eq!(error.rule(), "accesskit-version");
    let BridgeMessage::Error { reason } = decode_reply(reply, Encoding::Json) else {
        panic!()
    };
    assert!(reason.len() < 2000, "{}", reason.len());
}
