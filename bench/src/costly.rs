//! Costly AT calls on one application against everyone else (issue 14, item 7; issue 30, hole
//! 2): six clients loop an expensive call on a big application, while another application's
//! `Accessible.GetRole` latency, and the time a new sender needs to connect and to be on the
//! desktop, are measured. Every figure is measured in alternating phases of one run, with the
//! attacking clients stopped and running, so machine load hits both alike: compare the ratios.
//!
//! The attacking call ([`Attack`]): `Collection.GetMatches` with a rule nothing matches on the
//! window (every call walks the whole tree), or `Accessible.GetChildren` on the list (every call
//! lists all its children). The transport ([`Transport`]): each client on its own connection to
//! the accessibility bus, or peer-to-peer to the application's own socket. The other
//! application is always asked over the bus, one call at a time.
//!
//! `newton-bench --costly-calls [NODES] [--attack get-matches,get-children] [--transport
//! bus,p2p]` (default 199990 nodes: the issue's 200k-node case, as one flat list under the
//! bridge's limit of 200,000 children per node; every attack on every transport). With
//! `NEWTON_BRIDGE_BIN_BEFORE=PATH` a second build runs in its own private session beside this
//! one, and every case is measured on both builds in turn.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use newton_atspi_client::calls::{accessible, collection};
use newton_producer::Sender;
use serde::Serialize;

use crate::dbus::{Client, Obj, Query};
use crate::stats::Summary;
use crate::world::{bridge_binary, AttachedApp, World};
use crate::{fail, fixtures, Result};

/// The issue's case: six looping clients.
pub const HAMMERS: usize = 6;

/// Issue 30's bound on the other application's median under attack, as a multiple of quiet.
pub const MEDIAN_BOUND: f64 = 1.5;
/// Issue 30's bound on the other application's p99 under attack, in microseconds.
pub const P99_BOUND_US: f64 = 20_000.0;

/// The call the attacking clients loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Attack {
    /// `Collection.GetMatches` on the window with a rule nothing matches: a whole-tree walk.
    GetMatches,
    /// `Accessible.GetChildren` on the list: every child's reference.
    GetChildren,
}

impl Attack {
    pub const ALL: [Attack; 2] = [Attack::GetMatches, Attack::GetChildren];

    pub fn parse(text: &str) -> Option<Attack> {
        match text {
            "get-matches" => Some(Attack::GetMatches),
            "get-children" => Some(Attack::GetChildren),
            _ => None,
        }
    }

    pub fn member(self) -> &'static str {
        match self {
            Attack::GetMatches => "GetMatches",
            Attack::GetChildren => "GetChildren",
        }
    }
}

/// How the attacking clients reach the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Transport {
    /// Each client its own connection to the accessibility bus.
    Bus,
    /// Each client its own connection to the application's peer-to-peer socket.
    P2p,
}

impl Transport {
    pub const ALL: [Transport; 2] = [Transport::Bus, Transport::P2p];

