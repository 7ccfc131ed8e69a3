//! `org.a11y.atspi.Application` on the app root: the application's identity
//! from the sender's hello.

use crate::model::context::AppContext;
use crate::model::describe::toolkit_name;
use crate::model::error::CallError;
use crate::model::names;
use crate::surface::{declare_interface, Written};

declare_interface! {
    pub(crate) static APPLICATION = names::APPLICATION, on app {
        fn GetLocale(lctype: u32) -> (locale: String) = locale;
        fn GetApplicationBusAddress() -> (address: String) = bus_address;
        property ToolkitName: String = toolkit;
        property Version: String = toolkit_version;
        property ToolkitVersion: String = toolkit_version;
        property AtspiVersion: String = atspi_version;
        property InterfaceVersion: u32 = interface_version;
        property Id: i32 = id, writable set_id;
    }
}

/// Every category gets the session locale: the bridge cannot know the
/// application's own.
fn locale(app: &AppContext, _lctype: u32) -> Result<String, CallError> {
    Ok(app.host.locale().to_owned())
}

/// No peer-to-peer connection from the shim: "" keeps libatspi on the bus
/// (the bridge answers this call itself when it offers one).
fn bus_address(_app: &AppContext) -> Result<String, CallError> {
    Ok(String::new())
}

fn toolkit(app: &AppContext) -> Result<String, CallError> {
    Ok(toolkit_name(app).to_owned())
}

fn toolkit_version(app: &AppContext) -> Result<String, CallError> {
    Ok(app.info.toolkit_version.clone().unwrap_or_default())
}

fn atspi_version(_app: &AppContext) -> Result<String, CallError> {
    Ok("2.1".to_owned())
}

/// at-spi2-core 2.61's Application interface version.
fn interface_version(_app: &AppContext) -> Result<u32, CallError> {
    Ok(1)
}

fn id(app: &AppContext) -> Result<i32, CallError> {
    Ok(app.app_id)
}

/// `Properties.Set("org.a11y.atspi.Application", "Id", v:i)`: the only
/// writable property. Returns the new id for the bridge to keep.
/// The registry's id for the application, which it writes on Embed.
fn set_id(_app: &AppContext, value: &zvariant::Value) -> Result<Written, CallError> {
    match value {
        zvariant::Value::I32(id) => Ok(Written::AppId(*id)),
        other => Err(CallError::InvalidArgs(format!(
            "Application.Id is an int32 (\u{201c}i\u{201d}), not \u{201c}{}\u{201d}",
            other.value_signature()
        ))),
    }
}
