//! Checking the first frame of a connection: the JSON hello.

use serde_json::Value;

use crate::codec::decode_sender_message;
use crate::messages::{AppInfo, Encoding, Hello, PROTOCOL_VERSION};

/// Why a first frame is not an acceptable hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HelloError {
    /// It is a sender message: the sender skipped the hello.
    NotAHello,
    /// It is malformed; the string says how.
    Invalid(String),
    /// It asks for another protocol version.
    Version(u64),
}

/// Parses and checks a hello. The version is checked before the rest of the
/// shape, so a hello of a future version gets a version error even if its
/// other fields changed.
pub(crate) fn parse_hello(payload: &[u8]) -> Result<Hello, HelloError> {
    let value: Value = serde_json::from_slice(payload).map_err(|error| {
        HelloError::Invalid(format!(
            "the first frame must be a JSON object; it is not JSON: {error}"
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
        .map_err(|error| HelloError::Invalid(format!("{error} (expected {{\"protocol\":1,\"encoding\":\"json\"|\"postcard\",\"app\":{{\"appId\":…,\"name\":…}}}})")))?;
    clean_app(&mut hello.app);
    check_app(&hello)?;
    Ok(hello)
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
/// ends up in AT-SPI names and properties, gets spaces instead.
fn clean_app(app: &mut AppInfo) {
    let strings = [&mut app.app_id, &mut app.name]
        .into_iter()
        .chain(app.toolkit_name.as_mut())
        .chain(app.toolkit_version.as_mut());
    for text in strings {
        if text.contains('\0') {
            *text = text.replace('\0', " ");
        }
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
