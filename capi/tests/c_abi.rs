//! The C ABI from C: capi/tests/c/hostile.c, compiled with `cc` against the
//! static library through newton-producer.pc, runs its hostile and ordinary
//! checks against a stand-in bridge (the protocol's own `ReceiverSession`
//! on a Unix socket, no accessibility bus). Also compiles
//! capi/examples/hello.c against the shared library, as its comment tells a
//! C developer to (the e2e test tests/tests/c_producer.rs runs it under
//! Orca).

mod support;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use accesskit::{Action, ActionRequest, NodeId, TreeId};
use newton_push_protocol::{BridgeMessage, ReceiverConfig, ReceiverEvent, ReceiverSession};

use support::{compile, scratch_dir, Linking};

/// What the stand-in saw, for the assertions after the C program ran.
#[derive(Default)]
struct Seen {
    updates: usize,
    commits: Vec<(u32, usize)>,
}

/// A bridge stand-in for one connection after another: welcomes, answers
/// `sync`, asks for a click when surface 1 gets focus, rejects commits on
/// surfaces never created (the session reports them, as in the bridge),
/// consumes KP_Enter, and drops the connection when surface 99 is created.
fn serve(listener: UnixListener, seen: Arc<Mutex<Seen>>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { return };
        let seen = seen.clone();
        thread::spawn(move || serve_one(stream, &seen));
    }
}

fn serve_one(mut stream: UnixStream, seen: &Mutex<Seen>) {
    let mut session = ReceiverSession::new(ReceiverConfig::default());
    let mut buffer = vec![0u8; 65536];
    loop {
        let count = match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(count) => count,
        };
        for event in session.feed(&buffer[..count]) {
            let mut reply: Vec<BridgeMessage> = Vec::new();
            match event {
                ReceiverEvent::HelloAccepted { welcome, .. } => {
                    let written = stream.write_all(&welcome);
                    if written.is_err() {
                        return;
                    }
                }
                ReceiverEvent::SurfaceCreated { surface, .. } if surface.0 == 99 => {
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    return;
                }
                ReceiverEvent::SurfaceCreated { surface, .. } => {
                    reply.push(BridgeMessage::UpdatesWanted { surface });
                }
                ReceiverEvent::Commit {
                    surface, updates, ..
                } => {
                    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                    seen.updates += updates.len();
                    seen.commits.push((surface.0, updates.len()));
                }
                ReceiverEvent::SurfaceError(error) => reply.push(error.to_rejected()),
                ReceiverEvent::Focus {
                    surface: Some(surface),
                } if surface.0 == 1 => reply.push(BridgeMessage::Action {
                    surface,
                    request: ActionRequest {
                        action: Action::Click,
                        target_tree: TreeId::ROOT,
                        target_node: NodeId(2),
                        data: None,
                    },
                }),
                ReceiverEvent::Sync { serial } => reply.push(BridgeMessage::SyncDone { serial }),
                ReceiverEvent::Key { serial, event } => reply.push(BridgeMessage::KeyHandled {
                    serial,
                    consumed: event.keysym == 0xff8d,
                }),
                ReceiverEvent::Fatal { reply, .. } => {
                    let _ = stream.write_all(&reply);
                    return;
                }
                _ => {}
            }
            for message in reply {
                let Ok(bytes) = session.encode_bridge_message(&message) else {
                    return;
                };
                if stream.write_all(&bytes).is_err() {
                    return;
                }
            }
        }
    }
}

fn run_with_timeout(mut command: Command, limit: Duration) -> (std::process::ExitStatus, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the C program");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the C program") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the C program did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut out);
    }
    (status, out)
}

#[test]
fn hostile_input_from_c_comes_back_as_statuses_and_the_calls_work() {
    let dir = scratch_dir("capi-hostile");
    let program = compile(
        &support::capi_dir().join("tests/c/hostile.c"),
        &dir,
        Linking::Static,
    );
    let socket = dir.join("bridge.sock");
    let listener = UnixListener::bind(&socket).expect("bind the stand-in's socket");
    let seen = Arc::new(Mutex::new(Seen::default()));
    {
        let seen = seen.clone();
        thread::spawn(move || serve(listener, seen));
    }
    let mut command = Command::new(&program);
    command.arg(&socket);
    let (status, out) = run_with_timeout(command, Duration::from_secs(120));
    eprintln!("{out}");
    assert!(
        status.success(),
        "hostile.c failed ({status:?}; a signal here means the host was killed):\n{out}"
    );
    assert!(out.contains("\n0 failure(s)\n"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    // Every check printed its message: the messages name the argument at fault.
    for expected in [
        "newton_producer_connect: `out` is NULL",
        "newton_producer_connect: `app_id` is not valid UTF-8",
        "newton_producer_update: the tree update is not an accesskit 0.25 TreeUpdate in JSON",
        "newton_string_free: the pointer is not a string this library handed out",
        "NEWTON_STATUS_INVALID_HANDLE: newton_producer_destroy: the producer handle",
        "was destroyed already",
        "newton_producer_key: `kind` is 7",
    ] {
        assert!(out.contains(expected), "no {expected:?} in:\n{out}");
    }
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    // Only the valid update of the checks reached the wire (each bad one was
    // refused before sending), and it was committed on surface 1.
    assert_eq!(seen.updates, 1, "updates the stand-in received");
    assert!(seen.commits.contains(&(1, 1)), "{:?}", seen.commits);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_example_compiles_against_the_shared_library() {
    let dir = scratch_dir("capi-hello-build");
    let program = compile(
        &support::capi_dir().join("examples/hello.c"),
        &dir,
        Linking::Shared,
    );
    // With no bridge it says so and exits 1: linked, loaded, and the error
    // came back as a value.
    let mut command = Command::new(&program);
    command.env("NEWTON_ATSPI_SOCKET", dir.join("no-bridge.sock"));
    let (status, out) = run_with_timeout(command, Duration::from_secs(30));
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(
        out.contains("hello: connect: NEWTON_STATUS_NO_BRIDGE: newton_producer_connect: no bridge is listening"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
