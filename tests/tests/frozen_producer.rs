//! No round trips, proven: every AT-SPI query is answered from the bridge's replica while the
//! producing application is frozen (SIGSTOP), with the same answers as before, and an action
//! request sent meanwhile returns at once without disturbing later queries.
//!
//! The producer is this test's own child, `newton-atspi-bridge replay --fast --stay`, stopped
//! by PID. The median latency of a fixed query mix, frozen vs. unfrozen, is printed as a ratio
//! (measured, never asserted).
//!
//! Run with `cargo test -p newton-e2e --test frozen_producer -- --nocapture` after
//! `cargo build -p newton-atspi-bridge`. No Xvfb, no Orca.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use newton_e2e::{fixture, Bridge, SessionOptions, TestSession};
use rustix::process::{kill_process, Pid, Signal};
use zbus::zvariant::OwnedValue;

const BASIC: &str = "generated-small/basic.jsonl";
const BASIC_APP: &str = "Newton basic demo";
const ROUNDS: usize = 20;
const ACTION_REQUESTS: usize = 20;
/// Far beyond libatspi's 800 ms call timeout: only a hang trips it (not a speed assertion).
const HANG_BOUND: Duration = Duration::from_secs(20);

use newton_atspi_client::calls::{
    self, accessible, action, application, cache, component, text, value, Method, Property,
    CACHE_PATH as CACHE, ROOT,
};

/// A client on the a11y bus talking to one bridged application.
#[derive(Clone)]
struct Client {
    conn: zbus::Connection,
    app_bus: String,
}

impl Client {
    fn connect(address: &str, app_name: &str) -> Client {
        let conn = async_io::block_on(async {
            zbus::connection::Builder::address(address)?.build().await
        })
        .expect("connect to the a11y bus");
        let desktop = async_io::block_on(calls::desktop_applications(&conn));
        let app_bus = desktop
            .expect("desktop children")
            .into_iter()
            .find(|(bus, path)| {
                accessible::NAME
                    .get_blocking(&conn, bus, path.as_str())
                    .is_ok_and(|name| name.contains(app_name))
            })
            .map(|(bus, _)| bus)
            .unwrap_or_else(|| panic!("no desktop child named {app_name}"));
        Client { conn, app_bus }
    }

    fn call<A, R>(&self, method: &Method<A, R>, path: &str, args: &A) -> zbus::Result<R>
    where
        A: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
    {
        method.call_blocking(&self.conn, &self.app_bus, path, args)
    }

    fn get<T>(&self, property: &Property<T>, path: &str) -> zbus::Result<T>
    where
        T: TryFrom<OwnedValue>,
        T::Error: Into<zbus::zvariant::Error>,
    {
        property.get_blocking(&self.conn, &self.app_bus, path)
    }

    /// Path of the first object (breadth first) named `name`.
    fn path_named(&self, name: &str) -> String {
        let mut queue = vec![ROOT.to_string()];
        while !queue.is_empty() {
            let path = queue.remove(0);
            let named = || self.get(&accessible::NAME, &path);
            if path != ROOT && named().unwrap_or_else(|e| panic!("Name of {path}: {e}")) == name {
                return path;
            }
            let children = self
                .call(&accessible::GET_CHILDREN, &path, &())
                .unwrap_or_else(|e| panic!("GetChildren of {path}: {e}"));
            queue.extend(children.into_iter().map(|(_, p)| p.to_string()));
        }
        panic!("no object named {name:?}")
    }
}

type Query = Box<dyn Fn(&Client) -> zbus::Result<String>>;

