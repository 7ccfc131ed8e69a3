//! Every AT-SPI (and D-Bus) method and property this repository's clients
//! use, declared once: interface, member name, argument types and reply
//! type. A call site names a declaration (`accessible::GET_CHILDREN`) and
//! the compiler checks its arguments and reply; no client spells an
//! interface or member name, or guesses a reply signature, again.
//!
//! Why these declarations and not the `atspi` crate's proxies:
//!
//! * the proxies decode object references into atspi-common's `ObjectRef`,
//!   whose deserializer panics on an empty bus name with a non-null path
//!   (see [`crate::wire`]); a client checking a bridge or toolkit must report
//!   such an answer, not crash on it, so replies here decode into the wire
//!   shapes of [`crate::wire`];
//! * a zbus proxy needs a destination, and a peer-to-peer connection (an
//!   application's own socket) has none: a call here with an empty `dest`
//!   is sent without a destination header;
//! * building a proxy per object costs the client time that the benchmarks
//!   would then charge to the server; a declaration here costs nothing at
//!   run time, so every target pays the same client-side cost.
//!
//! [`raw_call`] is the one way to send a call that is *not* declared here:
//! for tests that send malformed or hostile calls on purpose.

use std::collections::HashMap;
use std::marker::PhantomData;

use serde::Serialize;
use zbus::zvariant::{DynamicDeserialize, DynamicType, OwnedValue};
use zbus::{Connection, Message};

use crate::wire::{CacheItem, ObjectRef};

/// The registry's bus name; its desktop is [`ROOT`] there.
pub const REGISTRY: &str = "org.a11y.atspi.Registry";
/// Every application's root object (and the registry's desktop).
pub const ROOT: &str = "/org/a11y/atspi/accessible/root";
/// The object that answers `org.a11y.atspi.Cache`.
pub const CACHE_PATH: &str = "/org/a11y/atspi/cache";
/// The registry's own object (`GetRegisteredEvents`).
pub const REGISTRY_PATH: &str = "/org/a11y/atspi/registry";
/// The path of the null object reference.
pub const NULL_PATH: &str = "/org/a11y/atspi/null";

/// `(x, y, width, height)`: a box as Component and Text answer it.
pub type Extents = (i32, i32, i32, i32);

/// One D-Bus method: `A` is the argument tuple, `R` the reply body.
pub struct Method<A, R> {
    pub interface: &'static str,
    pub member: &'static str,
    /// The object the method lives on when it is fixed (bus driver, registry).
    pub fixed_path: Option<&'static str>,
    marker: PhantomData<fn(A) -> R>,
}

/// One D-Bus property of type `T`, read with `org.freedesktop.DBus.Properties.Get`.
pub struct Property<T> {
    pub interface: &'static str,
    pub name: &'static str,
    marker: PhantomData<fn() -> T>,
}

const fn method<A, R>(interface: &'static str, member: &'static str) -> Method<A, R> {
    Method {
        interface,
        member,
        fixed_path: None,
        marker: PhantomData,
    }
}

const fn method_at<A, R>(
    interface: &'static str,
    member: &'static str,
    path: &'static str,
) -> Method<A, R> {
    Method {
        interface,
        member,
        fixed_path: Some(path),
        marker: PhantomData,
    }
}

const fn property<T>(interface: &'static str, name: &'static str) -> Property<T> {
    Property {
        interface,
        name,
        marker: PhantomData,
    }
}

/// The destination header: none for an empty `dest` (a peer-to-peer connection).
fn destination(dest: &str) -> Option<&str> {
    (!dest.is_empty()).then_some(dest)
}

