//! Turning Rust values into property values.

use zvariant::{OwnedValue, Value};

use crate::model::error::CallError;

/// Wraps a plain value (string, number, bool) for `Properties.Get`.
pub(crate) fn owned<'a, T: Into<Value<'a>>>(value: T) -> Result<OwnedValue, CallError> {
    OwnedValue::try_from(value.into())
        .map_err(|e| CallError::Failed(format!("could not encode the property value: {e}")))
}

/// A BCP 47 tag ("en-US") in the POSIX form AT-SPI uses ("en_US").
pub(crate) fn bcp47_to_posix(tag: &str) -> String {
    tag.replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_tags_become_posix_locales() {
        assert_eq!(bcp47_to_posix("en-US"), "en_US");
        assert_eq!(bcp47_to_posix("fr"), "fr");
    }
}
