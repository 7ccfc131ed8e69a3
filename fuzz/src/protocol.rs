//! The `protocol_session` harness: a sender byte stream (a hello, then
//! create/update/commit/focus/geometry/destroy/sync/goodbye frames in JSON or
//! postcard, some corrupted, or raw bytes) fed to a `ReceiverSession` in
//! arbitrary chunks.
//!
//! Checked on every input:
//! * the events do not depend on how the stream is cut into chunks;
//! * nothing follows a `Fatal` or `Goodbye`; `HelloAccepted` comes first and
//!   once; commits, geometry and destruction only name live surfaces;
//! * every reply the session hands out (Welcome, Error, and the Rejected /
//!   SyncDone answers it encodes) decodes on a `SenderSession` with the same
//!   hello;
//! * the committed updates, applied to an `AppReplica` as the bridge does,
//!   go through `commit_checked` (a rejected commit changes nothing, an
//!   accepted one leaves a tree every consumer query can walk).
//!
//! Input layout: byte 0 = mode (bit 0: raw stream, bit 1: cut at random
//! points instead of fixed sizes), byte 1 = chunk size seed, then either the
//! raw stream or the structured description read by [`build_stream`].

use std::collections::BTreeSet;

use accesskit::TreeUpdate;
use newton_cache::AppReplica;
use newton_push_protocol::{
    encode_frame, encode_hello, encode_sender_message, AppInfo, BridgeMessage, Encoding, Geometry,
    Hello, ReceiverConfig, ReceiverEvent, ReceiverSession, SenderMessage, SenderSession, SurfaceId,
};

use crate::input::Input;
use crate::trees::{edit_from_input, tree_from_input};
use crate::{commit_checked, fuzz_limits, Outcome};

/// Small limits so that every limit is reachable.
pub fn fuzz_receiver_config() -> ReceiverConfig {
    ReceiverConfig {
        max_frame_bytes: 16 * 1024,
        max_pending_bytes_per_surface: 8 * 1024,
        max_pending_nodes_per_surface: 96,
        max_queued_bytes: 12 * 1024,
        max_surfaces: 4,
        // Off: the frame-rate limit holds commits until a wall-clock deadline, which
        // would make the chunking-invariance check depend on timing. It has its own
        // unit tests (protocol/tests/receiver.rs) with time passed explicitly.
        max_frames_per_second: 0,
        frame_burst: 0,
        // Off for the same reason: a wall-clock deadline.
        hello_timeout: None,
        ..ReceiverConfig::default()
    }
}

/// The fuzz entry point.
pub fn protocol_session(data: &[u8]) -> Outcome {
    let mut input = Input::new(data);
    let mode = input.byte();
    let cut_seed = input.byte();
    let (stream, hello) = if mode & 1 == 1 {
        (input.rest().to_vec(), None)
    } else {
        build_stream(&mut input)
    };
    let cuts = cut_points(&stream, mode & 2 == 2, cut_seed, &mut Input::new(data));
    check_stream(&stream, &cuts, hello.as_ref())
}

/// The byte stream a `protocol_session` input describes (for turning a
/// finding into a protocol test).
pub fn stream_of(data: &[u8]) -> Vec<u8> {
    let mut input = Input::new(data);
    let mode = input.byte();
    let _ = input.byte();
    if mode & 1 == 1 {
        input.rest().to_vec()
    } else {
        build_stream(&mut input).0
    }
}

/// Seeds from a recorded stream (`*.jsonl`): the hello and every message
/// framed as a sender sends them, once in JSON and once in postcard, as raw
/// `protocol_session` inputs (mode 1, chunk seed 7). `None` when the text is
/// not a recording.
pub fn seeds_from_recording(text: &str) -> Option<[Vec<u8>; 2]> {
    let mut lines = text
        .lines()
        .filter_map(|line| serde_json::from_str::<newton_push_protocol::RecordedLine>(line).ok());
    let hello = lines.next()?.hello?;
    let messages: Vec<SenderMessage> = lines.filter_map(|line| line.message).collect();
    let seed = |encoding: Encoding| {
        let mut out = vec![1u8, 7u8];
        let hello = Hello {
            encoding,
            ..hello.clone()
        };
        out.extend(encode_frame(&encode_hello(&hello).unwrap_or_default()).unwrap_or_default());
        for message in &messages {
            let payload = encode_sender_message(message, encoding).unwrap_or_default();
            out.extend(encode_frame(&payload).unwrap_or_default());
        }
        out
    };
    Some([seed(Encoding::Json), seed(Encoding::Postcard)])
}

/// Cut points: fixed-size chunks (1..=16 bytes, from `seed`) or points
/// taken from the input bytes.
fn cut_points(stream: &[u8], random: bool, seed: u8, input: &mut Input) -> Vec<usize> {
    let mut cuts = Vec::new();
    if random {
        for _ in 0..16 {
            cuts.push(input.below(stream.len() + 1));
        }
        cuts.sort_unstable();
    } else {
        let size = 1 + usize::from(seed % 16);
        cuts.extend((size..stream.len()).step_by(size));
    }
    cuts
}