impl<A, R> Method<A, R>
where
    A: Serialize + DynamicType,
    R: for<'d> DynamicDeserialize<'d>,
{
    /// Calls the method on `path` of `dest` and decodes the reply.
    pub async fn call(
        &self,
        conn: &Connection,
        dest: &str,
        path: &str,
        args: &A,
    ) -> zbus::Result<R> {
        let reply = self.send(conn, dest, path, args).await?;
        reply.body().deserialize::<R>()
    }

    /// Calls the method and returns the reply undecoded (error replies are
    /// errors): what the benchmarks time.
    pub async fn send(
        &self,
        conn: &Connection,
        dest: &str,
        path: &str,
        args: &A,
    ) -> zbus::Result<Message> {
        self.send_naming(Some(self.interface), conn, dest, path, args)
            .await
    }

    /// [`Method::call`] without the interface field, which D-Bus lets a
    /// caller leave out (the server then finds the member by its name).
    pub async fn call_without_interface(
        &self,
        conn: &Connection,
        dest: &str,
        path: &str,
        args: &A,
    ) -> zbus::Result<R> {
        let reply = self.send_naming(None, conn, dest, path, args).await?;
        reply.body().deserialize::<R>()
    }

    /// Sends the call with `interface` in its header, or none.
    async fn send_naming(
        &self,
        interface: Option<&str>,
        conn: &Connection,
        dest: &str,
        path: &str,
        args: &A,
    ) -> zbus::Result<Message> {
        conn.call_method(destination(dest), path, interface, self.member, args)
            .await
    }

    /// [`Method::call`] on the method's fixed object.
    pub async fn call_fixed(&self, conn: &Connection, dest: &str, args: &A) -> zbus::Result<R> {
        self.call(conn, dest, self.fixed_path.unwrap_or("/"), args)
            .await
    }

    /// [`Method::call`], blocking the calling thread.
    pub fn call_blocking(
        &self,
        conn: &Connection,
        dest: &str,
        path: &str,
        args: &A,
    ) -> zbus::Result<R> {
        async_io::block_on(self.call(conn, dest, path, args))
    }
}

impl<T> Property<T>
where
    T: TryFrom<OwnedValue>,
    T::Error: Into<zbus::zvariant::Error>,
{
    /// Reads the property of `path` on `dest`.
    pub async fn get(&self, conn: &Connection, dest: &str, path: &str) -> zbus::Result<T> {
        let value = self.send(conn, dest, path).await?;
        let value: OwnedValue = value.body().deserialize()?;
        T::try_from(value).map_err(|e| zbus::Error::Variant(e.into()))
    }

    /// Sends the `Properties.Get` call and returns the reply undecoded.
    pub async fn send(&self, conn: &Connection, dest: &str, path: &str) -> zbus::Result<Message> {
        properties::GET
            .send(conn, dest, path, &(self.interface.into(), self.name.into()))
            .await
    }

    /// Sets the property of `path` on `dest` (`org.freedesktop.DBus.Properties.Set`).
    pub async fn set(&self, conn: &Connection, dest: &str, path: &str, value: T) -> zbus::Result<()>
    where
        T: Into<zbus::zvariant::Value<'static>>,
    {
        let args = (self.interface.into(), self.name.into(), value.into());
        properties::SET.call(conn, dest, path, &args).await
    }

    /// [`Property::get`], blocking the calling thread.
    pub fn get_blocking(&self, conn: &Connection, dest: &str, path: &str) -> zbus::Result<T> {
        async_io::block_on(self.get(conn, dest, path))
    }
}

/// Sends a call that is deliberately not one of the declarations here (a
/// wrong signature, an unknown member, a hostile argument) and returns the
/// reply undecoded. The one raw sender: tests of how a server answers bad
/// calls use it; everything else goes through a declaration.
pub async fn raw_call<B>(
    conn: &Connection,
    dest: &str,
    path: &str,
    interface: &str,
    member: &str,
    body: &B,
) -> zbus::Result<Message>
where
    B: Serialize + DynamicType,
{
    conn.call_method(destination(dest), path, Some(interface), member, body)
        .await
}

