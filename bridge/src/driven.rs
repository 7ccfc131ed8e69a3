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
///
/// Fair between connections: a message that was already waiting (the
/// socket reader decodes every message the socket holds at once) is
/// returned only after the executor ran the other ready tasks, as if this
/// task had waited for it ([`after_others`]); a connection with calls
/// queued cannot have them answered back to back while other connections
/// wait. A message that had to be waited for costs nothing more.
pub async fn next_message(
    stream: &mut zbus::MessageStream,
    tasks: &zbus::Executor<'static>,
) -> Option<zbus::Result<zbus::Message>> {
    use futures::StreamExt;
    after_others(async {
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
    })
    .await
}

/// `work`'s output, once the executor has run the other tasks that were
/// ready: if `work` finished in the poll that started it (it never went
/// back to the executor), this task yields once before going on. Work that
/// waited for anything already let the others run, and is not delayed.
pub async fn after_others<F: Future>(work: F) -> F::Output {
    let mut waited = false;
    let mut work = std::pin::pin!(work);
    let output = std::future::poll_fn(|cx| {
        let poll = work.as_mut().poll(cx);
        waited |= poll.is_pending();
        poll
    })
    .await;
    if !waited {
        YieldNow(false).await;
    }
    output
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

/// Test support shared by the bridge's unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    /// Both ends of one peer-to-peer D-Bus connection over a socket pair: the
    /// serving side as the message stream the bridge serves (its executor
    /// driven by the caller, as the daemon drives it), and a client.
    pub(crate) async fn p2p_pair() -> (zbus::MessageStream, zbus::Connection) {
        let (server, client) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        let server = async {
            zbus::connection::Builder::async_io_unix_stream(server)
                .server(zbus::Guid::generate())
                .expect("a server connection builder")
                .p2p()
                .internal_executor(false)
                .build_message_stream()
                .await
                .expect("the serving side connects")
        };
        let client = async {
            zbus::connection::Builder::async_io_unix_stream(client)
                .p2p()
                .build()
                .await
                .expect("the client side connects")
        };
        futures::join!(server, client)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::p2p_pair;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use zbus::message::{Flags, Message};

    use super::*;

    /// Calls queued on one connection (all read from the socket at once)
    /// are taken one at a time, each after the executor ran another ready
    /// task: a busy connection does not starve the others.
    #[test]
    fn other_tasks_run_between_the_queued_messages_of_one_connection() {
        const CALLS: usize = 20;
        let executor = Executor::new();
        let seen = async_io::block_on(run(&executor, async {
            let (mut stream, client) = p2p_pair().await;
            // Every call is in the socket before the serving side reads any.
            for _ in 0..CALLS {
                let call = Message::method_call("/", "Ping")
                    .and_then(|b| b.interface("org.freedesktop.DBus.Peer"))
                    .and_then(|b| b.with_flags(Flags::NoReplyExpected))
                    .and_then(|b| b.build(&()))
                    .expect("the call builds");
                client.send(&call).await.expect("the call is sent");
            }
            let others = Arc::new(AtomicUsize::new(0));
            let _other = executor.spawn({
                let others = others.clone();
                async move {
                    loop {
                        others.fetch_add(1, Ordering::Relaxed);
                        yield_now().await;
                    }
                }
            });
            let tasks = zbus::Connection::from(&stream).executor().clone();
            executor
                .spawn(async move {
                    let mut seen = Vec::with_capacity(CALLS);
                    for _ in 0..CALLS {
                        let message = next_message(&mut stream, &tasks).await;
                        assert!(matches!(message, Some(Ok(_))), "a call arrives");
                        seen.push(others.load(Ordering::Relaxed));
                    }
                    seen
                })
                .await
        }));
        assert!(
            seen.windows(2).all(|pair| pair[1] > pair[0]),
            "the other task did not run between two messages of the connection: {seen:?}"
        );
    }
}
