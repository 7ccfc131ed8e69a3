//! Turning Rust values into property values, and the locale facts shared by
//! Accessible.Locale and Application.GetLocale.

use std::sync::OnceLock;

use zvariant::{OwnedValue, Structure, Value};

use crate::paths::ObjectRef;
use crate::CallError;

/// Wraps a plain value (string, number, bool) for `Properties.Get`.
pub(crate) fn owned<'a, T: Into<Value<'a>>>(value: T) -> Result<OwnedValue, CallError> {
    OwnedValue::try_from(value.into())
        .map_err(|e| CallError::Failed(format!("could not encode the property value: {e}")))
}

/// Wraps an object reference as a `(so)` property value.
pub(crate) fn owned_ref(reference: ObjectRef) -> Result<OwnedValue, CallError> {
    let (name, path) = reference;
    owned(Structure::from((name, path)))
}

/// The process locale for LC_MESSAGES-like categories: the first non-empty of
/// LC_ALL, LC_MESSAGES, LANG, else "C". The bridge cannot know an
/// application's own locale, so the session's is the best guess.
pub(crate) fn process_locale() -> &'static str {
    static LOCALE: OnceLock<String> = OnceLock::new();
    LOCALE.get_or_init(|| {
        ["LC_ALL", "LC_MESSAGES", "LANG"]
            .iter()
            .filter_map(|var| std::env::var(var).ok())
            .find(|value| !value.is_empty())
            .unwrap_or_else(|| "C".to_owned())
    })
}

/// `Accessible.Locale` fallback: the process locale without encoding or
/// modifier ("en_US.UTF-8" → "en_US"); "C"/"POSIX" give "".
pub(crate) fn default_object_locale() -> &'static str {
    static LOCALE: OnceLock<String> = OnceLock::new();
    LOCALE.get_or_init(|| {
        let full = process_locale();
        let base = full.split(['.', '@']).next().unwrap_or("");
        if base == "C" || base == "POSIX" {
            String::new()
        } else {
            base.to_owned()
        }
    })
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
