//! One executor (issue 13, part 3): the daemon's thread count as applications and
//! peer-to-peer clients arrive, and the bridge's own `Peer.Ping` beside at-spi2-registryd's and
//! the accessibility dbus-daemon's, with a query beside the bridge's Ping on the bus and
//! peer-to-peer. With `NEWTON_BRIDGE_BIN_BEFORE=PATH` a second build runs in its own private
//! session at the same time: thread counts are read for both, and every latency round asks
//! both builds in turn, so machine load hits them alike.
//!
//! `newton-bench --threads-only [--smoke]`.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::dbus::{Client, Obj, Query};
use crate::fixtures;
use crate::procfs;
use crate::stats::Summary;
use crate::world::{bridge_binary, AttachedApp, World};
use crate::{fail, Result};

/// Application counts at which threads are read.
const APP_STEPS: [usize; 3] = [1, 10, 50];
/// Peer-to-peer clients connected after the last step.
const P2P_CLIENTS: usize = 10;
/// List items per application: small trees, what counts here is how many there are.
const ITEMS: usize = 18;

/// One build's figures.
#[derive(Debug, Serialize)]
pub struct Build {
    pub label: String,
    pub binary: PathBuf,
    /// `(what is connected, Threads: of /proc/PID/status)`.
    pub threads: Vec<(String, u64)>,
    pub latency: Latency,
}

/// Medians of one build's latency rounds.
#[derive(Debug, Default, Serialize)]
pub struct Latency {
    /// The bridge's `Peer.Ping` on an application's bus connection.
    pub bridge_ping: Summary,
    /// at-spi2-registryd's `Peer.Ping`, same bus, same client.
    pub registry_ping: Summary,
    /// The accessibility dbus-daemon's own `Peer.Ping` (destination `org.freedesktop.DBus`).
    pub bus_ping: Summary,
    /// `Accessible.GetRole` on a list item over the bus.
    pub query_bus: Summary,
    /// The bridge's `Peer.Ping` peer-to-peer.
    pub p2p_ping: Summary,
    /// `Accessible.GetRole` on the same list item peer-to-peer.
    pub query_p2p: Summary,
    pub errors: usize,
}

/// A running build with its applications and clients.
struct Running {
    label: String,
    binary: PathBuf,
    world: World,
    apps: Vec<AttachedApp>,
    p2p: Vec<Client>,
    threads: Vec<(String, u64)>,
}

