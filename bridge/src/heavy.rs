//! Fair AT service: the calls whose cost grows with the tree, the methods
//! declared `heavy` in the shim (`Cache.GetItems`, `Collection.GetMatches`,
//! `GetMatchesFrom`, `GetMatchesTo`), are answered on one dedicated thread,
//! in the order they arrive, never on the executor's thread that answers
//! every other call and applies every commit. Which calls those are is
//! decided by the declaration, whatever the header says: D-Bus lets a
//! caller leave out the interface field, and dispatch then routes by member
//! name, so a check of (interface, member) alone let such calls run on the
//! executor.
//!
//! Why: one such call on a 200,000-node tree takes tens of milliseconds
//! (hundreds in a debug build). Answered on the executor, a few clients
//! looping it occupied every executor thread, and every other application's
//! answers waited behind them. Here they wait only for each other.
//!
//! Fairness between clients: each connection has at most one heavy call
//! queued or running (the next waits in that connection's serving task, see
//! `app.rs`), and the queue is first-in first-out, so with N clients looping
//! heavy calls each gets one call in N, and a new client's first call waits
//! for at most one call of every other client.

use std::sync::OnceLock;

use zbus::message::Message;

type Job = Box<dyn FnOnce() + Send>;

/// Whether `call` is answered on the heavy-call thread: whether the method
/// it names is declared `heavy` in the shim (`declare_interface!`), found as
/// dispatch finds it, with or without an interface field. The declaration
/// is the only list of heavy members; a call that leaves out its interface
/// field is as heavy as one that names it.
pub fn is_heavy(call: &Message) -> bool {
    newton_atspi_shim::dispatch::declared_method(&call.header())
        .is_some_and(|declared| declared.method.heavy)
}

/// Runs `work` on the heavy-call thread after every job queued before it.
/// `None` only if that thread could not be started (then nothing heavy is
/// answered, and the first failure is logged).
pub async fn run<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (done_tx, done_rx) = async_channel::bounded(1);
    let job: Job = Box::new(move || {
        let _ = done_tx.try_send(work());
    });
    queue()?.send(job).await.ok()?;
    done_rx.recv().await.ok()
}

fn queue() -> Option<&'static async_channel::Sender<Job>> {
    static QUEUE: OnceLock<Option<async_channel::Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = async_channel::unbounded::<Job>();
            let started = std::thread::Builder::new()
                .name("bridge-heavy-calls".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv_blocking() {
                        job();
                    }
                });
            match started {
                Ok(_) => Some(tx),
                Err(e) => {
                    tracing::error!("cannot start the heavy-call thread ({e}); Cache.GetItems and Collection calls will not be answered");
                    None
                }
            }
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_arrival_order_off_the_caller() {
        let caller = std::thread::current().id();
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let futures: Vec<_> = (0..20)
            .map(|i| {
                let order = order.clone();
                run(move || {
                    order.lock().expect("lock").push(i);
                    std::thread::current().id()
                })
            })
            .collect();
        let threads = async_io::block_on(futures::future::join_all(futures));
        assert!(threads.iter().all(|t| t.is_some_and(|t| t != caller)));
        assert_eq!(*order.lock().expect("lock"), (0..20).collect::<Vec<_>>());
    }
}
