//! Costly AT calls on one application against everyone else (issue 14, item 7): six
//! peer-to-peer clients loop an expensive `Collection.GetMatches` (a rule nothing matches, so
//! every call walks the whole tree) on a big application, while another application's
//! `Accessible.Name` latency, and the time a new sender needs to connect and to be on the
//! desktop, are measured. Every figure is measured in alternating phases of one run, with the
//! hammers stopped and running, so machine load hits both alike: compare the ratios.
//!
//! `newton-bench --costly-calls [NODES]` (default 199990: the 200k-node case, as one flat
//! list under the bridge's limit of 200,000 children per node).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use newton_atspi_client::calls::collection;
use newton_producer::Sender;
use serde::Serialize;

use crate::dbus::{Client, Obj, Query};
use crate::stats::Summary;
use crate::world::World;
use crate::{fail, fixtures, Result};

/// The case: six looping clients.
pub const HAMMERS: usize = 6;

/// What one run measured.
#[derive(Debug, Serialize)]
pub struct Costly {
    pub nodes: usize,
    pub hammers: usize,
    pub phases: usize,
    /// One `GetMatches` alone (no other load), the hammers' own call.
    pub costly_alone: Summary,
    /// The hammers' `GetMatches` calls while all six loop.
    pub costly_during: Summary,
    /// The other application's `Name` with the hammers stopped.
    pub other_alone: Summary,
    /// The other application's `Name` while they loop.
    pub other_during: Summary,
    /// A new sender: connect to hello acknowledged (`welcome`).
    pub connect_alone: Summary,
    pub connect_during: Summary,
    /// A new sender: connect, push a 10-node list, until the application is on the desktop.
    pub on_desktop_alone: Summary,
    pub on_desktop_during: Summary,
    pub errors: u64,
}

/// The GetMatches rule nothing matches (interface `Table`): the call walks every node.
fn costly_call(client: &Client, window: &Obj) -> zbus::Result<()> {
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
        client.connection(),
        &window.dest,
        window.path.as_str(),
        &(rule, 0, 0, true),
    ))?;
    Ok(())
}

pub fn measure(world: &World, nodes: usize, phases: usize, queries: usize) -> Result<Costly> {
    let big_stream = fixtures::list(nodes.saturating_sub(2).max(1)).renamed("costly big");
    let other_stream = fixtures::list(98).renamed("costly other");
    let big = world.attach(&big_stream)?;
    let other = world.attach(&other_stream)?;
    let address = world.client.bus_address(&big.root)?;
    let window_path = world.client.child_at(&big.root, 0)?.path;
    let window = Obj::new("", window_path.as_str())?;
    let other_window = world.client.child_at(&other.root, 0)?;

    let mut costly_alone = Vec::new();
    let mut other_alone = Vec::new();
    let mut other_during = Vec::new();
    let mut connect = [Vec::new(), Vec::new()];
    let mut on_desktop = [Vec::new(), Vec::new()];
    let mut errors = 0u64;
    let costly_during = Arc::new(std::sync::Mutex::new(Vec::new()));
    let probe = Client::connect_p2p(&address)?;
    let mut newcomer = 0usize;
    for _ in 0..phases {
        // Alone: a few costly calls on their own, then the other application's latency.
        for _ in 0..3 {
            let start = Instant::now();
            match costly_call(&probe, &window) {
                Ok(()) => costly_alone.push(start.elapsed()),
                Err(_) => errors += 1,
            }
        }
        sample(world, &other_window, queries, &mut other_alone, &mut errors);
        newcomer += 1;
        time_newcomer(world, newcomer, &mut connect[0], &mut on_desktop[0])?;

        // During: six clients loop the costly call, each on its own P2P connection.
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let hammer_errors = Arc::new(AtomicU64::new(0));
        let mut hammers = Vec::new();
        for _ in 0..HAMMERS {
            let client = Client::connect_p2p(&address)?;
            let (stop, done, hammer_errors, window, times) = (
                stop.clone(),
                done.clone(),
                hammer_errors.clone(),
                window.clone(),
                costly_during.clone(),
            );
            hammers.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    match costly_call(&client, &window) {
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
        sample(
            world,
            &other_window,
            queries,
            &mut other_during,
            &mut errors,
        );
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
    drop((big, other));
    Ok(Costly {
        nodes,
        hammers: HAMMERS,
        phases,
        costly_alone: Summary::of(&costly_alone),
        costly_during,
        other_alone: Summary::of(&other_alone),
        other_during: Summary::of(&other_during),
        connect_alone: Summary::of(&connect[0]),
        connect_during: Summary::of(&connect[1]),
        on_desktop_alone: Summary::of(&on_desktop[0]),
        on_desktop_during: Summary::of(&on_desktop[1]),
        errors,
    })
}

/// `queries` timed `Name` calls on `obj` over the bus.
fn sample(world: &World, obj: &Obj, queries: usize, into: &mut Vec<Duration>, errors: &mut u64) {
    for _ in 0..queries {
        match world.client.timed(obj, Query::Name) {
            Some(d) => into.push(d),
            None => *errors += 1,
        }
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

/// The Markdown table for docs/benchmarks.md.
pub fn markdown(r: &Costly) -> String {
    let ms = |us: f64| format!("{:.2} ms", us / 1000.0);
    let row = |what: &str, alone: &Summary, during: &Summary| {
        format!(
            "| {what} | {} | {} | {} | {} | {:.2}× | {:.2}× |\n",
            ms(alone.median_us),
            ms(alone.p99_us),
            ms(during.median_us),
            ms(during.p99_us),
            during.median_us / alone.median_us.max(1e-9),
            during.p99_us / alone.p99_us.max(1e-9),
        )
    };
    let mut out = format!(
        "{} P2P clients looping `Collection.GetMatches` (nothing matches: whole tree) on a {}-node \
         application; {} phases alternating stopped / looping; errors {}.\n\n\
         | measured | median, stopped | p99, stopped | median, looping | p99, looping | median ratio | p99 ratio |\n\
         |---|---|---|---|---|---|---|\n",
        r.hammers, r.nodes, r.phases, r.errors
    );
    out.push_str(&row(
        &format!(
            "another application's `Name` ({} / {} calls)",
            r.other_alone.samples, r.other_during.samples
        ),
        &r.other_alone,
        &r.other_during,
    ));
    out.push_str(&row(
        &format!(
            "a new sender's connect (hello → welcome; {} / {})",
            r.connect_alone.samples, r.connect_during.samples
        ),
        &r.connect_alone,
        &r.connect_during,
    ));
    out.push_str(&row(
        &format!(
            "a new 10-node application until on the desktop ({} / {})",
            r.on_desktop_alone.samples, r.on_desktop_during.samples
        ),
        &r.on_desktop_alone,
        &r.on_desktop_during,
    ));
    out.push_str(&row(
        &format!(
            "the `GetMatches` call itself (alone {}; the six clients' {})",
            r.costly_alone.samples, r.costly_during.samples
        ),
        &r.costly_alone,
        &r.costly_during,
    ));
    out
}
