//! `newton-bench`: the side-by-side benchmark suite. Brings up private buses, the bridge and
//! (when built) the legacy in-process reference, and measures in one run query latency against
//! the D-Bus floor, a frozen producer, walks, update → signal latency, memory per node, idle
//! cost and an Orca call-profile replay. Writes a markdown table, JSON and an SVG plot.
//!
//! It never judges speed: it fails only when a benchmark cannot run.

#![forbid(unsafe_code)]

mod costly;
mod dbus;
mod eframe_cost;
mod fairness;
mod fixtures;
mod idle;
mod keys;
mod memory;
mod orca;
mod procfs;
mod profile;
mod pywalk;
mod queries;
mod report;
mod restart;
mod rounds;
mod say_all;
mod stats;
mod threads;
mod update_cost;
mod updates;
mod walks;
mod world;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::fixtures::Stream;
use crate::report::Results;
use crate::world::World;

/// Any failure: a message saying what could not run.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from a message.
pub fn fail(message: impl Into<String>) -> Error {
    message.into().into()
}

/// Sizes and iteration counts of one run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Config {
    pub smoke: bool,
    /// Items of the list fixtures (walks, updates, memory).
    pub list_items: Vec<usize>,
    /// Blocks (25 nodes each) of the document fixtures (query latency).
    pub doc_blocks: Vec<usize>,
    /// Blocks of the document the frozen producer replays.
    pub frozen_blocks: usize,
    pub query_iterations: usize,
    pub query_warmup: usize,
    pub frozen_rounds: usize,
    pub frozen_per_round: usize,
    pub get_items_runs: usize,
    pub update_iterations: usize,
    pub sustained_updates: usize,
    pub idle_seconds: f64,
    pub idle_items: usize,
    pub orca_rounds: usize,
}

impl Config {
    /// Iterations on a tree of `nodes`: fewer on big trees, where Text on the whole document
    /// costs milliseconds per call (a tenth at 100k nodes, half at 10k, never under 20).
    pub fn query_iterations_for(&self, nodes: usize) -> usize {
        let divisor = match nodes {
            0..=5_000 => 1,
            5_001..=50_000 => 2,
            _ => 10,
        };
        (self.query_iterations / divisor).max(20)
    }

    fn full() -> Config {
        Config {
            smoke: false,
            list_items: vec![998, 9_998, 99_998],
            doc_blocks: vec![40, 400, 4_000],
            frozen_blocks: 400,
            query_iterations: 2_000,
            query_warmup: 100,
            frozen_rounds: 5,
            frozen_per_round: 200,
            get_items_runs: 5,
            update_iterations: 300,
            sustained_updates: 3_000,
            idle_seconds: 10.0,
            idle_items: 998,
            orca_rounds: 21,
        }
    }

    fn smoke() -> Config {
        Config {
            smoke: true,
            list_items: vec![298, 998],
            doc_blocks: vec![4, 40],
            frozen_blocks: 4,
            query_iterations: 30,
            query_warmup: 5,
            frozen_rounds: 2,
            frozen_per_round: 10,
            get_items_runs: 1,
            update_iterations: 10,
            sustained_updates: 50,
            idle_seconds: 2.0,
            idle_items: 298,
            orca_rounds: 3,
        }
    }
}

