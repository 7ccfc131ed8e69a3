//! Memory per node: a counting global allocator measures the bytes a
//! replica keeps live for 1k/10k/100k-node documents (and, for reference, a
//! plain `accesskit_consumer::Tree`). Prints one line per size.
//!
//! `cargo bench -p newton-cache --bench memory`

mod shapes;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use newton_cache::accesskit_consumer::Tree;
use newton_cache::{AppReplica, Limits, SurfaceId};

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator and only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
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

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    for items in [1_000u64, 10_000, 100_000] {
        let before = live();
        let mut app = AppReplica::new(Limits::default());
        app.create_surface(SurfaceId(1), None).expect("surface");
        app.commit(SurfaceId(1), vec![shapes::document(items)], 0)
            .expect("valid");
        let replica_bytes = live() - before;
        let nodes = app.node_count() as isize;
        drop(app);
        let before = live();
        let tree = Tree::new(shapes::document(items), false);
        let plain_bytes = live() - before;
        drop(tree);
        println!(
            "memory/{items}: {nodes} nodes, replica {replica_bytes} B = {} B/node; plain consumer Tree {plain_bytes} B = {} B/node",
            replica_bytes / nodes,
            plain_bytes / nodes
        );
    }
}
