//! Checking the first frame of a connection: the JSON hello.

use serde_json::Value;

use crate::codec::decode_sender_message;
use crate::messages::{AppInfo, Encoding, Hello, ACCESSKIT_VERSION, PROTOCOL_VERSION};
use crate::text::{escaped, truncate_at_char, QUOTE_BYTES};

/// Longest application identity string kept from a hello (`appId`, `name`,
/// toolkit name and version), in bytes; longer ones are cut at a character
/// boundary. Real names are a few dozen bytes; the bound keeps a hostile
/// name out of every log line and status document at full length.
pub const MAX_APP_STRING_BYTES: usize = 1024;

/// Why a first frame is not an acceptable hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HelloError {
    /// It is a sender message: the sender skipped the hello.
    NotAHello,
    /// It is malformed; the string says how.
    Invalid(String),
    /// It asks for another protocol version.
    Version(u64),
    /// Its tree payloads are built with an accesskit release whose types
    /// differ from this crate's (the string is the hello's version).
    Accesskit(String),
}

/// Parses and checks a hello. The version is checked before the rest of the
/// shape, so a hello of a future version gets a version error even if its
/// other fields changed.
pub(crate) fn parse_hello(payload: &[u8]) -> Result<Hello, HelloError> {
    let value: Value = serde_json::from_slice(payload).map_err(|error| {
        HelloError::Invalid(format!(
            "the first frame must be a JSON object; it is not JSON: {}",
            escaped(&error.to_string(), QUOTE_BYTES)
        ))
    })?;
    let Some(protocol) = value.get("protocol") else {
        return Err(missing_protocol(payload));
    };
    match protocol.as_u64() {
        Some(version) if version == u64::from(PROTOCOL_VERSION) => {}
        Some(version) => return Err(HelloError::Version(version)),
        None => {
            return Err(HelloError::Invalid(
                "`protocol` must be an unsigned integer".into(),
            ))
        }
    }
    let mut hello: Hello = serde_json::from_value(value)
        .map_err(|error| {
            HelloError::Invalid(format!(
                "{} (expected {{\"protocol\":1,\"encoding\":\"json\"|\"postcard\",\"app\":{{\"appId\":…,\"name\":…}}}})",
                escaped(&error.to_string(), QUOTE_BYTES)
            ))
        })?;
    clean_app(&mut hello.app);
    check_app(&hello)?;
    check_accesskit(&hello)?;
    Ok(hello)
}

/// A sender's accesskit must be the same release series as this crate's:
/// for 0.x (accesskit so far) the same minor version, since every 0.x minor
/// release may renumber roles, actions and flags. An absent version means a
/// hello written before the field existed, when version 1 only ever carried
/// accesskit 0.25.
fn check_accesskit(hello: &Hello) -> Result<(), HelloError> {
    match hello.accesskit_version.as_deref() {
        None => Ok(()),
        Some(version) if accesskit_compatible(version, ACCESSKIT_VERSION) => Ok(()),
        Some(version) => Err(HelloError::Accesskit(version.to_owned())),
    }
}

/// Whether payloads of accesskit `theirs` have the same meaning as those of
/// accesskit `ours`: same major, and same minor while the major is 0 (Cargo's
/// semver rule). Both must look like `MAJOR.MINOR[.PATCH][-PRE][+BUILD]`.
pub(crate) fn accesskit_compatible(theirs: &str, ours: &str) -> bool {
    match (release_series(theirs), release_series(ours)) {
        (Some(theirs), Some(ours)) => theirs == ours,
        _ => false,
    }
}

/// `(major, minor)` for 0.x, `(major, None)` otherwise.
fn release_series(version: &str) -> Option<(u64, Option<u64>)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.');
    let major: u64 = parts.next()?.parse().ok()?;
    let minor: u64 = parts.next()?.parse().ok()?;
    if let Some(patch) = parts.next() {
        patch.parse::<u64>().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some((major, (major == 0).then_some(minor)))
}

fn missing_protocol(payload: &[u8]) -> HelloError {
    if decode_sender_message(payload, Encoding::Json).is_ok() {
        HelloError::NotAHello
    } else {
        HelloError::Invalid("the first frame has no `protocol` field".into())
    }
}

/// D-Bus strings cannot hold NUL (a message carrying one is invalid and
/// costs the bridge its bus connection): the application's identity, which
/// ends up in AT-SPI names and properties, gets spaces instead. Each string
/// is cut to [`MAX_APP_STRING_BYTES`].
fn clean_app(app: &mut AppInfo) {
    let strings = [&mut app.app_id, &mut app.name]
        .into_iter()
        .chain(app.toolkit_name.as_mut())
        .chain(app.toolkit_version.as_mut());
    for text in strings {
        if text.contains('\0') {
            *text = text.replace('\0', " ");
        }
        truncate_at_char(text, MAX_APP_STRING_BYTES);
    }
}

