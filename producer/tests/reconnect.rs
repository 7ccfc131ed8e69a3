//! ReconnectingSender against in-process bridges on a real Unix socket:
//! the first bridge hangs up (or is not there yet), the next one gets the
//! hello, the surfaces, the geometry, the full trees and the focus again.

mod support;

use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use newton_producer::{ConnectionEvent, ReconnectOptions, ReconnectingSender};
use newton_push_protocol::{BridgeMessage, Encoding, Geometry, SurfaceId};
use support::*;

fn socket_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "newton-producer-{name}-{}.sock",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn quick() -> ReconnectOptions {
    ReconnectOptions {
        initial_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(200),
        welcome_timeout: PATIENCE,
        stable_after: Duration::from_millis(100),
    }
}

/// Accepts one connection and serves it with a test bridge.
fn accept(listener: &UnixListener) -> TestBridge {
    let (stream, _) = listener.accept().unwrap();
    TestBridge::serve(stream)
}

/// Waits (bounded) until the bridge saw `count` items.
fn wait_seen(bridge: &TestBridge, count: usize) -> Vec<Seen> {
    let start = Instant::now();
    loop {
        let seen = bridge.seen();
        if seen.len() >= count || start.elapsed() > PATIENCE {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn next_event(sender: &ReconnectingSender) -> ConnectionEvent {
    sender.recv_timeout(PATIENCE).expect("an event in time")
}

fn next_connection_event(sender: &ReconnectingSender) -> ConnectionEvent {
    loop {
        match next_event(sender) {
            ConnectionEvent::Message(_) => continue,
            other => return other,
        }
    }
}

const GEOMETRY: Geometry = Geometry {
    x: 10,
    y: 20,
    width: 300,
    height: 200,
    scale: 1.0,
};

#[test]
fn a_restarted_bridge_gets_surfaces_geometry_full_trees_and_focus_again() {
    let path = socket_path("restart");
    let listener = UnixListener::bind(&path).unwrap();
    let sender = ReconnectingSender::new(&path, hello(Encoding::Postcard), quick()).unwrap();
    let first = accept(&listener);
    assert!(sender.wait_connected(PATIENCE));
    assert_eq!(
        next_event(&sender),
        ConnectionEvent::Connected { resent: 0 }
    );
    let surface = SurfaceId(1);
    sender.create_surface(surface, Some("Main")).unwrap();
    sender.geometry(surface, GEOMETRY).unwrap();
    sender.update(surface, full_tree("OK")).unwrap();
    sender.commit(surface).unwrap();
    sender.update(surface, relabel("Yes")).unwrap();
    let relabelled = sender.commit(surface).unwrap();
    sender.focus(Some(surface)).unwrap();
    sender.sync(PATIENCE).unwrap();
    assert_eq!(wait_seen(&first, 6).len(), 6, "{:?}", first.seen());

    first.hang_up();
    assert!(matches!(
        next_connection_event(&sender),
        ConnectionEvent::Disconnected { .. }
    ));
    // While no bridge listens, sending still works and is kept.
    drop(listener);
    std::fs::remove_file(&path).unwrap();
    sender.update(surface, relabel("Later")).unwrap();
    let later = sender.commit(surface).unwrap();
    assert!(later > relabelled, "serials keep increasing");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!sender.is_connected());
    assert!(
        sender
            .last_error()
            .is_some_and(|e| e.contains("no bridge is listening")),
        "{:?}",
        sender.last_error()
    );

    let listener = UnixListener::bind(&path).unwrap();
    let second = accept(&listener);
    assert_eq!(
        next_connection_event(&sender),
        ConnectionEvent::Connected { resent: 5 }
    );
    let seen = wait_seen(&second, 4);
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(
        seen[0],
        Seen::Hello(hello(Encoding::Postcard).app, Encoding::Postcard)
    );
    assert_eq!(seen[1], Seen::Created(surface));
    let Seen::Applied {
        surface: applied,
        serial,
        updates,
    } = &seen[2]
    else {
        panic!("expected the full tree: {seen:?}");
    };
    assert_eq!(*applied, surface);
    assert!(*serial > later, "the resent commit has a fresh serial");
    let mut expected = full_tree("Later");
    expected.focus = relabel("Later").focus;
    assert_eq!(
        updates,
        &vec![expected],
        "one full tree with the latest labels"
    );
    assert_eq!(seen[3], Seen::Focus(Some(surface)));
    assert!(sender.is_wanted(surface) || wait_wanted(&sender, surface));
    let _ = std::fs::remove_file(&path);
}

fn wait_wanted(sender: &ReconnectingSender, surface: SurfaceId) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if sender.is_wanted(surface) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn a_sender_started_before_the_bridge_connects_when_it_appears() {
    let path = socket_path("later");
    let sender = ReconnectingSender::new(&path, hello(Encoding::Json), quick()).unwrap();
    let surface = SurfaceId(4);
    sender.create_surface(surface, None).unwrap();
    sender.update(surface, full_tree("Early")).unwrap();
    sender.commit(surface).unwrap();
    assert!(!sender.wait_connected(Duration::from_millis(100)));
    assert!(
        sender.sync(PATIENCE).is_err(),
        "no barrier without a bridge"
    );
    let listener = UnixListener::bind(&path).unwrap();
    let bridge = accept(&listener);
    assert!(sender.wait_connected(PATIENCE));
    let seen = wait_seen(&bridge, 3);
    assert!(
        matches!(&seen[2], Seen::Applied { updates, .. } if updates == &vec![full_tree("Early")]),
        "{seen:?}"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn goodbye_stops_reconnecting_and_clears_the_state() {
    let path = socket_path("goodbye");
    let listener = UnixListener::bind(&path).unwrap();
    let sender = ReconnectingSender::new(&path, hello(Encoding::Json), quick()).unwrap();
    let bridge = accept(&listener);
    assert!(sender.wait_connected(PATIENCE));
    sender.create_surface(SurfaceId(1), None).unwrap();
    sender.goodbye().unwrap();
    assert_eq!(bridge.join().last(), Some(&Seen::Goodbye));
    listener.set_nonblocking(true).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(listener.accept().is_err(), "no reconnect after goodbye");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_bridge_error_is_reported_then_the_sender_reconnects() {
    let path = socket_path("error");
    let listener = UnixListener::bind(&path).unwrap();
    let sender = ReconnectingSender::new(&path, hello(Encoding::Json), quick()).unwrap();
    let first = accept(&listener);
    assert!(sender.wait_connected(PATIENCE));
    let reason = "the bridge is shutting down".to_string();
    first.send(&BridgeMessage::Error {
        reason: reason.clone(),
    });
    first.hang_up();
    let mut saw_error = false;
    loop {
        match next_event(&sender) {
            ConnectionEvent::Message(BridgeMessage::Error { reason: r }) => saw_error = r == reason,
            ConnectionEvent::Disconnected { .. } => break,
            _ => {}
        }
    }
    assert!(saw_error);
    let _second = accept(&listener);
    assert!(matches!(
        next_connection_event(&sender),
        ConnectionEvent::Connected { resent: 0 }
    ));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn dropping_the_sender_closes_the_connection() {
    let path = socket_path("drop");
    let listener = UnixListener::bind(&path).unwrap();
    let sender = ReconnectingSender::new(&path, hello(Encoding::Json), quick()).unwrap();
    let bridge = accept(&listener);
    assert!(sender.wait_connected(PATIENCE));
    drop(sender);
    // The serving thread ends when the stream closes.
    let _ = bridge.join();
    let _ = std::fs::remove_file(&path);
}
