//! A blocking AT-SPI client on one zbus connection: the queries the suite times, each sent as a
//! raw method call so every target pays the same client-side cost.

use std::time::{Duration, Instant};

use serde::Serialize;
use zbus::connection::Builder;
use zbus::zvariant::{DynamicDeserialize, DynamicType, OwnedObjectPath};
use zbus::{Connection, Message};

use newton_atspi_client::wire::ObjectRef;

use crate::{fail, Result};

pub const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
pub const TEXT: &str = "org.a11y.atspi.Text";
pub const COMPONENT: &str = "org.a11y.atspi.Component";
pub const APPLICATION: &str = "org.a11y.atspi.Application";
pub const CACHE: &str = "org.a11y.atspi.Cache";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
const PEER: &str = "org.freedesktop.DBus.Peer";
const REGISTRY: &str = "org.a11y.atspi.Registry";
pub const ROOT_PATH: &str = "/org/a11y/atspi/accessible/root";
pub const CACHE_PATH: &str = "/org/a11y/atspi/cache";

/// An AT-SPI object: bus name and path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Obj {
    pub dest: String,
    pub path: OwnedObjectPath,
}

impl Obj {
    pub fn new(dest: &str, path: &str) -> Result<Obj> {
        let path = OwnedObjectPath::try_from(path.to_owned())
            .map_err(|e| fail(format!("bad object path {path}: {e}")))?;
        Ok(Obj {
            dest: dest.to_owned(),
            path,
        })
    }

    /// The application's Cache object.
    pub fn cache(&self) -> Result<Obj> {
        Obj::new(&self.dest, CACHE_PATH)
    }

    /// True for the null reference `(“”, /org/a11y/atspi/null)`.
    pub fn is_null(&self) -> bool {
        self.path.as_str().ends_with("/null")
    }
}

/// Every call the suite makes (the nine issue queries, the floor, and what the Orca profile adds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Query {
    Name,
    GetRole,
    GetState,
    GetAttributes,
    GetRelationSet,
    GetTextAtOffset,
    GetStringAtOffset,
    GetExtents,
    GetChildAtIndex,
    /// `org.freedesktop.DBus.Peer.Ping` on `/`: the transport floor.
    Ping,
    Description,
    ChildCount,
    GetIndexInParent,
    CaretOffset,
    CharacterCount,
    GetText,
    GetRangeExtents,
    ScrollSubstringTo,
    GetApplicationBusAddress,
    GetItems,
}

/// The nine queries of the issue, in table order.
pub const ISSUE_QUERIES: [Query; 9] = [
    Query::Name,
    Query::GetRole,
    Query::GetState,
    Query::GetAttributes,
    Query::GetRelationSet,
    Query::GetTextAtOffset,
    Query::GetStringAtOffset,
    Query::GetExtents,
    Query::GetChildAtIndex,
];

impl Query {
    pub fn label(self) -> String {
        match self {
            Query::Name => "Name (Properties.Get)".into(),
            other => format!("{other:?}"),
        }
    }
}

/// The destination header: none on a peer-to-peer connection (empty `dest`).
fn destination(obj: &Obj) -> Option<&str> {
    (!obj.dest.is_empty()).then_some(obj.dest.as_str())
}

/// One connection to the accessibility bus (or to one application, peer-to-peer).
#[derive(Clone, Debug)]
pub struct Client {
    conn: Connection,
}

impl Client {
    /// A direct (peer-to-peer) connection to an application's own socket; objects on it
    /// have an empty `dest`.
    pub fn connect_p2p(address: &str) -> Result<Client> {
        let conn = async_io::block_on(async { Builder::address(address)?.p2p().build().await })
            .map_err(|e| fail(format!("cannot connect peer-to-peer to {address}: {e}")))?;
        Ok(Client { conn })
    }

