//! Key press → the screen reader's key listener, through the bridge against atk-bridge in a GTK 3
//! application, side by side in one run (`--key-latency`).
//!
//! One private session with Xvfb, the bridge, `newton-live-app` (winit window, `newton_accesskit`
//! adapter: `Adapter::key_event` → bridge → `NotifyListenersSync` from the application's
//! connection) and the GTK 3 reference application (atk-bridge's key snooper →
//! `NotifyListenersSync`). An AT client registers a synchronous keystroke listener on the
//! registry (`DeviceEventController.RegisterKeystrokeListener`, as Orca < 48 does) and answers
//! every `DeviceEventListener.NotifyEvent` "not consumed".
//!
//! **What is timed:** from the moment this process writes a keysym name to a long-lived XTEST
//! injector (`bench/py/xtest_keys.py`: press and release through the XTEST extension, as from a
//! keyboard, into the focused window) to the moment the registry's `NotifyEvent` for that key's
//! press reaches the listener here. That is the whole path from the X server to Orca's listener,
//! with the same injector, listener, X server and registry for both applications. The windows
//! are measured in alternating blocks (focus moved with `xdotool windowfocus --sync`, then a
//! settle pause), so load drift falls on both alike.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use futures::StreamExt;
use newton_e2e::{find_window, SessionOptions, TestSession};
use serde::Serialize;
use zbus::message::Type as MessageType;
use zbus::Connection;

use crate::stats::Summary;
use crate::world::World;
use crate::{fail, Result};

const LIVE_TITLE: &str = "Newton Live";
const GTK_TITLE: &str = "BridgeTest";
const LISTENER_PATH: &str = "/org/newton/bench/keylistener";
/// The key pressed: moves a caret or nothing, in both applications.
const KEY: &str = "Right";
/// Longest wait for one key's notification.
const KEY_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between two keys: far above either path, so no key queues behind another.
const KEY_GAP: Duration = Duration::from_millis(30);
/// Pause after moving the keyboard focus, before the first timed key.
const FOCUS_SETTLE: Duration = Duration::from_millis(400);

/// The figures of one run.
#[derive(Debug, Serialize)]
pub struct KeyLatency {
    pub keys_per_side: usize,
    /// newton-live-app through the bridge.
    pub bridge: Summary,
    /// The GTK 3 reference app through atk-bridge.
    pub atk_bridge: Summary,
}

/// One press seen by the listener.
struct Seen {
    at: Instant,
    kind: u32,
    keysym: i32,
}

/// Runs `blocks` blocks of `per_block` keys on each side.
pub fn measure(files: std::path::PathBuf, blocks: usize, per_block: usize) -> Result<KeyLatency> {
    let session = TestSession::start(SessionOptions {
        ready_timeout: Duration::from_secs(60),
        ..SessionOptions::default()
    })
    .map_err(|e| fail(format!("cannot bring up the session with Xvfb: {e}")))?;
    let address = session
        .a11y_bus_address()
        .ok_or_else(|| fail("the session has no accessibility bus"))?
        .to_owned();
    let mut world = World::with_session(session, &address, files)?;

    let live_bin = crate::world::beside_self("newton-live-app").ok_or_else(|| {
        fail("newton-live-app is not built beside newton-bench: cargo build --release -p newton-live-app")
    })?;
    let mut live = world.session.command(live_bin);
    live.env(newton_push_protocol::SOCKET_ENV_VAR, &world.socket);
    let live_pid = world
        .session
        .spawn("live-app", live)
        .map_err(|e| fail(format!("cannot start newton-live-app: {e}")))?;
    let mut gtk = world.session.command(newton_e2e::python());
    gtk.arg(newton_e2e::py_script("gtk_reference_app.py"));
    let gtk_pid = world
        .session
        .spawn("gtk-app", gtk)
        .map_err(|e| fail(format!("cannot start the GTK reference app: {e}")))?;
    for (title, pid) in [(LIVE_TITLE, live_pid), (GTK_TITLE, gtk_pid)] {
        world
            .session
            .wait_for_app(title, pid)
            .map_err(|e| fail(format!("{title} did not appear on the desktop: {e}")))?;
    }
    let live_window = find_window(&mut world.session, LIVE_TITLE)
        .map_err(|e| fail(format!("no X window {LIVE_TITLE:?}: {e}")))?;
    let gtk_window = find_window(&mut world.session, GTK_TITLE)
        .map_err(|e| fail(format!("no X window {GTK_TITLE:?}: {e}")))?;

    let seen = listen(&address)?;
    let mut injector = Injector::start(&world.session)?;
    let result = run_blocks(
        &mut world.session,
        &mut injector,
        &seen,
        [&live_window, &gtk_window],
        blocks,
        per_block,
    );
    injector.stop();
    world.stop(live_pid);
    world.stop(gtk_pid);
    let [bridge, gtk] = result?;
    Ok(KeyLatency {
        keys_per_side: blocks * per_block,
        bridge: Summary::of(&bridge),
        atk_bridge: Summary::of(&gtk),
    })
}

fn run_blocks(
    session: &mut TestSession,
    injector: &mut Injector,
    seen: &Receiver<Seen>,
    windows: [&str; 2],
    blocks: usize,
    per_block: usize,
) -> Result<[Vec<Duration>; 2]> {
    let keysym = 0xff53; // XK_Right
    let mut samples = [Vec::new(), Vec::new()];
    for block in 0..blocks {
        // Alternate which side goes first.
        let order = if block % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            newton_e2e::xdotool(session, "focus", &["windowfocus", "--sync", windows[side]])
                .map_err(|e| fail(format!("cannot focus window {}: {e}", windows[side])))?;
            std::thread::sleep(FOCUS_SETTLE);
            while seen.try_recv().is_ok() {}
            for _ in 0..per_block {
                let start = Instant::now();
                injector.press(KEY)?;
                let press = wait_press(seen, keysym)?;
                samples[side].push(press.saturating_duration_since(start));
                injector.wait_sent()?;
                std::thread::sleep(KEY_GAP);
                while seen.try_recv().is_ok() {}
            }
        }
    }
    Ok(samples)
}

