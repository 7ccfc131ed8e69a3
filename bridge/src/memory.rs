//! Giving memory back after applications leave.
//!
//! glibc's malloc keeps freed memory in its arenas (one per thread that
//! allocated, up to 8 × cores) and returns it to the kernel only from the
//! top of each heap. A replica is many small allocations made on the
//! executor and blocking threads; after it is dropped, most of its pages
//! stay resident. Measured (docs/benchmarks.md, "Memory after applications
//! leave"): without trimming, the RSS after rounds of 100 applications ×
//! 5,000 nodes stayed many times the starting RSS.
//!
//! So once applications have left and the bridge has been quiet for
//! [`TRIM_DELAY`], it calls `malloc_trim(0)`, which releases the free pages
//! of every arena. At most one trim is pending at a time; a burst of
//! departures costs one trim. `NEWTON_ATSPI_NO_MALLOC_TRIM=1` turns it off
//! (the benchmark compares both).
//!
//! The trim cannot give back the pages that still hold a few live chunks
//! in each arena, and every thread that ever allocated (executor, blocking
//! pool, zbus) gets an arena of its own. So at start the bridge holds glibc
//! to [`MAX_ARENAS`] arenas, unless the user set `MALLOC_ARENA_MAX`
//! (glibc's own variable for the same parameter, which then wins). With 10
//! rounds of 100 applications, idle RSS ended at 1.82× its start with two
//! arenas and 2.13–2.43× with glibc's default of up to 8 × cores in one
//! series; with this built-in limit, 1.84× and 1.93× in two later runs, and
//! 1.78–1.81× with `MALLOC_ARENA_MAX=16` beside it, so single runs move by a
//! few MB either way (docs/benchmarks.md, "Memory after applications leave").

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Quiet time after the last departure before trimming.
pub const TRIM_DELAY: Duration = Duration::from_secs(1);

static PENDING: AtomicBool = AtomicBool::new(false);

/// Whether trimming is on (`NEWTON_ATSPI_NO_MALLOC_TRIM` is not `1`).
fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED
        .get_or_init(|| std::env::var_os("NEWTON_ATSPI_NO_MALLOC_TRIM").is_none_or(|v| v != "1"))
}

/// An application left: trims the heap after [`TRIM_DELAY`], unless a trim
/// is already pending.
pub fn trim_soon(executor: &async_executor::Executor<'static>) {
    if !enabled() || PENDING.swap(true, Ordering::AcqRel) {
        return;
    }
    executor
        .spawn(async {
            async_io::Timer::after(TRIM_DELAY).await;
            PENDING.store(false, Ordering::Release);
            let released = blocking::unblock(crate::unsafe_os::malloc_trim).await;
            tracing::debug!(
                released,
                "returned freed heap memory to the system (malloc_trim)"
            );
        })
        .detach();
}

/// Arenas glibc may create: the answering threads share them (live data is
/// about 1 MB between applications, so contention is not the cost; retained
/// pages are).
pub const MAX_ARENAS: i32 = 2;

/// Holds glibc to [`MAX_ARENAS`] unless `MALLOC_ARENA_MAX` is set. Call
/// before any thread is spawned: arenas already created stay.
pub fn limit_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    if !crate::unsafe_os::set_arena_max(MAX_ARENAS) {
        tracing::debug!("the C library refused M_ARENA_MAX; its default applies");
    }
}
