//! Routing one received method call to the interface that answers it.
//!
//! Objects: the app root (Accessible + Application), the cache object, every
//! exposed replica node (Accessible plus whatever the node supports, see
//! `NODE_INTERFACES`), and the hyperlink object of every exposed link node
//! (Hyperlink only, as atk-bridge serves its AtkHyperlink objects). Standard interfaces: `Properties` (Get, GetAll,
//! Set of `Application.Id` only), `Peer` (any path) and `Introspectable`.

use std::collections::HashMap;

use zbus::message::{Flags, Message, Type as MessageType};
use zvariant::{OwnedValue, Value};

use crate::context::{AppContext, NodeCtx};
use crate::objects::{self, Object};
use crate::reply::{args, method_return};
use crate::{
    accessible, action, application, cache, collection, component, document, editable_text,
    hyperlink, hypertext, image, introspect, selection, table, table_cell, text, value, CallError,
    Handled,
};

pub(crate) const PROPERTIES_INTERFACE: &str = "org.freedesktop.DBus.Properties";
pub(crate) const PEER_INTERFACE: &str = "org.freedesktop.DBus.Peer";
pub(crate) const INTROSPECTABLE_INTERFACE: &str = "org.freedesktop.DBus.Introspectable";

/// Interfaces of the app root, as `GetInterfaces` lists them.
pub(crate) const ROOT_INTERFACES: &[&str] = &[accessible::INTERFACE, application::INTERFACE];
/// Interfaces of a hyperlink object.
pub(crate) const HYPERLINK_OBJECT_INTERFACES: &[&str] = &[hyperlink::INTERFACE];

type SupportedFn = for<'a> fn(&NodeCtx<'a>) -> bool;
type CallFn = for<'a> fn(&NodeCtx<'a>, &str, &Message) -> Result<Handled, CallError>;
type PropertyFn = for<'a> fn(&NodeCtx<'a>, &str) -> Result<OwnedValue, CallError>;

/// One AT-SPI interface a replica node may implement.
pub(crate) struct NodeInterface {
    pub name: &'static str,
    /// Property names, for `GetAll` and introspection.
    pub properties: &'static [&'static str],
    pub supported: SupportedFn,
    pub call: CallFn,
    pub property: PropertyFn,
}

macro_rules! node_interface {
    ($module:ident, $properties:expr) => {
        NodeInterface {
            name: $module::INTERFACE,
            properties: $properties,
            supported: $module::supported,
            call: $module::call,
            property: $module::property,
        }
    };
}

/// Every node interface, in the order `GetInterfaces` lists them.
///
/// The text family (Text, EditableText, Hypertext, Hyperlink, Document)
/// follows the same contract (`INTERFACE`, `PROPERTIES`, `supported`,
/// `call`, `property`) in its own modules.
pub(crate) static NODE_INTERFACES: &[NodeInterface] = &[
    node_interface!(accessible, accessible::PROPERTIES),
    node_interface!(component, &[]),
    node_interface!(action, &["NActions"]),
    node_interface!(value, value::PROPERTIES),
    node_interface!(selection, &["NSelectedChildren"]),
    node_interface!(image, &["ImageDescription", "ImageLocale"]),
    node_interface!(text, text::PROPERTIES),
    node_interface!(editable_text, editable_text::PROPERTIES),
    node_interface!(hypertext, hypertext::PROPERTIES),
    node_interface!(hyperlink, hyperlink::PROPERTIES),
    node_interface!(document, document::PROPERTIES),
    node_interface!(table, table::PROPERTIES),
    node_interface!(table_cell, table_cell::PROPERTIES),
    node_interface!(collection, &[]),
];

/// The full names of the interfaces this node really implements.
pub(crate) fn node_interface_names(ctx: &NodeCtx) -> Vec<&'static str> {
    NODE_INTERFACES
        .iter()
        .filter(|iface| (iface.supported)(ctx))
        .map(|iface| iface.name)
        .collect()
}

