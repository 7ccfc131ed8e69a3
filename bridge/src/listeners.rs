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
pub struct SharedListeners(Arc<Mutex<EventListeners>>);

impl SharedListeners {
    pub fn lock(&self) -> MutexGuard<'_, EventListeners> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a built event signal must be sent.
    pub fn wants(&self, signal: &zbus::Message) -> bool {
        match newton_atspi_shim::events::event_name(signal) {
            Some((class, major, detail)) => self.lock().is_needed(&class, &major, &detail),
            None => true,
        }
    }
}

/// Follows listener (de)registrations and registry restarts until the bus
/// connection ends.
pub async fn watch(daemon: Arc<Daemon>, conn: zbus::Connection) {
    let registry_signals = match signal_stream(&conn, "org.a11y.atspi.Registry").await {
        Ok(stream) => stream,
        Err(e) => return warn!("cannot follow event listeners ({e}); sending every event"),
    };
    let owner_changes = match signal_stream(&conn, "org.freedesktop.DBus").await {
        Ok(stream) => stream,
        Err(e) => return warn!("cannot follow the registry's restarts ({e})"),
    };
    refresh(&daemon, &conn).await;
    let mut signals = futures::stream::select(registry_signals, owner_changes);
    while let Some(Ok(signal)) = signals.next().await {
        let header = signal.header();
        match header.member().map(|m| m.as_str()) {
            Some("EventListenerRegistered") => {
                if let Ok((bus, event)) = first_two_strings(&signal) {
                    daemon.listeners.lock().registered(&bus, &event);
                }
            }
            Some("EventListenerDeregistered") => {
                if let Ok((bus, event)) = first_two_strings(&signal) {
                    daemon.listeners.lock().deregistered(&bus, &event);
                }
            }
            Some("NameOwnerChanged") => on_owner_change(&daemon, &conn, &signal).await,
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
        daemon.listeners.lock().listener_gone(&name);
    }
}

async fn refresh(daemon: &Daemon, conn: &zbus::Connection) {
    match registry::registered_events(conn).await {
        Ok(events) => {
            debug!(count = events.len(), "event listeners known");
            daemon.listeners.lock().set_registered(&events);
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
