//! Replays every file of `fixtures/malformed` through an `AppReplica` and
//! checks: exactly one step is rejected, with the rule `expected.json`
//! names; nothing panics; that step leaves the replica as it was; and the
//! following good commit applies. Regenerate the corpus with
//! `cargo run -p newton-cache --example gen-malformed`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use newton_cache::accesskit::TreeUpdate;
use newton_cache::{AppReplica, Limits, RejectError, SurfaceId};
use newton_push_protocol::{RecordedLine, SenderMessage};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/malformed")
}

/// Outcome of one sender message.
struct Step {
    line: usize,
    result: Result<(), RejectError>,
    before: String,
    after: String,
}

fn replay(text: &str) -> Vec<Step> {
    let mut app = AppReplica::new(Limits::default());
    let mut pending: BTreeMap<SurfaceId, Vec<TreeUpdate>> = BTreeMap::new();
    let mut steps = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line: RecordedLine =
            serde_json::from_str(raw).unwrap_or_else(|e| panic!("line {}: {e}", index + 1));
        let Some(message) = line.message else {
            continue;
        };
        let before = app.dump();
        let result = match message {
            SenderMessage::CreateSurface { surface, title } => app.create_surface(surface, title),
            SenderMessage::Update { surface, update } => {
                pending.entry(surface).or_default().push(update);
                continue;
            }
            SenderMessage::Commit { surface, .. } => {
                let updates = pending.remove(&surface).unwrap_or_default();
                let bytes = serde_json::to_vec(&updates).map(|v| v.len()).unwrap_or(0);
                app.commit(surface, updates, bytes).map(|_| ())
            }
            SenderMessage::DestroySurface { surface } => app.destroy_surface(surface).map(|_| ()),
            SenderMessage::Focus { surface } => app.set_focused_surface(surface).map(|_| ()),
            SenderMessage::Geometry { surface, geometry } => app.set_geometry(surface, geometry),
            SenderMessage::Goodbye => {
                app.clear();
                Ok(())
            }
            // Session-level messages (e.g. sync) do not touch the replica.
            _ => continue,
        };
        steps.push(Step {
            line: index + 1,
            result,
            before,
            after: app.dump(),
        });
    }
    steps
}

#[test]
fn every_malformed_file_is_rejected_with_its_rule() {
    let dir = corpus_dir();
    let expected: BTreeMap<String, String> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json"),
    )
    .expect("valid json");
    assert!(expected.len() >= 30, "corpus too small: {}", expected.len());
    let mut on_disk = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".jsonl") {
            on_disk += 1;
            assert!(expected.contains_key(&name), "{name} has no expected rule");
        }
    }
    assert_eq!(on_disk, expected.len());
    for (file, rule) in &expected {
        let text = std::fs::read_to_string(dir.join(file)).expect("corpus file");
        let steps = replay(&text);
        let failures: Vec<&Step> = steps.iter().filter(|s| s.result.is_err()).collect();
        assert_eq!(failures.len(), 1, "{file}: expected exactly one rejection");
        let bad = failures[0];
        let error = bad.result.as_ref().unwrap_err();
        assert_eq!(
            error.rule.as_str(),
            rule,
            "{file} line {}: {error}",
            bad.line
        );
        assert_eq!(
            bad.before, bad.after,
            "{file}: the rejected step changed the replica"
        );
        let last = steps.last().expect("steps");
        assert!(
            last.result.is_ok() && last.line > bad.line,
            "{file}: the good commit after the bad one must apply"
        );
        assert_ne!(
            last.before, last.after,
            "{file}: the good commit changed nothing"
        );
    }
}