/// Answers one message received on the application's connection.
///
/// Returns `None` for anything that needs no answer: signals, replies, and
/// NO_REPLY_EXPECTED calls without side effects. A NO_REPLY_EXPECTED call
/// with a side effect (an action, `Application.Id`) returns `Some` with
/// `reply_wanted == false`.
pub fn handle_call(app: &AppContext, call: &Message) -> Option<Handled> {
    let header = call.header();
    if header.message_type() != MessageType::MethodCall {
        return None;
    }
    let reply_wanted = !header.primary().flags().contains(Flags::NoReplyExpected);
    let mut handled = match route(app, call) {
        Ok(handled) => handled,
        Err(error) => Handled::reply(error_reply(call, &error)?),
    };
    if !reply_wanted {
        if handled.action.is_none() && handled.set_app_id.is_none() {
            return None;
        }
        handled.reply_wanted = false;
    }
    Some(handled)
}

/// An error reply to `call`. `None` only if the message could not be built
/// at all (a call without a serial, which the bus never delivers).
pub fn error_reply(call: &Message, error: &CallError) -> Option<Message> {
    let header = call.header();
    let text = error.to_string();
    Message::error(&header, error.name())
        .and_then(|builder| builder.build(&(text.as_str(),)))
        .ok()
        .or_else(|| {
            Message::error(&header, error.name())
                .and_then(|builder| builder.build(&()))
                .ok()
        })
}

fn route(app: &AppContext, call: &Message) -> Result<Handled, CallError> {
    let header = call.header();
    let path = header.path().map(|p| p.as_str()).unwrap_or("/");
    let member = header.member().map(|m| m.as_str()).unwrap_or("");
    let interface = header.interface().map(|i| i.as_str());
    if interface == Some(PEER_INTERFACE) {
        return peer(app, member, call);
    }
    if interface == Some(INTROSPECTABLE_INTERFACE) {
        return introspect::call(app, path, member, call);
    }
    let object = objects::resolve(app, path)?;
    if interface == Some(PROPERTIES_INTERFACE) {
        return properties(app, &object, path, member, call);
    }
    let interface = match interface {
        Some(interface) => interface,
        None => {
            interface_for_member(app, &object, member).ok_or_else(|| CallError::UnknownMethod {
                interface: "(none)".to_owned(),
                member: member.to_owned(),
            })?
        }
    };
    call_on_object(app, &object, path, interface, member, call)
}

fn call_on_object(
    app: &AppContext,
    object: &Object,
    path: &str,
    interface: &str,
    member: &str,
    call: &Message,
) -> Result<Handled, CallError> {
    let unknown_interface = || CallError::UnknownInterface {
        interface: interface.to_owned(),
        path: path.to_owned(),
    };
    match object {
        Object::Root => match interface {
            accessible::INTERFACE => accessible::root_call(app, member, call),
            application::INTERFACE => application::call(app, member, call),
            _ => Err(unknown_interface()),
        },
        Object::Cache => match interface {
            cache::INTERFACE => cache::call(app, member, call),
            _ => Err(unknown_interface()),
        },
        Object::Node(ctx) => {
            let iface = supported_interface(ctx, interface).ok_or_else(unknown_interface)?;
            (iface.call)(ctx, member, call)
        }
        Object::Hyperlink(ctx) => match interface {
            hyperlink::INTERFACE => hyperlink::call(ctx, member, call),
            _ => Err(unknown_interface()),
        },
    }
}

fn supported_interface(ctx: &NodeCtx, name: &str) -> Option<&'static NodeInterface> {
    NODE_INTERFACES
        .iter()
        .find(|iface| iface.name == name && (iface.supported)(ctx))
}

/// Calls without an interface field: the first interface of the object
/// that declares the member.
fn interface_for_member(app: &AppContext, object: &Object, member: &str) -> Option<&'static str> {
    let candidates: Vec<&'static str> = match object {
        Object::Root => ROOT_INTERFACES.to_vec(),
        Object::Cache => vec![cache::INTERFACE],
        Object::Node(ctx) => node_interface_names(ctx),
        Object::Hyperlink(_) => HYPERLINK_OBJECT_INTERFACES.to_vec(),
    };
    let _ = app;
    candidates
        .into_iter()
        .find(|iface| introspect::declares_method(iface, member))
}

fn peer(app: &AppContext, member: &str, call: &Message) -> Result<Handled, CallError> {
    match member {
        "Ping" => Ok(Handled::reply(method_return(call, &())?)),
        "GetMachineId" => Ok(Handled::reply(method_return(
            call,
            &(app.host.machine_id(),),
        )?)),
        _ => Err(CallError::UnknownMethod {
            interface: PEER_INTERFACE.to_owned(),
            member: member.to_owned(),
        }),
    }
}

