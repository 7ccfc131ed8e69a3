//! Every valid fixture — recorded from real egui and generated — applies
//! through the validator without a single rejection.

use std::path::{Path, PathBuf};

use newton_cache::{AppReplica, Limits};
use newton_push_protocol::{RecordedLine, SenderMessage};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn apply_all(name: &str, lines: &[RecordedLine]) {
    let mut app = AppReplica::new(Limits::default());
    let mut pending = std::collections::BTreeMap::<u32, Vec<accesskit::TreeUpdate>>::new();
    for line in lines {
        match &line.message {
            Some(SenderMessage::CreateSurface { surface, title }) => {
                app.create_surface(*surface, title.clone())
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            Some(SenderMessage::Update { surface, update }) => {
                pending.entry(surface.0).or_default().push(update.clone());
            }
            Some(SenderMessage::Commit { surface, serial }) => {
                let updates = pending.remove(&surface.0).unwrap_or_default();
                if let Err(e) = app.commit(*surface, updates, 0) {
                    panic!("{name}: commit {serial} rejected: {e}");
                }
            }
            Some(SenderMessage::Focus { surface }) => {
                app.set_focused_surface(*surface)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            _ => {}
        }
    }
    assert!(app.commits_applied() > 0, "{name}: nothing applied");
}

#[test]
fn recorded_egui_streams_are_accepted() {
    let dir = workspace_root().join("fixtures/egui");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures/egui") {
        let path = entry.expect("entry").path();
        if path.to_string_lossy().ends_with(".jsonl") {
            let lines = newton_fixtures::load_jsonl(&path).expect("loads");
            apply_all(&path.display().to_string(), &lines);
            seen += 1;
        }
    }
    assert!(
        seen >= 3,
        "expected the recorded egui fixtures in {}",
        dir.display()
    );
}

#[test]
fn generated_fixtures_are_accepted() {
    for (name, lines) in newton_fixtures::all() {
        apply_all(name, &lines);
    }
}
