//! Every fixture — the egui recordings, the small and the large generated
//! streams — replays into a running bridge without a single rejection, in
//! both encodings; and every file of the malformed corpus is rejected by the
//! running bridge with exactly the rule it is meant to break, while the
//! bridge keeps serving.

use std::path::PathBuf;
use std::time::Duration;

use newton_e2e::{fixture, Bridge, SessionOptions, TestSession};
use newton_producer::replay::{replay_lines, ReplayOptions, Timing};
use newton_producer::Sender;
use newton_push_protocol::{Encoding, RecordedLine};

const ACK_TIMEOUT: Duration = Duration::from_secs(120);

fn replay(
    bridge: &Bridge,
    lines: &[RecordedLine],
    encoding: Encoding,
) -> newton_producer::replay::ReplaySummary {
    let options = ReplayOptions {
        timing: Timing::AsFastAsPossible,
        wait_for_acks: Some(ACK_TIMEOUT),
        encoding: Some(encoding),
        skip_goodbye: false,
    };
    replay_lines(
        lines,
        |hello| Sender::connect(&bridge.socket, hello),
        options,
    )
    .expect("replay finishes")
}

fn all_fixtures() -> Vec<(String, Vec<RecordedLine>)> {
    let mut all: Vec<(String, Vec<RecordedLine>)> = newton_fixtures::all()
        .into_iter()
        .map(|(name, lines)| (format!("generated {name}"), lines))
        .collect();
    let egui_dir = fixture("egui");
    let mut recorded: Vec<PathBuf> = std::fs::read_dir(&egui_dir)
        .expect("fixtures/egui")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    recorded.sort();
    for path in recorded {
        let lines = newton_fixtures::load_jsonl(&path).expect("recording loads");
        all.push((path.display().to_string(), lines));
    }
    all
}

#[test]
fn every_fixture_replays_without_rejection_in_both_encodings() {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    for (name, lines) in all_fixtures() {
        for encoding in [Encoding::Json, Encoding::Postcard] {
            let summary = replay(&bridge, &lines, encoding);
            assert!(
                summary.synced,
                "{name} ({encoding:?}): the bridge did not confirm the stream"
            );
            assert!(
                summary.rejections.is_empty(),
                "{name} ({encoding:?}): {} rejections, first: {:?}",
                summary.rejections.len(),
                summary.rejections.first()
            );
            println!(
                "{name} ({encoding:?}): {} commits in {:.0} ms",
                summary.commits,
                summary.elapsed.as_secs_f64() * 1e3
            );
        }
    }
    session
        .ensure_running(bridge.pid())
        .expect("bridge still running");
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}

#[test]
fn every_malformed_file_is_rejected_by_the_running_bridge() {
    let corpus = fixture("malformed");
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("expected.json"))
            .expect("fixtures/malformed/expected.json"),
    )
    .expect("expected.json is JSON");
    let expected = expected
        .as_object()
        .expect("expected.json maps file → rule");
    assert!(expected.len() >= 20, "the corpus covers every hazard class");

    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    for (file, rule) in expected {
        let rule = rule.as_str().expect("rule names are strings");
        let lines = newton_fixtures::load_jsonl(corpus.join(file)).expect("corpus file loads");
        let summary = replay(&bridge, &lines, Encoding::Json);
        let rules: Vec<&str> = summary.rejections.iter().map(|r| r.rule.as_str()).collect();
        assert!(
            rules.contains(&rule),
            "{file}: expected a rejection with rule {rule}, got {rules:?}"
        );
        assert!(
            summary.rejections.iter().all(|r| !r.reason.is_empty()),
            "{file}: every rejection explains itself"
        );
        session
            .ensure_running(bridge.pid())
            .unwrap_or_else(|e| panic!("bridge died on {file}: {e}"));
    }
    // After the whole corpus, a good stream still applies.
    let good =
        newton_fixtures::load_jsonl(fixture("generated-small/basic.jsonl")).expect("basic loads");
    let summary = replay(&bridge, &good, Encoding::Json);
    assert!(
        summary.rejections.is_empty(),
        "a good stream after the corpus: {:?}",
        summary.rejections
    );
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}