pub fn run(files: PathBuf, smoke: bool) -> Result<Vec<Build>> {
    let mut builds = vec![("after (this build)".to_owned(), bridge_binary()?)];
    if let Some(before) = std::env::var_os("NEWTON_BRIDGE_BIN_BEFORE") {
        builds.push(("before".to_owned(), PathBuf::from(before)));
    }
    let mut running = Vec::new();
    for (index, (label, binary)) in builds.into_iter().enumerate() {
        let dir = files.join(format!("threads-{index}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        let world = World::start_binary(dir, &[], binary.clone())?;
        running.push(Running {
            label,
            binary,
            world,
            apps: Vec::new(),
            p2p: Vec::new(),
            threads: Vec::new(),
        });
    }
    for build in &mut running {
        count_threads(build)?;
    }
    let rounds = if smoke { 200 } else { 3000 };
    let latencies = latency_rounds(&running, rounds)?;
    Ok(running
        .into_iter()
        .zip(latencies)
        .map(|(build, latency)| Build {
            label: build.label,
            binary: build.binary,
            threads: build.threads,
            latency,
        })
        .collect())
}

fn threads_of(pid: u32) -> Result<u64> {
    // Let short-lived helper threads (the `blocking` pool's, idle after 500 ms) leave first.
    std::thread::sleep(Duration::from_millis(1500));
    Ok(procfs::memory_parts(pid)?.threads)
}

fn count_threads(build: &mut Running) -> Result<()> {
    let pid = build.world.bridge_pid;
    build
        .threads
        .push(("no application".into(), threads_of(pid)?));
    for step in APP_STEPS {
        while build.apps.len() < step {
            let name = format!("threads app {}", build.apps.len());
            let app = build.world.attach(&fixtures::list(ITEMS).renamed(&name))?;
            build.apps.push(app);
        }
        let what = format!("{step} application(s)");
        build.threads.push((what, threads_of(pid)?));
    }
    let root = &build.apps[0].root;
    let address = build.world.client.bus_address(root)?;
    if address.is_empty() {
        return Err(fail("the bridge offers no peer-to-peer address"));
    }
    let direct = Obj::new("", root.path.as_str())?;
    for _ in 0..P2P_CLIENTS {
        let client = Client::connect_p2p(&address)?;
        // One answered call: the handshake is over and the connection is served.
        client
            .query(&direct, Query::Ping)
            .map_err(|e| fail(format!("peer-to-peer Ping failed: {e}")))?;
        build.p2p.push(client);
    }
    let what = format!(
        "{} applications + {P2P_CLIENTS} peer-to-peer clients",
        APP_STEPS[APP_STEPS.len() - 1]
    );
    build.threads.push((what, threads_of(pid)?));
    Ok(())
}

/// `rounds` rounds; each asks every build every probe once, the order rotating per round, each
/// probe right after the same neutral call.
fn latency_rounds(running: &[Running], rounds: usize) -> Result<Vec<Latency>> {
    let registry = Obj::new("org.a11y.atspi.Registry", "/org/a11y/atspi/registry")?;
    let bus = Obj::new("org.freedesktop.DBus", "/org/freedesktop/DBus")?;
    struct Probes<'a> {
        client: &'a Client,
        p2p: &'a Client,
        root: Obj,
        item: Obj,
        direct_root: Obj,
        direct_item: Obj,
    }
    let mut probes = Vec::new();
    for build in running {
        let root = build.apps[0].root.clone();
        let item = first_child_with_children(&build.world.client, &root)?;
        probes.push(Probes {
            client: &build.world.client,
            p2p: &build.p2p[0],
            direct_root: Obj::new("", root.path.as_str())?,
            direct_item: Obj::new("", item.path.as_str())?,
            root,
            item,
        });
    }
    const KINDS: usize = 6;
    let mut samples = vec![vec![Vec::new(); KINDS]; running.len()];
    let mut errors = vec![0usize; running.len()];
    let total = running.len() * KINDS;
    for round in 0..rounds + rounds / 10 {
        for step in 0..total {
            let slot = (step + round) % total;
            let (b, kind) = (slot / KINDS, slot % KINDS);
            let p = &probes[b];
            // Every timed call follows the same untimed one, the a11y dbus-daemon's own Ping,
            // which wakes no bridge and no registry: in a fixed order each call would follow a
            // different predecessor (the bridge's Ping always the other build's calls,
            // registryd's always the bridge's), and on 2 cores what ran just before a call
            // moves its latency by 20-40 us (docs/benchmarks.md, "Fourth run").
            let _ = p.client.timed(&bus, Query::Ping);
            let timed = match kind {
                0 => p.client.timed(&p.root, Query::Ping),
                1 => p.client.timed(&registry, Query::Ping),
                2 => p.client.timed(&bus, Query::Ping),
                3 => p.client.timed(&p.item, Query::GetRole),
                4 => p.p2p.timed(&p.direct_root, Query::Ping),
                _ => p.p2p.timed(&p.direct_item, Query::GetRole),
            };
            // The first tenth warms caches and is not kept.
            if round < rounds / 10 {
                continue;
            }
            match timed {
                Some(d) => samples[b][kind].push(d),
                None => errors[b] += 1,
            }
        }
    }
    Ok(samples
        .iter()
        .zip(errors)
        .map(|(kinds, errors)| Latency {
            bridge_ping: Summary::of(&kinds[0]),
            registry_ping: Summary::of(&kinds[1]),
            bus_ping: Summary::of(&kinds[2]),
            query_bus: Summary::of(&kinds[3]),
            p2p_ping: Summary::of(&kinds[4]),
            query_p2p: Summary::of(&kinds[5]),
            errors,
        })
        .collect())
}

/// A node a few levels under the window (first child each time): a list item.
fn first_child_with_children(client: &Client, root: &Obj) -> Result<Obj> {
    let mut obj = root.clone();
    for _ in 0..4 {
        match client.children(&obj)?.into_iter().next() {
            Some(child) => obj = child,
            None => break,
        }
    }
    Ok(obj)
}

pub fn markdown(builds: &[Build]) -> String {
    use std::fmt::Write;
    let mut s = String::from("| Connected | ");
    let _ = writeln!(
        s,
        "{} |\n|---|{}",
        builds
            .iter()
            .map(|b| format!("threads, {}", b.label))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(builds.len())
    );
    for (row, (what, _)) in builds[0].threads.iter().enumerate() {
        let counts: Vec<String> = builds
            .iter()
            .map(|b| b.threads.get(row).map_or("n/a".into(), |t| t.1.to_string()))
            .collect();
        let _ = writeln!(s, "| {what} | {} |", counts.join(" | "));
    }
    let _ = writeln!(
        s,
        "\n| Build | bridge Ping (bus) | registryd Ping | dbus-daemon Ping | bridge ÷ registryd | \
         GetRole (bus) | GetRole ÷ bridge Ping (bus) | bridge Ping (P2P) | GetRole (P2P) | \
         GetRole ÷ bridge Ping (P2P) | errors |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for b in builds {
        let l = &b.latency;
        let ratio = |a: &Summary, b: &Summary| {
            crate::stats::ratio(a.median_us, b.median_us)
                .map_or("n/a".into(), |r| format!("{r:.2}"))
        };
        let _ = writeln!(
            s,
            "| {} | {:.0} | {:.0} | {:.0} | {} | {:.0} | {} | {:.0} | {:.0} | {} | {} |",
            b.label,
            l.bridge_ping.median_us,
            l.registry_ping.median_us,
            l.bus_ping.median_us,
            ratio(&l.bridge_ping, &l.registry_ping),
            l.query_bus.median_us,
            ratio(&l.query_bus, &l.bridge_ping),
            l.p2p_ping.median_us,
            l.query_p2p.median_us,
            ratio(&l.query_p2p, &l.p2p_ping),
            l.errors
        );
    }
    s.push_str("\nMedians in µs.\n");
    s
}
