//! A blocking AT-SPI client on one zbus connection: the queries the suite times, each sent
//! through newton-atspi-client's declarations as a plain method call (no proxy) so every target
//! pays the same client-side cost.

use std::time::{Duration, Instant};

use serde::Serialize;
use zbus::connection::Builder;
use zbus::zvariant::{DynamicDeserialize, DynamicType, OwnedObjectPath, OwnedValue};
use zbus::{Connection, Message};

use newton_atspi_client::calls::{
    accessible, application, bus, cache, component, hyperlink, hypertext, peer, text, Method,
    Property, REGISTRY, ROOT,
};

use crate::{fail, Result};

pub use newton_atspi_client::calls::CACHE_PATH;

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

/// A call with its arguments, for sequences that step through offsets and links (Say All),
/// where a [`Query`]'s fixed arguments will not do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Call {
    CharacterCount,
    GetText(i32, i32),
    /// Offset and boundary type (AT-SPI `TEXT_BOUNDARY_*`).
    GetTextAtOffset(i32, u32),
    /// Offset and granularity (AT-SPI `TEXT_GRANULARITY_*`).
    GetStringAtOffset(i32, u32),
    /// Offset and include-defaults.
    GetAttributeRun(i32, bool),
    GetRole,
    GetState,
    /// `Hyperlink.StartIndex`: the object's U+FFFC in its parent's text.
    StartIndex,
    EndIndex,
    /// `Hypertext.GetLink(index)`.
    GetLink(i32),
}

