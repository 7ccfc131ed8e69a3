//! Talking to at-spi2-registryd: embedding applications in the desktop and
//! learning which events ATs listen to.

use zbus::zvariant::{ObjectPath, OwnedObjectPath};

pub const REGISTRY_NAME: &str = "org.a11y.atspi.Registry";
pub const ROOT_PATH: &str = "/org/a11y/atspi/accessible/root";
const REGISTRY_PATH: &str = "/org/a11y/atspi/registry";
const SOCKET_INTERFACE: &str = "org.a11y.atspi.Socket";
const REGISTRY_INTERFACE: &str = "org.a11y.atspi.Registry";

/// The desktop reference `Socket.Embed` returned: the app root's parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desktop {
    pub bus_name: String,
    pub path: String,
}

/// Registers `conn`'s application root with the registry and returns the
/// desktop that becomes its parent.
pub async fn embed(conn: &zbus::Connection) -> zbus::Result<Desktop> {
    let plug = (
        own_name(conn)?,
        ObjectPath::from_static_str_unchecked(ROOT_PATH),
    );
    let reply = conn
        .call_method(
            Some(REGISTRY_NAME),
            ROOT_PATH,
            Some(SOCKET_INTERFACE),
            "Embed",
            &(plug,),
        )
        .await?;
    let (bus_name, path): (String, OwnedObjectPath) = reply.body().deserialize()?;
    Ok(Desktop {
        bus_name,
        path: path.to_string(),
    })
}

/// Removes the application from the desktop (best effort at shutdown; the
/// registry also drops it when the connection closes).
pub async fn unembed(conn: &zbus::Connection) -> zbus::Result<()> {
    let plug = (
        own_name(conn)?,
        ObjectPath::from_static_str_unchecked(ROOT_PATH),
    );
    conn.call_method(
        Some(REGISTRY_NAME),
        ROOT_PATH,
        Some(SOCKET_INTERFACE),
        "Unembed",
        &(plug,),
    )
    .await
    .map(|_| ())
}

/// `(listener bus name, event)` pairs the registry knows about.
pub async fn registered_events(conn: &zbus::Connection) -> zbus::Result<Vec<(String, String)>> {
    let reply = conn
        .call_method(
            Some(REGISTRY_NAME),
            REGISTRY_PATH,
            Some(REGISTRY_INTERFACE),
            "GetRegisteredEvents",
            &(),
        )
        .await?;
    reply.body().deserialize()
}

fn own_name(conn: &zbus::Connection) -> zbus::Result<String> {
    conn.unique_name()
        .map(|name| name.to_string())
        .ok_or_else(|| {
            zbus::Error::Failure("the accessibility bus gave this connection no unique name".into())
        })
}