    pub fn connect(address: &str) -> Result<Client> {
        let conn = async_io::block_on(async { Builder::address(address)?.build().await })
            .map_err(|e| fail(format!("cannot connect to the bus {address}: {e}")))?;
        Ok(Client { conn })
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// A method call whose reply is returned undecoded (error replies are errors).
    pub fn raw<B>(&self, obj: &Obj, iface: &str, method: &str, body: &B) -> zbus::Result<Message>
    where
        B: serde::Serialize + DynamicType,
    {
        async_io::block_on(self.conn.call_method(
            destination(obj),
            obj.path.as_str(),
            Some(iface),
            method,
            body,
        ))
    }

    /// A method call with a decoded reply.
    pub fn call<B, R>(&self, obj: &Obj, iface: &str, method: &str, body: &B) -> Result<R>
    where
        B: serde::Serialize + DynamicType,
        R: for<'d> DynamicDeserialize<'d>,
    {
        let what = || format!("{iface}.{method} on {} {}", obj.dest, obj.path.as_str());
        let reply = self
            .raw(obj, iface, method, body)
            .map_err(|e| fail(format!("{}: {e}", what())))?;
        reply
            .body()
            .deserialize::<R>()
            .map_err(|e| fail(format!("{}: bad reply: {e}", what())))
    }

    fn property(&self, obj: &Obj, iface: &str, name: &str) -> zbus::Result<Message> {
        self.raw(obj, PROPERTIES, "Get", &(iface, name))
    }

    /// Sends one query and waits for its reply.
    pub fn query(&self, obj: &Obj, query: Query) -> zbus::Result<Message> {
        match query {
            Query::Name => self.property(obj, ACCESSIBLE, "Name"),
            Query::Description => self.property(obj, ACCESSIBLE, "Description"),
            Query::ChildCount => self.property(obj, ACCESSIBLE, "ChildCount"),
            Query::CaretOffset => self.property(obj, TEXT, "CaretOffset"),
            Query::CharacterCount => self.property(obj, TEXT, "CharacterCount"),
            Query::GetRole => self.raw(obj, ACCESSIBLE, "GetRole", &()),
            Query::GetState => self.raw(obj, ACCESSIBLE, "GetState", &()),
            Query::GetAttributes => self.raw(obj, ACCESSIBLE, "GetAttributes", &()),
            Query::GetRelationSet => self.raw(obj, ACCESSIBLE, "GetRelationSet", &()),
            Query::GetIndexInParent => self.raw(obj, ACCESSIBLE, "GetIndexInParent", &()),
            Query::GetChildAtIndex => self.raw(obj, ACCESSIBLE, "GetChildAtIndex", &(0i32,)),
            // Boundary WORD_START (1) / granularity WORD (1), as Orca asks on every caret move.
            Query::GetTextAtOffset => self.raw(obj, TEXT, "GetTextAtOffset", &(0i32, 1u32)),
            Query::GetStringAtOffset => self.raw(obj, TEXT, "GetStringAtOffset", &(0i32, 1u32)),
            Query::GetText => self.raw(obj, TEXT, "GetText", &(0i32, -1i32)),
            Query::GetRangeExtents => self.raw(obj, TEXT, "GetRangeExtents", &(0i32, 1i32, 0u32)),
            Query::ScrollSubstringTo => {
                self.raw(obj, TEXT, "ScrollSubstringTo", &(0i32, 1i32, 0u32))
            }
            // Coordinate type SCREEN (0), as Orca 43.
            Query::GetExtents => self.raw(obj, COMPONENT, "GetExtents", &(0u32,)),
            Query::Ping => async_io::block_on(self.conn.call_method(
                destination(obj),
                "/",
                Some(PEER),
                "Ping",
                &(),
            )),
            Query::GetApplicationBusAddress => {
                self.raw(obj, APPLICATION, "GetApplicationBusAddress", &())
            }
            Query::GetItems => self.raw(obj, CACHE, "GetItems", &()),
        }
    }

    /// Times one query; `None` when it failed.
    pub fn timed(&self, obj: &Obj, query: Query) -> Option<Duration> {
        let start = Instant::now();
        let ok = self.query(obj, query).is_ok();
        let elapsed = start.elapsed();
        ok.then_some(elapsed)
    }

    pub fn children(&self, obj: &Obj) -> Result<Vec<Obj>> {
        let refs: Vec<ObjectRef> = self.call(obj, ACCESSIBLE, "GetChildren", &())?;
        Ok(refs
            .into_iter()
            .map(|(dest, path)| Obj { dest, path })
            .collect())
    }

    pub fn child_at(&self, obj: &Obj, index: i32) -> Result<Obj> {
        let (dest, path): ObjectRef = self.call(obj, ACCESSIBLE, "GetChildAtIndex", &(index,))?;
        Ok(Obj { dest, path })
    }

    pub fn child_count(&self, obj: &Obj) -> Result<i32> {
        let value: zbus::zvariant::OwnedValue =
            self.call(obj, PROPERTIES, "Get", &(ACCESSIBLE, "ChildCount"))?;
        i32::try_from(value).map_err(|e| fail(format!("ChildCount is not an i32: {e}")))
    }

    pub fn name(&self, obj: &Obj) -> Result<String> {
        let value: zbus::zvariant::OwnedValue =
            self.call(obj, PROPERTIES, "Get", &(ACCESSIBLE, "Name"))?;
        String::try_from(value).map_err(|e| fail(format!("Name is not a string: {e}")))
    }

    pub fn interfaces(&self, obj: &Obj) -> Result<Vec<String>> {
        self.call(obj, ACCESSIBLE, "GetInterfaces", &())
    }

    /// Applications embedded in the registry's desktop.
    pub fn desktop_apps(&self) -> Result<Vec<Obj>> {
        self.children(&Obj::new(REGISTRY, ROOT_PATH)?)
    }

    /// PID of the process owning a bus connection.
    pub fn pid_of(&self, bus_name: &str) -> Result<u32> {
        let dbus = Obj::new("org.freedesktop.DBus", "/org/freedesktop/DBus")?;
        self.call(
            &dbus,
            "org.freedesktop.DBus",
            "GetConnectionUnixProcessID",
            &(bus_name,),
        )
    }
}
