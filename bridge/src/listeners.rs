//! Watching the registry: which events ATs listen to (so events nobody
//! wants are not sent), and registry restarts (every application is embedded
//! again, as atk-bridge does).

use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use newton_atspi_shim::events::EventListeners;
use tracing::{debug, info, warn};
use zbus::message::Type as MessageType;
use zbus::{MatchRule, MessageStream};

use crate::daemon::Daemon;
use crate::registry::{self, REGISTRY_NAME};

/// The registry's listener list, shared by every application.
#[derive(Clone, Default)]
pub struct SharedListeners(
    Arc<Mutex<EventListeners>>,
    Arc<Mutex<Vec<(String, String)>>>,
);

impl SharedListeners {
    pub fn lock(&self) -> MutexGuard<'_, EventListeners> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn registrations(&self) -> MutexGuard<'_, Vec<(String, String)>> {
        self.1
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether any AT registered for any event.
    pub fn any(&self) -> bool {
        !self.registrations().is_empty()
    }

    fn set_all(&self, events: &[(String, String)]) {
        self.lock().set_registered(events);
        *self.registrations() = events.to_vec();
    }

    fn add(&self, bus: &str, event: &str) {
        self.lock().registered(bus, event);
        self.registrations()
            .push((bus.to_owned(), event.to_owned()));
    }

    fn remove(&self, bus: &str, event: &str) {
        self.lock().deregistered(bus, event);
        let mut registrations = self.registrations();
        if let Some(i) = registrations
            .iter()
            .position(|(b, e)| b == bus && e == event)
        {
            registrations.remove(i);
        }
    }

    fn remove_listener(&self, bus: &str) {
        self.lock().listener_gone(bus);
        self.registrations().retain(|(b, _)| b != bus);
    }

    /// Whether a built event signal must be sent.
    pub fn wants(&self, signal: &zbus::Message) -> bool {
        match newton_atspi_shim::events::event_name(signal) {
            Some((class, major, detail)) => self.lock().is_needed(&class, &major, &detail),
            None => true,
        }
    }
}

/// Follows the accessibility bus for the daemon's whole life: listeners,
/// registry restarts, and the bus itself going away (then every application
/// is reconnected once it is back).
pub async fn watch_bus(daemon: Arc<Daemon>, mut conn: zbus::Connection) {
    loop {
        watch(&daemon, &conn).await;
        warn!("lost the accessibility bus; waiting for it to come back");
        conn = daemon.reconnect_bus().await;
    }
}

/// Follows listener (de)registrations and registry restarts until the bus
/// connection ends.
async fn watch(daemon: &Arc<Daemon>, conn: &zbus::Connection) {
    let registry_signals = match signal_stream(conn, "org.a11y.atspi.Registry").await {
        Ok(stream) => stream,
        Err(e) => return warn!("cannot follow event listeners ({e}); sending every event"),
    };
    let owner_changes = match signal_stream(conn, "org.freedesktop.DBus").await {
        Ok(stream) => stream,
        Err(e) => return warn!("cannot follow the registry's restarts ({e})"),
    };
    refresh(daemon, conn).await;
    let mut signals = futures::stream::select(registry_signals, owner_changes);
    while let Some(Ok(signal)) = signals.next().await {
        let header = signal.header();
        match header.member().map(|m| m.as_str()) {
            Some("EventListenerRegistered") => {
                if let Ok((bus, event)) = first_two_strings(&signal) {
                    daemon.listeners.add(&bus, &event);
                    daemon.update_presence();
                }
            }
            Some("EventListenerDeregistered") => {
                if let Ok((bus, event)) = first_two_strings(&signal) {
                    daemon.listeners.remove(&bus, &event);
                    daemon.update_presence();
                }
            }
            Some("NameOwnerChanged") => on_owner_change(daemon, conn, &signal).await,
            _ => {}
        }
    }
}

async fn on_owner_change(daemon: &Arc<Daemon>, conn: &zbus::Connection, signal: &zbus::Message) {
    let Ok((name, _old, new)) = signal.body().deserialize::<(String, String, String)>() else {
        return;
    };
    if name == REGISTRY_NAME && !new.is_empty() {
        info!("the AT-SPI registry restarted; embedding every application again");
        for app in daemon.all_apps() {
            if let Err(e) = app.embed().await {
                warn!(app = %app.info.name, "could not embed again: {e}");
            }
        }
        refresh(daemon, conn).await;
    } else if new.is_empty() && name.starts_with(':') {
        daemon.listeners.remove_listener(&name);
        daemon.update_presence();
    }
}

async fn refresh(daemon: &Daemon, conn: &zbus::Connection) {
    match registry::registered_events(conn).await {
        Ok(events) => {
            debug!(count = events.len(), "event listeners known");
            daemon.listeners.set_all(&events);
            daemon.update_presence();
        }
        Err(e) => debug!("GetRegisteredEvents failed: {e}"),
    }
}

async fn signal_stream(
    conn: &zbus::Connection,
    interface: &'static str,
) -> zbus::Result<MessageStream> {
    let rule = MatchRule::builder()
        .msg_type(MessageType::Signal)
        .interface(interface)?
        .build();
    MessageStream::for_match_rule(rule, conn, None).await
}

/// `EventListenerRegistered` is `(ss as)` on 2.46 and `(ss)` in the XML:
/// read just the two strings.
fn first_two_strings(signal: &zbus::Message) -> zbus::Result<(String, String)> {
    let body = signal.body();
    if let Ok((bus, event, _)) = body.deserialize::<(String, String, Vec<String>)>() {
        return Ok((bus, event));
    }
    body.deserialize::<(String, String)>()
}

/// Follows `org.a11y.Status.IsEnabled` on the session bus (set by the bus
/// launcher and by Orca). Without a session bus it stays false and only
/// registered listeners count.
pub async fn watch_enabled(daemon: Arc<Daemon>) {
    let Ok(session) = crate::driven::session(&daemon.executor).await else {
        return debug!("no session bus: AT presence follows registered listeners only");
    };
    let Ok(proxy) = zbus::fdo::PropertiesProxy::builder(&session)
        .destination("org.a11y.Bus")
        .and_then(|b| b.path("/org/a11y/bus"))
        .map(|b| b.cache_properties(zbus::proxy::CacheProperties::No))
    else {
        return;
    };
    let Ok(proxy) = proxy.build().await else {
        return;
    };
    let Ok(mut changes) = proxy.receive_properties_changed().await else {
        return;
    };
    let status = zbus::names::InterfaceName::from_static_str_unchecked("org.a11y.Status");
    if let Ok(value) = proxy.get(status.clone(), "IsEnabled").await {
        daemon.set_enabled(bool::try_from(value).unwrap_or(false));
    }
    while let Some(signal) = changes.next().await {
        let Ok(args) = signal.args() else { continue };
        if args.interface_name.as_str() != "org.a11y.Status" {
            continue;
        }
        if let Some(value) = args.changed_properties.get("IsEnabled") {
            daemon.set_enabled(bool::try_from(value).unwrap_or(false));
        }
    }
}
