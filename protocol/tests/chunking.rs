//! Property tests: chunking never changes what is decoded, and no input
//! makes a session panic.

mod common;

use common::*;
use newton_push_protocol::{
    Encoding, FrameDecoder, Geometry, ReceiverConfig, ReceiverSession, SenderMessage,
    SenderSession, SurfaceId,
};
use proptest::prelude::*;

/// Splits `bytes` at the given cut points (taken modulo the length).
fn chunks<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points
        .windows(2)
        .filter_map(|pair| bytes.get(pair[0]..pair[1]))
        .collect()
}

fn events_of(stream: &[u8], cuts: &[usize]) -> String {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let events: Vec<_> = chunks(stream, cuts)
        .into_iter()
        .flat_map(|chunk| session.feed(chunk))
        .collect();
    format!("{events:?}")
}

fn encoding_strategy() -> impl Strategy<Value = Encoding> {
    prop_oneof![Just(Encoding::Json), Just(Encoding::Postcard)]
}

/// Any sender message, on a handful of surfaces so that valid and
/// unknown-surface cases both occur.
fn message_strategy() -> impl Strategy<Value = SenderMessage> {
    let surface = (0u32..4).prop_map(SurfaceId);
    prop_oneof![
        (surface.clone(), proptest::option::of("[a-z ]{0,12}"))
            .prop_map(|(surface, title)| SenderMessage::CreateSurface { surface, title }),
        (surface.clone(), "[a-zA-Zé ]{0,20}", any::<bool>()).prop_map(|(surface, label, full)| {
            let update = if full {
                full_tree(&label)
            } else {
                relabel(&label)
            };
            SenderMessage::Update { surface, update }
        }),
        (surface.clone(), any::<u64>())
            .prop_map(|(surface, serial)| SenderMessage::Commit { surface, serial }),
        proptest::option::of(surface.clone()).prop_map(|surface| SenderMessage::Focus { surface }),
        (surface.clone(), any::<i32>(), any::<i32>(), 0.0f64..4.0).prop_map(
            |(surface, x, y, scale)| {
                SenderMessage::Geometry {
                    surface,
                    geometry: Geometry {
                        x,
                        y,
                        width: 10,
                        height: 10,
                        scale,
                    },
                }
            }
        ),
        surface.prop_map(|surface| SenderMessage::DestroySurface { surface }),
        any::<u64>().prop_map(|serial| SenderMessage::Sync { serial }),
    ]
}

fn stream_of(encoding: Encoding, messages: &[SenderMessage]) -> Vec<u8> {
    let mut stream = hello_frame(encoding);
    for message in messages {
        stream.extend(message_frame(message, encoding));
    }
    stream
}

proptest! {
    #[test]
    fn random_streams_decode_identically_under_random_chunking(
        encoding in encoding_strategy(),
        messages in proptest::collection::vec(message_strategy(), 0..30),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let stream = stream_of(encoding, &messages);
        let whole = events_of(&stream, &[]);
        prop_assert!(!whole.contains("Fatal"), "a valid stream never fails: {}", whole);
        prop_assert_eq!(events_of(&stream, &cuts), whole);
    }

    #[test]
    fn mutated_streams_never_panic(
        encoding in encoding_strategy(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
    ) {
        let mut stream = sample_stream(encoding);
        let len = stream.len();
        for (position, value) in flips {
            if let Some(byte) = stream.get_mut(position % len) {
                *byte = value;
            }
        }
        let _ = events_of(&stream, &[]);
    }

    #[test]
    fn random_chunkings_decode_identically(
        encoding in encoding_strategy(),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let stream = sample_stream(encoding);
        prop_assert_eq!(events_of(&stream, &cuts), events_of(&stream, &[]));
    }

    #[test]
    fn frame_decoder_is_chunking_independent(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..50), 0..10),
        cuts in proptest::collection::vec(any::<usize>(), 0..30),
    ) {
        let stream: Vec<u8> = payloads
            .iter()
            .flat_map(|payload| newton_push_protocol::encode_frame(payload).unwrap())
            .collect();
        let mut decoder = FrameDecoder::new(64);
        let mut out = Vec::new();
        for chunk in chunks(&stream, &cuts) {
            decoder.feed(chunk, &mut out).unwrap();
        }
        prop_assert_eq!(out, payloads);
        prop_assert!(decoder.is_idle());
    }

    #[test]
    fn garbage_never_panics_the_receiver(
        garbage in proptest::collection::vec(any::<u8>(), 0..512),
        after_hello in any::<bool>(),
        encoding in encoding_strategy(),
    ) {
        let mut session = ReceiverSession::new(ReceiverConfig { max_frame_bytes: 256, ..Default::default() });
        if after_hello {
            session.feed(&hello_frame(encoding));
        }
        let _ = session.feed(&garbage);
    }

    #[test]
    fn framed_garbage_never_panics_the_receiver(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
        encoding in encoding_strategy(),
    ) {
        let mut session = ReceiverSession::new(ReceiverConfig::default());
        session.feed(&hello_frame(encoding));
        for payload in &payloads {
            let _ = session.feed(&newton_push_protocol::encode_frame(payload).unwrap());
        }
    }

    #[test]
    fn garbage_never_panics_the_sender(
        garbage in proptest::collection::vec(any::<u8>(), 0..512),
        encoding in encoding_strategy(),
    ) {
        let mut session = SenderSession::new(hello(encoding));
        let _ = session.feed(&garbage);
    }
}