    pub fn parse(text: &str) -> Option<Transport> {
        match text {
            "bus" => Some(Transport::Bus),
            "p2p" => Some(Transport::P2p),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Transport::Bus => "bus",
            Transport::P2p => "P2P",
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Nodes of the big application (a window, a list, `nodes - 2` items).
    pub nodes: usize,
    pub attacks: Vec<Attack>,
    pub transports: Vec<Transport>,
    pub phases: usize,
    /// `GetRole` calls on the other application per phase, stopped and looping alike, at
    /// least...
    pub queries: usize,
    /// ...and for at least this long (one attacking call takes longer than 1,000 `GetRole`
    /// calls: without it a phase would see only a few of them complete)...
    pub phase_min: Duration,
    /// ...but no longer than this (a phase under a stalling attack would otherwise last
    /// minutes).
    pub phase_limit: Duration,
}

impl Options {
    /// The sizes of a full run, or of `--smoke` (a list over the shim's `INLINE_WORK` of 2,000
    /// children, so the heavy path is taken, and a second or two per case).
    pub fn new(nodes: Option<usize>, smoke: bool) -> Options {
        let (default_nodes, phases, queries, min, limit) = if smoke {
            (2_498, 1, 30, 0, 2)
        } else {
            (199_990, 10, 1_000, 3, 15)
        };
        Options {
            nodes: nodes.unwrap_or(default_nodes),
            attacks: Attack::ALL.to_vec(),
            transports: Transport::ALL.to_vec(),
            phases,
            queries,
            phase_min: Duration::from_secs(min),
            phase_limit: Duration::from_secs(limit),
        }
    }
}

/// What one case (build, attack, transport) measured.
#[derive(Debug, Serialize)]
pub struct Costly {
    pub build: String,
    pub binary: PathBuf,
    pub attack: Attack,
    pub transport: Transport,
    pub nodes: usize,
    pub hammers: usize,
    pub phases: usize,
    /// `GetRole` calls per phase (at least), and the seconds they take at least and at most.
    pub queries: usize,
    pub phase_min_seconds: f64,
    pub phase_limit_seconds: f64,
    /// One attacking call alone (no other load), on the transport of the attack.
    pub costly_alone: Summary,
    /// The attacking clients' calls while all six loop.
    pub costly_during: Summary,
    /// The other application's `GetRole` with the attacking clients stopped.
    pub other_alone: Summary,
    /// The other application's `GetRole` while they loop.
    pub other_during: Summary,
    /// Attacking calls answered while the other application's `GetRole` was sampled under
    /// attack, and the seconds that sampling took.
    pub attack_calls_while_sampled: u64,
    pub sampled_seconds: f64,
    /// A new sender: connect to hello acknowledged (`welcome`).
    pub connect_alone: Summary,
    pub connect_during: Summary,
    /// A new sender: connect, push a 10-node list, until the application is on the desktop.
    pub on_desktop_alone: Summary,
    pub on_desktop_during: Summary,
    pub errors: u64,
}

impl Costly {
    /// The other application's median under attack over its median quiet.
    pub fn median_ratio(&self) -> f64 {
        self.other_during.median_us / self.other_alone.median_us.max(1e-9)
    }

    /// Issue 30's bounds: median within 1.5× of quiet and p99 under 20 ms, under attack.
    pub fn bounds_met(&self) -> bool {
        self.median_ratio() <= MEDIAN_BOUND && self.other_during.p99_us < P99_BOUND_US
    }

    /// Attacking calls answered per second while the other application was sampled.
    pub fn attack_rate(&self) -> f64 {
        self.attack_calls_while_sampled as f64 / self.sampled_seconds.max(1e-9)
    }
}

/// One build's bridge with the two applications attached.
struct Target {
    build: String,
    binary: PathBuf,
    world: World,
    a11y_address: String,
    p2p_address: String,
    /// The big application's window and list on the bus (the P2P objects are the same paths
    /// with an empty destination).
    window: Obj,
    list: Obj,
    other_window: Obj,
    _apps: (AttachedApp, AttachedApp),
}

impl Target {
    fn start(build: String, binary: PathBuf, dir: PathBuf, nodes: usize) -> Result<Target> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        let world = World::start_binary(dir, &[], binary.clone())?;
        let a11y_address = world
            .session
            .a11y_bus_address()
            .ok_or_else(|| fail("the session has no accessibility bus"))?
            .to_owned();
        let big_stream = fixtures::list(nodes.saturating_sub(2).max(1)).renamed("costly big");
        let other_stream = fixtures::list(98).renamed("costly other");
        let big = world.attach(&big_stream)?;
        let other = world.attach(&other_stream)?;
        let p2p_address = world.client.bus_address(&big.root)?;
        if p2p_address.is_empty() {
            return Err(fail("the bridge offers no peer-to-peer address"));
        }
        let window = world.client.child_at(&big.root, 0)?;
        let list = world.client.child_at(&window, 0)?;
        let other_window = world.client.child_at(&other.root, 0)?;
        Ok(Target {
            build,
            binary,
            world,
            a11y_address,
            p2p_address,
            window,
            list,
            other_window,
            _apps: (big, other),
        })
    }

    /// A new connection for an attacking client.
    fn connect(&self, transport: Transport) -> Result<Client> {
        match transport {
            Transport::Bus => Client::connect(&self.a11y_address),
            Transport::P2p => Client::connect_p2p(&self.p2p_address),
        }
    }

    /// The object `attack` is sent to, addressed for `transport`.
    fn attacked(&self, attack: Attack, transport: Transport) -> Result<Obj> {
        let obj = match attack {
            Attack::GetMatches => &self.window,
            Attack::GetChildren => &self.list,
        };
        match transport {
            Transport::Bus => Ok(obj.clone()),
            Transport::P2p => Obj::new("", obj.path.as_str()),
        }
    }
}

/// Every case of `options`, on this build and (with `NEWTON_BRIDGE_BIN_BEFORE`) the one
/// before: both bridges run at once in their own sessions, each case is measured on one, then
/// the other.
pub fn run(files: PathBuf, options: &Options) -> Result<Vec<Costly>> {
    let mut builds = vec![("after (this build)".to_owned(), bridge_binary()?)];
    if let Some(before) = std::env::var_os("NEWTON_BRIDGE_BIN_BEFORE") {
        builds.push(("before".to_owned(), PathBuf::from(before)));
    }
    let mut targets = Vec::new();
    for (index, (build, binary)) in builds.into_iter().enumerate() {
        let dir = files.join(format!("costly-{index}"));
        eprintln!(
            "costly calls: {build}: {} with {} nodes",
            binary.display(),
            options.nodes
        );
        targets.push(Target::start(build, binary, dir, options.nodes)?);
    }
    let mut results = Vec::new();
    for &attack in &options.attacks {
        for &transport in &options.transports {
            for target in &targets {
                eprintln!(
                    "costly calls: {}, {} clients looping {} over {}",
                    target.build,
                    HAMMERS,
                    attack.member(),
                    transport.label()
                );
                results.push(measure(target, attack, transport, options)?);
            }
        }
    }
    Ok(results)
}

/// The attacking call, its reply not decoded (the clients keep the bridge busy, not themselves).
fn costly_call(client: &Client, attack: Attack, target: &Obj) -> zbus::Result<()> {
    let (conn, dest, path) = (client.connection(), &target.dest, target.path.as_str());
    match attack {
        Attack::GetMatches => {
            // A rule nothing matches (interface `Table`): the call walks every node.
            let rule: collection::MatchRule = (
                Vec::new(),
                0,
                Default::default(),
                0,
                Vec::new(),
                0,
                vec!["Table".to_owned()],
                1,
                false,
            );
            async_io::block_on(collection::GET_MATCHES.send(
                conn,
                dest,
                path,
                &(rule, 0, 0, true),
            ))?;
        }
        Attack::GetChildren => {
            async_io::block_on(accessible::GET_CHILDREN.send(conn, dest, path, &()))?;
        }
    }
    Ok(())
}

fn measure(
    target: &Target,
    attack: Attack,
    transport: Transport,
    options: &Options,
) -> Result<Costly> {
    let world = &target.world;
    let attacked = target.attacked(attack, transport)?;
    let mut costly_alone = Vec::new();
    let mut other_alone = Vec::new();
    let mut other_during = Vec::new();
    let mut connect = [Vec::new(), Vec::new()];
    let mut on_desktop = [Vec::new(), Vec::new()];
    let mut errors = 0u64;
    let mut attack_calls_while_sampled = 0u64;
    let mut sampled = Duration::ZERO;
    let costly_during = Arc::new(Mutex::new(Vec::new()));
    let probe = target.connect(transport)?;
    let mut newcomer = 0usize;
    for _ in 0..options.phases {
        // Alone: a few costly calls on their own, then the other application's latency.
        for _ in 0..3 {
            let start = Instant::now();
            match costly_call(&probe, attack, &attacked) {
                Ok(()) => costly_alone.push(start.elapsed()),
                Err(_) => errors += 1,
            }
        }
        sample(
            world,
            &target.other_window,
            options,
            &mut other_alone,
            &mut errors,
        );
        newcomer += 1;
        time_newcomer(world, newcomer, &mut connect[0], &mut on_desktop[0])?;

        // During: six clients loop the costly call, each on its own connection.
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let hammer_errors = Arc::new(AtomicU64::new(0));
        let mut hammers = Vec::new();
        for _ in 0..HAMMERS {
            let client = target.connect(transport)?;
            let (stop, done, hammer_errors, attacked, times) = (
                stop.clone(),
                done.clone(),
                hammer_errors.clone(),
                attacked.clone(),
                costly_during.clone(),
            );
            hammers.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    match costly_call(&client, attack, &attacked) {
                        Ok(()) => {
                            let elapsed = start.elapsed();
                            done.fetch_add(1, Ordering::Relaxed);
                            if let Ok(mut times) = times.lock() {
                                times.push(elapsed);
                            }
                        }
                        Err(_) => {
                            hammer_errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
        // Every hammer has had calls in flight before the first sample.
        let deadline = Instant::now() + Duration::from_secs(120);
        while done.load(Ordering::Relaxed) < HAMMERS as u64 {
            if Instant::now() > deadline {
                stop.store(true, Ordering::Relaxed);
                return Err(fail("the costly calls were not answered within 120 s"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let (before, start) = (done.load(Ordering::Relaxed), Instant::now());
        sample(
            world,
            &target.other_window,
            options,
            &mut other_during,
            &mut errors,
        );
        sampled += start.elapsed();
        attack_calls_while_sampled += done.load(Ordering::Relaxed) - before;
        newcomer += 1;
        let timed = time_newcomer(world, newcomer, &mut connect[1], &mut on_desktop[1]);
        stop.store(true, Ordering::Relaxed);
        for hammer in hammers {
            if hammer.join().is_err() {
                errors += 1;
            }
        }
        timed?;
        errors += hammer_errors.load(Ordering::Relaxed);
    }
    let costly_during = costly_during
        .lock()
        .map(|times| Summary::of(&times))
        .unwrap_or_default();
    Ok(Costly {
        build: target.build.clone(),
        binary: target.binary.clone(),
        attack,
        transport,
        nodes: options.nodes,
        hammers: HAMMERS,
        phases: options.phases,
        queries: options.queries,
        phase_min_seconds: options.phase_min.as_secs_f64(),
        phase_limit_seconds: options.phase_limit.as_secs_f64(),
        costly_alone: Summary::of(&costly_alone),
        costly_during,
        other_alone: Summary::of(&other_alone),
        other_during: Summary::of(&other_during),
        attack_calls_while_sampled,
        sampled_seconds: sampled.as_secs_f64(),
        connect_alone: Summary::of(&connect[0]),
        connect_during: Summary::of(&connect[1]),
        on_desktop_alone: Summary::of(&on_desktop[0]),
        on_desktop_during: Summary::of(&on_desktop[1]),
        errors,
    })
}

/// Timed `GetRole` calls on `obj` over the bus, one after another: at least `options.queries`
/// and for at least `options.phase_min`, but none started after `options.phase_limit`.
fn sample(world: &World, obj: &Obj, options: &Options, into: &mut Vec<Duration>, errors: &mut u64) {
    let start = Instant::now();
    let mut calls = 0;
    while (calls < options.queries || start.elapsed() < options.phase_min)
        && start.elapsed() < options.phase_limit
    {
        match world.client.timed(obj, Query::GetRole) {
            Some(d) => into.push(d),
            None => *errors += 1,
        }
        calls += 1;
    }
}

/// A new sender: the hello handshake alone, then a 10-node application until it is on the
/// desktop (it leaves again at once).
fn time_newcomer(
    world: &World,
    index: usize,
    connect: &mut Vec<Duration>,
    on_desktop: &mut Vec<Duration>,
) -> Result<()> {
    let stream = fixtures::list(8).renamed(&format!("costly newcomer {index}"));
    let start = Instant::now();
    let sender = Sender::connect(&world.socket, stream.hello()?)
        .map_err(|e| fail(format!("cannot connect a new sender: {e}")))?;
    connect.push(start.elapsed());
    drop(sender);
    let start = Instant::now();
    let app = world.attach(&stream)?;
    on_desktop.push(start.elapsed());
    drop(app);
    Ok(())
}

/// The Markdown tables for docs/benchmarks.md: the other application's `GetRole` per case
/// against issue 30's bounds, then the rest.
pub fn markdown(results: &[Costly]) -> String {
    let ms = |us: f64| format!("{:.2} ms", us / 1000.0);
    let Some(first) = results.first() else {
        return "no case ran\n".to_owned();
    };
    let mut out = format!(
        "{} clients looping the attacking call on a {}-node application (a window, a list of {} \
         items): `GetMatches` with a rule nothing matches on the window (whole tree), or \
         `GetChildren` on the list; {} phases alternating stopped / looping, in each at least {} \
         `GetRole` calls on another application's window and {} s of them, at most {} s. Bounds (issue 30): median under \
         attack ≤ {MEDIAN_BOUND}× quiet and p99 < {} ms.\n\n\
         | build | attack | transport | GetRole median, quiet | p99, quiet | median, attacked | p99, attacked | median ratio | attacking calls answered (per s) | bounds | errors |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
        first.hammers,
        first.nodes,
        first.nodes.saturating_sub(2),
        first.phases,
        first.queries,
        first.phase_min_seconds,
        first.phase_limit_seconds,
        P99_BOUND_US / 1000.0,
    );
    for r in results {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.2}× | {} ({:.1}/s) | {} | {} |\n",
            r.build,
            r.attack.member(),
            r.transport.label(),
            ms(r.other_alone.median_us),
            ms(r.other_alone.p99_us),
            ms(r.other_during.median_us),
            ms(r.other_during.p99_us),
            r.median_ratio(),
            r.attack_calls_while_sampled,
            r.attack_rate(),
            if r.bounds_met() { "met" } else { "not met" },
            r.errors,
        ));
    }
    out.push_str(
        "\n| build | attack | transport | GetRole calls quiet / attacked | attacking call alone, median | its p99 | looping, median | its p99 | new sender's connect, median quiet / attacked | new app on the desktop, median quiet / attacked |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        out.push_str(&format!(
            "| {} | {} | {} | {} / {} | {} | {} | {} | {} | {} / {} | {} / {} |\n",
            r.build,
            r.attack.member(),
            r.transport.label(),
            r.other_alone.samples,
            r.other_during.samples,
            ms(r.costly_alone.median_us),
            ms(r.costly_alone.p99_us),
            ms(r.costly_during.median_us),
            ms(r.costly_during.p99_us),
            ms(r.connect_alone.median_us),
            ms(r.connect_during.median_us),
            ms(r.on_desktop_alone.median_us),
            ms(r.on_desktop_during.median_us),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attacks_and_transports_parse_from_their_flag_values() {
        assert_eq!(Attack::parse("get-matches"), Some(Attack::GetMatches));
        assert_eq!(Attack::parse("get-children"), Some(Attack::GetChildren));
        assert_eq!(Attack::parse("GetChildren"), None);
        assert_eq!(Transport::parse("bus"), Some(Transport::Bus));
        assert_eq!(Transport::parse("p2p"), Some(Transport::P2p));
        assert_eq!(Transport::parse("P2P"), None);
    }

    #[test]
    fn smoke_sizes_keep_the_list_over_the_inline_work() {
        let smoke = Options::new(None, true);
        // The shim's INLINE_WORK is 2,000: the smoke list still takes the heavy path.
        assert!(smoke.nodes - 2 > 2_000);
        assert!(smoke.phases * smoke.queries <= 100);
        assert_eq!(Options::new(Some(500), true).nodes, 500);
        assert_eq!(Options::new(None, false).nodes, 199_990);
    }

    fn summary(median_ms: f64, p99_ms: f64) -> Summary {
        Summary {
            samples: 10,
            median_us: median_ms * 1000.0,
            p99_us: p99_ms * 1000.0,
        }
    }

    #[test]
    fn the_bounds_are_issue_30s() {
        let case = |alone: Summary, during: Summary| Costly {
            build: "after".into(),
            binary: PathBuf::new(),
            attack: Attack::GetChildren,
            transport: Transport::Bus,
            nodes: 10,
            hammers: HAMMERS,
            phases: 1,
            queries: 10,
            phase_min_seconds: 0.0,
            phase_limit_seconds: 2.0,
            costly_alone: Summary::default(),
            costly_during: Summary::default(),
            other_alone: alone,
            other_during: during,
            attack_calls_while_sampled: 30,
            sampled_seconds: 2.0,
            connect_alone: Summary::default(),
            connect_during: Summary::default(),
            on_desktop_alone: Summary::default(),
            on_desktop_during: Summary::default(),
            errors: 0,
        };
        assert!(case(summary(0.2, 1.0), summary(0.3, 19.9)).bounds_met());
        assert!(!case(summary(0.2, 1.0), summary(0.31, 1.0)).bounds_met());
        assert!(!case(summary(0.2, 1.0), summary(0.2, 20.0)).bounds_met());
        let table = markdown(&[case(summary(0.2, 1.0), summary(0.3, 5.0))]);
        assert!(table.contains("| after | GetChildren | bus | 0.20 ms | 1.00 ms | 0.30 ms"));
        assert!(table.contains("| 1.50× | 30 (15.0/s) | met | 0 |"));
    }
}