/// A call whose answer is kept as Debug text.
fn call<A, R>(path: &str, method: &'static Method<A, R>, args: A) -> Query
where
    A: serde::Serialize + zbus::zvariant::DynamicType + 'static,
    R: for<'d> zbus::zvariant::DynamicDeserialize<'d> + std::fmt::Debug + 'static,
{
    let path = path.to_string();
    Box::new(move |c: &Client| c.call(method, &path, &args).map(|r| format!("{r:?}")))
}

/// A property whose value is kept as Debug text.
fn prop<T>(path: &str, property: &'static Property<T>) -> Query
where
    T: TryFrom<OwnedValue> + std::fmt::Debug + 'static,
    T::Error: Into<zbus::zvariant::Error>,
{
    let path = path.to_string();
    Box::new(move |c: &Client| c.get(property, &path).map(|v| format!("{v:?}")))
}

/// The fixed query mix: every kind of query an AT makes, on the basic fixture's objects.
fn query_mix(client: &Client) -> Vec<(&'static str, Query)> {
    let window = client.path_named("Demo");
    let button = client.path_named("OK");
    let entry = client.path_named("Name");
    let slider = client.path_named("Volume");
    vec![
        ("Name", prop(&button, &accessible::NAME)),
        ("GetRole", call(&button, &accessible::GET_ROLE, ())),
        ("GetState", call(&button, &accessible::GET_STATE, ())),
        ("GetChildren", call(&window, &accessible::GET_CHILDREN, ())),
        (
            "GetChildAtIndex",
            call(&window, &accessible::GET_CHILD_AT_INDEX, (0i32,)),
        ),
        (
            "GetIndexInParent",
            call(&button, &accessible::GET_INDEX_IN_PARENT, ()),
        ),
        (
            "GetAttributes",
            call(&button, &accessible::GET_ATTRIBUTES, ()),
        ),
        (
            "GetRelationSet",
            call(&entry, &accessible::GET_RELATION_SET, ()),
        ),
        ("Text.GetText", call(&entry, &text::GET_TEXT, (0i32, -1i32))),
        (
            "Text.GetTextAtOffset",
            call(&entry, &text::GET_TEXT_AT_OFFSET, (0i32, 1u32)),
        ),
        (
            "Text.GetStringAtOffset",
            call(&entry, &text::GET_STRING_AT_OFFSET, (1i32, 0u32)),
        ),
        ("Text.CaretOffset", prop(&entry, &text::CARET_OFFSET)),
        ("Text.CharacterCount", prop(&entry, &text::CHARACTER_COUNT)),
        (
            "Component.GetExtents(screen)",
            call(&button, &component::GET_EXTENTS, (0u32,)),
        ),
        (
            "Component.GetExtents(window)",
            call(&button, &component::GET_EXTENTS, (1u32,)),
        ),
        ("Action.GetActions", call(&button, &action::GET_ACTIONS, ())),
        ("Value.CurrentValue", prop(&slider, &value::CURRENT_VALUE)),
        ("Cache.GetItems", call(CACHE, &cache::GET_ITEMS, ())),
        (
            "Application.ToolkitName",
            prop(ROOT, &application::TOOLKIT_NAME),
        ),
    ]
}

/// What one pass of the mix answered, and how long each query took.
struct Pass {
    answers: Vec<(&'static str, String)>,
    errors: Vec<String>,
    latencies: Vec<Duration>,
}

fn run_mix(client: &Client, mix: &[(&'static str, Query)], rounds: usize) -> Pass {
    let mut pass = Pass {
        answers: Vec::new(),
        errors: Vec::new(),
        latencies: Vec::new(),
    };
    for round in 0..rounds {
        for (name, query) in mix {
            let start = Instant::now();
            let answer = query(client);
            pass.latencies.push(start.elapsed());
            match answer {
                Ok(text) if round == 0 => pass.answers.push((name, text)),
                Ok(text) => {
                    let first = pass.answers.iter().find(|(n, _)| n == name);
                    if first.is_some_and(|(_, t)| *t != text) {
                        pass.errors
                            .push(format!("{name}: answer changed between rounds"));
                    }
                }
                Err(e) => pass.errors.push(format!("{name}: {e}")),
            }
        }
    }
    pass
}

fn median(latencies: &[Duration]) -> Duration {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn signal(pid: u32, signal: Signal) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .expect("a valid child pid");
    kill_process(pid, signal).expect("signal our own replay child");
}

/// Process state letter from /proc (T = stopped).
fn process_state(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.rsplit_once(')')?.1.split_whitespace().next()?.to_string()))
        .unwrap_or_default()
}

/// Resumes the frozen producer however the test ends, so teardown can stop it normally.
struct Frozen(u32);

impl Frozen {
    /// SIGSTOP, then wait (bounded) until the kernel shows the process
    /// stopped: delivery is asynchronous.
    fn freeze(pid: u32) -> Frozen {
        signal(pid, Signal::STOP);
        let deadline = Instant::now() + Duration::from_secs(10);
        while process_state(pid) != "T" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal(self.0, Signal::CONT);
    }
}

/// `DoAction(0)` on `path` from a separate thread, bounded by [`HANG_BOUND`]: returns the reply
/// and how long it took, or fails if it hangs.
fn do_action(client: &Client, path: &str) -> (zbus::Result<bool>, Duration) {
    let (tx, rx) = mpsc::channel();
    let (client, target) = (client.clone(), path.to_string());
    std::thread::spawn(move || {
        let start = Instant::now();
        let reply = client.call(&action::DO_ACTION, &target, &(0,));
        let _ = tx.send((reply, start.elapsed()));
    });
    rx.recv_timeout(HANG_BOUND)
        .unwrap_or_else(|_| panic!("DoAction on {path} blocked while the producer is frozen"))
}

#[test]
fn every_query_is_answered_while_the_producer_is_frozen() {
    let options = SessionOptions {
        xvfb: false,
        ..SessionOptions::default()
    };
    let mut session = TestSession::start(options).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let replay = bridge
        .replay_and_stay(&mut session, "replay", &fixture(BASIC), BASIC_APP)
        .expect("replay the basic fixture and stay connected");
    assert!(
        replay.summary.ends_with("; 0 rejected"),
        "{}",
        replay.summary
    );
    let address = session.a11y_bus_address().expect("a11y bus").to_string();
    let client = Client::connect(&address, BASIC_APP);
    let mix = query_mix(&client);
    let button = client.path_named("OK");

    let live = run_mix(&client, &mix, ROUNDS);
    assert!(
        live.errors.is_empty(),
        "errors before freezing: {:#?}",
        live.errors
    );

    let frozen = Frozen::freeze(replay.pid);
    assert_eq!(process_state(replay.pid), "T", "the producer is stopped");
    let still = run_mix(&client, &mix, ROUNDS);
    let mut action_latencies = Vec::new();
    for _ in 0..ACTION_REQUESTS {
        let (reply, took) = do_action(&client, &button);
        assert_eq!(reply.ok(), Some(true), "DoAction while frozen");
        action_latencies.push(took);
    }
    let after_actions = run_mix(&client, &mix, ROUNDS);
    assert_eq!(
        process_state(replay.pid),
        "T",
        "the producer stayed stopped"
    );
    drop(frozen);

    for (label, pass) in [
        ("frozen", &still),
        ("frozen, after DoAction", &after_actions),
    ] {
        assert!(pass.errors.is_empty(), "{label}: {:#?}", pass.errors);
        for ((name, before), (_, now)) in live.answers.iter().zip(&pass.answers) {
            assert_eq!(before, now, "{label}: {name} answered differently");
        }
        assert_eq!(
            pass.answers.len(),
            live.answers.len(),
            "{label}: every query answered"
        );
    }

    let (live_median, frozen_median) = (median(&live.latencies), median(&still.latencies));
    eprintln!(
        "query mix of {} kinds × {ROUNDS} rounds: median latency unfrozen {live_median:?}, \
         frozen {frozen_median:?}, frozen after {ACTION_REQUESTS} DoActions {:?}; \
         ratio frozen/unfrozen = {:.2}; DoAction while frozen: median {:?}",
        mix.len(),
        median(&after_actions.latencies),
        frozen_median.as_secs_f64() / live_median.as_secs_f64().max(f64::MIN_POSITIVE),
        median(&action_latencies),
    );

    session
        .ensure_running(bridge.pid())
        .expect("the bridge is still running");
    session
        .ensure_running(replay.pid)
        .expect("the producer survived being frozen");
    session.stop(replay.pid, Duration::from_secs(10));
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}
