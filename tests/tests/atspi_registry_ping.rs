//! at-spi2-core 2.60.1 and later: the registry sends `org.freedesktop.DBus.Peer.Ping` to every
//! registered application about every 30 s (path `/`, 10 s reply timeout) and hides an
//! application that does not answer from the desktop's children (`registryd/registry.c`,
//! `ping_applications`, `disable_app`). The bridge answers for every application from its own
//! executor, so an application stays on the desktop even while its producer is frozen.
//!
//! Against the registry of `NEWTON_ATSPI_ROOT` (scripts/test.sh runs it with the Debian unstable
//! root: at-spi2-core 2.62). With a registry that does not ping (the host's 2.46, Debian 13's
//! 2.56) there is nothing to test: the test says so in the test summary and returns.
//!
//! Takes about 45 s (one ping round and its timeout). No Xvfb, no Orca.

use std::time::Duration;

use futures::StreamExt;

use newton_e2e::{fixture, registry_release, summary_note, Bridge, SessionOptions, TestSession};
use rustix::process::{kill_process, Pid, Signal};

const BASIC: &str = "generated-small/basic.jsonl";
const BASIC_APP: &str = "Newton basic demo";
/// The registry's ping period (30 s) plus its reply timeout (10 s) and a margin.
const PING_ROUND: Duration = Duration::from_secs(44);

#[test]
fn the_registry_keeps_an_application_whose_producer_is_frozen_through_its_pings() {
    let release = registry_release();
    if release.is_none_or(|version| version < (2, 60)) {
        // Nothing to wait for: this registry never pings (the host's 2.46, Debian 13's 2.56).
        summary_note(
            "registry ping",
            &format!(
                "SKIPPED: at-spi2-core {release:?} does not ping applications (2.60.1 and later \
                 do); scripts/test.sh runs this test against Debian unstable's 2.62"
            ),
        );
        return;
    }
    let options = SessionOptions {
        xvfb: false,
        ..SessionOptions::default()
    };
    let mut session = TestSession::start(options).expect("start the session");
    let a11y = session
        .a11y_bus_address()
        .expect("the session has an a11y bus")
        .to_owned();
    let pings = PingCounter::start(&a11y);
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let replay = bridge
        .replay_and_stay(&mut session, "replay", &fixture(BASIC), BASIC_APP)
        .expect("replay the basic fixture and stay connected");
    let app_bus = bus_name_of(&session, BASIC_APP);
    let producer = Pid::from_raw(replay.pid as i32).expect("a replay pid");
    kill_process(producer, Signal::STOP).expect("freeze our own replay child");

    std::thread::sleep(PING_ROUND);

    assert_eq!(
        session.apps_named(BASIC_APP).expect("desktop children"),
        1,
        "the application is still on the desktop after a ping round with its producer frozen"
    );
    let registry_log = std::fs::read_to_string(session.dir().join("logs/at-spi2-registryd.err"))
        .unwrap_or_default();
    assert!(
        !registry_log.contains("Disabling unresponsive app"),
        "the registry hid an application:\n{registry_log}"
    );
    let pinged = pings.count_to(&app_bus);
    assert!(
        pinged >= 1,
        "at-spi2-core {release:?} pings every application every 30 s; none reached {app_bus} \
         in {PING_ROUND:?}"
    );
    kill_process(producer, Signal::CONT).expect("thaw our own replay child");
    session.stop(replay.pid, Duration::from_secs(10));
}

/// The unique bus name of the desktop application named `name`.
fn bus_name_of(session: &TestSession, name: &str) -> String {
    let client = session.a11y_client().expect("a11y client");
    let apps = client.applications_named(name).expect("desktop children");
    apps.into_iter()
        .next()
        .unwrap_or_else(|| panic!("no desktop application named {name}"))
}

/// Counts `Peer.Ping` calls on the a11y bus by destination, from a monitor connection
/// (`org.freedesktop.DBus.Monitoring.BecomeMonitor`; the test runs as the bus's own user).
struct PingCounter {
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl PingCounter {
    fn start(a11y: &str) -> PingCounter {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let conn =
            async_io::block_on(async { zbus::connection::Builder::address(a11y)?.build().await })
                .expect("connect a monitor to the a11y bus");
        let rule = "type='method_call',interface='org.freedesktop.DBus.Peer',member='Ping'";
        async_io::block_on(conn.call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus.Monitoring"),
            "BecomeMonitor",
            &(vec![rule], 0u32),
        ))
        .expect("BecomeMonitor on the a11y bus");
        let recorded = seen.clone();
        std::thread::spawn(move || {
            let mut stream = zbus::MessageStream::from(&conn);
            async_io::block_on(async {
                while let Some(Ok(message)) = stream.next().await {
                    let header = message.header();
                    if header.member().is_some_and(|m| m.as_str() == "Ping") {
                        let to = header.destination().map(|d| d.to_string());
                        if let Ok(mut seen) = recorded.lock() {
                            seen.push(to.unwrap_or_default());
                        }
                    }
                }
            });
        });
        PingCounter { seen }
    }

    fn count_to(&self, bus: &str) -> usize {
        self.seen
            .lock()
            .map(|seen| seen.iter().filter(|to| *to == bus).count())
            .unwrap_or(0)
    }
}
