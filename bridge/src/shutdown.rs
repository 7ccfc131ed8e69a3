//! A graceful shutdown ends every sender session the normal way — its
//! `close()`, which queues the `error` saying why behind everything already
//! queued for the sender, removes its application and lets the writer flush
//! — and waits, bounded, until each session has written its last byte. A
//! process that exited right after telling its senders lost what was still
//! queued ("no data lost").

use std::sync::Mutex;
use std::time::Duration;

/// The daemon's handle on its live sender sessions.
pub struct Sessions {
    /// Closed by [`Sessions::stop`]; every session waits on a receiver. A
    /// closed channel wakes all its receivers at once and stays closed, so a
    /// session that starts looking later stops at once too.
    stop_tx: async_channel::Sender<()>,
    stop_rx: async_channel::Receiver<()>,
    /// Each live session holds a clone of this sender (nothing is ever sent);
    /// `live_rx` sees the channel close once the last clone is dropped: a
    /// wait group with no polling. The daemon's own clone is dropped at stop.
    live_tx: Mutex<Option<async_channel::Sender<()>>>,
    live_rx: async_channel::Receiver<()>,
}

/// One session's part: when to stop, and (dropped when the session has
/// flushed) its place in the wait group.
pub struct Session {
    stop: async_channel::Receiver<()>,
    _live: Option<async_channel::Sender<()>>,
}

impl Default for Sessions {
    fn default() -> Self {
        let (stop_tx, stop_rx) = async_channel::bounded(1);
        let (live_tx, live_rx) = async_channel::bounded(1);
        Self {
            stop_tx,
            stop_rx,
            live_tx: Mutex::new(Some(live_tx)),
            live_rx,
        }
    }
}

impl Sessions {
    /// Counts a new session; call it before the session's task is spawned,
    /// so a shutdown that starts meanwhile waits for it.
    pub fn register(&self) -> Session {
        let live = self.lock_live().as_ref().cloned();
        Session {
            stop: self.stop_rx.clone(),
            _live: live,
        }
    }

    /// Asks every session, present and future, to end.
    pub fn stop(&self) {
        self.stop_tx.close();
        self.lock_live().take();
    }

    /// Waits until every session registered before [`Sessions::stop`] has
    /// ended and flushed, at most `timeout`; false when some had not.
    pub async fn ended_within(&self, timeout: Duration) -> bool {
        // Nothing is ever sent: `recv` returns once every sender is dropped.
        let all_ended = async {
            let _ = self.live_rx.recv().await;
            true
        };
        let timer = async {
            async_io::Timer::after(timeout).await;
            false
        };
        futures::future::select(std::pin::pin!(all_ended), std::pin::pin!(timer))
            .await
            .factor_first()
            .0
    }

    /// Sessions still holding their place in the wait group.
    pub fn unfinished(&self) -> usize {
        self.live_rx.sender_count()
    }

    fn lock_live(&self) -> std::sync::MutexGuard<'_, Option<async_channel::Sender<()>>> {
        self.live_tx.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Session {
    /// Returns once the daemon shuts down.
    pub async fn stopped(&self) {
        let _ = self.stop.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now<F: std::future::Future>(future: F) -> F::Output {
        async_io::block_on(future)
    }

    #[test]
    fn waits_for_every_session_registered_before_stop() {
        let sessions = Sessions::default();
        let first = sessions.register();
        let second = sessions.register();
        sessions.stop();
        let late = sessions.register();
        now(first.stopped());
        now(late.stopped());
        drop(first);
        assert!(!now(sessions.ended_within(Duration::from_millis(20))));
        assert_eq!(sessions.unfinished(), 1);
        drop(second);
        assert!(now(sessions.ended_within(Duration::from_secs(5))));
        drop(late);
    }

    #[test]
    fn no_session_ends_at_once() {
        let sessions = Sessions::default();
        sessions.stop();
        assert!(now(sessions.ended_within(Duration::from_secs(5))));
    }

    #[test]
    fn a_session_is_not_stopped_before_stop() {
        let sessions = Sessions::default();
        let session = sessions.register();
        let stopped = now(async {
            let timer = async_io::Timer::after(Duration::from_millis(20));
            let stopped = std::pin::pin!(session.stopped());
            matches!(
                futures::future::select(stopped, timer).await,
                futures::future::Either::Left(_)
            )
        });
        assert!(!stopped);
    }
}
