//! Routing one received method call to the interface that answers it.
//!
//! Objects: the app root (Accessible + Application), the cache object, every
//! exposed replica node (Accessible plus whatever the node supports, see
//! `NODE_INTERFACES`), and the hyperlink object of every exposed link node
//! (Hyperlink only, as atk-bridge serves its AtkHyperlink objects). Standard interfaces: `Properties` (Get, GetAll,
//! Set of `Application.Id` only), `Peer` (any path) and `Introspectable`.

use zbus::message::{Flags, Message, Type as MessageType};
use zvariant::{OwnedValue, Value};

use crate::context::{AppContext, NodeCtx};
use crate::objects::{self, Object};
use crate::reply::{args, method_return};
use crate::surface::{Interface, Target};
use crate::{
    accessible, action, application, cache, collection, component, document, editable_text,
    hyperlink, hypertext, image, introspect, selection, table, table_cell, text, value, CallError,
    Handled,
};

pub(crate) const PROPERTIES_INTERFACE: &str = "org.freedesktop.DBus.Properties";
pub(crate) const PEER_INTERFACE: &str = "org.freedesktop.DBus.Peer";
pub(crate) const INTROSPECTABLE_INTERFACE: &str = "org.freedesktop.DBus.Introspectable";

/// Interfaces of the app root, as `GetInterfaces` lists them.
pub(crate) const ROOT_INTERFACES: &[&Interface] =
    &[&accessible::ACCESSIBLE, &application::APPLICATION];

type SupportedFn = for<'a> fn(&NodeCtx<'a>) -> bool;

/// One AT-SPI interface a replica node may implement: its declaration and
/// whether this node implements it.
pub(crate) struct NodeInterface {
    pub surface: &'static Interface,
    pub supported: SupportedFn,
}

macro_rules! node_interface {
    ($module:ident, $surface:ident) => {
        NodeInterface {
            surface: &$module::$surface,
            supported: $module::supported,
        }
    };
}

/// Every node interface, in the order `GetInterfaces` lists them.
pub(crate) static NODE_INTERFACES: &[NodeInterface] = &[
    node_interface!(accessible, ACCESSIBLE),
    node_interface!(component, COMPONENT),
    node_interface!(action, ACTION),
    node_interface!(value, VALUE),
    node_interface!(selection, SELECTION),
    node_interface!(image, IMAGE),
    node_interface!(text, TEXT),
    node_interface!(editable_text, EDITABLE_TEXT),
    node_interface!(hypertext, HYPERTEXT),
    node_interface!(hyperlink, HYPERLINK),
    node_interface!(document, DOCUMENT),
    node_interface!(table, TABLE),
    node_interface!(table_cell, TABLE_CELL),
    node_interface!(collection, COLLECTION),
];

/// The full names of the app root's interfaces.
pub(crate) fn root_interface_names() -> Vec<&'static str> {
    ROOT_INTERFACES.iter().map(|iface| iface.name).collect()
}

/// The full names of the interfaces this node really implements.
pub(crate) fn node_interface_names(ctx: &NodeCtx) -> Vec<&'static str> {
    node_interfaces(ctx).map(|iface| iface.name).collect()
}

fn node_interfaces<'c>(ctx: &'c NodeCtx) -> impl Iterator<Item = &'static Interface> + 'c {
    NODE_INTERFACES
        .iter()
        .filter(|iface| (iface.supported)(ctx))
        .map(|iface| iface.surface)
}

/// The interfaces `object` serves, in the order `GetInterfaces` lists them.
pub(crate) fn served_interfaces(object: &Object) -> Vec<&'static Interface> {
    match object {
        Object::Root => ROOT_INTERFACES.to_vec(),
        Object::Cache => vec![&cache::CACHE],
        Object::Node(ctx) => node_interfaces(ctx).collect(),
        Object::Hyperlink(_) => vec![&hyperlink::HYPERLINK],
    }
}

/// Who the handlers of `object` answer for.
fn target<'t, 'a>(app: &'t AppContext<'a>, object: &'t Object<'a>) -> Target<'t, 'a> {
    match object {
        Object::Root | Object::Cache => Target::App(app),
        Object::Node(ctx) | Object::Hyperlink(ctx) => Target::Node(ctx),
    }
}

/// The interface named `name` if `object` serves it. Only that interface's
/// `supported` predicate runs (some build the node's text model or grid).
fn served_interface(
    object: &Object,
    path: &str,
    name: &str,
) -> Result<&'static Interface, CallError> {
    let named = |iface: &&Interface| iface.name == name;
    let found = match object {
        Object::Root => ROOT_INTERFACES.iter().copied().find(named),
        Object::Cache => Some(&cache::CACHE).filter(named),
        Object::Node(ctx) => NODE_INTERFACES
            .iter()
            .find(|iface| iface.surface.name == name && (iface.supported)(ctx))
            .map(|iface| iface.surface),
        Object::Hyperlink(_) => Some(&hyperlink::HYPERLINK).filter(named),
    };
    found.ok_or_else(|| CallError::UnknownInterface {
        interface: name.to_owned(),
        path: path.to_owned(),
    })
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
    let target = target(app, &object);
    match interface {
        Some(name) => served_interface(&object, path, name)?.call(target, member, call),
        // No interface field: the first interface of the object that
        // declares the member.
        None => served_interfaces(&object)
            .into_iter()
            .find(|iface| iface.method(member).is_some())
            .ok_or_else(|| CallError::UnknownMethod {
                interface: "(none)".to_owned(),
                member: member.to_owned(),
            })?
            .call(target, member, call),
    }
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
    let target = target(app, object);
    match member {
        "Get" => {
            let (interface, name): (String, String) = args(call)?;
            let value = served_interface(object, path, &interface)?.get(target, &name)?;
            Ok(Handled::reply(method_return(call, &(Value::from(value),))?))
        }
        "GetAll" => {
            let (interface,): (String,) = args(call)?;
            let all = served_interface(object, path, &interface)?.get_all(target)?;
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

fn set_property(
    object: &Object,
    path: &str,
    interface: &str,
    name: &str,
    value: &OwnedValue,
    call: &Message,
) -> Result<Handled, CallError> {
    match (object, interface) {
        (Object::Root, _) if interface == application::APPLICATION.name => {
            let id = application::set_property(name, value)?;
            let mut handled = Handled::reply(method_return(call, &())?);
            handled.set_app_id = Some(id);
            Ok(handled)
        }
        (Object::Node(ctx), _) if interface == value::VALUE.name && value::supported(ctx) => {
            let action = value::set_property(ctx, name, value)?;
            Ok(Handled::with_action(method_return(call, &())?, action))
        }
        (Object::Node(_), _) if served_interface(object, path, interface).is_err() => {
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
