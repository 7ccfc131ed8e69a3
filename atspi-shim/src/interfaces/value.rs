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

use accesskit::{Action, ActionData};
use zvariant::Value;

use crate::model::actions::request;
use crate::model::context::NodeCtx;
use crate::model::error::CallError;
use crate::model::exposure::exposure_filter;
use crate::model::names;
use crate::surface::{declare_interface, Written};

declare_interface! {
    pub(crate) static VALUE = names::VALUE, on node {
        property version: u32 = crate::surface::interface_version;
        property MinimumValue: f64 = minimum;
        property MaximumValue: f64 = maximum;
        property MinimumIncrement: f64 = increment;
        property CurrentValue: f64 = current, writable set_current;
        property Text: String = text;
    }
}

fn current(ctx: &NodeCtx) -> Result<f64, CallError> {
    Ok(current_value(ctx))
}

fn current_value(ctx: &NodeCtx) -> f64 {
    ctx.node
        .numeric_value()
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

fn minimum(ctx: &NodeCtx) -> Result<f64, CallError> {
    Ok(ctx
        .node
        .min_numeric_value()
        .filter(|v| v.is_finite())
        .unwrap_or(-f64::MAX)
        .min(current_value(ctx)))
}

fn maximum(ctx: &NodeCtx) -> Result<f64, CallError> {
    Ok(ctx
        .node
        .max_numeric_value()
        .filter(|v| v.is_finite())
        .unwrap_or(f64::MAX)
        .max(current_value(ctx)))
}

/// A missing step is 0 ("any").
fn increment(ctx: &NodeCtx) -> Result<f64, CallError> {
    Ok(ctx
        .node
        .numeric_value_step()
        .filter(|v| v.is_finite())
        .unwrap_or(0.0))
}

fn text(ctx: &NodeCtx) -> Result<String, CallError> {
    Ok(ctx.node.value().unwrap_or_default())
}

/// `Properties.Set(Value, CurrentValue, v:d)` → a SetValue request.
fn set_current(ctx: &NodeCtx, value: &Value) -> Result<Written, CallError> {
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
    Ok(Written::Action(request(
        ctx,
        Action::SetValue,
        Some(ActionData::NumericValue(number)),
    )))
}
