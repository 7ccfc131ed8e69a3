//! Runs a fuzz harness without libFuzzer (stable toolchain): replays every
//! file of the given directories, then a bounded loop of random inputs and
//! byte-mutated corpus files. Exits non-zero on the first panic; a watchdog
//! aborts when one input runs longer than 10 s (a hang).
//!
//! Targets (`--target`, default `decode_validate_apply`):
//! * `decode_validate_apply`: random structured edit streams (see
//!   `random_input`);
//! * `protocol_session`: random bytes read by the structured stream builder
//!   (mode byte even) or raw streams;
//! * `atspi_calls`: random bytes read as a replica choice and calls.
//! * `all`: the three in turn, each for `--iterations`.
//!
//! ```text
//! cargo run --release --bin fuzz-replay -- [--target T] [--iterations N] [--seed S] [--write-seeds DIR] DIR...
//! ```

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use newton_cache_fuzz::protocol::{protocol_session, seeds_from_recording};
use newton_cache_fuzz::shim::{atspi_calls, fixture_subjects};
use newton_cache_fuzz::{decode_validate_apply, mutate_bytes, random_input, Rng};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    DecodeValidateApply,
    ProtocolSession,
    AtspiCalls,
}

const TARGETS: &[(&str, Target)] = &[
    ("decode_validate_apply", Target::DecodeValidateApply),
    ("protocol_session", Target::ProtocolSession),
    ("atspi_calls", Target::AtspiCalls),
];

impl Target {
    fn name(self) -> &'static str {
        TARGETS
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(name, _)| name)
    }

    /// Runs one input; returns (units of work, rejections) for statistics:
    /// commits applied / rejected, or calls answered / errors.
    fn run(self, data: &[u8]) -> (u64, u64) {
        match self {
            Target::DecodeValidateApply => {
                let outcome = decode_validate_apply(data);
                (outcome.applied, outcome.rejected)
            }
            Target::ProtocolSession => {
                let outcome = protocol_session(data);
                (outcome.applied, outcome.rejected)
            }
            Target::AtspiCalls => {
                let outcome = atspi_calls(data);
                (outcome.returns, outcome.errors)
            }
        }
    }

    /// What the two counters of [`Target::run`] mean.
    fn units(self) -> (&'static str, &'static str) {
        match self {
            Target::AtspiCalls => ("calls answered", "answered with an error"),
            _ => ("commits applied", "rejected"),
        }
    }

    /// A random input for this target.
    fn random(self, rng: &mut Rng) -> Vec<u8> {
        match self {
            Target::DecodeValidateApply => random_input(rng),
            _ => {
                let len = 16 + rng.below(4096);
                let mut bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                if self == Target::ProtocolSession && rng.below(8) != 0 {
                    // Structured streams mostly (even mode byte).
                    if let Some(first) = bytes.first_mut() {
                        *first &= !1;
                    }
                }
                bytes
            }
        }
    }
}

struct Args {
    targets: Vec<Target>,
    iterations: u64,
    seed: u64,
    write_seeds: Option<PathBuf>,
    dirs: Vec<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        targets: vec![Target::DecodeValidateApply],
        iterations: 10_000,
        seed: 1,
        write_seeds: None,
        dirs: vec![],
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--iterations" => {
                args.iterations = value("--iterations")?
                    .parse()
                    .map_err(|e| format!("--iterations: {e}"))?
            }
            "--seed" => {
                args.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--target" => {
                let name = value("--target")?;
                args.targets = if name == "all" {
                    TARGETS.iter().map(|(_, t)| *t).collect()
                } else {
                    vec![TARGETS
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, t)| *t)
                        .ok_or(format!("unknown target {name}"))?]
                }
            }
            "--write-seeds" => args.write_seeds = Some(PathBuf::from(value("--write-seeds")?)),
            "-h" | "--help" => {
                return Err(
                    "usage: fuzz-replay [--target decode_validate_apply|protocol_session|atspi_calls|all] [--iterations N] [--seed S] [--write-seeds DIR] DIR..."
                        .into(),
                )
            }
            _ => args.dirs.push(PathBuf::from(arg)),
        }
    }
    Ok(args)
}

fn files(dirs: &[PathBuf]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = vec![];
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("skipping {}: not a readable directory", dir.display());
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

/// Aborts the process when the current input makes no progress for 10 s.
fn watchdog(progress: Arc<AtomicU64>, started: Instant) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_secs(1));
        let last = progress.load(Ordering::Relaxed);
        if started.elapsed().as_secs().saturating_sub(last) > 10 {
            eprintln!("HANG: one input ran longer than 10 s");
            std::process::abort();
        }
    });
}