/// Runs the checks on one stream; `hello` is the hello the stream starts
/// with when the harness built it.
pub fn check_stream(stream: &[u8], cuts: &[usize], hello: Option<&Hello>) -> Outcome {
    let mut whole = ReceiverSession::new(fuzz_receiver_config());
    let events = whole.feed(stream);
    let mut chunked = ReceiverSession::new(fuzz_receiver_config());
    let mut pieces = Vec::new();
    let mut from = 0;
    for cut in cuts.iter().copied().chain([stream.len()]) {
        let to = cut.clamp(from, stream.len());
        pieces.extend(chunked.feed(stream.get(from..to).unwrap_or_default()));
        from = to;
    }
    assert_eq!(
        format!("{events:?}"),
        format!("{pieces:?}"),
        "chunking changed the decoded events"
    );
    assert_eq!(whole.is_closed(), chunked.is_closed());
    check_event_order(&events);
    check_replies(&whole, &events, hello);
    apply(&events)
}

fn check_event_order(events: &[ReceiverEvent]) {
    let mut live: BTreeSet<SurfaceId> = BTreeSet::new();
    for (i, event) in events.iter().enumerate() {
        match event {
            ReceiverEvent::HelloAccepted { .. } => assert_eq!(i, 0, "hello accepted late"),
            ReceiverEvent::Fatal { .. } | ReceiverEvent::Goodbye => {
                assert_eq!(i + 1, events.len(), "events after the end of the session")
            }
            ReceiverEvent::SurfaceCreated { surface, .. } => {
                assert!(live.insert(*surface), "surface {surface:?} created twice");
                assert!(live.len() <= fuzz_receiver_config().max_surfaces);
            }
            ReceiverEvent::SurfaceDestroyed { surface } => {
                assert!(
                    live.remove(surface),
                    "unknown surface {surface:?} destroyed"
                )
            }
            ReceiverEvent::Commit { surface, .. } | ReceiverEvent::Geometry { surface, .. } => {
                assert!(
                    live.contains(surface),
                    "event for unknown surface {surface:?}"
                )
            }
            ReceiverEvent::Focus {
                surface: Some(surface),
            } => assert!(live.contains(surface), "focus on unknown surface"),
            _ => {}
        }
        if i > 0 {
            assert!(
                !matches!(event, ReceiverEvent::HelloAccepted { .. }),
                "second hello accepted"
            );
        }
    }
    if let Some(first) = events.first() {
        assert!(
            matches!(
                first,
                ReceiverEvent::HelloAccepted { .. } | ReceiverEvent::Fatal { .. }
            ),
            "first event is neither the hello nor a fatal error: {first:?}"
        );
    }
}

/// Every answer the session produces decodes on the sender's side.
fn check_replies(session: &ReceiverSession, events: &[ReceiverEvent], hello: Option<&Hello>) {
    let hello = match (events.first(), hello) {
        (Some(ReceiverEvent::HelloAccepted { app, encoding, .. }), _) => Hello {
            protocol: 1,
            encoding: *encoding,
            app: app.clone(),
            accesskit_version: None,
        },
        (_, Some(hello)) => hello.clone(),
        _ => Hello {
            protocol: 1,
            encoding: Encoding::Json,
            app: AppInfo::default(),
            accesskit_version: None,
        },
    };
    let mut sender = SenderSession::new(hello);
    let mut bytes = Vec::new();
    for event in events {
        match event {
            ReceiverEvent::HelloAccepted { welcome, .. } => bytes.extend_from_slice(welcome),
            ReceiverEvent::Fatal { reply, .. } => {
                assert!(!reply.is_empty(), "fatal error without a reply");
                bytes.extend_from_slice(reply);
            }
            ReceiverEvent::SurfaceError(error) => {
                match session.encode_bridge_message(&error.to_rejected()) {
                    Ok(frame) => bytes.extend(frame),
                    Err(error) => panic!("Rejected does not encode: {error}"),
                }
            }
            ReceiverEvent::Sync { serial } => {
                match session.encode_bridge_message(&BridgeMessage::SyncDone { serial: *serial }) {
                    Ok(frame) => bytes.extend(frame),
                    Err(error) => panic!("SyncDone does not encode: {error}"),
                }
            }
            _ => {}
        }
    }
    // A fatal error before the hello is answered in JSON, which a sender
    // waiting for its Welcome reads; after the hello the Error comes in the
    // session's encoding, which it reads too.
    if let Err(error) = sender.feed(&bytes) {
        panic!("the sender cannot read the bridge's answers: {error}");
    }
}

