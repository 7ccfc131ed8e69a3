//! What the fault, isolation and soak tests share (each test file is its own crate and
//! includes this module): a private session with the bridge, a raw sender speaking the push
//! protocol in JSON, small button trees, and an AT client on the accessibility bus that runs a
//! mix of queries and compares the answers. `WAIT` (the bound of every wait) and `ROUNDS` (the
//! mix's repetitions in `run_mix_while`) are each test file's own constants.

// Not every test file uses every helper.
#![allow(dead_code)]

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use newton_atspi_client::calls::{self, accessible, Method, REGISTRY, ROOT};
use newton_e2e::{bridge_binary, wait_until, SessionOptions, TestSession};
// The one raw sender and its trees (newton_e2e::raw_sender); not every file uses each.
#[allow(unused_imports)]
pub use newton_e2e::raw_sender::{
    button, relabel, relabel_under, tree_update, window, window_rooted_at, RawSender,
};

use crate::{ROUNDS, WAIT};
pub const CALM_APP: &str = "Calm app";
/// Buttons in the calm application's window.
pub const CALM_BUTTONS: u64 = 20;

pub use newton_atspi_client::wire::ObjectRef as ObjRef;

// ---------------------------------------------------------------------------------------------
// Session and bridge
// ---------------------------------------------------------------------------------------------

pub fn start_session() -> TestSession {
    let options = SessionOptions {
        xvfb: false,
        atspi: true,
        ready_timeout: WAIT,
    };
    TestSession::start(options).expect("start the test session")
}

/// `serve --socket <dir>/bridge.sock` plus `extra` arguments; waits until the socket accepts.
pub fn start_bridge(session: &mut TestSession, extra: &[&str]) -> (u32, PathBuf) {
    start_bridge_with_env(session, extra, &[])
}

