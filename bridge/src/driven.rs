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
//! answers it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_executor::Executor;

/// zbus tasks run back to back before the driver lets other bridge tasks run
/// on its thread: a flooding client must not hold a worker thread.
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
/// queue, which hands it to whichever sleeping worker the executor wakes
/// (measured in docs/benchmarks.md, "One executor"). The connection's
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

/// A session-bus connection driven by `executor`.
pub async fn session(executor: &Executor<'static>) -> zbus::Result<zbus::Connection> {
    let conn = zbus::connection::Builder::session()?
        .internal_executor(false)
        .build()
        .await?;
    drive(&conn, executor);
    Ok(conn)
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