/// Applies the events to a replica the way the bridge does.
fn apply(events: &[ReceiverEvent]) -> Outcome {
    let mut app = AppReplica::new(fuzz_limits());
    let mut outcome = Outcome::default();
    for event in events {
        match event {
            ReceiverEvent::SurfaceCreated { surface, title } => {
                let _ = app.create_surface(*surface, title.clone());
            }
            ReceiverEvent::Commit {
                surface,
                updates,
                encoded_bytes,
                ..
            } => commit_checked(
                &mut app,
                *surface,
                updates.clone(),
                *encoded_bytes,
                &mut outcome,
            ),
            ReceiverEvent::Focus { surface } => {
                let _ = app.set_focused_surface(*surface);
            }
            ReceiverEvent::Geometry { surface, geometry } => {
                let _ = app.set_geometry(*surface, *geometry);
            }
            ReceiverEvent::SurfaceDestroyed { surface } => {
                let _ = app.destroy_surface(*surface);
            }
            ReceiverEvent::Goodbye => {
                let _ = app.clear();
            }
            _ => {}
        }
    }
    outcome
}

/// A stream described by the input: the hello, then up to 48 frames.
pub fn build_stream(input: &mut Input) -> (Vec<u8>, Option<Hello>) {
    let encoding = if input.one_in(2) {
        Encoding::Postcard
    } else {
        Encoding::Json
    };
    let hello = Hello {
        protocol: 1,
        encoding,
        app: AppInfo {
            app_id: if input.one_in(16) {
                input.string(&[" ", ""])
            } else {
                "org.example.App".to_owned()
            },
            name: input.string(&["App", ""]),
            pid: input.one_in(2).then(|| input.u32()),
            toolkit_name: None,
            toolkit_version: None,
        },
        accesskit_version: None,
    };
    let mut stream = Vec::new();
    match input.byte() % 16 {
        // No hello: a message first.
        0 => {}
        // Another protocol version or a raw first frame.
        1 => {
            let raw = input.string(&[
                r#"{"protocol":2,"app":{"appId":"a","name":"A"}}"#,
                r#"{"protocol":1,"encoding":"cbor","app":{"appId":"a","name":"A"}}"#,
                r#""goodbye""#,
                "{}",
            ]);
            stream.extend(encode_frame(raw.as_bytes()).unwrap_or_default());
        }
        _ => stream
            .extend(encode_frame(&encode_hello(&hello).unwrap_or_default()).unwrap_or_default()),
    }
    let mut trees: Vec<TreeUpdate> = Vec::new();
    // Mostly the surface created last, so that updates meet commits.
    let mut current = SurfaceId(1);
    for step in 0..input.below(48) {
        if input.is_empty() {
            break;
        }
        let surface = if input.one_in(4) {
            SurfaceId(u32::from(input.byte() % 5))
        } else {
            current
        };
        let op = if step == 0 && !input.one_in(8) {
            0
        } else {
            input.byte() % 12
        };
        let message = match op {
            0 => SenderMessage::CreateSurface {
                surface: {
                    current = surface;
                    surface
                },
                title: input.one_in(2).then(|| input.string(&["Title", ""])),
            },
            1..=3 => {
                let update = match trees.last() {
                    Some(base) if input.one_in(2) => edit_from_input(input, base),
                    _ => {
                        let tree = tree_from_input(input);
                        trees.push(tree.clone());
                        tree
                    }
                };
                SenderMessage::Update { surface, update }
            }
            4 | 5 => SenderMessage::Commit {
                surface,
                serial: u64::from(input.u32()),
            },
            6 => SenderMessage::Focus {
                surface: (!input.one_in(4)).then_some(surface),
            },
            7 => SenderMessage::Geometry {
                surface,
                geometry: Geometry {
                    x: input.i32_near(0),
                    y: input.i32_near(0),
                    width: input.u32(),
                    height: input.u32(),
                    scale: input.pick(&[1.0, 2.0, 0.0, -1.0, f64::NAN, f64::INFINITY, 1e-300], 1.0),
                },
            },
            8 => SenderMessage::DestroySurface { surface },
            9 => SenderMessage::Sync {
                serial: u64::from(input.u32()),
            },
            10 if input.one_in(4) => SenderMessage::Goodbye,
            _ => {
                // A raw frame: garbage, a truncated or oversize prefix, or an
                // empty payload.
                match input.byte() % 4 {
                    0 => {
                        let n = input.below(24);
                        stream.extend(encode_frame(input.bytes(n)).unwrap_or_default());
                    }
                    1 => stream.extend(input.u32().to_le_bytes()),
                    2 => stream.extend(encode_frame(&[]).unwrap_or_default()),
                    _ => stream.extend((16 * 1024 + 1u32).to_le_bytes()),
                }
                continue;
            }
        };
        let Ok(mut payload) = encode_sender_message(&message, encoding) else {
            continue;
        };
        // Corrupt one byte now and then (a postcard payload stays a frame
        // of the right length, so decoding, not framing, has to cope).
        if input.one_in(8) && !payload.is_empty() {
            let at = input.below(payload.len());
            if let Some(b) = payload.get_mut(at) {
                *b = input.byte();
            }
        }
        stream.extend(encode_frame(&payload).unwrap_or_default());
    }
    (stream, Some(hello))
}
