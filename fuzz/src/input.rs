//! Reading structured choices out of fuzzer bytes. Past the end every read
//! returns zero, so any byte string is a complete input and the fuzzer's
//! mutations change decisions, not validity.

/// A cursor over the fuzzer's bytes.
pub struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, at: 0 }
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.at >= self.data.len()
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.at)
    }

    /// The next byte (0 past the end).
    pub fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// The next `n` bytes (fewer at the end).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.at.min(self.data.len());
        let end = start.saturating_add(n).min(self.data.len());
        self.at = start + n;
        self.data.get(start..end).unwrap_or_default()
    }

    /// Every byte not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        let start = self.at.min(self.data.len());
        self.at = self.data.len();
        self.data.get(start..).unwrap_or_default()
    }

    /// A little-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => usize::from(self.byte()) % n,
            _ => usize::from(self.u16()) % n,
        }
    }

    /// True with probability about 1 / `n`.
    pub fn one_in(&mut self, n: u8) -> bool {
        self.byte().is_multiple_of(n.max(1))
    }

    /// One element of `list` (`fallback` when it is empty).
    pub fn pick<T: Copy>(&mut self, list: &[T], fallback: T) -> T {
        list.get(self.below(list.len()))
            .copied()
            .unwrap_or(fallback)
    }

    /// An i32 that is usually interesting: small values around `near`
    /// (an offset, count or index of the object), extremes, or anything.
    pub fn i32_near(&mut self, near: i32) -> i32 {
        match self.byte() % 8 {
            0..=3 => near.saturating_add(i32::from(self.byte() as i8) % 6),
            4 => i32::from(self.byte() as i8),
            5 => self.pick(
                &[i32::MIN, i32::MIN + 1, -2, -1, 0, 1, i32::MAX - 1, i32::MAX],
                0,
            ),
            6 => i32::from(self.u16()),
            _ => self.u32() as i32,
        }
    }

    /// A u32 enum value: usually a valid one below `valid`, sometimes just
    /// past it or anything.
    pub fn enum_u32(&mut self, valid: u32) -> u32 {
        match self.byte() % 8 {
            0..=5 => u32::from(self.byte()) % valid.max(1),
            6 => valid.saturating_add(u32::from(self.byte() % 3)),
            _ => self.pick(&[u32::MAX, i32::MAX as u32, 1 << 31, 255], u32::MAX),
        }
    }

    /// A short string: usually from `words`, sometimes raw UTF-8-lossy bytes.
    pub fn string(&mut self, words: &[&str]) -> String {
        if words.is_empty() || self.one_in(4) {
            let n = self.below(12);
            String::from_utf8_lossy(self.bytes(n)).into_owned()
        } else {
            self.pick(words, "").to_owned()
        }
    }
}
