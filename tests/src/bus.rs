//! A tiny blocking D-Bus client (zbus driven by `async_io::block_on`) for readiness checks.

use zbus::connection::Builder;
use zbus::Connection;

use crate::{HarnessError, Result};

const DBUS_NAME: &str = "org.freedesktop.DBus";
const DBUS_PATH: &str = "/org/freedesktop/DBus";
pub(crate) const REGISTRY_NAME: &str = "org.a11y.atspi.Registry";

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

    /// Calls a method and decodes its reply body as `R`.
    pub fn call<B, R>(
        &self,
        dest: &str,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<R>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
    {
        let what = || format!("{dest} {path} {iface}.{method} on {}", self.address);
        async_io::block_on(async {
            let reply = self
                .conn
                .call_method(Some(dest), path, Some(iface), method, body)
                .await
                .map_err(HarnessError::dbus(what()))?;
            reply
                .body()
                .deserialize::<R>()
                .map_err(HarnessError::dbus(what()))
        })
    }

    /// `NameHasOwner` (does not trigger D-Bus activation).
    pub fn name_has_owner(&self, name: &str) -> Result<bool> {
        self.call(DBUS_NAME, DBUS_PATH, DBUS_NAME, "NameHasOwner", &(name,))
    }

    /// PID of the process owning the connection `name`.
    pub fn pid_of(&self, name: &str) -> Result<u32> {
        self.call(
            DBUS_NAME,
            DBUS_PATH,
            DBUS_NAME,
            "GetConnectionUnixProcessID",
            &(name,),
        )
    }

    /// The registry's `(listener bus name, event)` registrations.
    pub fn registered_events(&self) -> Result<Vec<(String, String)>> {
        self.call(
            REGISTRY_NAME,
            "/org/a11y/atspi/registry",
            "org.a11y.atspi.Registry",
            "GetRegisteredEvents",
            &(),
        )
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

    /// Bus names of the applications embedded in the desktop (registry's root children).
    pub fn desktop_children(&self) -> Result<Vec<newton_atspi_client::wire::ObjectRef>> {
        self.call(
            REGISTRY_NAME,
            "/org/a11y/atspi/accessible/root",
            "org.a11y.atspi.Accessible",
            "GetChildren",
            &(),
        )
    }
}
