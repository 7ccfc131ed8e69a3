//! `org.a11y.atspi.Value` for nodes with a numeric value.
//!
//! Bounds: the reported range always holds the reported value; a value the
//! producer put outside its own bounds widens them (clamping would hide the
//! real value). A bound the producer leaves out is unbounded: -f64::MAX or
//! f64::MAX, as accesskit_unix says, never an invented 0..100, which made
//! Orca's Where Am I say "50 percent" of a range that does not exist. Orca
//! 43.1 speaks a spin button's text, not its bounds; see docs/interfaces.md
//! ("Value") for what it does with them. A missing step gives
//! MinimumIncrement 0 ("any").

use accesskit::{Action, ActionData, ActionRequest};
use zbus::message::Message;
use zvariant::{OwnedValue, Value};

use crate::component::request;
use crate::context::NodeCtx;
use crate::objects::exposure_filter;
use crate::properties::owned;
use crate::{CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Value";
pub(crate) const PROPERTIES: &[&str] = &[
    "MinimumValue",
    "MaximumValue",
    "MinimumIncrement",
    "CurrentValue",
    "Text",
];

pub(crate) fn supported(ctx: &NodeCtx) -> bool {
    ctx.node.numeric_value().is_some()
}

fn current(ctx: &NodeCtx) -> f64 {
    ctx.node
        .numeric_value()
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

pub(crate) fn minimum(ctx: &NodeCtx) -> f64 {
    ctx.node
        .min_numeric_value()
        .filter(|v| v.is_finite())
        .unwrap_or(-f64::MAX)
        .min(current(ctx))
}

pub(crate) fn maximum(ctx: &NodeCtx) -> f64 {
    ctx.node
        .max_numeric_value()
        .filter(|v| v.is_finite())
        .unwrap_or(f64::MAX)
        .max(current(ctx))
}

pub(crate) fn property(ctx: &NodeCtx, name: &str) -> Result<OwnedValue, CallError> {
    match name {
        "MinimumValue" => owned(minimum(ctx)),
        "MaximumValue" => owned(maximum(ctx)),
        "MinimumIncrement" => owned(
            ctx.node
                .numeric_value_step()
                .filter(|v| v.is_finite())
                .unwrap_or(0.0),
        ),
        "CurrentValue" => owned(current(ctx)),
        "Text" => owned(ctx.node.value().unwrap_or_default()),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}

/// Value has no methods.
pub(crate) fn call(_ctx: &NodeCtx, member: &str, _call: &Message) -> Result<Handled, CallError> {
    Err(CallError::UnknownMethod {
        interface: INTERFACE.to_owned(),
        member: member.to_owned(),
    })
}

/// `Properties.Set(Value, CurrentValue, v:d)` → a SetValue request.
pub(crate) fn set_property(
    ctx: &NodeCtx,
    name: &str,
    value: &Value,
) -> Result<ActionRequest, CallError> {
    if name != "CurrentValue" {
        return Err(CallError::Failed(format!(
            "property \u{201c}{INTERFACE}.{name}\u{201d} is read-only"
        )));
    }
    let number = match value {
        Value::F64(v) => *v,
        Value::I32(v) => f64::from(*v),
        Value::U32(v) => f64::from(*v),
        other => {
            return Err(CallError::InvalidArgs(format!(
                "CurrentValue is a double (\u{201c}d\u{201d}), not \u{201c}{}\u{201d}",
                other.value_signature()
            )))
        }
    };
    if !number.is_finite() {
        return Err(CallError::InvalidArgs(format!(
            "CurrentValue {number} is not a finite number"
        )));
    }
    if !ctx.node.supports_action(Action::SetValue, &exposure_filter) {
        return Err(CallError::NotSupported(
            "this object's value cannot be set (it declares no SetValue action)".to_owned(),
        ));
    }
    Ok(request(
        ctx,
        Action::SetValue,
        Some(ActionData::NumericValue(number)),
    ))
}
