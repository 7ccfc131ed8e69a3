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
//! depends on how many applications and clients it serves.

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