/// 32 random inputs, plus for `protocol_session` every recording among
/// `corpus` as JSON and postcard streams, and for `atspi_calls` one input
/// per fixture replica.
fn write_seeds(
    dir: &Path,
    target: Target,
    seed: u64,
    corpus: &[(PathBuf, Vec<u8>)],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut rng = Rng::new(seed);
    for i in 0..32 {
        std::fs::write(dir.join(format!("random-{i:02}")), target.random(&mut rng))?;
    }
    match target {
        Target::ProtocolSession => {
            for (path, bytes) in corpus {
                let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("x");
                let text = String::from_utf8_lossy(bytes);
                if let Some([json, postcard]) = seeds_from_recording(&text) {
                    std::fs::write(dir.join(format!("{name}.json-stream")), json)?;
                    std::fs::write(dir.join(format!("{name}.postcard-stream")), postcard)?;
                }
            }
        }
        Target::AtspiCalls => {
            for i in 0..fixture_subjects().len() {
                let mut input = vec![(2 * i + 1) as u8];
                input.extend((0..512).map(|_| rng.next_u64() as u8));
                std::fs::write(dir.join(format!("fixture-{i:02}")), input)?;
            }
        }
        Target::DecodeValidateApply => {}
    }
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let corpus = files(&args.dirs);
    if let Some(dir) = &args.write_seeds {
        for target in &args.targets {
            if let Err(error) = write_seeds(dir, *target, args.seed, &corpus) {
                eprintln!("cannot write seeds to {}: {error}", dir.display());
                std::process::exit(1);
            }
        }
    }
    if args.targets.contains(&Target::AtspiCalls) {
        // Built once, before the watchdog counts.
        let started = Instant::now();
        let subjects = fixture_subjects();
        for subject in subjects {
            println!(
                "atspi_calls: replica {}: {} exposed nodes, {} not exposed",
                subject.name,
                subject.exposed.len(),
                subject.unexposed.len()
            );
        }
        println!(
            "atspi_calls: {} fixture replicas built in {:.1} s",
            subjects.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let started = Instant::now();
    let progress = Arc::new(AtomicU64::new(0));
    watchdog(progress.clone(), started);
    for target in &args.targets {
        run_target(*target, &args, &corpus, &progress, started);
    }
}

fn run_target(
    target: Target,
    args: &Args,
    corpus: &[(PathBuf, Vec<u8>)],
    progress: &AtomicU64,
    started: Instant,
) {
    let tick = || progress.store(started.elapsed().as_secs(), Ordering::Relaxed);
    let began = Instant::now();
    let (mut executions, mut done, mut refused) = (0u64, 0u64, 0u64);
    for (path, bytes) in corpus {
        tick();
        let (a, b) = std::panic::catch_unwind(|| target.run(bytes)).unwrap_or_else(|_| {
            eprintln!("PANIC ({}) on {}", target.name(), path.display());
            std::process::exit(1);
        });
        executions += 1;
        done += a;
        refused += b;
    }
    let mut rng = Rng::new(args.seed);
    for i in 0..args.iterations {
        tick();
        let mut input = if corpus.is_empty() || rng.below(2) == 0 {
            target.random(&mut rng)
        } else {
            corpus[rng.below(corpus.len())].1.clone()
        };
        if rng.below(3) == 0 {
            mutate_bytes(&mut input, &mut rng);
        }
        if std::env::var_os("NEWTON_FUZZ_TRACE").is_some() {
            // Keep the input on disk so a hang (abort) leaves it behind.
            let _ = std::fs::write("last-input", &input);
        }
        let (a, b) = std::panic::catch_unwind(|| target.run(&input)).unwrap_or_else(|_| {
            let path = format!("crash-{}-{}-{i}", target.name(), args.seed);
            let _ = std::fs::write(&path, &input);
            eprintln!(
                "PANIC ({}) at iteration {i}; input saved to {path}",
                target.name()
            );
            std::process::exit(1);
        });
        executions += 1;
        done += a;
        refused += b;
    }
    let (done_name, refused_name) = target.units();
    println!(
        "{}: {executions} executions ({} corpus files, {} random) in {:.1} s: {done} {done_name}, {refused} {refused_name}, no panic, no hang",
        target.name(),
        corpus.len(),
        args.iterations,
        began.elapsed().as_secs_f64()
    );
}
