//! The byte budget against the allocator: a counting global allocator
//! measures the heap bytes a replica keeps live after a commit, and the
//! budget's replica share (`AppReplica::bytes` less the text model's share,
//! `budget::text_model_cost`, which atspi-shim's `tests/budget_accuracy.rs`
//! checks against the text models it builds) must be within 1.25× of it,
//! either way, for a big text run, many small nodes, and recorded fixtures.
//!
//! The allocator's figure is what this test asserts: exact, where RSS moves
//! with the allocator's arenas and page reuse.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use common::*;
use newton_cache::accesskit::{Node, Role, TreeUpdate};
use newton_cache::budget::text_model_cost;
use newton_cache::{AppReplica, Limits};

/// Counts live heap bytes (every thread: tests here run one at a time
/// under the lock below, so no other test allocates meanwhile).
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

// SAFETY: forwards to the system allocator and only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn limits() -> Limits {
    Limits {
        max_nodes: 1_000_000,
        max_children: 200_000,
        max_frame_bytes: usize::MAX,
        max_app_bytes: usize::MAX,
        ..Limits::default()
    }
}

/// Applies `commits` (built inside, so their heap is counted) to a fresh
/// replica; returns (budget figure, live bytes the replica keeps).
fn measure(commits: impl FnOnce() -> Vec<Vec<TreeUpdate>>) -> (usize, usize) {
    let before = live();
    let mut app = AppReplica::new(limits());
    app.create_surface(S, None).expect("surface");
    for updates in commits() {
        app.commit(S, updates, 0).expect("applies");
    }
    let measured = usize::try_from(live() - before).unwrap_or(0);
    let counted = replica_share(&app);
    drop(app);
    (counted, measured)
}

/// `app.bytes()` less the text model's share of every node.
fn replica_share(app: &AppReplica) -> usize {
    let text: usize = app
        .surfaces()
        .filter_map(|s| s.tree())
        .map(|tree| {
            let mut stack = vec![tree.state().root()];
            let mut sum = 0;
            while let Some(node) = stack.pop() {
                sum += text_model_cost(node.data());
                stack.extend(node.children());
            }
            sum
        })
        .sum();
    app.bytes().saturating_sub(text)
}

fn assert_within(what: &str, (counted, measured): (usize, usize)) {
    let ratio = counted as f64 / measured.max(1) as f64;
    eprintln!("{what}: budget {counted} B, allocator {measured} B, ratio {ratio:.3}");
    assert!(
        (1.0 / 1.25..=1.25).contains(&ratio),
        "{what}: the budget counts {counted} bytes for {measured} live bytes (ratio {ratio:.3}); \
         the cost model in cache/src/budget.rs no longer matches the replica"
    );
}

/// A window holding one paragraph with one text run of `len` ASCII bytes,
/// with its per-character lengths (and positions and widths if `coords`).
fn text_run(len: usize, coords: bool) -> TreeUpdate {
    let text: String = "lorem ipsum dolor sit amet "
        .chars()
        .cycle()
        .take(len)
        .collect();
    let mut node = Node::new(Role::TextRun);
    node.set_character_lengths(vec![1u8; len]);
    if coords {
        node.set_character_positions((0..len).map(|i| i as f32 * 7.0).collect::<Vec<_>>());
        node.set_character_widths(vec![7.0f32; len]);
    }
    node.set_value(text);
    full(
        0,
        vec![
            (0, kids(Role::Window, &[1])),
            (1, kids(Role::Paragraph, &[2])),
            (2, node),
        ],
        0,
    )
}

/// 4 MiB: the ratio is the same at 45 MB (`NEWTON_BUDGET_TEXT_MB=45`),
/// only slower.
fn text_len() -> usize {
    std::env::var("NEWTON_BUDGET_TEXT_MB")
        .ok()
        .and_then(|mb| mb.parse::<usize>().ok())
        .map_or(4 << 20, |mb| mb << 20)
}

#[test]
fn a_big_text_run_is_counted_as_the_allocator_sees_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_within(
        "text run",
        measure(|| vec![vec![text_run(text_len(), false)]]),
    );
    assert_within(
        "text run with positions and widths",
        measure(|| vec![vec![text_run(text_len(), true)]]),
    );
}

#[test]
fn many_small_nodes_are_counted_as_the_allocator_sees_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let count = 100_000u64;
    assert_within(
        "100k labels",
        measure(|| {
            let ids: Vec<u64> = (1..=count).collect();
            let mut nodes = vec![(0, kids(Role::Window, &ids))];
            nodes.extend(ids.iter().map(|id| {
                let mut node = labelled(Role::Button, &format!("Item {id}"));
                node.set_bounds(newton_cache::accesskit::Rect::new(0.0, 0.0, 10.0, 10.0));
                (*id, node)
            }));
            vec![vec![full(0, nodes, 0)]]
        }),
    );
}

#[test]
fn recorded_fixtures_are_counted_as_the_allocator_sees_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in [
        "fixtures/egui/egui-widgets.jsonl",
        "fixtures/egui/egui-demo-tour.jsonl",
        "fixtures/generated-small/doc-small.jsonl",
        "fixtures/generated-small/grid-small.jsonl",
    ] {
        let lines = newton_fixtures::load_jsonl(root.join(name)).expect("fixture loads");
        assert_within(name, measure_stream(&lines));
    }
}

/// Replays a recorded stream's first surface.
fn measure_stream(lines: &[newton_push_protocol::RecordedLine]) -> (usize, usize) {
    use newton_push_protocol::SenderMessage;
    let before = live();
    let mut app = AppReplica::new(limits());
    let mut pending = std::collections::BTreeMap::<u32, Vec<TreeUpdate>>::new();
    for line in lines {
        match &line.message {
            Some(SenderMessage::CreateSurface { surface, title }) => {
                app.create_surface(*surface, title.clone())
                    .expect("surface");
            }
            Some(SenderMessage::Update { surface, update }) => {
                pending.entry(surface.0).or_default().push(update.clone());
            }
            Some(SenderMessage::Commit { surface, .. }) => {
                let updates = pending.remove(&surface.0).unwrap_or_default();
                app.commit(*surface, updates, 0).expect("applies");
            }
            _ => {}
        }
    }
    drop(pending);
    let measured = usize::try_from(live() - before).unwrap_or(0);
    let counted = replica_share(&app);
    drop(app);
    (counted, measured)
}
