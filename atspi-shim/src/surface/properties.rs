//! Turning Rust values into property values.

use zvariant::{OwnedValue, Value};

use crate::model::error::CallError;

/// Wraps a plain value (string, number, bool) for `Properties.Get`.
pub(crate) fn owned<'a, T: Into<Value<'a>>>(value: T) -> Result<OwnedValue, CallError> {
    OwnedValue::try_from(value.into())
        .map_err(|e| CallError::Failed(format!("could not encode the property value: {e}")))
}