fn properties(
    app: &AppContext,
    object: &Object,
    path: &str,
    member: &str,
    call: &Message,
) -> Result<Handled, CallError> {
    match member {
        "Get" => {
            let (interface, name): (String, String) = args(call)?;
            let value = get_property(app, object, path, &interface, &name)?;
            Ok(Handled::reply(method_return(call, &(Value::from(value),))?))
        }
        "GetAll" => {
            let (interface,): (String,) = args(call)?;
            let all = get_all(app, object, path, &interface)?;
            Ok(Handled::reply(method_return(call, &(all,))?))
        }
        "Set" => {
            let (interface, name, value): (String, String, OwnedValue) = args(call)?;
            set_property(object, path, &interface, &name, &value, call)
        }
        _ => Err(CallError::UnknownMethod {
            interface: PROPERTIES_INTERFACE.to_owned(),
            member: member.to_owned(),
        }),
    }
}

fn get_property(
    app: &AppContext,
    object: &Object,
    path: &str,
    interface: &str,
    name: &str,
) -> Result<OwnedValue, CallError> {
    let unknown_interface = || CallError::UnknownInterface {
        interface: interface.to_owned(),
        path: path.to_owned(),
    };
    match object {
        Object::Root => match interface {
            accessible::INTERFACE => accessible::root_property(app, name),
            application::INTERFACE => application::property(app, name),
            _ => Err(unknown_interface()),
        },
        Object::Cache => match interface {
            cache::INTERFACE => Err(CallError::UnknownProperty(name.to_owned())),
            _ => Err(unknown_interface()),
        },
        Object::Node(ctx) => {
            let iface = supported_interface(ctx, interface).ok_or_else(unknown_interface)?;
            (iface.property)(ctx, name)
        }
        Object::Hyperlink(ctx) => match interface {
            hyperlink::INTERFACE => hyperlink::property(ctx, name),
            _ => Err(unknown_interface()),
        },
    }
}

fn get_all(
    app: &AppContext,
    object: &Object,
    path: &str,
    interface: &str,
) -> Result<HashMap<String, OwnedValue>, CallError> {
    let names: &[&str] = match (object, interface) {
        (Object::Root, accessible::INTERFACE) => accessible::PROPERTIES,
        (Object::Root, application::INTERFACE) => application::PROPERTIES,
        (Object::Cache, cache::INTERFACE) => &[],
        (Object::Hyperlink(_), hyperlink::INTERFACE) => hyperlink::PROPERTIES,
        (Object::Node(ctx), _) => {
            supported_interface(ctx, interface)
                .ok_or_else(|| CallError::UnknownInterface {
                    interface: interface.to_owned(),
                    path: path.to_owned(),
                })?
                .properties
        }
        _ => {
            return Err(CallError::UnknownInterface {
                interface: interface.to_owned(),
                path: path.to_owned(),
            })
        }
    };
    names
        .iter()
        .map(|name| {
            Ok((
                (*name).to_owned(),
                get_property(app, object, path, interface, name)?,
            ))
        })
        .collect()
}

fn set_property(
    object: &Object,
    path: &str,
    interface: &str,
    name: &str,
    value: &OwnedValue,
    call: &Message,
) -> Result<Handled, CallError> {
    match (object, interface) {
        (Object::Root, application::INTERFACE) => {
            let id = application::set_property(name, value)?;
            let mut handled = Handled::reply(method_return(call, &())?);
            handled.set_app_id = Some(id);
            Ok(handled)
        }
        (Object::Node(ctx), value::INTERFACE) if value::supported(ctx) => {
            let action = value::set_property(ctx, name, value)?;
            Ok(Handled::with_action(method_return(call, &())?, action))
        }
        (Object::Node(ctx), _) if supported_interface(ctx, interface).is_none() => {
            Err(CallError::UnknownInterface {
                interface: interface.to_owned(),
                path: path.to_owned(),
            })
        }
        _ => Err(CallError::Failed(format!(
            "property \u{201c}{interface}.{name}\u{201d} is read-only or does not exist"
        ))),
    }
}
