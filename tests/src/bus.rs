//! A tiny blocking D-Bus client (zbus driven by `async_io::block_on`) for readiness checks and
//! test queries: every call names a declaration of newton-atspi-client's `calls`.

use newton_atspi_client::calls::{
    self, accessible, bus, device_event_controller, registry, Method, Property, REGISTRY, ROOT,
};
use newton_atspi_client::wire::ObjectRef;
use zbus::connection::Builder;
use zbus::zvariant::{DynamicDeserialize, DynamicType, OwnedValue};
use zbus::Connection;

use crate::{HarnessError, Result};

/// A connection to one bus, given by address (never taken from the environment).
#[derive(Debug, Clone)]
pub struct BusClient {
    conn: Connection,
    address: String,
}

impl BusClient {
    pub fn connect(address: &str) -> Result<BusClient> {
        let what = || format!("connect to bus {address}");
        let conn = async_io::block_on(async {
            Builder::address(address)
                .map_err(HarnessError::dbus(what()))?
                .build()
                .await
                .map_err(HarnessError::dbus(what()))
        })?;
        Ok(BusClient {
            conn,
            address: address.to_string(),
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Calls `method` (declared once in newton-atspi-client) on `path` of `dest` and decodes
    /// its reply.
    pub fn call<A, R>(&self, method: &Method<A, R>, dest: &str, path: &str, args: &A) -> Result<R>
    where
        A: serde::Serialize + DynamicType,
        R: for<'d> DynamicDeserialize<'d>,
    {
        let what = || {
            format!(
                "{dest} {path} {}.{} on {}",
                method.interface, method.member, self.address
            )
        };
        method
            .call_blocking(&self.conn, dest, path, args)
            .map_err(HarnessError::dbus(what()))
    }

    /// [`BusClient::call`] on the method's fixed object (bus driver, registry, cache).
    pub fn call_fixed<A, R>(&self, method: &Method<A, R>, dest: &str, args: &A) -> Result<R>
    where
        A: serde::Serialize + DynamicType,
        R: for<'d> DynamicDeserialize<'d>,
    {
        self.call(method, dest, method.fixed_path.unwrap_or("/"), args)
    }

    /// Reads `property` of `path` on `dest`.
    pub fn get<T>(&self, property: &Property<T>, dest: &str, path: &str) -> Result<T>
    where
        T: TryFrom<OwnedValue>,
        T::Error: Into<zbus::zvariant::Error>,
    {
        let what = || {
            format!(
                "{dest} {path} {}.{} on {}",
                property.interface, property.name, self.address
            )
        };
        property
            .get_blocking(&self.conn, dest, path)
            .map_err(HarnessError::dbus(what()))
    }

    /// The connection, for calls that must go through `newton_atspi_client::calls::raw_call`.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// `NameHasOwner` (does not trigger D-Bus activation).
    pub fn name_has_owner(&self, name: &str) -> Result<bool> {
        self.call_fixed(&bus::NAME_HAS_OWNER, bus::NAME, &(name.to_owned(),))
    }

    /// PID of the process owning the connection `name`.
    pub fn pid_of(&self, name: &str) -> Result<u32> {
        self.call_fixed(
            &bus::GET_CONNECTION_UNIX_PROCESS_ID,
            bus::NAME,
            &(name.to_owned(),),
        )
    }

    /// The registry's `(listener bus name, event)` registrations.
    pub fn registered_events(&self) -> Result<Vec<(String, String)>> {
        self.call_fixed(&registry::GET_REGISTERED_EVENTS, REGISTRY, &())
    }

    /// Events registered by connections that belong to process `pid`.
    pub fn events_registered_by_pid(&self, pid: u32) -> Result<Vec<String>> {
        let mut events = Vec::new();
        for (listener, event) in self.registered_events()? {
            if self.pid_of(&listener).ok() == Some(pid) {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// Offers one key event to the registry's key listeners (Orca) through
    /// `DeviceEventController.NotifyListenersSync` (signature `(uinnisb)`, which gdbus cannot
    /// send), stamped with the current time; true when a listener consumed it.
    pub fn notify_key(
        &self,
        kind: u32,
        (keysym, keycode, modifiers): (i32, i16, i16),
        string: &str,
        is_text: bool,
    ) -> Result<bool> {
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let timestamp = i32::try_from(millis & 0x7fff_ffff).unwrap_or(0);
        let event = (
            kind,
            keysym,
            keycode,
            modifiers,
            timestamp,
            string.to_owned(),
            is_text,
        );
        self.call_fixed(
            &device_event_controller::NOTIFY_LISTENERS_SYNC,
            REGISTRY,
            &(event,),
        )
    }

    /// The applications embedded in the desktop (registry's root children).
    pub fn desktop_children(&self) -> Result<Vec<ObjectRef>> {
        self.call(&accessible::GET_CHILDREN, REGISTRY, ROOT, &())
    }

    /// Bus names of the desktop applications whose root is named `name`.
    pub fn applications_named(&self, name: &str) -> Result<Vec<String>> {
        async_io::block_on(calls::applications_named(&self.conn, name))
            .map_err(HarnessError::dbus(format!("applications named {name}")))
    }
}