fn check_app(hello: &Hello) -> Result<(), HelloError> {
    if hello.app.app_id.trim().is_empty() {
        return Err(HelloError::Invalid("`app.appId` must not be empty".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_a_minimal_hello_with_json_default() {
        let hello = parse_hello(br#"{"protocol":1,"app":{"appId":"a","name":"A"}}"#).unwrap();
        assert_eq!(hello.encoding, Encoding::Json);
        assert_eq!(hello.app.pid, None);
    }

    #[test]
    fn ignores_unknown_fields_for_forward_compatibility() {
        let hello =
            parse_hello(br#"{"protocol":1,"extra":true,"app":{"appId":"a","name":"A","x":1}}"#);
        assert!(hello.is_ok(), "{hello:?}");
    }

    #[test]
    fn nul_in_the_application_identity_becomes_a_space() {
        let hello = parse_hello(
            br#"{"protocol":1,"app":{"appId":"a\u0000b","name":"A\u0000","toolkitName":"\u0000"}}"#,
        )
        .unwrap();
        assert_eq!(hello.app.app_id, "a b");
        assert_eq!(hello.app.name, "A ");
        assert_eq!(hello.app.toolkit_name.as_deref(), Some(" "));
    }

    #[test]
    fn identity_strings_are_cut_and_errors_do_not_echo_big_values() {
        let name = "n".repeat(100_000);
        let hello = format!(r#"{{"protocol":1,"app":{{"appId":"a","name":"{name}"}}}}"#);
        let parsed = parse_hello(hello.as_bytes()).unwrap();
        assert_eq!(parsed.app.name.len(), MAX_APP_STRING_BYTES);
        // serde quotes a value of the wrong type in its error: bounded here.
        let bad = format!(r#"{{"protocol":1,"app":{{"appId":"a","name":"A","pid":"{name}"}}}}"#);
        let HelloError::Invalid(reason) = parse_hello(bad.as_bytes()).unwrap_err() else {
            panic!("not invalid");
        };
        assert!(reason.len() < 1000, "{}", reason.len());
    }

    #[test]
    fn accepts_the_same_accesskit_minor_and_an_absent_version() {
        for version in ["0.25.2", "0.25.0", "0.25.9", "0.25", "0.25.3-beta.1"] {
            let hello = format!(
                r#"{{"protocol":1,"accesskitVersion":"{version}","app":{{"appId":"a","name":"A"}}}}"#
            );
            assert!(parse_hello(hello.as_bytes()).is_ok(), "{version}");
        }
        let old = parse_hello(br#"{"protocol":1,"app":{"appId":"a","name":"A"}}"#).unwrap();
        assert_eq!(old.accesskit_version, None);
    }

    #[test]
    fn refuses_another_accesskit_minor_or_a_malformed_version() {
        for version in [
            "0.24.0", "0.26.0", "1.0.0", "0", "0.25.x", "", "latest", "0.25.2.1",
        ] {
            let hello = format!(
                r#"{{"protocol":1,"accesskitVersion":"{version}","app":{{"appId":"a","name":"A"}}}}"#
            );
            assert_eq!(
                parse_hello(hello.as_bytes()).unwrap_err(),
                HelloError::Accesskit(version.to_owned()),
                "{version}"
            );
        }
    }

    #[test]
    fn release_series_follows_cargo_semver() {
        assert!(accesskit_compatible("1.2.0", "1.9.3"));
        assert!(!accesskit_compatible("2.0.0", "1.9.3"));
        assert!(!accesskit_compatible("0.25.0", "0.26.0"));
    }

    #[test]
    fn reports_version_before_shape() {
        let error = parse_hello(br#"{"protocol":2,"totally":"different"}"#).unwrap_err();
        assert_eq!(error, HelloError::Version(2));
    }

    #[test]
    fn recognises_a_message_sent_instead_of_the_hello() {
        let error = parse_hello(br#"{"createSurface":{"surface":1,"title":null}}"#).unwrap_err();
        assert_eq!(error, HelloError::NotAHello);
        assert_eq!(
            parse_hello(br#""goodbye""#).unwrap_err(),
            HelloError::NotAHello
        );
    }

    #[test]
    fn rejects_unknown_encoding_empty_app_id_and_non_json() {
        for bad in [
            &br#"{"protocol":1,"encoding":"cbor","app":{"appId":"a","name":"A"}}"#[..],
            br#"{"protocol":1,"app":{"appId":" ","name":"A"}}"#,
            br#"{"protocol":"1","app":{"appId":"a","name":"A"}}"#,
            b"\x00\x01",
            b"[]",
        ] {
            assert!(
                matches!(parse_hello(bad), Err(HelloError::Invalid(_))),
                "{bad:?}"
            );
        }
    }
}
