//! Writes the malformed corpus: `fixtures/malformed/<hazard>.jsonl`, one
//! file per hazard of docs/hazards.md, plus
//! `expected.json` (file → rule name). Each stream: hello, createSurface 1,
//! a valid first commit (serial 1), the malformed step, then a valid rename
//! commit that must still apply.
//!
//! Run: `cargo run -p newton-cache --example gen-malformed`

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::*;
use newton_cache::accesskit::{Node, NodeId, Role, TreeId, TreeUpdate, Uuid};
use newton_push_protocol::{RecordedLine, SenderMessage, SurfaceId};

const HELLO: &str = r#"{"atMs":0,"hello":{"protocol":1,"encoding":"json","app":{"appId":"malformed.test","name":"Malformed"}}}"#;

/// The malformed step of one stream.
enum Bad {
    /// One commit with these updates on `surface`.
    Commit(SurfaceId, Vec<TreeUpdate>),
    /// Raw sender messages.
    Messages(Vec<SenderMessage>),
}

fn with<F: FnOnce(&mut Node)>(id: u64, f: F) -> (u64, Node) {
    let mut node = base_node(id);
    f(&mut node);
    (id, node)
}

fn same(id: u64) -> (u64, Node) {
    (id, base_node(id))
}

fn subtree_id() -> TreeId {
    TreeId(Uuid::from_u128(0x5eed))
}

fn on_surface_2(update: TreeUpdate) -> Bad {
    Bad::Messages(vec![
        SenderMessage::CreateSurface {
            surface: SurfaceId(2),
            title: None,
        },
        SenderMessage::Update {
            surface: SurfaceId(2),
            update,
        },
        SenderMessage::Commit {
            surface: SurfaceId(2),
            serial: 1,
        },
    ])
}

fn one(update: TreeUpdate) -> Bad {
    Bad::Commit(S, vec![update])
}

