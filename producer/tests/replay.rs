//! Replaying recordings into an in-process bridge.

mod support;

use std::time::Duration;

use newton_producer::{
    replay_file, replay_into, replay_lines, write_recording, ReplayError, ReplayOptions, Sender,
    Timing,
};
use newton_push_protocol::{Encoding, RecordedLine, SenderMessage, SurfaceId};
use support::*;

fn line(at_ms: u64, message: SenderMessage) -> RecordedLine {
    RecordedLine {
        at_ms,
        hello: None,
        message: Some(message),
    }
}

/// Surface 1: a full tree and an update; surface 2: a commit without tree
/// (rejected by the test bridge); then goodbye.
fn recording() -> Vec<RecordedLine> {
    let (one, two) = (SurfaceId(1), SurfaceId(2));
    vec![
        RecordedLine {
            at_ms: 0,
            hello: Some(hello(Encoding::Json)),
            message: None,
        },
        line(
            0,
            SenderMessage::CreateSurface {
                surface: one,
                title: Some("One".into()),
            },
        ),
        line(
            1,
            SenderMessage::Update {
                surface: one,
                update: full_tree("A"),
            },
        ),
        line(
            2,
            SenderMessage::Commit {
                surface: one,
                serial: 10,
            },
        ),
        line(
            10,
            SenderMessage::Update {
                surface: one,
                update: relabel("B"),
            },
        ),
        line(
            11,
            SenderMessage::Commit {
                surface: one,
                serial: 11,
            },
        ),
        line(
            12,
            SenderMessage::CreateSurface {
                surface: two,
                title: None,
            },
        ),
        line(
            13,
            SenderMessage::Update {
                surface: two,
                update: relabel("no tree"),
            },
        ),
        line(
            14,
            SenderMessage::Commit {
                surface: two,
                serial: 12,
            },
        ),
        line(30, SenderMessage::Goodbye),
    ]
}

fn from_pair(
    bridge_slot: &mut Option<TestBridge>,
) -> impl FnOnce(newton_push_protocol::Hello) -> Result<Sender, newton_producer::ConnectError> + '_
{
    move |hello| {
        let (read, write, bridge) = socket_pair();
        *bridge_slot = Some(bridge);
        Sender::from_stream(read, write, hello)
    }
}

#[test]
fn replays_a_file_and_waits_for_every_commit() {
    for encoding in [Encoding::Json, Encoding::Postcard] {
        let path = std::env::temp_dir().join(format!(
            "newton-replay-{}-{encoding:?}.jsonl",
            std::process::id()
        ));
        write_recording(&path, &recording()).unwrap();
        let mut bridge = None;
        let options = ReplayOptions {
            wait_for_acks: Some(PATIENCE),
            encoding: Some(encoding),
            ..Default::default()
        };
        let summary = replay_file(&path, from_pair(&mut bridge), options);
        let _ = std::fs::remove_file(&path);
        let summary = summary.unwrap();
        assert_eq!(
            (summary.messages_sent, summary.commits, summary.synced),
            (9, 3, true)
        );
        let rules: Vec<_> = summary
            .rejections
            .iter()
            .map(|r| (r.serial, r.rule.as_str(), r.resync))
            .collect();
        assert_eq!(rules, vec![(12, "first-update-without-tree", true)]);
        let seen = bridge.unwrap().join();
        assert_eq!(
            seen[0],
            Seen::Hello(hello(encoding).app, encoding),
            "encoding override applied"
        );
        let applied = seen
            .iter()
            .filter(|seen| matches!(seen, Seen::Applied { .. }))
            .count();
        assert_eq!(applied, 2);
        // The sync went before the goodbye, so the bridge processed it.
        assert!(
            matches!(&seen[seen.len() - 2..], [Seen::Sync(_), Seen::Goodbye]),
            "{seen:?}"
        );
    }
}

#[test]
fn recorded_timing_takes_at_least_the_recorded_time() {
    let mut bridge = None;
    let options = ReplayOptions {
        timing: Timing::Recorded,
        wait_for_acks: Some(PATIENCE),
        ..Default::default()
    };
    let summary = replay_lines(&recording(), from_pair(&mut bridge), options).unwrap();
    assert!(
        summary.elapsed >= Duration::from_millis(30),
        "{:?}",
        summary.elapsed
    );
}

#[test]
fn without_goodbye_the_replay_syncs_at_the_end() {
    let mut lines = recording();
    lines.pop();
    let mut bridge = None;
    let options = ReplayOptions {
        wait_for_acks: Some(PATIENCE),
        ..Default::default()
    };
    let summary = replay_lines(&lines, from_pair(&mut bridge), options).unwrap();
    assert!(summary.synced);
    let seen = bridge.unwrap().seen();
    assert!(matches!(seen.last(), Some(Seen::Sync(_))), "{seen:?}");
}

#[test]
fn bad_recording_line_is_reported_with_its_number() {
    let path = std::env::temp_dir().join(format!("newton-replay-bad-{}.jsonl", std::process::id()));
    std::fs::write(&path, "{\"atMs\":0,\"hello\":{\"protocol\":1,\"app\":{\"appId\":\"a\",\"name\":\"A\"}}}\nnot json\n").unwrap();
    let mut bridge = None;
    let error = replay_file(&path, from_pair(&mut bridge), ReplayOptions::default()).unwrap_err();
    let _ = std::fs::remove_file(&path);
    assert!(matches!(error, ReplayError::Recording(_)), "{error}");
    assert!(
        error.to_string().contains(":2: not a recorded line"),
        "{error}"
    );
    assert!(bridge.is_none(), "nothing was sent");
}

#[test]
fn replay_into_a_kept_sender_can_skip_the_goodbye() {
    let (read, write, bridge) = socket_pair();
    let sender = Sender::from_stream(read, write, hello(Encoding::Postcard)).unwrap();
    let options = ReplayOptions {
        wait_for_acks: Some(PATIENCE),
        skip_goodbye: true,
        ..Default::default()
    };
    let summary = replay_into(&sender, &recording(), options).unwrap();
    assert_eq!(
        (summary.messages_sent, summary.commits, summary.synced),
        (8, 3, true)
    );
    assert!(!bridge.seen().contains(&Seen::Goodbye));
    // Still connected: the application stays until the caller says goodbye.
    sender.goodbye().unwrap();
    assert_eq!(bridge.join().last(), Some(&Seen::Goodbye));
}