/// The arrival of the next press of `keysym`.
fn wait_press(seen: &Receiver<Seen>, keysym: i32) -> Result<Instant> {
    let deadline = Instant::now() + KEY_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = seen.recv_timeout(left).map_err(|_| {
            fail(format!(
                "no key listener notification within {KEY_TIMEOUT:?} of a {KEY} press"
            ))
        })?;
        if event.kind == 0 && event.keysym == keysym {
            return Ok(event.at);
        }
    }
}

/// Registers a synchronous keystroke listener (all keys, no modifiers, press and release) on
/// the registry and returns the notifications it receives, each stamped on arrival.
fn listen(address: &str) -> Result<Receiver<Seen>> {
    let conn: Connection =
        async_io::block_on(async { zbus::connection::Builder::address(address)?.build().await })
            .map_err(|e| fail(format!("cannot connect the key listener to {address}: {e}")))?;
    let (tx, rx) = mpsc::channel();
    let mut stream = zbus::MessageStream::from(&conn);
    let replier = conn.clone();
    std::thread::Builder::new()
        .name("key-listener".into())
        .spawn(move || {
            async_io::block_on(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let at = Instant::now();
                    let header = message.header();
                    if header.message_type() != MessageType::MethodCall
                        || header.member().map(|m| m.as_str()) != Some("NotifyEvent")
                    {
                        continue;
                    }
                    // The registry hands listeners `(uiuuisb)`: hardware code and modifiers
                    // widened to u32 (the applications' NotifyListenersSync is `(uinnisb)`).
                    type DeviceEvent = (u32, i32, u32, u32, i32, String, bool);
                    if let Ok(event) = message.body().deserialize::<DeviceEvent>() {
                        let _ = tx.send(Seen {
                            at,
                            kind: event.0,
                            keysym: event.1,
                        });
                    }
                    // Not consumed: the application goes on with the key.
                    let _ = replier.reply(&header, &false).await;
                }
            })
        })
        .map_err(|e| fail(format!("cannot start the key listener thread: {e}")))?;
    type KeyDefinition = (i32, i32, String, i32);
    let path = zbus::zvariant::ObjectPath::try_from(LISTENER_PATH)
        .map_err(|e| fail(format!("listener path: {e}")))?;
    let body = (
        path,
        Vec::<KeyDefinition>::new(),
        0u32,
        // Event types as the registry reads them (libatspi sends a mask, though the
        // interface XML says `au`): press (1 << 0) and release (1 << 1).
        0b11u32,
        (true, true, false),
    );
    // at-spi2-registryd 2.46 answers false even for a listener it registered (its register
    // function ends in `return FALSE`), so the answer says nothing: an unregistered listener shows
    // as no notification within KEY_TIMEOUT.
    async_io::block_on(conn.call_method(
        Some("org.a11y.atspi.Registry"),
        "/org/a11y/atspi/registry/deviceeventcontroller",
        Some("org.a11y.atspi.DeviceEventController"),
        "RegisterKeystrokeListener",
        &body,
    ))
    .map_err(|e| fail(format!("RegisterKeystrokeListener: {e}")))?;
    // The connection lives on in the listener thread's stream and replier.
    std::mem::forget(conn);
    Ok(rx)
}

/// `xtest_keys.py`, one process for the run.
struct Injector {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Injector {
    fn start(session: &TestSession) -> Result<Injector> {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("py/xtest_keys.py");
        let mut cmd = session.command(newton_e2e::python());
        cmd.arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| fail(format!("cannot start {}: {e}", script.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(fail("the key injector has no pipes"));
        };
        let mut injector = Injector {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        };
        injector.expect_line("ready")?;
        Ok(injector)
    }

    fn press(&mut self, keysym: &str) -> Result<()> {
        writeln!(self.stdin, "{keysym}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| fail(format!("the key injector stopped reading: {e}")))
    }

    fn wait_sent(&mut self) -> Result<()> {
        self.expect_line("sent")
    }

    fn expect_line(&mut self, wanted: &str) -> Result<()> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| fail(format!("the key injector: {e}")))?;
        if line.trim() == wanted {
            Ok(())
        } else {
            Err(fail(format!(
                "the key injector said {line:?}, not {wanted:?} (DISPLAY, libXtst?)"
            )))
        }
    }

    /// Closes its input (it exits) and reaps it.
    fn stop(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The markdown table of one run.
pub fn markdown(latency: &KeyLatency) -> String {
    let ratio = crate::stats::ratio(latency.bridge.median_us, latency.atk_bridge.median_us)
        .map(|r| format!("{r:.2}×"))
        .unwrap_or_else(|| "n/a".into());
    format!(
        "## Key press → keystroke listener notified ({} keys per side)\n\n\
         | application | median | p99 |\n|---|---|---|\n\
         | newton-live-app → bridge → NotifyListenersSync | {:.0} µs | {:.0} µs |\n\
         | GTK 3 app → atk-bridge → NotifyListenersSync | {:.0} µs | {:.0} µs |\n\n\
         bridge / atk-bridge median: {ratio}\n",
        latency.keys_per_side,
        latency.bridge.median_us,
        latency.bridge.p99_us,
        latency.atk_bridge.median_us,
        latency.atk_bridge.p99_us,
    )
}
