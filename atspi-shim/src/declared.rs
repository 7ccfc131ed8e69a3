//! Which declared interfaces each object serves: the interface lists of
//! the model (`model/implements.rs`, names and predicates) paired with
//! their declarations (`interfaces/`), and finding the declared method a
//! call names from its header alone. Dispatch and introspection read these.

use zbus::message::{Header, Type as MessageType};

use crate::interfaces::{
    accessible, action, application, cache, collection, component, document, editable_text,
    hyperlink, hypertext, image, selection, table, table_cell, text, value,
};
use crate::model::context::NodeCtx;
use crate::model::error::CallError;
use crate::model::implements;
use crate::model::paths::{self, ObjectAddress};
use crate::model::resolve::Object;
use crate::surface::{Arg, Interface, Method};

/// The app root's declarations, in `implements::ROOT`'s order.
const ROOT_INTERFACES: &[&Interface] = &[&accessible::ACCESSIBLE, &application::APPLICATION];

/// The cache object's.
const CACHE_INTERFACES: &[&Interface] = &[&cache::CACHE];

/// A link's hyperlink object's.
const HYPERLINK_INTERFACES: &[&Interface] = &[&hyperlink::HYPERLINK];

/// Each node interface's declaration, in `implements::NODE`'s order (the
/// tests check both lists name the same interfaces in the same order).
static NODE_INTERFACES: &[&Interface] = &[
    &accessible::ACCESSIBLE,
    &component::COMPONENT,
    &action::ACTION,
    &value::VALUE,
    &selection::SELECTION,
    &image::IMAGE,
    &text::TEXT,
    &editable_text::EDITABLE_TEXT,
    &hypertext::HYPERTEXT,
    &hyperlink::HYPERLINK,
    &document::DOCUMENT,
    &table::TABLE,
    &table_cell::TABLE_CELL,
    &collection::COLLECTION,
];

/// The declarations of the interfaces this node implements.
fn node_interfaces<'c>(ctx: &'c NodeCtx) -> impl Iterator<Item = &'static Interface> + 'c {
    (implements::NODE.iter().zip(NODE_INTERFACES))
        .filter(|(node, _)| (node.supported)(ctx))
        .map(|(_, iface)| *iface)
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

/// The interface named `name` if `object` serves it. Only that interface's
/// `supported` predicate runs (some build the node's text model or grid).
pub(crate) fn served_interface(
    object: &Object,
    path: &str,
    name: &str,
) -> Result<&'static Interface, CallError> {
    let named = |iface: &&Interface| iface.name == name;
    let found = match object {
        Object::Root => ROOT_INTERFACES.iter().copied().find(named),
        Object::Cache => Some(&cache::CACHE).filter(named),
        Object::Node(ctx) => (implements::NODE.iter().zip(NODE_INTERFACES))
            .find(|(node, iface)| iface.name == name && (node.supported)(ctx))
            .map(|(_, iface)| *iface),
        Object::Hyperlink(_) => Some(&hyperlink::HYPERLINK).filter(named),
    };
    found.ok_or_else(|| CallError::UnknownInterface {
        interface: name.to_owned(),
        path: path.to_owned(),
    })
}

/// The first of `interfaces` that declares a method `member`: how a call
/// without an interface field finds its interface.
pub(crate) fn first_declaring(
    interfaces: impl IntoIterator<Item = &'static Interface>,
    member: &str,
) -> Option<&'static Interface> {
    interfaces
        .into_iter()
        .find(|iface| iface.method(member).is_some())
}

/// The interfaces an object at `address` may serve, in the order
/// [`served_interfaces`] lists them, before a node's `supported`
/// predicates (which need the replica) have run.
fn declaring_interfaces(address: ObjectAddress) -> impl Iterator<Item = &'static Interface> {
    let interfaces = match address {
        ObjectAddress::Root => ROOT_INTERFACES,
        ObjectAddress::Cache => CACHE_INTERFACES,
        ObjectAddress::Node { .. } => NODE_INTERFACES,
        ObjectAddress::Hyperlink { .. } => HYPERLINK_INTERFACES,
    };
    interfaces.iter().copied()
}

/// The declared interface named `name`, whichever object serves it.
pub(crate) fn declared_interface(name: &str) -> Option<&'static Interface> {
    [&application::APPLICATION, &cache::CACHE]
        .into_iter()
        .chain(NODE_INTERFACES.iter().copied())
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
/// object at the call's path (dispatch's `route`: root, cache, node or hyperlink
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

/// One declared member, as listed by [`declared`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeclaredMember {
    Method {
        interface: &'static str,
        name: &'static str,
        in_signature: String,
        out_signature: String,
    },
    Property {
        interface: &'static str,
        name: &'static str,
        signature: String,
        writable: bool,
    },
}

/// Every declared AT-SPI interface, each once.
pub fn interfaces() -> Vec<&'static Interface> {
    let mut all: Vec<&'static Interface> = vec![&application::APPLICATION, &cache::CACHE];
    all.extend(NODE_INTERFACES.iter().copied());
    all
}

/// Every declared method and property with its D-Bus signatures (for the
/// test against at-spi2-core's interface definitions).
pub fn declared() -> Vec<DeclaredMember> {
    let concat = |args: &[Arg]| args.iter().map(|a| a.signature.to_string()).collect();
    let mut members = Vec::new();
    for interface in interfaces() {
        for method in interface.methods {
            members.push(DeclaredMember::Method {
                interface: interface.name,
                name: method.name,
                in_signature: concat(method.inputs),
                out_signature: concat(method.outputs),
            });
        }
        for property in interface.properties {
            members.push(DeclaredMember::Property {
                interface: interface.name,
                name: property.name,
                signature: property.signature.to_string(),
                writable: property.writable,
            });
        }
    }
    members
}

#[cfg(test)]
mod tests {
    use super::*;
    use zbus::message::Message;

    use crate::interfaces::{accessible, collection};
    use crate::model::names;
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
        interfaces()
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
            let declaring: Vec<_> = interfaces()
                .into_iter()
                .filter(|other| other.method(method.name).is_some())
                .map(|other| other.name)
                .collect();
            assert_eq!(declaring, [iface.name], "{}", method.name);
        }
    }

    /// Each object's declarations are the interfaces the model says it
    /// implements, in the same order.
    #[test]
    fn the_declarations_follow_the_model_s_interface_lists() {
        let names = |list: &[&Interface]| list.iter().map(|i| i.name).collect::<Vec<_>>();
        assert_eq!(names(ROOT_INTERFACES), implements::ROOT);
        assert_eq!(names(CACHE_INTERFACES), [names::CACHE]);
        assert_eq!(names(HYPERLINK_INTERFACES), [names::HYPERLINK]);
        let model: Vec<_> = implements::NODE.iter().map(|i| i.name).collect();
        assert_eq!(names(NODE_INTERFACES), model);
    }
}