fn cases() -> Vec<(&'static str, &'static str, Bad)> {
    let graft = |id: u64, tree: TreeId| with(id, |n| n.set_tree_id(tree));
    let mut deep = vec![with(3, |n| n.push_child(NodeId(1000)))];
    for i in 1000..1300u64 {
        deep.push((i, kids(Role::Group, &[i + 1])));
    }
    deep.push((1300, n(Role::Group)));
    let mut subtree_update = inc(vec![(0, n(Role::Window))], 0);
    subtree_update.tree_id = subtree_id();
    let mut subtree_full = full(0, vec![(0, n(Role::Window))], 0);
    subtree_full.tree_id = subtree_id();
    let no_value = {
        let mut node = n(Role::TextRun);
        node.set_character_lengths(vec![1]);
        node
    };
    vec![
        (
            "S1-first-update-without-tree",
            "missing-tree-info",
            on_surface_2(inc(vec![(0, n(Role::Window))], 0)),
        ),
        (
            "S2-first-update-subtree-id",
            "subtree-unsupported",
            on_surface_2(subtree_full.clone()),
        ),
        (
            "S3-root-absent",
            "missing-root",
            on_surface_2(full(7, vec![(0, n(Role::Window))], 0)),
        ),
        (
            "S4-focus-on-removed-node",
            "focus-not-in-tree",
            one(inc(vec![with(3, |n| n.set_children(vec![NodeId(5)]))], 4)),
        ),
        (
            "S5-dangling-child",
            "dangling-child",
            one(inc(vec![with(0, |n| n.push_child(NodeId(99)))], 1)),
        ),
        (
            "S6-orphan-new-node",
            "orphan-node",
            one(inc(vec![(50, n(Role::Button))], 1)),
        ),
        (
            "S7-duplicate-child",
            "duplicate-child",
            one(inc(vec![same(0), with(3, |n| n.push_child(NodeId(1)))], 1)),
        ),
        (
            "S8-unknown-subtree-update",
            "subtree-unsupported",
            one(subtree_update),
        ),
        (
            "S9-subtree-without-graft",
            "subtree-unsupported",
            one(subtree_full),
        ),
        (
            "S10-graft-with-children",
            "subtree-unsupported",
            one(inc(vec![graft(3, subtree_id())], 1)),
        ),
        (
            "S11-graft-of-root-tree",
            "subtree-unsupported",
            one(inc(vec![graft(1, TreeId::ROOT)], 1)),
        ),
        (
            "S12-two-grafts-one-subtree",
            "subtree-unsupported",
            one(inc(vec![graft(1, subtree_id()), graft(4, subtree_id())], 1)),
        ),
        (
            "S13-focus-on-graft",
            "subtree-unsupported",
            one(inc(vec![graft(1, subtree_id())], 1)),
        ),
        (
            "S14-reparent-without-removal",
            "reparent-without-removal",
            one(inc(vec![with(3, |n| n.push_child(NodeId(1)))], 1)),
        ),
        (
            "S15-resent-after-parent-dropped-it",
            "orphan-node",
            one(inc(
                vec![
                    with(3, |n| n.set_children(vec![NodeId(5)])),
                    same(4),
                    with(5, |n| n.clear_labelled_by()),
                ],
                1,
            )),
        ),
        (
            "C1-root-lists-itself",
            "cycle",
            one(inc(vec![with(0, |n| n.push_child(NodeId(0)))], 1)),
        ),
        (
            "C2-child-lists-root",
            "cycle",
            one(inc(vec![with(1, |n| n.push_child(NodeId(0)))], 1)),
        ),
        (
            "C3-next-on-line-cycle",
            "bad-line-link",
            one(inc(vec![with(11, |n| n.set_next_on_line(NodeId(10)))], 1)),
        ),
        ("C4-deep-chain", "too-deep", one(inc(deep, 1))),
        (
            "R1-dangling-labelled-by",
            "dangling-relation",
            one(inc(
                vec![with(5, |n| n.set_labelled_by(vec![NodeId(99)]))],
                1,
            )),
        ),
        (
            "R2-dangling-controls",
            "dangling-relation",
            one(inc(vec![with(5, |n| n.set_controls(vec![NodeId(99)]))], 1)),
        ),
        (
            "R3-text-run-without-value",
            "bad-text-run",
            one(inc(vec![(11, no_value)], 1)),
        ),
        (
            "R4-lengths-exceed-value",
            "bad-text-run",
            one(inc(
                vec![with(11, |n| n.set_character_lengths(vec![1, 1]))],
                1,
            )),
        ),
        (
            "R5-lengths-split-character",
            "bad-text-run",
            one(inc(
                vec![with(10, |n| n.set_character_lengths(vec![1, 1, 1]))],
                1,
            )),
        ),
        (
            "R6-empty-lengths",
            "bad-text-run",
            one(inc(
                vec![with(10, |n| n.set_character_lengths(Vec::<u8>::new()))],
                1,
            )),
        ),
        (
            "R7-next-on-line-missing",
            "bad-line-link",
            one(inc(vec![with(10, |n| n.set_next_on_line(NodeId(99)))], 1)),
        ),
        (
            "R8-selection-not-a-run",
            "bad-text-selection",
            one(inc(
                vec![with(2, |n| n.set_text_selection(selection((1, 0), (1, 0))))],
                1,
            )),
        ),
        (
            "R9-selection-outside-subtree",
            "bad-text-selection",
            one(inc(
                vec![with(5, |n| {
                    n.set_text_selection(selection((10, 0), (10, 1)))
                })],
                1,
            )),
        ),
        (
            "V4-duplicate-node-entry",
            "duplicate-node",
            one(inc(vec![same(1), same(1)], 1)),
        ),
        (
            "V7-detached-loop",
            "cycle",
            one(inc(
                vec![
                    with(0, |n| n.set_children(vec![NodeId(1), NodeId(2)])),
                    with(3, |n| n.push_child(NodeId(6))),
                    (6, kids(Role::Group, &[3])),
                ],
                1,
            )),
        ),
        (
            "V11-removed-node-still-labels",
            "dangling-relation",
            one(inc(vec![with(3, |n| n.set_children(vec![NodeId(5)]))], 1)),
        ),
        (
            "V14-run-moved-out-of-selection",
            "bad-text-selection",
            one(inc(
                vec![
                    with(2, |n| n.set_children(vec![NodeId(11)])),
                    with(3, |n| n.push_child(NodeId(10))),
                    with(11, |n| n.clear_previous_on_line()),
                ],
                1,
            )),
        ),
        (
            "all-or-nothing-second-update-bad",
            "dangling-child",
            Bad::Commit(
                S,
                vec![
                    inc(vec![(1, labelled(Role::Button, "Half"))], 1),
                    inc(vec![with(0, |n| n.push_child(NodeId(99)))], 1),
                ],
            ),
        ),
        (
            "duplicate-surface",
            "duplicate-surface",
            Bad::Messages(vec![SenderMessage::CreateSurface {
                surface: S,
                title: None,
            }]),
        ),
        (
            "unknown-surface",
            "unknown-surface",
            Bad::Messages(vec![
                SenderMessage::Update {
                    surface: SurfaceId(9),
                    update: inc(vec![same(1)], 1),
                },
                SenderMessage::Commit {
                    surface: SurfaceId(9),
                    serial: 1,
                },
            ]),
        ),
    ]
}

fn line(message: SenderMessage) -> String {
    serde_json::to_string(&RecordedLine {
        at_ms: 0,
        hello: None,
        message: Some(message),
    })
    .expect("serializable")
}

fn commit_lines(surface: SurfaceId, updates: Vec<TreeUpdate>, serial: u64) -> Vec<String> {
    let mut out: Vec<String> = updates
        .into_iter()
        .map(|update| line(SenderMessage::Update { surface, update }))
        .collect();
    out.push(line(SenderMessage::Commit { surface, serial }));
    out
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/malformed");
    std::fs::create_dir_all(&dir).expect("create fixtures/malformed");
    let mut expected = BTreeMap::new();
    for (name, rule, bad) in cases() {
        let mut lines = vec![
            HELLO.to_string(),
            line(SenderMessage::CreateSurface {
                surface: S,
                title: None,
            }),
        ];
        lines.extend(commit_lines(S, vec![base_tree()], 1));
        match bad {
            Bad::Commit(surface, updates) => lines.extend(commit_lines(surface, updates, 2)),
            Bad::Messages(messages) => lines.extend(messages.into_iter().map(line)),
        }
        lines.extend(commit_lines(
            S,
            vec![inc(vec![(1, labelled(Role::Button, "Still works"))], 1)],
            3,
        ));
        let file = format!("{name}.jsonl");
        std::fs::write(dir.join(&file), lines.join("\n") + "\n").expect("write corpus file");
        expected.insert(file, rule);
    }
    let json = serde_json::to_string_pretty(&expected).expect("serializable");
    std::fs::write(dir.join("expected.json"), json + "\n").expect("write expected.json");
    println!("wrote {} files to {}", expected.len(), dir.display());
}