impl Call {
    /// The D-Bus member name (what reports group by).
    pub fn member(self) -> &'static str {
        match self {
            Call::CharacterCount => "CharacterCount",
            Call::GetText(..) => "GetText",
            Call::GetTextAtOffset(..) => "GetTextAtOffset",
            Call::GetStringAtOffset(..) => "GetStringAtOffset",
            Call::GetAttributeRun(..) => "GetAttributeRun",
            Call::GetRole => "GetRole",
            Call::GetState => "GetState",
            Call::StartIndex => "StartIndex",
            Call::EndIndex => "EndIndex",
            Call::GetLink(_) => "GetLink",
        }
    }
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

    /// Sends `method` and waits for its undecoded reply (error replies are errors).
    fn send<A, R>(&self, obj: &Obj, method: &Method<A, R>, args: &A) -> zbus::Result<Message>
    where
        A: Serialize + DynamicType,
        R: for<'d> DynamicDeserialize<'d>,
    {
        async_io::block_on(method.send(&self.conn, &obj.dest, obj.path.as_str(), args))
    }

    /// Calls `method` and decodes its reply.
    fn call<A, R>(&self, obj: &Obj, method: &Method<A, R>, args: &A) -> Result<R>
    where
        A: Serialize + DynamicType,
        R: for<'d> DynamicDeserialize<'d>,
    {
        async_io::block_on(method.call(&self.conn, &obj.dest, obj.path.as_str(), args)).map_err(
            |e| {
                fail(format!(
                    "{}.{} on {} {}: {e}",
                    method.interface,
                    method.member,
                    obj.dest,
                    obj.path.as_str()
                ))
            },
        )
    }

    fn property<T>(&self, obj: &Obj, property: &Property<T>) -> zbus::Result<Message>
    where
        T: TryFrom<OwnedValue>,
        T::Error: Into<zbus::zvariant::Error>,
    {
        async_io::block_on(property.send(&self.conn, &obj.dest, obj.path.as_str()))
    }

    fn get<T>(&self, obj: &Obj, property: &Property<T>) -> Result<T>
    where
        T: TryFrom<OwnedValue>,
        T::Error: Into<zbus::zvariant::Error>,
    {
        async_io::block_on(property.get(&self.conn, &obj.dest, obj.path.as_str())).map_err(|e| {
            fail(format!(
                "{}.{} of {} {}: {e}",
                property.interface,
                property.name,
                obj.dest,
                obj.path.as_str()
            ))
        })
    }

    /// Sends one query and waits for its reply.
    pub fn query(&self, obj: &Obj, query: Query) -> zbus::Result<Message> {
        match query {
            Query::Name => self.property(obj, &accessible::NAME),
            Query::Description => self.property(obj, &accessible::DESCRIPTION),
            Query::ChildCount => self.property(obj, &accessible::CHILD_COUNT),
            Query::CaretOffset => self.property(obj, &text::CARET_OFFSET),
            Query::CharacterCount => self.property(obj, &text::CHARACTER_COUNT),
            Query::GetRole => self.send(obj, &accessible::GET_ROLE, &()),
            Query::GetState => self.send(obj, &accessible::GET_STATE, &()),
            Query::GetAttributes => self.send(obj, &accessible::GET_ATTRIBUTES, &()),
            Query::GetRelationSet => self.send(obj, &accessible::GET_RELATION_SET, &()),
            Query::GetIndexInParent => self.send(obj, &accessible::GET_INDEX_IN_PARENT, &()),
            Query::GetChildAtIndex => self.send(obj, &accessible::GET_CHILD_AT_INDEX, &(0,)),
            // Boundary WORD_START (1) / granularity WORD (1), as Orca asks on every caret move.
            Query::GetTextAtOffset => self.send(obj, &text::GET_TEXT_AT_OFFSET, &(0, 1)),
            Query::GetStringAtOffset => self.send(obj, &text::GET_STRING_AT_OFFSET, &(0, 1)),
            Query::GetText => self.send(obj, &text::GET_TEXT, &(0, -1)),
            Query::GetRangeExtents => self.send(obj, &text::GET_RANGE_EXTENTS, &(0, 1, 0)),
            Query::ScrollSubstringTo => self.send(obj, &text::SCROLL_SUBSTRING_TO, &(0, 1, 0)),
            // Coordinate type SCREEN (0), as Orca 43.
            Query::GetExtents => self.send(obj, &component::GET_EXTENTS, &(0,)),
            Query::Ping => async_io::block_on(peer::PING.send(&self.conn, &obj.dest, "/", &())),
            Query::GetApplicationBusAddress => {
                self.send(obj, &application::GET_APPLICATION_BUS_ADDRESS, &())
            }
            Query::GetItems => self.send(obj, &cache::GET_ITEMS, &()),
        }
    }

    /// Sends one [`Call`] and waits for its undecoded reply.
    pub fn send_call(&self, obj: &Obj, call: Call) -> zbus::Result<Message> {
        match call {
            Call::CharacterCount => self.property(obj, &text::CHARACTER_COUNT),
            Call::GetText(start, end) => self.send(obj, &text::GET_TEXT, &(start, end)),
            Call::GetTextAtOffset(offset, boundary) => {
                self.send(obj, &text::GET_TEXT_AT_OFFSET, &(offset, boundary))
            }
            Call::GetStringAtOffset(offset, granularity) => {
                self.send(obj, &text::GET_STRING_AT_OFFSET, &(offset, granularity))
            }
            Call::GetAttributeRun(offset, defaults) => {
                self.send(obj, &text::GET_ATTRIBUTE_RUN, &(offset, defaults))
            }
            Call::GetRole => self.send(obj, &accessible::GET_ROLE, &()),
            Call::GetState => self.send(obj, &accessible::GET_STATE, &()),
            Call::StartIndex => self.property(obj, &hyperlink::START_INDEX),
            Call::EndIndex => self.property(obj, &hyperlink::END_INDEX),
            Call::GetLink(index) => self.send(obj, &hypertext::GET_LINK, &(index,)),
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
        let refs = self.call(obj, &accessible::GET_CHILDREN, &())?;
        Ok(refs
            .into_iter()
            .map(|(dest, path)| Obj { dest, path })
            .collect())
    }

    pub fn child_at(&self, obj: &Obj, index: i32) -> Result<Obj> {
        let (dest, path) = self.call(obj, &accessible::GET_CHILD_AT_INDEX, &(index,))?;
        Ok(Obj { dest, path })
    }

    pub fn child_count(&self, obj: &Obj) -> Result<i32> {
        self.get(obj, &accessible::CHILD_COUNT)
    }

    pub fn role_name(&self, obj: &Obj) -> Result<String> {
        self.call(obj, &accessible::GET_ROLE_NAME, &())
    }

    pub fn character_count(&self, obj: &Obj) -> Result<i32> {
        self.get(obj, &text::CHARACTER_COUNT)
    }

    pub fn text(&self, obj: &Obj, start: i32, end: i32) -> Result<String> {
        self.call(obj, &text::GET_TEXT, &(start, end))
    }

    pub fn name(&self, obj: &Obj) -> Result<String> {
        self.get(obj, &accessible::NAME)
    }

    pub fn interfaces(&self, obj: &Obj) -> Result<Vec<String>> {
        self.call(obj, &accessible::GET_INTERFACES, &())
    }

    /// The application's `GetApplicationBusAddress` ("" when it offers no peer-to-peer socket).
    pub fn bus_address(&self, obj: &Obj) -> Result<String> {
        self.call(obj, &application::GET_APPLICATION_BUS_ADDRESS, &())
    }

    /// Applications embedded in the registry's desktop.
    pub fn desktop_apps(&self) -> Result<Vec<Obj>> {
        self.children(&Obj::new(REGISTRY, ROOT)?)
    }

    /// PID of the process owning a bus connection.
    pub fn pid_of(&self, bus_name: &str) -> Result<u32> {
        async_io::block_on(bus::GET_CONNECTION_UNIX_PROCESS_ID.call_fixed(
            &self.conn,
            bus::NAME,
            &(bus_name.to_owned(),),
        ))
        .map_err(|e| fail(format!("GetConnectionUnixProcessID({bus_name}): {e}")))
    }
}
