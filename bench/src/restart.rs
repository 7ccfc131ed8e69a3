//! Bridge restart → application back on the desktop (docs/protocol.md §2.3): an application
//! pushing through `newton_producer::ReconnectingSender` stays attached while the bridge is
//! stopped (SIGTERM, as `systemctl --user restart` does) and started again, `rounds` times, in two
//! setups measured side by side in one run:
//!
//! * **bound**: the bridge binds the socket itself; while it is down the sender's connects are
//!   refused and it retries on its backoff (50–100 ms doubling, capped at 1–2 s);
//! * **held**: the socket is held across the restart and passed to the bridge (`LISTEN_FDS`), as
//!   systemd's socket unit does; the sender's connect is queued and served once the bridge runs.
//!
//! * **adapter, held**: as held, but the application is a separate process using the live
//!   adapter (`newton_accesskit::Adapter`, `newton-bench --adapter-app`): on EOF it reconnects on
//!   its own backoff, the bridge marks its window wanted again and the adapter's activation
//!   handler gives the full tree, as in a real toolkit.
//!
//! * **adapter, in-process**: the live adapter application with its in-process bridge on
//!   (`newton_accesskit::serve_in_process_without_bridge`, what the `accesskit_unix` shim turns
//!   on; `newton-bench --adapter-app-in-process`), started with no bridge: it is on the desktop
//!   through the daemon in its own process. Each round starts a bridge and times until the
//!   application is on the desktop through it (a new bus name) with its whole list, then stops
//!   the bridge and times until it is back in-process (docs/adoption.md).
//!
//! Each round is timed from the new bridge's spawn to the application's root on the desktop
//! with its whole list (the window's child count as pushed), and to the bridge's socket accepting
//! (bound) or its first welcome (held) for the bridge's own start-up share.

use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use newton_e2e::{SessionOptions, TestSession};
use newton_producer::{replay_into, ReconnectOptions, ReconnectingSender, ReplayOptions, Timing};
use newton_push_protocol::Encoding;
use rustix::io::{fcntl_setfd, FdFlags};
use serde::Serialize;

use crate::dbus::{Client, Obj};
use crate::fixtures::Stream;
use crate::stats::Summary;
use crate::world::{bridge_binary, wait_for, READY_TIMEOUT};
use crate::{fail, Result};

/// One setup's figures.
#[derive(Debug, Serialize)]
pub struct RestartRow {
    pub setup: &'static str,
    pub rounds: usize,
    pub nodes: usize,
    /// New bridge spawned → application back with its full tree.
    pub back: Summary,
    /// New bridge spawned → its socket accepts (bound) or the sender reconnected (held); not
    /// observable from outside the adapter's process (adapter).
    pub bridge_up: Option<Summary>,
    /// Bridge stopped → the application back on the desktop through its in-process bridge, with
    /// its whole list (adapter, in-process).
    pub in_process_again: Option<Summary>,
}

/// Both setups, `rounds` restarts each, with a list of `items` items.
pub fn measure(items: usize, rounds: usize) -> Result<Vec<RestartRow>> {
    let stream = crate::fixtures::list(items).renamed("bench restart");
    Ok(vec![
        run(&stream, rounds, Setup::Bound)?,
        run(&stream, rounds, Setup::Held)?,
        run(&stream, rounds, Setup::AdapterHeld)?,
        run_in_process(&stream, rounds)?,
    ])
}

