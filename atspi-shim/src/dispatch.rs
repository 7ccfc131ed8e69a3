//! Routing one received method call to the interface that answers it.
//!
//! Objects: the app root (Accessible + Application), the cache object, every
//! exposed replica node (Accessible plus whatever the node supports, see
//! `NODE_INTERFACES`), and the hyperlink object of every exposed link node
//! (Hyperlink only, as atk-bridge serves its AtkHyperlink objects). Standard interfaces: `Properties` (Get, GetAll,
//! Set of the properties declared `writable SETTER`: `Application.Id`,
//! `Value.CurrentValue`), `Peer` (any path) and `Introspectable`.

use zbus::message::{Flags, Header, Message, Type as MessageType};
use zvariant::{OwnedValue, Value};

use crate::model::context::{AppContext, NodeCtx};
use crate::model::names;
use crate::model::objects::{self, Object};
use crate::model::paths::{self, ObjectAddress};
use crate::surface::reply::{args, method_return};
use crate::surface::{Interface, Method, Target, Written};
use crate::{
    interfaces::accessible, interfaces::action, interfaces::application, interfaces::cache,
    interfaces::collection, interfaces::component, interfaces::document, interfaces::editable_text,
    interfaces::hyperlink, interfaces::hypertext, interfaces::image, interfaces::selection,
    interfaces::table, interfaces::table_cell, interfaces::text, interfaces::value, introspect,
    model::error::CallError, surface::reply::Handled,
};

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
        Object::Cache => CACHE_INTERFACES.to_vec(),
        Object::Node(ctx) => node_interfaces(ctx).collect(),
        Object::Hyperlink(_) => HYPERLINK_INTERFACES.to_vec(),
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
    if interface == Some(names::PEER) {
        return peer(app, member, call);
    }
    if interface == Some(names::INTROSPECTABLE) {
        return introspect::call(app, path, member, call);
    }
    let object = objects::resolve(app, path)?;
    if interface == Some(names::PROPERTIES) {
        return properties(app, &object, path, member, call);
    }
    let target = target(app, &object);
    match interface {
        Some(name) => served_interface(&object, path, name)?.call(target, member, call),
        // No interface field: the first interface of the object that
        // declares the member.
        None => first_declaring(served_interfaces(&object), member)
            .ok_or_else(|| CallError::UnknownMethod {
                interface: "(none)".to_owned(),
                member: member.to_owned(),
            })?
            .call(target, member, call),
    }
}

/// The first of `interfaces` that declares a method `member`: how a call
/// without an interface field finds its interface.
fn first_declaring(
    interfaces: impl IntoIterator<Item = &'static Interface>,
    member: &str,
) -> Option<&'static Interface> {
    interfaces
        .into_iter()
        .find(|iface| iface.method(member).is_some())
}

const CACHE_INTERFACES: &[&Interface] = &[&cache::CACHE];
const HYPERLINK_INTERFACES: &[&Interface] = &[&hyperlink::HYPERLINK];

/// The interfaces an object at `address` may serve, in the order
/// [`served_interfaces`] lists them, before a node's `supported`
/// predicates (which need the replica) have run.
fn declaring_interfaces(address: ObjectAddress) -> impl Iterator<Item = &'static Interface> {
    let (fixed, nodes): (&'static [&'static Interface], &'static [NodeInterface]) = match address {
        ObjectAddress::Root => (ROOT_INTERFACES, &[]),
        ObjectAddress::Cache => (CACHE_INTERFACES, &[]),
        ObjectAddress::Node { .. } => (&[], NODE_INTERFACES),
        ObjectAddress::Hyperlink { .. } => (HYPERLINK_INTERFACES, &[]),
    };
    (fixed.iter().copied()).chain(nodes.iter().map(|iface| iface.surface))
}

