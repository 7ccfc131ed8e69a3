//! Property tests: chunking never changes what is decoded, and no input
//! makes a session panic.

mod common;

use common::*;
use newton_push_protocol::{
    Encoding, FrameDecoder, ReceiverConfig, ReceiverSession, SenderSession,
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

proptest! {
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
