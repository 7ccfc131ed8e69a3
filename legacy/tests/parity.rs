//! Structural parity: the same recording exposed by accesskit_unix inside
//! `newton-legacy-reference` and by the bridge (`serve` + a stepped replay)
//! is compared after every commit with the CLI a toolkit's CI would use,
//! `newton-atspi-bridge diff LEGACY BRIDGED --allow docs/compat-rules.json`:
//! every difference must be allowed by a rule there (each explained in
//! docs/compat.md), or the test fails with diff's report.
//!
//! Needs dbus-daemon and at-spi2-core (scripts/install-deps.sh) and the
//! bridge binary (`cargo build -p newton-atspi-bridge`).

// Each test binary uses its own part of the shared support module.
#[allow(dead_code)]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use newton_e2e::{
    bridge_binary, fixture, summary_note, wait_until, Bridge, BusClient, SessionOptions,
    SteppedReplay, TestSession,
};

use newton_atspi_client::calls::{accessible, component, ROOT};
use support::walk::{find_app, walk_app, Obj};
use support::{name_and_serials, Legacy};

/// Recorded and small generated fixtures: compared after every commit.
const SMALL: [&str; 6] = [
    "generated-small/basic.jsonl",
    "generated-small/doc-small.jsonl",
    "generated-small/grid-small.jsonl",
    "egui/egui-form-focus.jsonl",
    "egui/egui-widgets.jsonl",
    "egui/egui-demo-tour.jsonl",
];

/// How long one `diff` may take (a 100k-node walk of both sides included).
const DIFF_TIMEOUT: Duration = Duration::from_secs(900);

/// The tests of this file run one at a time: each keeps the 2-core CI
/// machine busy on its own, and the latency figures must not be measured
/// next to a 100k-object walk.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    // A test that failed while holding it poisons it; the others still run.
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Which rule of docs/compat-rules.json excused how many differences, over the fixture set
/// (both fixture tests), and which of the two tests have finished.
static RULE_USE: Mutex<(BTreeMap<String, usize>, BTreeSet<&'static str>)> =
    Mutex::new((BTreeMap::new(), BTreeSet::new()));

/// The fixture tests whose `diff` runs together make up the fixture set.
const FIXTURE_TESTS: [&str; 2] = ["recorded and small", "large generated"];

/// Adds the rules of one `diff` text report ("allowed (RULE): N difference(s), …").
fn record_rule_use(report: &str) {
    let mut used = RULE_USE.lock().unwrap_or_else(|e| e.into_inner());
    for line in report.lines() {
        let Some(rest) = line.strip_prefix("allowed (") else {
            continue;
        };
        let Some((rule, rest)) = rest.split_once("): ") else {
            continue;
        };
        let count = rest
            .split(' ')
            .next()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        *used.0.entry(rule.to_owned()).or_default() += count;
    }
}

/// The ids of docs/compat-rules.json, in file order.
fn rule_ids() -> Vec<String> {
    let text = std::fs::read_to_string(rules_file()).expect("read docs/compat-rules.json");
    let file: serde_json::Value = serde_json::from_str(&text).expect("docs/compat-rules.json");
    file["rules"]
        .as_array()
        .expect("a rules array")
        .iter()
        .filter_map(|r| r["id"].as_str().map(str::to_owned))
        .collect()
}

/// Marks fixture test `which` done. Once both are (in this process), writes how many
/// differences each rule excused to the test summary and returns the rules that excused
/// nothing: an unused rule is a rule nobody can check, so it fails the run. With one of the
/// two tests filtered out the check cannot be made, and the summary says so.
fn finish_fixture_test(which: &'static str) -> Vec<String> {
    let mut used = RULE_USE.lock().unwrap_or_else(|e| e.into_inner());
    used.1.insert(which);
    if used.1.len() < FIXTURE_TESTS.len() {
        return Vec::new();
    }
    let ids = rule_ids();
    let mut lines = String::from(
        "differences each rule of docs/compat-rules.json excused over the fixture set:\n",
    );
    let mut unused = Vec::new();
    for id in &ids {
        let count = used.0.get(id).copied().unwrap_or(0);
        let _ = writeln!(lines, "  {id}: {count}");
        if count == 0 {
            unused.push(id.clone());
        }
    }
    let _ = writeln!(
        lines,
        "{} rule(s), {} unused{}",
        ids.len(),
        unused.len(),
        if unused.is_empty() {
            String::new()
        } else {
            format!(" (FAIL: {})", unused.join(", "))
        }
    );
    summary_note("structural parity", &lines);
    unused
}

fn session() -> TestSession {
    TestSession::start(SessionOptions {
        xvfb: false,
        ..SessionOptions::default()
    })
    .expect("private session (dbus-daemon, at-spi-bus-launcher, at-spi2-registryd)")
}

fn legacy_name(name: &str) -> String {
    format!("{name} (legacy)")
}

fn rules_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/compat-rules.json")
}