struct Args {
    smoke: bool,
    out: PathBuf,
    profile: Option<PathBuf>,
    restart_only: bool,
    /// `--orca-only`: only the Orca call profile, bridge against accesskit_unix.
    orca_only: bool,
    /// `--fairness-only`: only the flooding-vs-quiet application latencies.
    fairness_only: bool,
    /// `--threads-only`: only daemon threads and the Ping comparisons (one executor).
    threads_only: bool,
    /// `--memory-rounds [ROUNDS APPS NODES]`: only the memory-return rounds.
    memory_rounds: Option<(usize, usize, usize)>,
    /// `--update-cost`: only the app-side `update_if_active` cost, newton vs accesskit_unix.
    update_cost: bool,
    /// `--key-latency`: only key press → keystroke listener, bridge vs atk-bridge.
    key_latency: bool,
    /// `--update-cost-app ITEMS CALLS`: the measuring child of `--update-cost` (internal).
    update_cost_app: Option<(usize, usize)>,
    /// `--adapter-app ITEMS`: the restart benchmark's live-adapter application (internal).
    adapter_app: Option<usize>,
    /// `--adapter-app-in-process ITEMS`: the same with its in-process bridge on (internal).
    adapter_in_process: bool,
    /// `--eframe-cost`: only an eframe application's per-frame update cost, the accesskit_unix
    /// shim vs accesskit_unix.
    eframe_cost: bool,
    /// `--eframe-cost-app FRAMES`: the measuring child of `--eframe-cost` (internal).
    eframe_cost_app: Option<usize>,
    /// `--memory-check [ROUNDS APPS NODES]`: the bounded memory-return check CI runs.
    memory_check: Option<(usize, usize, usize)>,
    /// `--costly-calls [NODES]`: six looping clients against another application (`Some(None)`:
    /// the default size for full or smoke runs).
    costly_calls: Option<Option<usize>>,
    /// `--attack get-matches,get-children`: the calls `--costly-calls` loops (default both).
    attacks: Option<Vec<costly::Attack>>,
    /// `--transport bus,p2p`: how its clients connect (default both).
    transports: Option<Vec<costly::Transport>>,
    /// `--say-all`: only Say All per block on doc-100k, bridge (as a web engine) vs accesskit_unix.
    say_all: bool,
}

impl Args {
    /// The sizes `--smoke` picks, else the full ones.
    fn config(&self) -> Config {
        if self.smoke {
            Config::smoke()
        } else {
            Config::full()
        }
    }

    /// `<out>/fixtures`, created: where every mode writes the streams it replays.
    fn fixtures_dir(&self) -> Result<PathBuf> {
        let files = self.out.join("fixtures");
        std::fs::create_dir_all(&files)
            .map_err(|e| fail(format!("cannot create {}: {e}", files.display())))?;
        Ok(files)
    }
}