/// The declared interface named `name`, whichever object serves it.
fn declared_interface(name: &str) -> Option<&'static Interface> {
    [&application::APPLICATION, &cache::CACHE]
        .into_iter()
        .chain(NODE_INTERFACES.iter().map(|iface| iface.surface))
        .find(|iface| iface.name == name)
}

/// A declared method and the interface declaring it.
#[derive(Clone, Copy)]
pub struct DeclaredMethod {
    pub interface: &'static str,
    pub method: &'static Method,
}

/// The declared method a call names, from its header alone (no replica,
/// no lock): with an interface field, that interface's `member`; without
/// one, the member of the first interface that dispatch tries for the
/// object at the call's path ([`route`]: root, cache, node or hyperlink
/// object, in `GetInterfaces` order). `None` for anything not declared
/// (`Properties`, `Peer`, `Introspectable`, unknown members, unknown
/// paths without an interface field).
///
/// Without an interface field, dispatch skips the interfaces a node does
/// not support; this resolver cannot (it has no replica), so it answers
/// the first declaring interface. The two agree wherever it matters: no
/// member name is declared by two interfaces of one object with different
/// markers (checked by the tests), so `heavy` is the same either way.
pub fn declared_method(header: &Header) -> Option<DeclaredMethod> {
    if header.message_type() != MessageType::MethodCall {
        return None;
    }
    let member = header.member()?.as_str();
    let interface = match header.interface() {
        Some(name) => declared_interface(name.as_str())?,
        None => {
            let address = paths::parse(header.path()?.as_str())?;
            first_declaring(declaring_interfaces(address), member)?
        }
    };
    let method = interface.method(member)?;
    Some(DeclaredMethod {
        interface: interface.name,
        method,
    })
}

