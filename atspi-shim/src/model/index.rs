//! Index conversions between AT-SPI's `i` and Rust's `usize`.

use crate::model::error::CallError;

/// Converts an index sent by a client, rejecting negatives.
pub(crate) fn client_index(index: i32) -> Result<usize, CallError> {
    usize::try_from(index).map_err(|_| CallError::InvalidArgs(format!("index {index} is negative")))
}

/// Saturating conversion for counts and indices sent as `i`.
pub(crate) fn to_i32(value: usize) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}
