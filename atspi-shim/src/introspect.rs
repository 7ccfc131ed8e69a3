//! `org.freedesktop.DBus.Introspectable`, written from the declared surface.
//!
//! The XML lists each interface the object implements with its methods
//! (arguments with names, types and directions) and properties (types and
//! access), written from the declarations (`surface.rs`); AT clients never
//! introspect, this is for `busctl`/`gdbus` users and debugging.

use std::fmt::Write as _;

use zbus::message::Message;

use crate::declared;
use crate::model::context::AppContext;
use crate::model::names;
use crate::model::paths::NODE_PREFIX;
use crate::model::resolve;
use crate::surface::reply::{method_return, no_args};
use crate::{model::error::CallError, surface::reply::Handled};

/// The standard interfaces every object answers, as the D-Bus
/// specification declares them.
const STANDARD_INTERFACES: &str = r#"  <interface name="org.freedesktop.DBus.Peer">
    <method name="Ping"/>
    <method name="GetMachineId">
      <arg name="machine_uuid" type="s" direction="out"/>
    </method>
  </interface>
  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect">
      <arg name="xml_data" type="s" direction="out"/>
    </method>
  </interface>
  <interface name="org.freedesktop.DBus.Properties">
    <method name="Get">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="out"/>
    </method>
    <method name="GetAll">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="props" type="a{sv}" direction="out"/>
    </method>
    <method name="Set">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="in"/>
    </method>
  </interface>
"#;

pub(crate) fn call(
    app: &AppContext,
    path: &str,
    member: &str,
    call: &Message,
) -> Result<Handled, CallError> {
    if member != "Introspect" {
        return Err(CallError::UnknownMethod {
            interface: names::INTROSPECTABLE.to_owned(),
            member: member.to_owned(),
        });
    }
    no_args(call)?;
    let xml = introspect(app, path)?;
    Ok(Handled::reply(method_return(call, &(xml,))?))
}

fn introspect(app: &AppContext, path: &str) -> Result<String, CallError> {
    let mut xml = String::from(
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n \
         \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n",
    );
    xml.push_str(STANDARD_INTERFACES);
    match intermediate_children(path) {
        Some(children) => {
            for child in children {
                let _ = writeln!(xml, "  <node name=\"{child}\"/>");
            }
        }
        None => {
            let object = resolve::resolve(app, path)?;
            for interface in declared::served_interfaces(&object) {
                interface.write_introspection(&mut xml);
            }
        }
    }
    xml.push_str("</node>\n");
    Ok(xml)
}

/// Child nodes of the path prefixes above our objects (node paths are not
/// enumerated: there can be 100k of them).
fn intermediate_children(path: &str) -> Option<&'static [&'static str]> {
    match path {
        "/" => Some(&["org"]),
        "/org" => Some(&["a11y"]),
        "/org/a11y" => Some(&["atspi"]),
        "/org/a11y/atspi" => Some(&["accessible", "cache"]),
        p if p == NODE_PREFIX.trim_end_matches('/') => Some(&["root"]),
        _ => None,
    }
}
