//! `org.a11y.atspi.Application` on the app root: the application's identity
//! from the sender's hello.

use zbus::message::Message;
use zvariant::OwnedValue;

use crate::accessible::{no_args, toolkit_name};
use crate::context::AppContext;
use crate::properties::owned;
use crate::reply::{args, method_return};
use crate::{CallError, Handled};

pub(crate) const INTERFACE: &str = "org.a11y.atspi.Application";
pub(crate) const PROPERTIES: &[&str] = &[
    "ToolkitName",
    "Version",
    "ToolkitVersion",
    "AtspiVersion",
    "InterfaceVersion",
    "Id",
];

pub(crate) fn property(app: &AppContext, name: &str) -> Result<OwnedValue, CallError> {
    match name {
        "ToolkitName" => owned(toolkit_name(app).to_owned()),
        "Version" | "ToolkitVersion" => owned(app.info.toolkit_version.clone().unwrap_or_default()),
        "AtspiVersion" => owned("2.1"),
        // at-spi2-core 2.61's Application interface version.
        "InterfaceVersion" => owned(1u32),
        "Id" => owned(app.app_id),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}

pub(crate) fn call(app: &AppContext, member: &str, call: &Message) -> Result<Handled, CallError> {
    let reply = match member {
        "GetLocale" => {
            // Every category gets the session locale: the bridge cannot know
            // the application's own.
            let (_category,): (u32,) = args(call)?;
            method_return(call, &(app.host.locale(),))?
        }
        "GetApplicationBusAddress" => {
            no_args(call)?;
            // No peer-to-peer connection yet: "" keeps libatspi on the bus.
            method_return(call, &("",))?
        }
        _ => {
            return Err(CallError::UnknownMethod {
                interface: INTERFACE.to_owned(),
                member: member.to_owned(),
            })
        }
    };
    Ok(Handled::reply(reply))
}

/// `Properties.Set("org.a11y.atspi.Application", "Id", v:i)`: the only
/// writable property. Returns the new id for the bridge to keep.
pub(crate) fn set_property(name: &str, value: &zvariant::Value) -> Result<i32, CallError> {
    match name {
        "Id" => match value {
            zvariant::Value::I32(id) => Ok(*id),
            other => Err(CallError::InvalidArgs(format!(
                "Application.Id is an int32 (\u{201c}i\u{201d}), not \u{201c}{}\u{201d}",
                other.value_signature()
            ))),
        },
        other if PROPERTIES.contains(&other) => Err(CallError::Failed(format!(
            "property \u{201c}{other}\u{201d} is read-only"
        ))),
        other => Err(CallError::UnknownProperty(other.to_owned())),
    }
}