/// The outcome of one `diff` run.
struct DiffRun {
    status: Option<i32>,
    stdout: String,
    seconds: f64,
}

impl DiffRun {
    /// "N object(s) compared" from the text summary.
    fn objects_compared(&self) -> usize {
        self.stdout
            .lines()
            .last()
            .and_then(|l| l.rsplit("; ").next())
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

/// Runs `newton-atspi-bridge diff "NAME (legacy)" NAME --allow
/// docs/compat-rules.json` in the session (the binary, as CI runs it).
fn run_diff(
    session: &mut TestSession,
    log: &str,
    name: &str,
    format: &str,
    walk: &str,
    under: Option<&str>,
    max_nodes: usize,
) -> DiffRun {
    let mut cmd = session.command(bridge_binary().expect("the bridge binary"));
    cmd.arg("diff")
        .arg(legacy_name(name))
        .arg(name)
        .arg("--allow")
        .arg(rules_file())
        .args(["--format", format, "--walk", walk])
        .args(["--max-nodes", &max_nodes.to_string()]);
    if let Some(under) = under {
        cmd.args(["--under", under]);
    }
    let start = Instant::now();
    let (status, stdout) = session
        .run(log, cmd, DIFF_TIMEOUT)
        .expect("diff runs to completion");
    DiffRun {
        status: status.code(),
        stdout,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// A fixture on disk: a committed file, or a large generated one written
/// into the session directory.
fn fixture_file(session: &TestSession, name: &str) -> PathBuf {
    if name.ends_with(".jsonl") {
        return fixture(name);
    }
    let generator = newton_fixtures::large_generators()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, generate)| generate)
        .expect("a large generator of that name");
    let path = session.dir().join(format!("{name}.jsonl"));
    newton_fixtures::write_jsonl(&path, &generator()).expect("write the generated fixture");
    path
}

/// Which `diff` runs follow each commit.
#[derive(Clone, Copy)]
struct Plan<'a> {
    /// Commits after which `diff --walk calls` (every property) runs; None: all.
    full_after: Option<&'a [u64]>,
    /// Whether `diff --walk cache` runs after every commit.
    cache_every_commit: bool,
    /// `(commit, index path)`: full walks of one subtree (`diff --under`),
    /// for trees too large to walk whole.
    subtrees_after: &'a [(u64, &'a str)],
}

