//! zbus connections driven by the bridge's own executor.
//!
//! By default every zbus connection starts a thread of its own ("zbus::
//! Connection executor") that runs the connection's tasks: the socket
//! reader, the object server, signal-match bookkeeping. The daemon opens one
//! connection per application on the bus and one per peer-to-peer client, so
//! its thread count grew with both, and every incoming call crossed from
//! that thread to the bridge's. Every connection the daemon makes is built
//! with `internal_executor(false)` instead, and [`drive`] runs its tasks as
//! one task on the bridge's executor: the daemon's thread count no longer
//! depends on how many applications and clients it serves. The task
//! answering a connection's calls runs those zbus tasks as well while it
//! waits for a call ([`next_message`]), so the thread that reads a call
//! answers it. [`run`] runs the executor on the daemon's main thread, its
//! only thread, which also waits in async-io's reactor while no task is
//! ready: the thread that sees a call arrive is the one that answers it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_executor::Executor;

/// zbus tasks run back to back before the driver lets other bridge tasks run
/// on its thread: a flooding client must not hold the executor's thread.
const TICKS_BEFORE_YIELD: usize = 32;

/// Runs `conn`'s zbus tasks on `executor` for as long as it has any: the
/// same lifetime as zbus's own executor thread, and no reference to the
/// connection itself, so dropping the connection still closes it.
pub fn drive(conn: &zbus::Connection, executor: &Executor<'static>) {
    let tasks = conn.executor().clone();
    executor
        .spawn(async move {
            let mut ticks = 0;
            while !tasks.is_empty() {
                tasks.tick().await;
                ticks += 1;
                if ticks % TICKS_BEFORE_YIELD == 0 {
                    YieldNow(false).await;
                }
            }
        })
        .detach();
}

/// The next message of `stream`, running `tasks` (its connection's zbus
/// tasks, the socket reader among them) while it waits.
///
/// The task answering a connection's calls thereby reads them itself: the
/// message the socket reader decodes is answered in the same poll, on the
/// same thread, instead of waking the answering task through the executor's
/// queue (measured in docs/benchmarks.md, "One executor"). The connection's
/// [`drive`] task keeps running too, for the connection's other work and
/// while no call is awaited.
pub async fn next_message(
    stream: &mut zbus::MessageStream,
    tasks: &zbus::Executor<'static>,
) -> Option<zbus::Result<zbus::Message>> {
    use futures::StreamExt;
    let mut ticks = 0;
    loop {
        let tick = std::pin::pin!(tasks.tick());
        match futures::future::select(stream.next(), tick).await {
            futures::future::Either::Left((message, _)) => return message,
            futures::future::Either::Right(((), _)) => {
                ticks += 1;
                if ticks % TICKS_BEFORE_YIELD == 0 {
                    YieldNow(false).await;
                }
            }
        }
    }
}

/// How long the executor's thread runs ready tasks back to back before it
/// looks for I/O again.
const IO_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_micros(50);

/// Runs `executor`'s tasks on the calling thread until `until` completes;
/// the thread's `async_io::block_on` drives the reactor whenever no task is
/// ready, so the thread that sees a call arrive answers it.
///
/// Unlike `Executor::run`, which returns to `block_on` (where I/O is
/// polled) only after 200 tasks, this returns whenever it has run tasks for
/// [`IO_POLL_INTERVAL`]: while a sender floods commits, another
/// application's call is noticed within that interval and queued behind the
/// tasks already ready, instead of after 200 of them.
pub async fn run<T>(executor: &Executor<'static>, until: impl Future<Output = T>) -> T {
    let tasks = async {
        loop {
            let started = std::time::Instant::now();
            let mut busy = false;
            while executor.try_tick() {
                if started.elapsed() >= IO_POLL_INTERVAL {
                    busy = true;
                    break;
                }
            }
            if busy {
                // Tasks are still ready: back to `block_on`, which polls the
                // reactor without blocking before polling this future again.
                yield_now().await;
            } else {
                // None is ready: `block_on` waits in the reactor until one is.
                executor.tick().await;
            }
        }
    };
    let until = std::pin::pin!(until);
    let tasks = std::pin::pin!(tasks);
    match futures::future::select(until, tasks).await {
        futures::future::Either::Left((output, _)) => output,
        futures::future::Either::Right((never, _)) => never,
    }
}

/// A session-bus connection driven by `executor`.
pub async fn session(executor: &Executor<'static>) -> zbus::Result<zbus::Connection> {
    let conn = zbus::connection::Builder::session()?
        .internal_executor(false)
        .build()
        .await?;
    drive(&conn, executor);
    Ok(conn)
}

/// Lets the executor run every other task that is ready before this one
/// goes on.
pub fn yield_now() -> impl Future<Output = ()> {
    YieldNow(false)
}

/// Pending once, so the executor runs other tasks before this one again.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