/// The adapter application with its in-process bridge: a bridge started and stopped `rounds`
/// times.
fn run_in_process(stream: &Stream, rounds: usize) -> Result<RestartRow> {
    let mut rig = Rig::new(false)?;
    let pid = rig.spawn_adapter_app(stream, true)?;
    let name = ADAPTER_APP_NAME;
    let children = (stream.nodes - 2) as i32;
    let mut served_by = rig.wait_served(name, children, None)?;
    let (mut moved, mut returned) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let spawned = Instant::now();
        let bridge = rig.start_bridge()?;
        served_by = rig.wait_served(name, children, Some(&served_by))?;
        moved.push(spawned.elapsed());
        let stopped = Instant::now();
        rig.session.stop(bridge, Duration::from_secs(20));
        served_by = rig.wait_served(name, children, Some(&served_by))?;
        returned.push(stopped.elapsed());
    }
    rig.session.stop(pid, Duration::from_secs(5));
    let _ = rig.session.shutdown();
    Ok(RestartRow {
        setup: "live adapter with its in-process bridge: bridge started → heard through it",
        rounds,
        nodes: stream.nodes,
        back: Summary::of(&moved),
        bridge_up: None,
        in_process_again: Some(Summary::of(&returned)),
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Setup {
    Bound,
    Held,
    AdapterHeld,
}

/// The reconnecting application of a setup.
enum App {
    Sender(ReconnectingSender),
    /// `newton-bench --adapter-app` in the session.
    Adapter(u32),
}

struct Rig {
    session: TestSession,
    socket: PathBuf,
    held: Option<UnixListener>,
    client: Client,
    generation: u32,
}

fn run(stream: &Stream, rounds: usize, setup: Setup) -> Result<RestartRow> {
    let mut rig = Rig::new(setup != Setup::Bound)?;
    let mut bridge = rig.start_bridge()?;
    rig.wait_bridge_up(bridge)?;
    let app = match setup {
        Setup::AdapterHeld => App::Adapter(rig.spawn_adapter_app(stream, false)?),
        Setup::Bound | Setup::Held => App::Sender(attach(&rig.socket, stream)?),
    };
    let name = match &app {
        App::Sender(_) => stream.name.clone(),
        App::Adapter(_) => ADAPTER_APP_NAME.to_string(),
    };
    poll("the application on the desktop", || {
        Ok(rig.list_size(&name) == Some((stream.nodes - 2) as i32))
    })?;
    // The list's child count as the first bridge serves it, the whole tree attached.
    let expected_children = rig
        .list_size(&name)
        .ok_or_else(|| fail("the application left the desktop"))?;
    let (mut back, mut up) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        rig.session.stop(bridge, Duration::from_secs(20));
        rig.wait_gone(&name)?;
        let spawned = Instant::now();
        bridge = rig.start_bridge()?;
        match (&app, setup) {
            (_, Setup::Bound) => rig.wait_bridge_up(bridge)?,
            (App::Sender(sender), _) => wait_for("the sender to reconnect", READY_TIMEOUT, || {
                Ok(sender.is_connected())
            })?,
            (App::Adapter(_), _) => {}
        }
        if matches!(app, App::Sender(_)) {
            up.push(spawned.elapsed());
        }
        rig.wait_back(&name, expected_children)?;
        back.push(spawned.elapsed());
    }
    match app {
        App::Sender(sender) => drop(sender),
        App::Adapter(pid) => {
            rig.session.stop(pid, Duration::from_secs(5));
        }
    }
    rig.session.stop(bridge, Duration::from_secs(20));
    drop(rig.held.take());
    let _ = rig.session.shutdown();
    Ok(RestartRow {
        setup: match setup {
            Setup::Bound => "bridge binds the socket (no socket unit)",
            Setup::Held => "socket held across the restart (socket unit, LISTEN_FDS)",
            Setup::AdapterHeld => "live adapter process (newton_accesskit), socket held",
        },
        rounds,
        nodes: stream.nodes,
        back: Summary::of(&back),
        bridge_up: (!up.is_empty()).then(|| Summary::of(&up)),
        in_process_again: None,
    })
}

/// The stream through a reconnecting sender, acknowledged.
fn attach(socket: &Path, stream: &Stream) -> Result<ReconnectingSender> {
    let mut hello = stream.hello()?;
    hello.encoding = Encoding::Postcard;
    let sender = ReconnectingSender::new(socket, hello, ReconnectOptions::default())
        .map_err(|e| fail(format!("cannot start the reconnecting sender: {e}")))?;
    if !sender.wait_connected(READY_TIMEOUT) {
        return Err(fail(format!(
            "the reconnecting sender never connected: {}",
            sender.last_error().unwrap_or_default()
        )));
    }
    let options = ReplayOptions {
        timing: Timing::AsFastAsPossible,
        wait_for_acks: Some(READY_TIMEOUT),
        encoding: None,
        skip_goodbye: true,
    };
    replay_into(&sender, &stream.lines, options)
        .map_err(|e| fail(format!("attaching {} failed: {e}", stream.name)))?;
    Ok(sender)
}

/// The application name `--adapter-app` gives its window's tree root.
pub const ADAPTER_APP_NAME: &str = "bench adapter app";

impl Rig {
    /// A private session (no bridge yet), its socket path held when `held`.
    fn new(held: bool) -> Result<Rig> {
        let session = TestSession::start(SessionOptions {
            xvfb: false,
            atspi: true,
            ready_timeout: Duration::from_secs(60),
        })
        .map_err(|e| fail(format!("cannot bring up the restart session: {e}")))?;
        let address = session
            .a11y_bus_address()
            .ok_or_else(|| fail("the session has no accessibility bus"))?
            .to_owned();
        let socket = session.dir().join("bridge.sock");
        let held = if held {
            Some(
                UnixListener::bind(&socket)
                    .map_err(|e| fail(format!("cannot bind {}: {e}", socket.display())))?,
            )
        } else {
            None
        };
        Ok(Rig {
            session,
            socket,
            held,
            client: Client::connect(&address)?,
            generation: 0,
        })
    }

    /// `newton-bench --adapter-app ITEMS` (`--adapter-app-in-process` with `in_process`): one
    /// window of the live adapter over the list.
    fn spawn_adapter_app(&mut self, stream: &Stream, in_process: bool) -> Result<u32> {
        let exe = std::env::current_exe()
            .map_err(|e| fail(format!("cannot find this executable: {e}")))?;
        let mut cmd = self.session.command(exe);
        let flag = if in_process {
            "--adapter-app-in-process"
        } else {
            "--adapter-app"
        };
        cmd.env(newton_push_protocol::SOCKET_ENV_VAR, &self.socket)
            .arg(flag)
            .arg((stream.nodes - 2).to_string());
        self.session
            .spawn("adapter-app", cmd)
            .map_err(|e| fail(format!("cannot start the adapter app: {e}")))
    }

    fn start_bridge(&mut self) -> Result<u32> {
        self.generation += 1;
        let name = format!("bridge-{}", self.generation);
        let bin = bridge_binary()?;
        let spawned = match &self.held {
            None => {
                let mut cmd = self.session.command(&bin);
                cmd.arg("serve")
                    .arg("--socket")
                    .arg(&self.socket)
                    .args(["--log-level", "warn"]);
                self.session.spawn(&name, cmd)
            }
            Some(listener) => {
                let fd = listener.as_raw_fd();
                let mut cmd = self.session.command("sh");
                cmd.arg("-c")
                    .arg(
                        "fd=$1; shift; [ \"$fd\" = 3 ] || eval \"exec 3<&$fd $fd<&-\"; \
                         LISTEN_PID=$$ LISTEN_FDS=1 exec \"$@\"",
                    )
                    .arg("sh")
                    .arg(fd.to_string())
                    .arg(&bin)
                    .arg("serve")
                    .arg("--socket")
                    .arg(&self.socket)
                    .args(["--log-level", "warn"]);
                // Inheritable only for this spawn (the suite starts nothing else meanwhile).
                fcntl_setfd(listener, FdFlags::empty())
                    .map_err(|e| fail(format!("cannot pass the socket: {e}")))?;
                let spawned = self.session.spawn(&name, cmd);
                let _ = fcntl_setfd(listener, FdFlags::CLOEXEC);
                spawned
            }
        };
        spawned.map_err(|e| fail(format!("cannot start the bridge: {e}")))
    }

    fn wait_bridge_up(&mut self, pid: u32) -> Result<()> {
        let (session, socket) = (&mut self.session, &self.socket);
        poll("the bridge socket", || {
            session
                .ensure_running(pid)
                .map_err(|e| fail(e.to_string()))?;
            Ok(UnixStream::connect(socket).is_ok())
        })
    }

    /// Until the application is on the desktop with `children` items in its list.
    fn wait_back(&self, name: &str, children: i32) -> Result<()> {
        poll(&format!("{name:?} back with its tree"), || {
            Ok(self.list_size(name) == Some(children))
        })
    }

    /// Items of the list (application → window → list), when the application is there.
    fn list_size(&self, name: &str) -> Option<i32> {
        let root = self.app(name)?;
        let window = self.client.children(&root).ok()?.into_iter().next()?;
        let list = self.client.children(&window).ok()?.into_iter().next()?;
        self.client.child_count(&list).ok()
    }

    /// Until the application is on the desktop once, under a bus name other than `previous`,
    /// with `children` items in its list; returns that bus name. Two at once is an error.
    fn wait_served(&self, name: &str, children: i32, previous: Option<&str>) -> Result<String> {
        let mut served_by = String::new();
        poll(
            &format!("{name:?} on the desktop through a new bus name"),
            || {
                let apps: Vec<Obj> = self
                    .client
                    .desktop_apps()?
                    .into_iter()
                    .filter(|app| self.client.name(app).ok().as_deref() == Some(name))
                    .collect();
                if apps.len() > 1 {
                    return Err(fail(format!(
                        "{name:?} is on the desktop {} times",
                        apps.len()
                    )));
                }
                let Some(app) = apps.into_iter().next() else {
                    return Ok(false);
                };
                if previous == Some(app.dest.as_str()) {
                    return Ok(false);
                }
                served_by = app.dest.clone();
                Ok(self.list_size(name) == Some(children))
            },
        )?;
        Ok(served_by)
    }

    fn wait_gone(&self, name: &str) -> Result<()> {
        poll(&format!("{name:?} to leave the desktop"), || {
            Ok(self.app(name).is_none())
        })
    }

    fn app(&self, name: &str) -> Option<Obj> {
        self.client
            .desktop_apps()
            .ok()?
            .into_iter()
            .find(|app| self.client.name(app).ok().as_deref() == Some(name))
    }
}

/// Polls every 2 ms (the figure is tens to hundreds of milliseconds; 50 ms polling would
/// dominate its resolution), bounded by the ready timeout.
fn poll(what: &str, mut condition: impl FnMut() -> Result<bool>) -> Result<()> {
    let start = Instant::now();
    while !condition()? {
        if start.elapsed() > READY_TIMEOUT {
            return Err(fail(format!(
                "timed out after {:.0} s waiting for {what}",
                READY_TIMEOUT.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}
