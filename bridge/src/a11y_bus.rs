//! Finding the accessibility bus the way libatspi does.

use std::time::Duration;

use async_executor::Executor;

use tracing::{info, warn};

/// Why the accessibility bus could not be found.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error(
        "no accessibility bus: AT_SPI_BUS_ADDRESS is unset and the session bus is unreachable ({0}); \
         start the bridge inside a desktop session or set AT_SPI_BUS_ADDRESS"
    )]
    NoSessionBus(zbus::Error),
    #[error(
        "the session bus has no accessibility bus launcher (org.a11y.Bus: {0}); \
         install at-spi2-core or set AT_SPI_BUS_ADDRESS"
    )]
    NoLauncher(zbus::Error),
    #[error("could not connect to the accessibility bus at {address}: {source}")]
    Connect {
        address: String,
        source: zbus::Error,
    },
}

/// The a11y bus address: `$AT_SPI_BUS_ADDRESS` when set and non-empty, else
/// `org.a11y.Bus.GetAddress` on the session bus. (libatspi also reads an X11
/// root-window property; the launcher always answers on the session bus, so
/// that step adds nothing here.)
pub async fn find_address() -> Result<String, BusError> {
    find_address_with(None).await
}

/// [`find_address`] for the daemon: the session-bus connection's zbus tasks
/// run on `executor`.
pub async fn find_address_on(executor: &Executor<'static>) -> Result<String, BusError> {
    find_address_with(Some(executor)).await
}

async fn find_address_with(executor: Option<&Executor<'static>>) -> Result<String, BusError> {
    if let Some(address) = std::env::var("AT_SPI_BUS_ADDRESS")
        .ok()
        .filter(|a| !a.is_empty())
    {
        return Ok(address);
    }
    let session = match executor {
        Some(executor) => crate::driven::session(executor).await,
        None => zbus::Connection::session().await,
    }
    .map_err(BusError::NoSessionBus)?;
    let reply = session
        .call_method(
            Some("org.a11y.Bus"),
            "/org/a11y/bus",
            Some("org.a11y.Bus"),
            "GetAddress",
            &(),
        )
        .await
        .map_err(BusError::NoLauncher)?;
    reply
        .body()
        .deserialize::<String>()
        .map_err(BusError::NoLauncher)
}

/// Opens a new connection to the accessibility bus, with zbus's own
/// executor thread: for the tools, which have no executor of their own.
/// The daemon uses [`connect_on`].
pub async fn connect(address: &str) -> Result<zbus::Connection, BusError> {
    let connect_error = |source| BusError::Connect {
        address: address.to_owned(),
        source,
    };
    zbus::connection::Builder::address(address)
        .map_err(connect_error)?
        .build()
        .await
        .map_err(connect_error)
}

/// Opens a new connection to the accessibility bus whose zbus tasks run on
/// `executor` (see [`crate::driven`]).
pub async fn connect_on(
    address: &str,
    executor: &Executor<'static>,
) -> Result<zbus::Connection, BusError> {
    let connect_error = |source| BusError::Connect {
        address: address.to_owned(),
        source,
    };
    let conn = zbus::connection::Builder::address(address)
        .map_err(connect_error)?
        .internal_executor(false)
        .build()
        .await
        .map_err(connect_error)?;
    crate::driven::drive(&conn, executor);
    Ok(conn)
}

/// Opens a connection whose every incoming message lands in the returned
/// stream, from the first byte on: nothing a client sends right after
/// connecting can be lost before we subscribe. Its zbus tasks run on
/// `executor` (see [`crate::driven`]).
pub async fn connect_with_stream(
    address: &str,
    executor: &Executor<'static>,
) -> Result<zbus::MessageStream, BusError> {
    let connect_error = |source| BusError::Connect {
        address: address.to_owned(),
        source,
    };
    let stream = zbus::connection::Builder::address(address)
        .map_err(connect_error)?
        .internal_executor(false)
        .build_message_stream()
        .await
        .map_err(connect_error)?;
    crate::driven::drive(&zbus::Connection::from(&stream), executor);
    Ok(stream)
}

/// Finds the bus, retrying with backoff (capped at 5 s) while the session is
/// still starting, so the bridge can start before at-spi2-core does.
pub async fn wait_for_address(
    give_up_after: Option<Duration>,
    executor: &Executor<'static>,
) -> Result<String, BusError> {
    let started = std::time::Instant::now();
    let mut delay = Duration::from_millis(100);
    loop {
        match find_address_on(executor).await {
            Ok(address) => {
                info!(%address, "accessibility bus found");
                return Ok(address);
            }
            Err(error) => {
                if give_up_after.is_some_and(|limit| started.elapsed() >= limit) {
                    return Err(error);
                }
                warn!("{error}; retrying in {} ms", delay.as_millis());
                async_io::Timer::after(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// `address` without its `guid=` key, so a bus restarted at the same path
/// (with a new GUID) is accepted.
pub fn without_guid(address: &str) -> String {
    address
        .split(';')
        .map(|one| {
            let (transport, keys) = one.split_once(':').unwrap_or((one, ""));
            let kept: Vec<&str> = keys
                .split(',')
                .filter(|kv| !kv.starts_with("guid=") && !kv.is_empty())
                .collect();
            format!("{transport}:{}", kept.join(","))
        })
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(test)]
mod tests {
    use super::without_guid;

    #[test]
    fn strips_only_the_guid() {
        assert_eq!(
            without_guid("unix:path=/run/a/bus,guid=0123abcd"),
            "unix:path=/run/a/bus"
        );
        assert_eq!(without_guid("unix:guid=ff,path=/x"), "unix:path=/x");
        assert_eq!(without_guid("unix:path=/x"), "unix:path=/x");
        assert_eq!(
            without_guid("unix:path=/x,guid=1;tcp:host=h,port=1"),
            "unix:path=/x;tcp:host=h,port=1"
        );
    }
}
