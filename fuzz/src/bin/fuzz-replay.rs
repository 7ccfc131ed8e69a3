//! Runs the `decode_validate_apply` harness without libFuzzer (stable
//! toolchain): replays every file of the given directories, then a bounded
//! loop of random structured inputs and byte-mutated corpus files. Exits
//! non-zero on the first panic; a watchdog aborts when one input runs longer
//! than 10 s (a hang).
//!
//! ```text
//! cargo run --release --bin fuzz-replay -- [--iterations N] [--seed S] [--write-seeds DIR] DIR...
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use newton_cache_fuzz::{decode_validate_apply, mutate_bytes, random_input, Rng};

struct Args {
    iterations: u64,
    seed: u64,
    write_seeds: Option<PathBuf>,
    dirs: Vec<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
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
            "--write-seeds" => args.write_seeds = Some(PathBuf::from(value("--write-seeds")?)),
            "-h" | "--help" => {
                return Err(
                    "usage: fuzz-replay [--iterations N] [--seed S] [--write-seeds DIR] DIR..."
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

fn write_seeds(dir: &Path, seed: u64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut rng = Rng::new(seed);
    for i in 0..32 {
        std::fs::write(dir.join(format!("random-{i:02}")), random_input(&mut rng))?;
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
    if let Some(dir) = &args.write_seeds {
        if let Err(error) = write_seeds(dir, args.seed) {
            eprintln!("cannot write seeds to {}: {error}", dir.display());
            std::process::exit(1);
        }
    }
    let started = Instant::now();
    let progress = Arc::new(AtomicU64::new(0));
    watchdog(progress.clone(), started);
    let tick = || progress.store(started.elapsed().as_secs(), Ordering::Relaxed);
    let corpus = files(&args.dirs);
    let (mut executions, mut applied, mut rejected) = (0u64, 0u64, 0u64);
    for (path, bytes) in &corpus {
        tick();
        let outcome =
            std::panic::catch_unwind(|| decode_validate_apply(bytes)).unwrap_or_else(|_| {
                eprintln!("PANIC on {}", path.display());
                std::process::exit(1);
            });
        executions += 1;
        applied += outcome.applied;
        rejected += outcome.rejected;
    }
    let mut rng = Rng::new(args.seed);
    for i in 0..args.iterations {
        tick();
        let mut input = if corpus.is_empty() || rng.below(2) == 0 {
            random_input(&mut rng)
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
        let outcome =
            std::panic::catch_unwind(|| decode_validate_apply(&input)).unwrap_or_else(|_| {
                let path = format!("crash-{}-{i}", args.seed);
                let _ = std::fs::write(&path, &input);
                eprintln!("PANIC at iteration {i}; input saved to {path}");
                std::process::exit(1);
            });
        executions += 1;
        applied += outcome.applied;
        rejected += outcome.rejected;
    }
    println!(
        "{executions} executions ({} corpus files, {} random) in {:.1} s: {applied} commits applied, {rejected} rejected, no panic, no hang",
        corpus.len(),
        args.iterations,
        started.elapsed().as_secs_f64()
    );
}