/// The comma-separated values after `flag`, each parsed by `parse`.
fn list_after<T>(
    it: &mut impl Iterator<Item = String>,
    flag: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>> {
    let text = it
        .next()
        .ok_or_else(|| fail(format!("{flag} needs a value")))?;
    text.split(',')
        .map(|value| parse(value).ok_or_else(|| fail(format!("{flag}: unknown value {value:?}"))))
        .collect()
}

/// Up to three numbers after a flag (the next flag ends them), over `defaults`.
fn numbers_after(
    it: &mut std::iter::Peekable<impl Iterator<Item = String>>,
    defaults: [usize; 3],
) -> (usize, usize, usize) {
    let mut numbers = defaults;
    for slot in numbers.iter_mut() {
        match it.peek().and_then(|text| text.parse().ok()) {
            Some(number) => {
                *slot = number;
                it.next();
            }
            None => break,
        }
    }
    (numbers[0], numbers[1], numbers[2])
}

fn parse_args() -> Result<Option<Args>> {
    let mut args = Args {
        smoke: false,
        out: newton_e2e::workspace_root().join("target/bench"),
        profile: None,
        restart_only: false,
        orca_only: false,
        fairness_only: false,
        threads_only: false,
        memory_rounds: None,
        update_cost: false,
        key_latency: false,
        update_cost_app: None,
        adapter_app: None,
        adapter_in_process: false,
        eframe_cost: false,
        eframe_cost_app: None,
        memory_check: None,
        costly_calls: None,
        attacks: None,
        transports: None,
        say_all: false,
    };
    let mut it = std::env::args().skip(1).peekable();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--smoke" => args.smoke = true,
            "--restart-only" => args.restart_only = true,
            "--orca-only" => args.orca_only = true,
            "--fairness-only" => args.fairness_only = true,
            "--update-cost" => args.update_cost = true,
            "--eframe-cost" => args.eframe_cost = true,
            "--eframe-cost-app" => {
                let frames = it
                    .next()
                    .and_then(|text| text.parse().ok())
                    .ok_or_else(|| fail("--eframe-cost-app needs FRAMES"))?;
                args.eframe_cost_app = Some(frames);
            }
            "--key-latency" => args.key_latency = true,
            "--say-all" => args.say_all = true,
            "--adapter-app" | "--adapter-app-in-process" => {
                let items = it
                    .next()
                    .and_then(|text| text.parse().ok())
                    .ok_or_else(|| fail(format!("{arg} needs ITEMS")))?;
                args.adapter_app = Some(items);
                args.adapter_in_process = arg == "--adapter-app-in-process";
            }
            "--update-cost-app" => {
                let mut number = || {
                    it.next()
                        .and_then(|text| text.parse().ok())
                        .ok_or_else(|| fail("--update-cost-app needs ITEMS and CALLS"))
                };
                args.update_cost_app = Some((number()?, number()?));
            }
            "--threads-only" => args.threads_only = true,
            "--memory-rounds" => {
                args.memory_rounds = Some(numbers_after(&mut it, [10, 100, 5000]));
            }
            "--costly-calls" => {
                let nodes = it.peek().and_then(|text| text.parse().ok());
                if nodes.is_some() {
                    it.next();
                }
                args.costly_calls = Some(nodes);
            }
            "--attack" => {
                args.attacks = Some(list_after(&mut it, "--attack", costly::Attack::parse)?);
            }
            "--transport" => {
                args.transports = Some(list_after(
                    &mut it,
                    "--transport",
                    costly::Transport::parse,
                )?);
            }
            "--memory-check" => {
                args.memory_check = Some(numbers_after(&mut it, [3, 10, 5000]));
            }
            "--out" => {
                let out = it
                    .next()
                    .map(PathBuf::from)
                    .ok_or_else(|| fail("--out needs a directory"))?;
                // Absolute: fixture files in it are handed to children that run in the
                // session's directory.
                args.out = std::path::absolute(&out)
                    .map_err(|e| fail(format!("--out {}: {e}", out.display())))?;
            }
            "--profile" => {
                let dir = it
                    .next()
                    .map(PathBuf::from)
                    .ok_or_else(|| fail("--profile needs a directory"))?;
                args.profile = Some(
                    std::path::absolute(&dir)
                        .map_err(|e| fail(format!("--profile {}: {e}", dir.display())))?,
                );
            }
            "-h" | "--help" => {
                println!(
                    "newton-bench [--smoke] [--out DIR] | --profile DIR\n\n\
                     Runs the benchmark suite on private buses (needs dbus-daemon and at-spi2-core;\n\
                     build the bridge first: cargo build --release -p newton-atspi-bridge).\n\
                     --smoke  tiny trees and iteration counts (< 2 minutes), fails only if a benchmark cannot run\n\
                     --out    where results go (default target/bench/)\n\
                     --fairness-only  only a quiet application's query latency beside one flooding the bridge with commits (ratios)\n\
                     --update-cost  only the app-side cost of update_if_active for a one-node change,\n\
                     \x20        newton_accesskit against accesskit_unix in one process (prints its table)\n\
                     --eframe-cost  only an eframe app's update_if_active per frame (egui headless, one\n\
                     \x20        character typed per frame), the accesskit_unix shim against accesskit_unix\n\
                     --key-latency  only key press → the registry's keystroke listener, newton-live-app\n\
                     \x20        through the bridge against a GTK 3 app through atk-bridge (needs Xvfb, xdotool)\n\
                     --costly-calls [NODES]  only: six clients looping a costly call on a NODES-node application\n\
                     \x20        (default 199990; 2498 with --smoke), another application's GetRole latency and a new\n\
                     \x20        sender's connect time meanwhile (ratios against the same with the clients stopped);\n\
                     \x20        NEWTON_BRIDGE_BIN_BEFORE=PATH measures a second build beside this one\n\
                     \x20 --attack get-matches,get-children  the call they loop (default both)\n\
                     \x20 --transport bus,p2p  how they connect (default both)\n\
                     --threads-only  only daemon threads with 1/10/50 applications and 10 P2P clients, and the\n\
                     \x20        bridge's Ping beside the registry's and the bus's (NEWTON_BRIDGE_BIN_BEFORE=PATH adds a build)\n\
                     --restart-only  only bridge restart → application back (prints its table)\n\
                     --say-all  only Say All per block: Orca 43.1's web-script calls on the first 200 blocks\n\
                     \x20        of doc-100k sent as \"Chromium\" (per-block text), beside the same content read\n\
                     \x20        through accesskit_unix (build newton-legacy-reference too; prints its table)\n\
                     --orca-only  only the Orca 43.1 call profile on egui-form-focus, the bridge against the\n\
                     \x20        in-process accesskit_unix reference (build newton-legacy-reference too; prints its table)\n\
                     --profile  instead of the suite: perf-record the bridge's hot paths (100k nodes) into DIR\n\
                     --memory-rounds [ROUNDS APPS NODES]  instead of the suite: RSS after rounds of APPS\n\
                     \x20        applications of NODES nodes attaching and leaving (default 10 100 5000),\n\
                     \x20        with and without malloc_trim\n\
                     --memory-check [ROUNDS APPS NODES]  the bounded check CI runs (default 3 10 5000):\n\
                     \x20        the shipped bridge only; fails if RSS after the applications left is over\n\
                     \x20        2× its RSS at start; the figures go to the test summary"
                );
                return Ok(None);
            }
            other => return Err(fail(format!("unknown argument {other:?}; try --help"))),
        }
    }
    Ok(Some(args))
}