fn peer(app: &AppContext, member: &str, call: &Message) -> Result<Handled, CallError> {
    match member {
        "Ping" => Ok(Handled::reply(method_return(call, &())?)),
        "GetMachineId" => Ok(Handled::reply(method_return(
            call,
            &(app.host.machine_id(),),
        )?)),
        _ => Err(CallError::UnknownMethod {
            interface: names::PEER.to_owned(),
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
            set_property(target, object, path, &interface, &name, &value, call)
        }
        _ => Err(CallError::UnknownMethod {
            interface: names::PROPERTIES.to_owned(),
            member: member.to_owned(),
        }),
    }
}

/// `Properties.Set`, through the setter the property's declaration names.
fn set_property(
    target: Target,
    object: &Object,
    path: &str,
    interface: &str,
    name: &str,
    value: &OwnedValue,
    call: &Message,
) -> Result<Handled, CallError> {
    let written = served_interface(object, path, interface)?.set(target, name, value)?;
    let reply = method_return(call, &())?;
    Ok(match written {
        Written::AppId(id) => {
            let mut handled = Handled::reply(reply);
            handled.set_app_id = Some(id);
            handled
        }
        Written::Action(action) => Handled::with_action(reply, action),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::paths::{CACHE_PATH, ROOT_PATH};

    const NODE_PATH: &str = "/org/a11y/atspi/accessible/1_1";

    fn call(path: &str, interface: Option<&str>, member: &str) -> Message {
        let mut builder = Message::method_call(path, member).expect("valid path and member");
        if let Some(interface) = interface {
            builder = builder.interface(interface).expect("valid interface");
        }
        builder.build(&()).expect("message builds")
    }

    fn resolved(call: &Message) -> Option<(&'static str, &'static str)> {
        declared_method(&call.header()).map(|d| (d.interface, d.method.name))
    }

    fn is_heavy(call: &Message) -> bool {
        declared_method(&call.header()).is_some_and(|d| d.method.heavy)
    }

    /// A path of an object serving `interface`.
    fn path_serving(interface: &Interface) -> &'static str {
        if std::ptr::eq(interface, &cache::CACHE) {
            CACHE_PATH
        } else if ROOT_INTERFACES.iter().any(|i| std::ptr::eq(*i, interface)) {
            ROOT_PATH
        } else {
            NODE_PATH
        }
    }

    fn declared_heavy() -> Vec<(&'static Interface, &'static Method)> {
        crate::surface::interfaces()
            .into_iter()
            .flat_map(|iface| {
                iface
                    .methods
                    .iter()
                    .filter(|m| m.heavy)
                    .map(move |m| (iface, m))
            })
            .collect()
    }

    #[test]
    fn every_heavy_member_resolves_as_heavy_with_and_without_an_interface_field() {
        let mut names: Vec<_> = declared_heavy()
            .iter()
            .map(|(iface, method)| (iface.name, method.name))
            .collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                ("org.a11y.atspi.Cache", "GetItems"),
                ("org.a11y.atspi.Collection", "GetMatches"),
                ("org.a11y.atspi.Collection", "GetMatchesFrom"),
                ("org.a11y.atspi.Collection", "GetMatchesTo"),
            ]
        );
        for (iface, method) in declared_heavy() {
            let path = path_serving(iface);
            for interface in [Some(iface.name), None] {
                let call = call(path, interface, method.name);
                assert!(is_heavy(&call), "{interface:?} {} on {path}", method.name);
                assert_eq!(resolved(&call), Some((iface.name, method.name)));
            }
        }
    }

    #[test]
    fn cheap_and_unknown_members_are_not_heavy() {
        let accessible = Some(accessible::ACCESSIBLE.name);
        for path in [NODE_PATH, ROOT_PATH] {
            for interface in [accessible, None] {
                let get_role = call(path, interface, "GetRole");
                assert!(!is_heavy(&get_role), "{interface:?} GetRole on {path}");
                assert_eq!(
                    resolved(&get_role),
                    Some((accessible::ACCESSIBLE.name, "GetRole"))
                );
                let unknown = call(path, interface, "NoSuchMember");
                assert!(!is_heavy(&unknown));
                assert!(resolved(&unknown).is_none());
            }
        }
        // Members of the standard interfaces, unknown interfaces and paths
        // outside the object space resolve to nothing.
        let get = call(NODE_PATH, Some(names::PROPERTIES), "Get");
        assert!(resolved(&get).is_none());
        let ping = call(NODE_PATH, Some(names::PEER), "Ping");
        assert!(resolved(&ping).is_none());
        let invented = call(NODE_PATH, Some("org.example.Nope"), "GetMatches");
        assert!(!is_heavy(&invented));
        let elsewhere = call("/org/example/thing", None, "GetMatches");
        assert!(!is_heavy(&elsewhere));
        // The root serves no Collection: without an interface field,
        // dispatch answers UnknownMethod at once.
        let on_root = call(ROOT_PATH, None, "GetMatches");
        assert!(!is_heavy(&on_root));
    }

    #[test]
    fn without_an_interface_field_the_member_resolves_as_dispatch_routes_it() {
        assert_eq!(
            resolved(&call(ROOT_PATH, None, "GetApplicationBusAddress")),
            Some((application::APPLICATION.name, "GetApplicationBusAddress"))
        );
        assert_eq!(
            resolved(&call(CACHE_PATH, None, "GetItems")),
            Some((cache::CACHE.name, "GetItems"))
        );
        assert_eq!(
            resolved(&call(NODE_PATH, None, "GetMatchesFrom")),
            Some((collection::COLLECTION.name, "GetMatchesFrom"))
        );
    }

    /// Dispatch skips the interfaces a node does not support, the resolver
    /// cannot: they agree on `heavy` because no other interface declares
    /// a heavy member's name.
    #[test]
    fn a_heavy_member_name_is_declared_by_one_interface_only() {
        for (iface, method) in declared_heavy() {
            let declaring: Vec<_> = crate::surface::interfaces()
                .into_iter()
                .filter(|other| other.method(method.name).is_some())
                .map(|other| other.name)
                .collect();
            assert_eq!(declaring, [iface.name], "{}", method.name);
        }
    }
}