/// [`start_bridge`] with extra environment variables for the bridge.
pub fn start_bridge_with_env(
    session: &mut TestSession,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (u32, PathBuf) {
    start_bridge_configured(session, extra, |cmd| {
        cmd.envs(env.iter().copied());
    })
}

/// [`start_bridge`] with the bridge's command adjusted by `configure` first (environment,
/// resource limits).
pub fn start_bridge_configured(
    session: &mut TestSession,
    extra: &[&str],
    configure: impl FnOnce(&mut std::process::Command),
) -> (u32, PathBuf) {
    let socket = session.dir().join("bridge.sock");
    let mut cmd = session.command(bridge_binary().expect("cargo build -p newton-atspi-bridge"));
    configure(&mut cmd);
    cmd.arg("serve")
        .arg("--socket")
        .arg(&socket)
        .args(["--log-level", "debug"])
        .args(extra);
    let pid = session.spawn("bridge", cmd).expect("start the bridge");
    wait_until("the bridge socket to accept connections", WAIT, || {
        session.ensure_running(pid)?;
        Ok(UnixStream::connect(&socket).is_ok())
    })
    .expect("the bridge accepts senders");
    (pid, socket)
}

pub fn a11y_address(session: &TestSession) -> String {
    session
        .a11y_bus_address()
        .expect("the session has an a11y bus")
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// An AT client on the a11y bus: newton-atspi-client's declared calls.
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
pub struct Client {
    pub conn: zbus::Connection,
}

impl Client {
    pub fn connect(address: &str) -> Client {
        let conn = async_io::block_on(async {
            zbus::connection::Builder::address(address)?.build().await
        })
        .expect("connect to the a11y bus");
        Client { conn }
    }

    /// Calls `method` (declared in newton-atspi-client) on `path` of `dest`.
    pub fn call<A, R>(
        &self,
        method: &Method<A, R>,
        dest: &str,
        path: &str,
        args: &A,
    ) -> zbus::Result<R>
    where
        A: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
    {
        method.call_blocking(&self.conn, dest, path, args)
    }

    pub fn name(&self, dest: &str, path: &str) -> zbus::Result<String> {
        accessible::NAME.get_blocking(&self.conn, dest, path)
    }

    pub fn children(&self, dest: &str, path: &str) -> zbus::Result<Vec<ObjRef>> {
        self.call(&accessible::GET_CHILDREN, dest, path, &())
    }

    /// Names of the applications on the desktop.
    pub fn app_names(&self) -> Vec<String> {
        let apps = self.children(REGISTRY, ROOT).unwrap_or_default();
        apps.iter()
            .filter_map(|(bus, path)| self.name(bus, path.as_str()).ok())
            .collect()
    }

    /// Bus name of the desktop application named `app`, waiting (bounded) for it.
    pub fn app_bus(&self, app: &str) -> String {
        let mut found = None;
        wait_until(&format!("application `{app}` on the desktop"), WAIT, || {
            found = async_io::block_on(calls::applications_named(&self.conn, app))
                .unwrap_or_default()
                .into_iter()
                .next();
            Ok(found.is_some())
        })
        .unwrap_or_else(|_| panic!("`{app}` never appeared; desktop: {:?}", self.app_names()));
        found.unwrap_or_default()
    }

    /// The window (first child of the application root) and its children's names.
    pub fn window_and_labels(&self, bus: &str) -> (String, Vec<String>) {
        let window = self
            .children(bus, ROOT)
            .expect("application children")
            .into_iter()
            .next()
            .map(|(_, p)| p.to_string())
            .expect("the application has a window");
        let labels = self
            .children(bus, &window)
            .expect("window children")
            .iter()
            .map(|(_, p)| self.name(bus, p).expect("a button's name"))
            .collect();
        (window, labels)
    }
}

// ---------------------------------------------------------------------------------------------
// The fixed query mix and its measurement.
// ---------------------------------------------------------------------------------------------

/// The objects the mix asks about, in one application.
pub struct Target {
    pub bus: String,
    pub window: String,
    pub button: String,
}

impl Target {
    pub fn find(client: &Client, app: &str) -> Target {
        let bus = client.app_bus(app);
        let (window, _) = client.window_and_labels(&bus);
        let button = client
            .children(&bus, &window)
            .expect("window children")
            .into_iter()
            .next()
            .map(|(_, p)| p.to_string())
            .expect("the window has a button");
        Target {
            bus,
            window,
            button,
        }
    }
}

/// One pass's answers (as Debug text, first round), errors and latencies.
#[derive(Default)]
pub struct Pass {
    pub answers: Vec<String>,
    pub errors: Vec<String>,
    pub latencies: Vec<Duration>,
}

/// Name / GetRole / GetState / GetChildAtIndex, `rounds` times; answers must not change.
pub fn run_mix(client: &Client, target: &Target, rounds: usize) -> Pass {
    let mut pass = Pass::default();
    for round in 0..rounds {
        let answers = [
            timed(&mut pass, || client.name(&target.bus, &target.button)),
            timed(&mut pass, || {
                client.call(&accessible::GET_ROLE, &target.bus, &target.button, &())
            }),
            timed(&mut pass, || {
                client.call(&accessible::GET_STATE, &target.bus, &target.button, &())
            }),
            timed(&mut pass, || {
                client.call(
                    &accessible::GET_CHILD_AT_INDEX,
                    &target.bus,
                    &target.window,
                    &(0,),
                )
            }),
        ];
        for (index, answer) in answers.into_iter().enumerate() {
            match answer {
                Err(e) => pass.errors.push(e),
                Ok(text) if round == 0 => pass.answers.push(text),
                Ok(text) if pass.answers.get(index) != Some(&text) => pass
                    .errors
                    .push(format!("query {index} changed its answer to {text}")),
                Ok(_) => {}
            }
        }
    }
    pass
}

/// Repeats the mix for at least `at_least` and until `done()`, bounded by [`WAIT`].
pub fn run_mix_while(
    client: &Client,
    target: &Target,
    at_least: Duration,
    done: impl Fn() -> bool,
) -> Pass {
    let start = Instant::now();
    let mut total = run_mix(client, target, ROUNDS);
    while (start.elapsed() < at_least || !done()) && start.elapsed() < WAIT {
        let more = run_mix(client, target, ROUNDS);
        if more.answers != total.answers {
            total
                .errors
                .push(format!("answers changed to {:?}", more.answers));
        }
        total.errors.extend(more.errors);
        total.latencies.extend(more.latencies);
    }
    total
}

pub fn timed<R: std::fmt::Debug>(
    pass: &mut Pass,
    query: impl FnOnce() -> zbus::Result<R>,
) -> Result<String, String> {
    let start = Instant::now();
    let answer = query();
    pass.latencies.push(start.elapsed());
    answer.map(|r| format!("{r:?}")).map_err(|e| e.to_string())
}

pub fn median(latencies: &[Duration]) -> Duration {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

pub fn ratio(loaded: Duration, quiet: Duration) -> f64 {
    loaded.as_secs_f64() / quiet.as_secs_f64().max(f64::MIN_POSITIVE)
}

/// Asserts both passes are clean and answered the same.
pub fn assert_same(quiet: &Pass, loaded: &Pass, label: &str) {
    assert!(quiet.errors.is_empty(), "quiet pass: {:#?}", quiet.errors);
    assert!(loaded.errors.is_empty(), "{label}: {:#?}", loaded.errors);
    assert_eq!(quiet.answers, loaded.answers, "{label}: answers changed");
}

/// The calm application: one window of buttons "Calm <n>", shown and checked.
pub fn calm_app(socket: &Path) -> RawSender {
    let mut calm = RawSender::connect(socket, CALM_APP);
    calm.show_window(1, "Calm window", "Calm", CALM_BUTTONS);
    calm
}

pub fn shutdown(session: TestSession) {
    let report = session.shutdown();
    assert!(report.is_clean(), "teardown left processes: {report:?}");
}