fn main() -> ExitCode {
    let outcome = parse_args().and_then(|args| match args {
        Some(Args {
            profile: Some(dir), ..
        }) => profile::run(&dir),
        Some(args) if args.restart_only => run_restart_only(&args),
        Some(args) if args.orca_only => run_orca_only(&args),
        Some(args) if args.fairness_only => run_fairness_only(&args),
        Some(Args {
            update_cost_app: Some((items, calls)),
            ..
        }) => update_cost::run_app(items, calls),
        Some(Args {
            adapter_app: Some(items),
            adapter_in_process,
            ..
        }) => update_cost::run_adapter_app(items, adapter_in_process),
        Some(Args {
            eframe_cost_app: Some(frames),
            ..
        }) => eframe_cost::run_app(frames),
        Some(args) if args.update_cost => run_update_cost(&args),
        Some(args) if args.eframe_cost => run_eframe_cost(&args),
        Some(args) if args.key_latency => run_key_latency(&args),
        Some(args) if args.say_all => run_say_all(&args),
        Some(args) if args.costly_calls.is_some() => run_costly_calls(&args),
        Some(args) if args.threads_only => run_threads_only(&args),
        Some(args) => run(args),
        None => Ok(()),
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("newton-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Logs progress to stderr with the time since start.
fn step(started: Instant, what: &str) {
    eprintln!("[{:7.1} s] {what}", started.elapsed().as_secs_f64());
}

fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    if let Some((rounds, apps, nodes)) = args.memory_check {
        let files = args.fixtures_dir()?;
        let result = rounds::check(files, rounds, apps, nodes);
        let line = match &result {
            Ok(r) => rounds::check_line(r),
            Err(e) => format!("FAILED: {e}"),
        };
        newton_e2e::summary_note("memory-check", &line);
        result?;
        step(started, "memory check done");
        return Ok(());
    }
    if let Some((rounds, apps, nodes)) = args.memory_rounds {
        let files = args.fixtures_dir()?;
        let results = rounds::run(files, rounds, apps, nodes)?;
        let json = serde_json::to_string_pretty(&results)
            .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
        let path = args.out.join("memory-rounds.json");
        std::fs::write(&path, json)
            .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
        println!("{}", rounds::markdown(&results));
        println!("results: {}", path.display());
        step(started, "memory rounds done");
        return Ok(());
    }
    let config = args.config();
    let files = args.fixtures_dir()?;
    let mut results = Results::new(&config);
    let mut world = World::start(files.clone())?;
    step(
        started,
        &format!("session up; bridge pid {}", world.bridge_pid),
    );
    match &world.legacy_bin {
        Some(bin) => step(started, &format!("legacy reference: {}", bin.display())),
        None => step(started, "legacy reference not built: its columns are n/a"),
    }

    run_lists(&mut world, &config, &mut results, started)?;
    run_docs(&mut world, &config, &mut results, started)?;
    run_frozen(&mut world, &config, &mut results, started)?;
    run_orca(&mut world, &config, &mut results, started)?;
    results.bridge_binary = world::bridge_binary()?.display().to_string();
    drop(world);

    if config.smoke {
        // Only in smoke runs, so CI keeps `--costly-calls` working (a few seconds at smoke
        // sizes); its full figures take minutes and come from that mode alone.
        step(started, "costly calls (smoke sizes): new session");
        let costly = costly::run(files.clone(), &costly::Options::new(None, true))?;
        let path = args.out.join("costly-calls.json");
        let json = serde_json::to_string_pretty(&costly)
            .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
        std::fs::write(&path, json)
            .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("{}", costly::markdown(&costly));
    }

    step(started, "idle: new session with --a11y=0");
    let idle_stream = fixtures::list(config.idle_items).renamed("bench idle");
    results.idle = Some(idle::measure(&idle_stream, config.idle_seconds, files)?);

    let (restart_items, restart_rounds) = restart_size(&config);
    step(
        started,
        &format!(
            "restart: {restart_rounds} bridge restarts per setup, {} nodes",
            restart_items + 2
        ),
    );
    results.restart = restart::measure(restart_items, restart_rounds)?;

    results.total_seconds = started.elapsed().as_secs_f64();
    let written = report::write(&results, &args.out)?;
    println!("{}", report::markdown(&results));
    println!("results: {}", written.join(", "));
    Ok(())
}

/// Restart rounds and list items of the restart benchmark.
fn restart_size(config: &Config) -> (usize, usize) {
    if config.smoke {
        (98, 3)
    } else {
        (998, 15)
    }
}

/// `--fairness-only`: a quiet application's query latency beside a flooding one, its table
/// on stdout and `fairness.json` in the output directory.
fn run_fairness_only(args: &Args) -> Result<()> {
    let (items, phases, queries) = if args.smoke {
        (98, 2, 50)
    } else {
        (998, 10, 400)
    };
    let files = args.fixtures_dir()?;
    let world = world::World::start(files)?;
    let result = fairness::measure(&world, items, phases, queries)?;
    let json = serde_json::to_string_pretty(&result)
        .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
    let path = args.out.join("fairness.json");
    std::fs::write(&path, json)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("{}", fairness::markdown(&result));
    Ok(())
}

/// `--update-cost`: the app-side `update_if_active` cost alone, its table on stdout and
/// `update-cost.json` in the output directory.
fn run_update_cost(args: &Args) -> Result<()> {
    let (items, calls) = if args.smoke { (98, 200) } else { (998, 2_000) };
    let files = args.fixtures_dir()?;
    let cost = update_cost::measure(files, items, calls)?;
    let json = serde_json::to_string_pretty(&cost)
        .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
    let path = args.out.join("update-cost.json");
    std::fs::write(&path, json)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("{}", update_cost::markdown(&cost));
    println!("results: {}", path.display());
    Ok(())
}

/// `--eframe-cost`: an eframe application's per-frame update cost alone, its table on stdout and
/// `eframe-cost.json` in the output directory.
fn run_eframe_cost(args: &Args) -> Result<()> {
    let frames = if args.smoke { 100 } else { 1_000 };
    let files = args.fixtures_dir()?;
    let cost = eframe_cost::measure(files, frames)?;
    let json = serde_json::to_string_pretty(&cost)
        .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
    let path = args.out.join("eframe-cost.json");
    std::fs::write(&path, json)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("{}", eframe_cost::markdown(&cost));
    println!("results: {}", path.display());
    Ok(())
}

/// `--key-latency`: key press → keystroke listener alone, its table on stdout and
/// `key-latency.json` in the output directory.
fn run_key_latency(args: &Args) -> Result<()> {
    let (blocks, per_block) = if args.smoke { (2, 10) } else { (10, 50) };
    let files = args.fixtures_dir()?;
    let latency = keys::measure(files, blocks, per_block)?;
    let json = serde_json::to_string_pretty(&latency)
        .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
    let path = args.out.join("key-latency.json");
    std::fs::write(&path, json)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("{}", keys::markdown(&latency));
    println!("results: {}", path.display());
    Ok(())
}

/// `--say-all`: Say All per block alone, its table on stdout and `say-all.json` in the output
/// directory.
fn run_say_all(args: &Args) -> Result<()> {
    let started = Instant::now();
    let size = say_all::Size::new(args.smoke);
    let files = args.fixtures_dir()?;
    let mut world = World::start(files)?;
    if world.legacy_bin.is_none() {
        step(started, "legacy reference not built: the bridge side only");
    }
    step(
        started,
        &format!(
            "Say All: {} sections, {} blocks",
            size.sections, size.blocks
        ),
    );
    let result = say_all::measure(&mut world, &size)?;
    drop(world);
    let json = serde_json::to_string_pretty(&result)
        .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
    let path = args.out.join("say-all.json");
    std::fs::write(&path, json)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("{}", say_all::markdown(&result));
    println!("results: {}", path.display());
    step(started, "say-all done");
    Ok(())
}

/// `--costly-calls`: six looping clients against another application, per attack and
/// transport, its tables on stdout and `costly-calls.json` in the output directory.
fn run_costly_calls(args: &Args) -> Result<()> {
    let mut options = costly::Options::new(args.costly_calls.flatten(), args.smoke);
    if let Some(attacks) = &args.attacks {
        options.attacks = attacks.clone();
    }
    if let Some(transports) = &args.transports {
        options.transports = transports.clone();
    }
    let results = costly::run(args.fixtures_dir()?, &options)?;
    let json = serde_json::to_string_pretty(&results)
        .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
    let path = args.out.join("costly-calls.json");
    std::fs::write(&path, json)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("{}", costly::markdown(&results));
    println!("results: {}", path.display());
    Ok(())
}

/// `--threads-only`: thread counts and Ping comparisons, the table on stdout and
/// `threads.json` in the output directory.
fn run_threads_only(args: &Args) -> Result<()> {
    let files = args.fixtures_dir()?;
    let builds = threads::run(files, args.smoke)?;
    let json = serde_json::to_string_pretty(&builds)
        .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
    let path = args.out.join("threads.json");
    std::fs::write(&path, json)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("{}", threads::markdown(&builds));
    Ok(())
}

/// `--restart-only`: the restart benchmark alone, its table on stdout.
fn run_restart_only(args: &Args) -> Result<()> {
    let config = args.config();
    let mut results = Results::new(&config);
    let (items, rounds) = restart_size(&config);
    results.restart = restart::measure(items, rounds)?;
    println!("{}", report::restart_markdown(&results));
    Ok(())
}

/// `--orca-only`: the Orca call profile alone, its table on stdout and `orca.json`
/// in the output directory.
fn run_orca_only(args: &Args) -> Result<()> {
    let started = Instant::now();
    let config = args.config();
    let files = args.fixtures_dir()?;
    let mut results = Results::new(&config);
    let mut world = World::start(files)?;
    run_orca(&mut world, &config, &mut results, started)?;
    let json = serde_json::to_string_pretty(&results.orca)
        .map_err(|e| fail(format!("cannot encode the results: {e}")))?;
    let path = args.out.join("orca.json");
    std::fs::write(&path, json)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    println!("{}", report::orca_markdown(&results));
    Ok(())
}

/// Lists: memory, walks and updates per size.
fn run_lists(
    world: &mut World,
    config: &Config,
    results: &mut Results,
    started: Instant,
) -> Result<()> {
    let one_node = fixtures::one_node().write(&world.files)?;
    let legacy_baseline = memory::legacy_rss(world, "one-node", &one_node)?;
    for &items in &config.list_items {
        let stream = fixtures::list(items).renamed(&format!("bench list {}", items + 2));
        step(started, &format!("list of {} nodes: attach", stream.nodes));
        let before = memory::bridge_rss(world)?;
        let app = world.attach(&stream)?;
        let after = memory::bridge_rss(world)?;
        let mut mem = memory::Memory::bridge(stream.nodes, before, after);
        let mut atspi_walks = pywalk::ListWalks {
            nodes: stream.nodes,
            ..Default::default()
        };
        if world.legacy_bin.is_some() {
            step(started, "  legacy reference: memory and libatspi walk");
            let file = stream.write(&world.files)?;
            let label = format!("list-{items}");
            let legacy = memory::with_legacy(world, &label, &file, |world, pid| {
                pywalk::walk(
                    world,
                    &format!("legacy-{label}"),
                    pywalk::Target::Process(pid),
                    stream.nodes,
                )
            })?;
            let (rss, walk) = legacy.unzip();
            mem = mem.with_legacy(rss, legacy_baseline);
            atspi_walks.legacy = walk;
        }
        results.memory.push(mem);

        step(started, "  walk and Cache.GetItems");
        let walk = walks::walk(&world.client, &app.root, config.get_items_runs)?;
        results.walks.push(walk);

        step(started, "  libatspi walk (cache off)");
        atspi_walks.bridge = Some(pywalk::walk(
            world,
            &format!("bridge-list-{items}"),
            pywalk::Target::Bridged {
                name: &stream.name,
                bridge_pid: world.bridge_pid,
            },
            stream.nodes,
        )?);
        results.atspi_walks.push(atspi_walks);

        step(started, "  updates");
        let up = updates::measure(
            &world.client,
            &app,
            &stream,
            items,
            config.update_iterations,
            config.sustained_updates,
        )?;
        results.updates.push(up);
        drop(app);
    }
    Ok(())
}

/// Documents: query latency per size, bridge vs floor vs legacy.
fn run_docs(
    world: &mut World,
    config: &Config,
    results: &mut Results,
    started: Instant,
) -> Result<()> {
    for &blocks in &config.doc_blocks {
        let stream = fixtures::doc(blocks);
        let stream = stream.renamed(&format!("bench doc {}", stream.nodes));
        step(
            started,
            &format!("document of {} nodes: queries", stream.nodes),
        );
        let app = world.attach(&stream)?;
        let legacy = spawn_legacy_for(world, &stream)?;
        let node = queries::doc_nodes(&world.client, &app.root)?;
        let legacy_node = legacy
            .as_ref()
            .map(|l| queries::doc_nodes(&world.client, &l.root))
            .transpose()?;
        let p2p = peer_to_peer(&world.client, &app.root, &node)?;
        let p2p_view = p2p
            .as_ref()
            .map(|(client, nodes, floor)| queries::PeerToPeer {
                client,
                nodes,
                floor,
            });
        let rows = queries::measure(
            &world.client,
            &node,
            &app.root,
            legacy_node.as_ref(),
            p2p_view.as_ref(),
            config.query_iterations_for(stream.nodes),
            config.query_warmup,
        );
        results.queries.push(queries::SizeQueries {
            fixture: stream.name.clone(),
            nodes: stream.nodes,
            iterations: config.query_iterations_for(stream.nodes),
            rows,
        });
        if let Some(l) = legacy {
            world.stop(l.pid);
        }
        drop(app);
    }
    Ok(())
}

/// A peer-to-peer connection to the application (when the bridge offers one) and the same
/// nodes on it.
fn peer_to_peer(
    client: &dbus::Client,
    root: &dbus::Obj,
    nodes: &queries::QueryNodes,
) -> Result<Option<(dbus::Client, queries::QueryNodes, dbus::Obj)>> {
    let address = client.bus_address(root)?;
    if address.is_empty() {
        return Ok(None);
    }
    let direct = |obj: &dbus::Obj| dbus::Obj::new("", obj.path.as_str());
    let p2p_client = dbus::Client::connect_p2p(&address)?;
    let p2p_nodes = queries::QueryNodes {
        node: direct(&nodes.node)?,
        text: direct(&nodes.text)?,
    };
    Ok(Some((p2p_client, p2p_nodes, direct(root)?)))
}

fn spawn_legacy_for(world: &mut World, stream: &Stream) -> Result<Option<world::ChildApp>> {
    if world.legacy_bin.is_none() {
        return Ok(None);
    }
    let file = stream.write(&world.files)?;
    world.spawn_legacy(&stream.name.replace(' ', "-"), &file)
}

/// The queries again while the producer (a replay child) is SIGSTOPped.
fn run_frozen(
    world: &mut World,
    config: &Config,
    results: &mut Results,
    started: Instant,
) -> Result<()> {
    let stream = fixtures::doc(config.frozen_blocks);
    let stream = stream.renamed(&format!("bench frozen {}", stream.nodes));
    step(
        started,
        &format!("frozen producer: document of {} nodes", stream.nodes),
    );
    let file = stream.write(&world.files)?;
    let producer = world.spawn_replay(&file, &stream.name)?;
    let node = queries::doc_nodes(&world.client, &producer.root)?;
    let rows = queries::measure_frozen(
        &world.client,
        &node,
        producer.pid,
        config.frozen_rounds,
        config.frozen_per_round,
    );
    world.stop(producer.pid);
    results.frozen_nodes = stream.nodes;
    results.frozen = rows?;
    Ok(())
}

/// The Orca call profile on the egui form.
fn run_orca(
    world: &mut World,
    config: &Config,
    results: &mut Results,
    started: Instant,
) -> Result<()> {
    step(started, "Orca scenario on egui-form-focus");
    let path = newton_e2e::fixture("egui/egui-form-focus.jsonl");
    let lines = newton_fixtures::load_jsonl(&path)
        .map_err(|e| fail(format!("cannot load {}: {e}", path.display())))?;
    let stream = Stream {
        name: "egui-form-focus".into(),
        lines,
        nodes: 15,
    }
    .renamed("bench orca form");
    let app = world.attach(&stream)?;
    let legacy = spawn_legacy_for(world, &stream)?;
    let bridge_targets = orca::Targets::discover(&world.client, &app.root)?;
    let legacy_targets = legacy
        .as_ref()
        .map(|l| orca::Targets::discover(&world.client, &l.root))
        .transpose()?;
    let phases = orca::measure(
        &world.client,
        &bridge_targets,
        legacy_targets.as_ref(),
        config.orca_rounds,
    );
    if let Some(l) = legacy {
        world.stop(l.pid);
    }
    drop(app);
    results.orca = phases?;
    Ok(())
}
