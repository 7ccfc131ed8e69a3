//! Length-prefixed framing: every frame is a `u32` little-endian payload
//! length followed by that many payload bytes.

use thiserror::Error;

/// Size of the length prefix in bytes.
pub const LENGTH_PREFIX_BYTES: usize = 4;

/// A framing failure. Both variants are fatal for the connection.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FrameError {
    /// A length prefix announced more than the receiver accepts. Detected as
    /// soon as the prefix is complete, before any of the payload is buffered.
    #[error(
        "frame too large: the length prefix announces {announced} bytes but at most \
         {max} are accepted (rule `max-frame-bytes`); split the update or raise the limit"
    )]
    Oversize {
        /// Length announced by the prefix.
        announced: u32,
        /// The receiver's limit.
        max: u32,
    },
    /// A payload to encode does not fit the `u32` length prefix.
    #[error("payload of {len} bytes cannot be framed: a frame holds at most {max} bytes")]
    PayloadTooLarge {
        /// Length of the payload.
        len: usize,
        /// The largest length that may be framed.
        max: u32,
    },
}

/// Frames one payload: length prefix plus payload.
pub fn encode_frame(payload: &[u8]) -> Result<Vec<u8>, FrameError> {
    let len = u32::try_from(payload.len()).map_err(|_| FrameError::PayloadTooLarge {
        len: payload.len(),
        max: u32::MAX,
    })?;
    let mut frame = Vec::with_capacity(LENGTH_PREFIX_BYTES + payload.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(payload);
    Ok(frame)
}

/// Where the decoder is inside the current frame.
#[derive(Debug)]
enum Stage {
    /// Collecting the length prefix; holds the bytes seen so far.
    Prefix {
        bytes: [u8; LENGTH_PREFIX_BYTES],
        filled: usize,
    },
    /// Collecting a payload of the given total length.
    Payload { len: usize, bytes: Vec<u8> },
    /// A fatal error happened; every later call repeats it.
    Failed(FrameError),
}

impl Stage {
    fn empty_prefix() -> Self {
        Stage::Prefix {
            bytes: [0; LENGTH_PREFIX_BYTES],
            filled: 0,
        }
    }
}

/// Incremental, sans-IO frame decoder: feed it byte chunks of any size,
/// collect complete payloads.
#[derive(Debug)]
pub struct FrameDecoder {
    max_frame_bytes: u32,
    stage: Stage,
}

impl FrameDecoder {
    /// A decoder refusing payloads longer than `max_frame_bytes`.
    pub fn new(max_frame_bytes: u32) -> Self {
        Self {
            max_frame_bytes,
            stage: Stage::empty_prefix(),
        }
    }

    /// The limit this decoder enforces.
    pub fn max_frame_bytes(&self) -> u32 {
        self.max_frame_bytes
    }

    /// The announced payload length of the frame being collected, once its
    /// prefix is complete (`None` between frames or inside a prefix).
    pub fn partial_len(&self) -> Option<usize> {
        match &self.stage {
            Stage::Payload { len, .. } => Some(*len),
            _ => None,
        }
    }

    /// Bytes of the partial frame received and buffered so far (its
    /// payload, or the part of the length prefix seen): what a peer that
    /// stops mid-frame holds in memory.
    pub fn buffered_bytes(&self) -> usize {
        match &self.stage {
            Stage::Prefix { filled, .. } => *filled,
            Stage::Payload { bytes, .. } => bytes.len(),
            Stage::Failed(_) => 0,
        }
    }

    /// True when no partial frame is buffered (a clean place to stop).
    pub fn is_idle(&self) -> bool {
        matches!(self.stage, Stage::Prefix { filled: 0, .. })
    }

    /// Consumes `bytes`, appending every payload completed by them to `out`
    /// in stream order. On an oversize prefix, returns the error after the
    /// payloads completed before it; the decoder then stays failed.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), FrameError> {
        while !bytes.is_empty() {
            let used = self.step(bytes, out)?;
            bytes = bytes.get(used..).unwrap_or_default();
        }
        match &self.stage {
            Stage::Failed(error) => Err(error.clone()),
            _ => Ok(()),
        }
    }

    /// Consumes a prefix of `bytes`, returning how many bytes it used.
    fn step(&mut self, bytes: &[u8], out: &mut Vec<Vec<u8>>) -> Result<usize, FrameError> {
        let max = self.max_frame_bytes;
        match &mut self.stage {
            Stage::Failed(error) => Err(error.clone()),
            Stage::Prefix {
                bytes: prefix,
                filled,
            } => {
                let take = (LENGTH_PREFIX_BYTES - *filled).min(bytes.len());
                prefix[*filled..*filled + take].copy_from_slice(&bytes[..take]);
                *filled += take;
                if *filled == LENGTH_PREFIX_BYTES {
                    let announced = u32::from_le_bytes(*prefix);
                    self.start_payload(announced, max, out)?;
                }
                Ok(take)
            }
            Stage::Payload {
                len,
                bytes: payload,
            } => {
                let take = (*len - payload.len()).min(bytes.len());
                payload.extend_from_slice(&bytes[..take]);
                if payload.len() == *len {
                    out.push(std::mem::take(payload));
                    self.stage = Stage::empty_prefix();
                }
                Ok(take)
            }
        }
    }

    /// Moves on to the payload once the prefix is known; checks the limit
    /// first so an oversize frame never gets a buffer.
    fn start_payload(
        &mut self,
        announced: u32,
        max: u32,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<(), FrameError> {
        if announced > max {
            let error = FrameError::Oversize { announced, max };
            self.stage = Stage::Failed(error.clone());
            return Err(error);
        }
        if announced == 0 {
            out.push(Vec::new());
            self.stage = Stage::empty_prefix();
        } else {
            // The buffer grows with the bytes that actually arrive, so a peer
            // announcing a large frame and sending nothing costs nothing.
            let len = usize::try_from(announced).unwrap_or(usize::MAX);
            self.stage = Stage::Payload {
                len,
                bytes: Vec::new(),
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(decoder: &mut FrameDecoder, bytes: &[u8]) -> Result<Vec<Vec<u8>>, FrameError> {
        let mut out = Vec::new();
        decoder.feed(bytes, &mut out)?;
        Ok(out)
    }

    #[test]
    fn encodes_little_endian_length_then_payload() {
        let frame = encode_frame(b"abc").unwrap();
        assert_eq!(frame, vec![3, 0, 0, 0, b'a', b'b', b'c']);
    }

    #[test]
    fn decodes_several_frames_from_one_chunk() {
        let mut stream = encode_frame(b"one").unwrap();
        stream.extend(encode_frame(b"").unwrap());
        stream.extend(encode_frame(b"three").unwrap());
        let mut decoder = FrameDecoder::new(100);
        let frames = decode_all(&mut decoder, &stream).unwrap();
        assert_eq!(frames, vec![b"one".to_vec(), Vec::new(), b"three".to_vec()]);
        assert!(decoder.is_idle());
    }

    #[test]
    fn decodes_byte_at_a_time() {
        let mut stream = encode_frame(b"hello").unwrap();
        stream.extend(encode_frame(b"world!").unwrap());
        let mut decoder = FrameDecoder::new(100);
        let mut frames = Vec::new();
        for byte in &stream {
            decoder
                .feed(std::slice::from_ref(byte), &mut frames)
                .unwrap();
        }
        assert_eq!(frames, vec![b"hello".to_vec(), b"world!".to_vec()]);
    }

    #[test]
    fn partial_frame_is_not_yielded() {
        let stream = encode_frame(b"hello").unwrap();
        let mut decoder = FrameDecoder::new(100);
        let frames = decode_all(&mut decoder, &stream[..6]).unwrap();
        assert!(frames.is_empty());
        assert!(!decoder.is_idle());
    }

    #[test]
    fn oversize_prefix_fails_before_payload_arrives() {
        let mut decoder = FrameDecoder::new(10);
        let error = decode_all(&mut decoder, &11u32.to_le_bytes()).unwrap_err();
        assert_eq!(
            error,
            FrameError::Oversize {
                announced: 11,
                max: 10
            }
        );
        // The decoder stays failed, even for valid input.
        let again = decode_all(&mut decoder, &encode_frame(b"x").unwrap()).unwrap_err();
        assert_eq!(again, error);
    }

    #[test]
    fn huge_prefix_does_not_allocate_the_announced_size() {
        let mut decoder = FrameDecoder::new(u32::MAX);
        let mut out = Vec::new();
        decoder.feed(&u32::MAX.to_le_bytes(), &mut out).unwrap();
        decoder.feed(b"abc", &mut out).unwrap();
        match &decoder.stage {
            Stage::Payload { bytes, .. } => assert!(bytes.capacity() < 1024),
            other => panic!("unexpected stage {other:?}"),
        }
    }

    #[test]
    fn frames_before_an_oversize_prefix_are_kept() {
        let mut stream = encode_frame(b"ok").unwrap();
        stream.extend(1000u32.to_le_bytes());
        let mut decoder = FrameDecoder::new(100);
        let mut out = Vec::new();
        let error = decoder.feed(&stream, &mut out).unwrap_err();
        assert_eq!(out, vec![b"ok".to_vec()]);
        assert!(matches!(
            error,
            FrameError::Oversize {
                announced: 1000,
                ..
            }
        ));
    }

    #[test]
    fn partial_len_is_the_announced_length_of_the_frame_being_collected() {
        let mut decoder = FrameDecoder::new(1000);
        let mut out = Vec::new();
        assert_eq!(decoder.partial_len(), None);
        decoder.feed(&[200, 0], &mut out).unwrap();
        assert_eq!(decoder.partial_len(), None);
        decoder.feed(&[0, 0, 1, 2], &mut out).unwrap();
        assert_eq!(decoder.partial_len(), Some(200));
    }

    #[test]
    fn frame_at_exactly_the_limit_is_accepted() {
        let mut decoder = FrameDecoder::new(3);
        let frames = decode_all(&mut decoder, &encode_frame(b"abc").unwrap()).unwrap();
        assert_eq!(frames, vec![b"abc".to_vec()]);
    }
}