/// Steps the legacy reference and the bridge through `path` together and
/// runs `diff` after each commit as `plan` says; returns the failures, and
/// prints one line per diff.
fn compare_commits(
    session: &mut TestSession,
    socket: &Path,
    path: &Path,
    label: &str,
    plan: Plan<'_>,
    max_nodes: usize,
) -> Vec<String> {
    let (name, serials) = name_and_serials(path);
    let started = Instant::now();
    let mut legacy = Legacy::start(
        session,
        &format!("legacy-{label}"),
        path,
        &["--step", "--app-name", &legacy_name(&name)],
    );
    let mut replay = SteppedReplay::connect(socket, path).expect("connect a stepped replay");
    let mut failures = Vec::new();
    let (mut runs, mut seconds) = (0, 0.0);
    for (index, serial) in serials.iter().enumerate() {
        if index == 0 {
            legacy.expect_line("ready");
        } else {
            legacy.command("next");
            legacy.expect_line(&format!("applied {serial}"));
        }
        replay
            .send_through_commit(*serial)
            .expect("bridge applies the commit");
        if index == 0 {
            wait_for(session, &name);
            wait_for(session, &legacy_name(&name));
            println!(
                "{label}: first commit visible on both sides after {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        let full = plan.full_after.is_none_or(|wanted| wanted.contains(serial));
        let subtrees = plan
            .subtrees_after
            .iter()
            .filter(|(after, _)| after == serial)
            .map(|(_, under)| ("calls", Some(*under)));
        let walks = [
            ("calls", None, full),
            ("cache", None, plan.cache_every_commit),
        ]
        .into_iter()
        .filter(|(_, _, wanted)| *wanted)
        .map(|(walk, under, _)| (walk, under))
        .chain(subtrees);
        for (walk, under) in walks {
            let walk_label = match under {
                Some(under) => format!("{walk} --under {under}"),
                None => walk.to_owned(),
            };
            let run = run_diff(
                session,
                &format!(
                    "diff-{label}-{serial}-{}",
                    walk_label.replace([' ', '/'], "_")
                ),
                &name,
                "text",
                walk,
                under,
                max_nodes,
            );
            runs += 1;
            seconds += run.seconds;
            record_rule_use(&run.stdout);
            let summary = run.stdout.lines().last().unwrap_or_default().to_owned();
            println!(
                "{label} commit {serial} (--walk {walk_label}): exit {:?} in {:.1} s: {summary}",
                run.status, run.seconds
            );
            if run.status != Some(0) || run.objects_compared() < 2 {
                failures.push(format!(
                    "{label} after commit {serial} (--walk {walk_label}): diff exited {:?}:\n{}",
                    run.status, run.stdout
                ));
            }
        }
    }
    legacy.command("next");
    legacy.expect_line("end");
    println!(
        "{label}: {} commit(s), {runs} diff run(s) in {seconds:.1} s",
        serials.len()
    );
    failures
}

fn wait_for(session: &TestSession, name: &str) {
    let client = session.a11y_client().expect("a11y client");
    wait_until(
        &format!("application {name:?} on the desktop"),
        session.ready_timeout(),
        || Ok(find_app(&client, name).is_some()),
    )
    .expect("application on the desktop");
}

#[test]
fn every_commit_of_the_recorded_and_small_fixtures_differs_only_as_allowed() {
    let _serial = one_at_a_time();
    let mut session = session();
    let bridge = Bridge::start(&mut session).expect("bridge");
    let start = Instant::now();
    let mut failures = Vec::new();
    for relative in SMALL {
        let path = fixture(relative);
        let label = relative
            .rsplit('/')
            .next()
            .unwrap_or(relative)
            .trim_end_matches(".jsonl");
        failures.extend(compare_commits(
            &mut session,
            &bridge.socket,
            &path,
            label,
            Plan {
                full_after: None,
                cache_every_commit: false,
                subtrees_after: &[],
            },
            20_000,
        ));
    }
    println!(
        "recorded and small fixtures: {:.0} s",
        start.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let unused = finish_fixture_test(FIXTURE_TESTS[0]);
    assert!(
        unused.is_empty(),
        "rules of docs/compat-rules.json that excused nothing over all fixtures (remove or \
         narrow them): {unused:?}"
    );
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

/// The large generated fixtures, stepped through every commit on both
/// sides: `diff --walk cache` (structure, roles, names, descriptions,
/// states, interfaces; one call per application) after every commit, and
/// the full walk (every property; a debug build costs ~5–10 ms per object
/// pair) after some only — `list-10k` after the scroll to the end (stale
/// bounds) and the last commit; `grid-10k` after its last; `doc-100k` never.
/// The choice and its cost are in docs/compat.md.
#[test]
fn the_large_generated_fixtures_differ_only_as_allowed() {
    let _serial = one_at_a_time();
    let mut session = session();
    let bridge = Bridge::start(&mut session).expect("bridge");
    let mut failures = Vec::new();
    // doc-100k: whole sections (heading, paragraphs, links, list: 12 objects
    // each), text and all: the first two once the focus is on "link 0.0";
    // at the end (section 1 removed, scrolled half way, focus on "link
    // 2000.1") the focused one and the appended last one.
    let doc_sections: &[(u64, &str)] = &[
        (2, "/0/0/0"),
        (2, "/0/0/1"),
        (5, "/0/0/1999"),
        (5, "/0/0/3999"),
    ];
    for (name, compare_after, subtrees_after) in [
        ("list-10k", [4u64, 7].as_slice(), [].as_slice()),
        ("grid-10k", [6].as_slice(), [].as_slice()),
        ("doc-100k", [].as_slice(), doc_sections),
    ] {
        let start = Instant::now();
        let path = fixture_file(&session, name);
        failures.extend(compare_commits(
            &mut session,
            &bridge.socket,
            &path,
            name,
            Plan {
                full_after: Some(compare_after),
                cache_every_commit: true,
                subtrees_after,
            },
            250_000,
        ));
        println!("{name}: {:.0} s in all", start.elapsed().as_secs_f64());
        let _ = std::fs::remove_file(&path);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let unused = finish_fixture_test(FIXTURE_TESTS[1]);
    assert!(
        unused.is_empty(),
        "rules of docs/compat-rules.json that excused nothing over all fixtures (remove or \
         narrow them): {unused:?}"
    );
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

/// The JUnit report of a passing comparison: every object a passed case,
/// allowed differences noted with their rule; and a real difference fails
/// diff with a failure naming the property.
#[test]
fn diff_junit_marks_allowed_differences_and_fails_on_others() {
    let _serial = one_at_a_time();
    let mut session = session();
    let bridge = Bridge::start(&mut session).expect("bridge");
    let path = fixture("egui/egui-form-focus.jsonl");
    let (name, _) = name_and_serials(&path);
    let mut legacy = Legacy::start(
        &session,
        "legacy-junit",
        &path,
        &["--app-name", &legacy_name(&name)],
    );
    legacy.expect_line("idle");
    let replay = bridge
        .replay_and_stay(&mut session, "replay-junit", &path, &name)
        .expect("replay into the bridge");
    let run = run_diff(
        &mut session,
        "diff-junit",
        &name,
        "junit",
        "calls",
        None,
        20_000,
    );
    assert_eq!(run.status, Some(0), "{}", run.stdout);
    assert!(run.stdout.contains("failures=\"0\""), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("allowed (structural-panels): children: compared as"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("allowed (collection): interfaces: only in B: org.a11y.atspi.Collection"),
        "{}",
        run.stdout
    );

    // Another application under the legacy name: a different tree, which
    // no rule allows.
    session.stop(replay.pid, Duration::from_secs(5));
    drop(legacy);
    let other = fixture("generated-small/basic.jsonl");
    let mut legacy = Legacy::start(
        &session,
        "legacy-other",
        &other,
        &["--app-name", &legacy_name(&name)],
    );
    legacy.expect_line("idle");
    let replay = bridge
        .replay_and_stay(&mut session, "replay-junit-2", &path, &name)
        .expect("replay into the bridge");
    let run = run_diff(
        &mut session,
        "diff-junit-other",
        &name,
        "junit",
        "calls",
        None,
        20_000,
    );
    assert_eq!(run.status, Some(1), "{}", run.stdout);
    assert!(
        run.stdout.contains("<failure type=\"name\""),
        "{}",
        run.stdout
    );
    session.stop(replay.pid, Duration::from_secs(5));
    drop(legacy);
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

/// Median latency of the same queries on both paths, interleaved call by
/// call on one client; printed (never asserted) and written to
/// `target/tmp/parity-latency.txt` for scripts/test.sh to show.
#[test]
fn latency_of_the_same_queries_on_both_paths_is_reported() {
    let _serial = one_at_a_time();
    let mut session = session();
    let bridge = Bridge::start(&mut session).expect("bridge");
    let client = session.a11y_client().expect("a11y client");
    let mut table = String::from(
        "Median latency, µs (same client, calls interleaved legacy/bridged, 200 rounds; reported, not asserted)\n\n\
         | Fixture | Query | legacy (accesskit_unix) | bridged | bridged / legacy |\n|---|---|---|---|---|\n",
    );
    for (index, name) in ["generated-small/basic.jsonl", "list-10k"]
        .iter()
        .enumerate()
    {
        let path = fixture_file(&session, name);
        let (app, _) = name_and_serials(&path);
        let mut legacy = Legacy::start(
            &session,
            &format!("legacy-latency-{index}"),
            &path,
            &["--app-name", &legacy_name(&app)],
        );
        legacy.expect_line("idle");
        let replay = bridge
            .replay_and_stay(
                &mut session,
                &format!("replay-latency-{index}"),
                &path,
                &app,
            )
            .expect("replay into the bridge");
        let label = name
            .rsplit('/')
            .next()
            .unwrap_or(name)
            .trim_end_matches(".jsonl");
        wait_for(&session, &legacy_name(&app));
        for row in latencies(&client, &legacy_name(&app), &app) {
            let _ = writeln!(
                table,
                "| {label} | {} | {:.0} | {:.0} | {:.2} |",
                row.0,
                row.1,
                row.2,
                row.2 / row.1
            );
        }
        session.stop(replay.pid, Duration::from_secs(5));
        drop(legacy);
    }
    println!("{table}");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("parity-latency.txt");
    let _ = std::fs::write(&out, &table);
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

/// A query: a label and the call, given (bus, window path, first leaf path).
type Query = (&'static str, fn(&BusClient, &str, &str, &str) -> bool);

fn queries() -> Vec<Query> {
    vec![
        (
            "Get(Accessible, Name) on the window",
            |c, bus, window, _| c.get(&accessible::NAME, bus, window).is_ok(),
        ),
        ("GetRole on the window", |c, bus, window, _| {
            c.call(&accessible::GET_ROLE, bus, window, &()).is_ok()
        }),
        ("GetState on the window", |c, bus, window, _| {
            c.call(&accessible::GET_STATE, bus, window, &()).is_ok()
        }),
        ("GetChildAtIndex(0) on the window", |c, bus, window, _| {
            c.call(&accessible::GET_CHILD_AT_INDEX, bus, window, &(0,))
                .is_ok()
        }),
        (
            "GetChildren on the window's first child",
            |c, bus, _, leaf_parent| {
                c.call(&accessible::GET_CHILDREN, bus, leaf_parent, &())
                    .is_ok()
            },
        ),
        (
            "GetRelationSet on the window's first child",
            |c, bus, _, first| {
                c.call(&accessible::GET_RELATION_SET, bus, first, &())
                    .is_ok()
            },
        ),
        ("Component.GetExtents on the window", |c, bus, window, _| {
            c.call(&component::GET_EXTENTS, bus, window, &(0,)).is_ok()
        }),
    ]
}

/// (query, legacy median µs, bridged median µs) for each query.
fn latencies(client: &BusClient, legacy: &str, bridged: &str) -> Vec<(&'static str, f64, f64)> {
    let target = |app: &str| -> Option<(String, String, String)> {
        let bus = find_app(client, app)?;
        let child = |path: &str| -> Option<String> {
            client
                .call(&accessible::GET_CHILD_AT_INDEX, &bus, path, &(0,))
                .ok()
                .map(|(_, p)| p.to_string())
        };
        let window = child(ROOT)?;
        let first = child(&window)?;
        Some((bus, window, first))
    };
    let (Some(l), Some(b)) = (target(legacy), target(bridged)) else {
        println!("latency: an application is missing; nothing measured");
        return Vec::new();
    };
    let mut rows = Vec::new();
    for (label, query) in queries() {
        let (mut legacy_times, mut bridged_times) = (Vec::new(), Vec::new());
        for round in 0..200 {
            // Alternate which side goes first.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for side in order {
                let (t, times) = if side == 0 {
                    (&l, &mut legacy_times)
                } else {
                    (&b, &mut bridged_times)
                };
                let start = Instant::now();
                if query(client, &t.0, &t.1, &t.2) {
                    times.push(start.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
        match (median(&mut legacy_times), median(&mut bridged_times)) {
            (Some(lm), Some(bm)) => rows.push((label, lm, bm)),
            _ => println!("latency: {label} failed on one side; not reported"),
        }
    }
    rows
}

fn median(times: &mut [f64]) -> Option<f64> {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied()
}

/// basic.jsonl with a second surface (a copy of the first tree, titled
/// "Second") that takes the keyboard focus: two adapters in one process on
/// the legacy side, two surfaces of one application on the bridged side.
fn two_surface_recording(dir: &Path) -> std::path::PathBuf {
    use newton_push_protocol::{RecordedLine, SenderMessage, SurfaceId};
    let lines = newton_producer::load_recording(fixture("generated-small/basic.jsonl"))
        .expect("load basic");
    let second = SurfaceId(2);
    let first_update = lines
        .iter()
        .find_map(|l| match &l.message {
            Some(SenderMessage::Update { update, .. }) => Some(update.clone()),
            _ => None,
        })
        .expect("basic has an update");
    let line = |message| RecordedLine {
        at_ms: 0,
        hello: None,
        message: Some(message),
    };
    let mut out = Vec::new();
    for l in lines {
        let first_commit = matches!(l.message, Some(SenderMessage::Commit { serial: 1, .. }));
        let goodbye = matches!(l.message, Some(SenderMessage::Goodbye));
        if !goodbye {
            out.push(l);
        }
        if first_commit {
            out.push(line(SenderMessage::CreateSurface {
                surface: second,
                title: Some("Second".into()),
            }));
            out.push(line(SenderMessage::Update {
                surface: second,
                update: first_update.clone(),
            }));
            out.push(line(SenderMessage::Commit {
                surface: second,
                serial: 100,
            }));
        }
    }
    out.push(line(SenderMessage::Focus {
        surface: Some(second),
    }));
    let path = dir.join("two-surfaces.jsonl");
    newton_producer::write_recording(&path, &out).expect("write the two-surface recording");
    path
}

#[test]
fn two_surfaces_are_two_windows_on_both_sides() {
    let _serial = one_at_a_time();
    let mut session = session();
    let bridge = Bridge::start(&mut session).expect("bridge");
    let client = session.a11y_client().expect("a11y client");
    let path = two_surface_recording(session.dir());
    let (name, _) = name_and_serials(&path);
    let mut legacy = Legacy::start(
        &session,
        "legacy-two",
        &path,
        &["--app-name", &legacy_name(&name)],
    );
    legacy.expect_line("idle");
    let replay = bridge
        .replay_and_stay(&mut session, "replay-two", &path, &name)
        .expect("replay into the bridge");
    wait_for(&session, &legacy_name(&name));
    for app in [legacy_name(&name), name.clone()] {
        let tree: Obj = walk_app(&client, &find_app(&client, &app).unwrap_or_default());
        let active: Vec<bool> = tree
            .children
            .iter()
            .map(|w| w.states.contains("active"))
            .collect();
        // The focus moved to the second surface.
        assert_eq!(active, [false, true], "{app}: {tree:#?}");
    }
    let run = run_diff(
        &mut session,
        "diff-two",
        &name,
        "text",
        "calls",
        None,
        20_000,
    );
    assert_eq!(run.status, Some(0), "{}", run.stdout);
    session.stop(replay.pid, Duration::from_secs(5));
    drop(legacy);
    let report = session.shutdown();
    assert!(report.is_clean(), "{report:?}");
}