/// `org.freedesktop.DBus.Properties`.
pub mod properties {
    use super::*;
    pub const GET: Method<(String, String), OwnedValue> =
        method("org.freedesktop.DBus.Properties", "Get");
    pub const SET: Method<(String, String, zbus::zvariant::Value<'static>), ()> =
        method("org.freedesktop.DBus.Properties", "Set");
}

/// `org.freedesktop.DBus.Peer` (on any path; the bridge and the bus answer on `/`).
pub mod peer {
    use super::*;
    pub const PING: Method<(), ()> = method_at("org.freedesktop.DBus.Peer", "Ping", "/");
}

/// The bus driver, `org.freedesktop.DBus`.
pub mod bus {
    use super::*;
    /// The bus driver's name (and interface).
    pub const NAME: &str = "org.freedesktop.DBus";
    const PATH: &str = "/org/freedesktop/DBus";
    pub const NAME_HAS_OWNER: Method<(String,), bool> = method_at(NAME, "NameHasOwner", PATH);
    pub const GET_CONNECTION_UNIX_PROCESS_ID: Method<(String,), u32> =
        method_at(NAME, "GetConnectionUnixProcessID", PATH);
}

/// at-spi-bus-launcher on the session bus: `org.a11y.Bus` and `org.a11y.Status`.
pub mod launcher {
    use super::*;
    /// The launcher's well-known name on the session bus.
    pub const NAME: &str = "org.a11y.Bus";
    /// The launcher's object.
    pub const PATH: &str = "/org/a11y/bus";
    /// The accessibility bus's address.
    pub const GET_ADDRESS: Method<(), String> = method_at(NAME, "GetAddress", PATH);
    /// Whether assistive technology is on (GNOME sets it when a screen reader starts).
    pub const IS_ENABLED: Property<bool> = property("org.a11y.Status", "IsEnabled");
}

/// `org.a11y.atspi.Accessible`.
pub mod accessible {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Accessible";
    pub const GET_CHILDREN: Method<(), Vec<ObjectRef>> = method(INTERFACE, "GetChildren");
    pub const GET_CHILD_AT_INDEX: Method<(i32,), ObjectRef> = method(INTERFACE, "GetChildAtIndex");
    pub const GET_INDEX_IN_PARENT: Method<(), i32> = method(INTERFACE, "GetIndexInParent");
    pub const GET_ROLE: Method<(), u32> = method(INTERFACE, "GetRole");
    pub const GET_ROLE_NAME: Method<(), String> = method(INTERFACE, "GetRoleName");
    pub const GET_STATE: Method<(), Vec<u32>> = method(INTERFACE, "GetState");
    pub const GET_ATTRIBUTES: Method<(), HashMap<String, String>> =
        method(INTERFACE, "GetAttributes");
    pub const GET_RELATION_SET: Method<(), Vec<(u32, Vec<ObjectRef>)>> =
        method(INTERFACE, "GetRelationSet");
    pub const GET_INTERFACES: Method<(), Vec<String>> = method(INTERFACE, "GetInterfaces");
    pub const NAME: Property<String> = property(INTERFACE, "Name");
    pub const DESCRIPTION: Property<String> = property(INTERFACE, "Description");
    pub const CHILD_COUNT: Property<i32> = property(INTERFACE, "ChildCount");
    pub const PARENT: Property<ObjectRef> = property(INTERFACE, "Parent");
}

/// `org.a11y.atspi.Application`.
pub mod application {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Application";
    pub const GET_APPLICATION_BUS_ADDRESS: Method<(), String> =
        method(INTERFACE, "GetApplicationBusAddress");
    pub const TOOLKIT_NAME: Property<String> = property(INTERFACE, "ToolkitName");
}

/// `org.a11y.atspi.Component`.
pub mod component {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Component";
    /// `(coord_type)` → `(x, y, width, height)`.
    pub const GET_EXTENTS: Method<(u32,), Extents> = method(INTERFACE, "GetExtents");
    /// `(x, y, coord_type)` → the object there.
    pub const GET_ACCESSIBLE_AT_POINT: Method<(i32, i32, u32), ObjectRef> =
        method(INTERFACE, "GetAccessibleAtPoint");
}

/// `org.a11y.atspi.Action`.
pub mod action {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Action";
    /// `(name, description, key binding)` of each action.
    pub const GET_ACTIONS: Method<(), Vec<(String, String, String)>> =
        method(INTERFACE, "GetActions");
    pub const GET_NAME: Method<(i32,), String> = method(INTERFACE, "GetName");
    pub const DO_ACTION: Method<(i32,), bool> = method(INTERFACE, "DoAction");
    pub const N_ACTIONS: Property<i32> = property(INTERFACE, "NActions");
}

/// `org.a11y.atspi.Text`.
pub mod text {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Text";
    /// `(start, end)`; `end` -1 is the end of the text.
    pub const GET_TEXT: Method<(i32, i32), String> = method(INTERFACE, "GetText");
    /// `(offset, boundary type)` → `(text, start, end)`.
    pub const GET_TEXT_AT_OFFSET: Method<(i32, u32), (String, i32, i32)> =
        method(INTERFACE, "GetTextAtOffset");
    /// `(offset, granularity)` → `(text, start, end)`.
    pub const GET_STRING_AT_OFFSET: Method<(i32, u32), (String, i32, i32)> =
        method(INTERFACE, "GetStringAtOffset");
    pub const GET_CHARACTER_AT_OFFSET: Method<(i32,), i32> =
        method(INTERFACE, "GetCharacterAtOffset");
    /// `(start, end, coord_type)` → `(x, y, width, height)`.
    pub const GET_RANGE_EXTENTS: Method<(i32, i32, u32), Extents> =
        method(INTERFACE, "GetRangeExtents");
    /// `(start, end, scroll type)`.
    pub const SCROLL_SUBSTRING_TO: Method<(i32, i32, u32), bool> =
        method(INTERFACE, "ScrollSubstringTo");
    /// Text attributes, and the start and end of the run they hold over.
    pub type AttributeRun = (HashMap<String, String>, i32, i32);
    /// `(offset, include defaults)` → the attribute run at `offset`.
    pub const GET_ATTRIBUTE_RUN: Method<(i32, bool), AttributeRun> =
        method(INTERFACE, "GetAttributeRun");
    pub const CARET_OFFSET: Property<i32> = property(INTERFACE, "CaretOffset");
    pub const CHARACTER_COUNT: Property<i32> = property(INTERFACE, "CharacterCount");
}

/// `org.a11y.atspi.Hypertext`: a text's links.
pub mod hypertext {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Hypertext";
    pub const GET_N_LINKS: Method<(), i32> = method(INTERFACE, "GetNLinks");
    /// The link object at an index of the text's links.
    pub const GET_LINK: Method<(i32,), ObjectRef> = method(INTERFACE, "GetLink");
    /// The index of the link at a character offset (-1 when none).
    pub const GET_LINK_INDEX: Method<(i32,), i32> = method(INTERFACE, "GetLinkIndex");
}

/// `org.a11y.atspi.Hyperlink`: an object embedded in its parent's text.
pub mod hyperlink {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Hyperlink";
    /// Its U+FFFC's offset in the parent's text, and the offset after it.
    pub const START_INDEX: Property<i32> = property(INTERFACE, "StartIndex");
    pub const END_INDEX: Property<i32> = property(INTERFACE, "EndIndex");
}

/// `org.a11y.atspi.Value`.
pub mod value {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Value";
    pub const CURRENT_VALUE: Property<f64> = property(INTERFACE, "CurrentValue");
    pub const MINIMUM_VALUE: Property<f64> = property(INTERFACE, "MinimumValue");
    pub const MAXIMUM_VALUE: Property<f64> = property(INTERFACE, "MaximumValue");
}

/// `org.a11y.atspi.Collection`.
pub mod collection {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Collection";
    /// A match rule `(aiia{ss}iaiiasib)`: states and their match type, attributes and
    /// theirs, roles and theirs, interfaces and theirs, and whether to invert.
    pub type MatchRule = (
        Vec<i32>,
        i32,
        HashMap<String, String>,
        i32,
        Vec<i32>,
        i32,
        Vec<String>,
        i32,
        bool,
    );
    /// `(rule, sort order, count (0: all), traverse)` → the matching objects.
    pub const GET_MATCHES: Method<(MatchRule, u32, i32, bool), Vec<ObjectRef>> =
        method(INTERFACE, "GetMatches");
}

/// `org.a11y.atspi.Cache` (on [`CACHE_PATH`]).
pub mod cache {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Cache";
    pub const GET_ITEMS: Method<(), Vec<CacheItem>> = method_at(INTERFACE, "GetItems", CACHE_PATH);
}

/// `org.a11y.atspi.Registry` (the registry daemon's own object).
pub mod registry {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.Registry";
    /// `(listener bus name, event)` of every registration.
    pub const GET_REGISTERED_EVENTS: Method<(), Vec<(String, String)>> =
        method_at(INTERFACE, "GetRegisteredEvents", REGISTRY_PATH);
    /// Registers the caller as a listener for an event (`object:children-changed`).
    pub const REGISTER_EVENT: Method<(String,), ()> =
        method_at(INTERFACE, "RegisterEvent", REGISTRY_PATH);
    pub const DEREGISTER_EVENT: Method<(String,), ()> =
        method_at(INTERFACE, "DeregisterEvent", REGISTRY_PATH);
}

/// `org.a11y.atspi.DeviceEventController` (the registry's key event hub).
pub mod device_event_controller {
    use super::*;
    pub const INTERFACE: &str = "org.a11y.atspi.DeviceEventController";
    const PATH: &str = "/org/a11y/atspi/registry/deviceeventcontroller";
    /// `(type, id (keysym), hw_code, modifiers, timestamp, event_string, is_text)`, the
    /// `(uinnisb)` of a key event.
    pub type KeyEvent = (u32, i32, i16, i16, i32, String, bool);
    /// Offers a key event to the registered key listeners; true when one consumed it.
    pub const NOTIFY_LISTENERS_SYNC: Method<(KeyEvent,), bool> =
        method_at(INTERFACE, "NotifyListenersSync", PATH);
}

/// The desktop's applications as the registry lists them.
pub async fn desktop_applications(conn: &Connection) -> zbus::Result<Vec<ObjectRef>> {
    accessible::GET_CHILDREN
        .call(conn, REGISTRY, ROOT, &())
        .await
}

/// The bus names of the desktop's applications whose root is named `name`
/// (an application whose name cannot be read is left out).
pub async fn applications_named(conn: &Connection, name: &str) -> zbus::Result<Vec<String>> {
    let mut found = Vec::new();
    for (bus, path) in desktop_applications(conn).await? {
        let named = accessible::NAME.get(conn, &bus, path.as_str()).await;
        if named.is_ok_and(|n| n == name) {
            found.push(bus);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zbus::zvariant::Type;

    /// `(in, out)` signatures of a declaration, as D-Bus introspection writes them (the
    /// argument tuple's parentheses dropped).
    fn signatures<A: Type, R: Type>(method: &Method<A, R>) -> (String, String) {
        let declared = format!("{}.{}", method.interface, method.member);
        let strip = |s: String| {
            s.strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .map(str::to_owned)
                .unwrap_or(s)
        };
        (
            declared,
            format!(
                "{} -> {}",
                strip(A::SIGNATURE.to_string()),
                R::SIGNATURE.to_string().replace("()", "")
            ),
        )
    }

    /// Member names and signatures as at-spi2-core's xml/*.xml and the D-Bus specification
    /// declare them (written down here, not derived from the code under test).
    #[test]
    fn declarations_match_the_interface_definitions() {
        let table: Vec<(&str, &str, (String, String))> = vec![
            (
                "org.a11y.atspi.Accessible",
                "GetChildren",
                signatures(&accessible::GET_CHILDREN),
            ),
            (
                "org.a11y.atspi.Accessible",
                "GetChildAtIndex",
                signatures(&accessible::GET_CHILD_AT_INDEX),
            ),
            (
                "org.a11y.atspi.Accessible",
                "GetIndexInParent",
                signatures(&accessible::GET_INDEX_IN_PARENT),
            ),
            (
                "org.a11y.atspi.Accessible",
                "GetRole",
                signatures(&accessible::GET_ROLE),
            ),
            (
                "org.a11y.atspi.Accessible",
                "GetRoleName",
                signatures(&accessible::GET_ROLE_NAME),
            ),
            (
                "org.a11y.atspi.Accessible",
                "GetState",
                signatures(&accessible::GET_STATE),
            ),
            (
                "org.a11y.atspi.Accessible",
                "GetAttributes",
                signatures(&accessible::GET_ATTRIBUTES),
            ),
            (
                "org.a11y.atspi.Accessible",
                "GetRelationSet",
                signatures(&accessible::GET_RELATION_SET),
            ),
            (
                "org.a11y.atspi.Accessible",
                "GetInterfaces",
                signatures(&accessible::GET_INTERFACES),
            ),
            (
                "org.a11y.atspi.Component",
                "GetExtents",
                signatures(&component::GET_EXTENTS),
            ),
            (
                "org.a11y.atspi.Component",
                "GetAccessibleAtPoint",
                signatures(&component::GET_ACCESSIBLE_AT_POINT),
            ),
            (
                "org.a11y.atspi.Action",
                "GetActions",
                signatures(&action::GET_ACTIONS),
            ),
            (
                "org.a11y.atspi.Action",
                "DoAction",
                signatures(&action::DO_ACTION),
            ),
            (
                "org.a11y.atspi.Text",
                "GetText",
                signatures(&text::GET_TEXT),
            ),
            (
                "org.a11y.atspi.Text",
                "GetTextAtOffset",
                signatures(&text::GET_TEXT_AT_OFFSET),
            ),
            (
                "org.a11y.atspi.Text",
                "GetStringAtOffset",
                signatures(&text::GET_STRING_AT_OFFSET),
            ),
            (
                "org.a11y.atspi.Text",
                "GetRangeExtents",
                signatures(&text::GET_RANGE_EXTENTS),
            ),
            (
                "org.a11y.atspi.Text",
                "ScrollSubstringTo",
                signatures(&text::SCROLL_SUBSTRING_TO),
            ),
            (
                "org.a11y.atspi.Collection",
                "GetMatches",
                signatures(&collection::GET_MATCHES),
            ),
            (
                "org.a11y.atspi.Cache",
                "GetItems",
                signatures(&cache::GET_ITEMS),
            ),
            (
                "org.a11y.atspi.DeviceEventController",
                "NotifyListenersSync",
                signatures(&device_event_controller::NOTIFY_LISTENERS_SYNC),
            ),
            (
                "org.a11y.atspi.Registry",
                "RegisterEvent",
                signatures(&registry::REGISTER_EVENT),
            ),
        ];
        let expected = [
            ("", "a(so)"),
            ("i", "(so)"),
            ("", "i"),
            ("", "u"),
            ("", "s"),
            ("", "au"),
            ("", "a{ss}"),
            ("", "a(ua(so))"),
            ("", "as"),
            ("u", "(iiii)"),
            ("iiu", "(so)"),
            ("", "a(sss)"),
            ("i", "b"),
            ("ii", "s"),
            ("iu", "(sii)"),
            ("iu", "(sii)"),
            ("iiu", "(iiii)"),
            ("iiu", "b"),
            ("(aiia{ss}iaiiasib)uib", "a(so)"),
            ("", "a((so)(so)(so)iiassusau)"),
            ("(uinnisb)", "b"),
            ("s", ""),
        ];
        assert_eq!(table.len(), expected.len());
        for ((interface, member, got), (args, reply)) in table.iter().zip(expected) {
            assert_eq!(got.0, format!("{interface}.{member}"));
            assert_eq!(got.1, format!("{args} -> {reply}"), "{interface}.{member}");
        }
    }
}
