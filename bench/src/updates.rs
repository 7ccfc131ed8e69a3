//! Update latency: one node relabelled by the sender until a client sees the AT-SPI
//! `PropertyChange` (accessible-name) signal; and sustained relabels per second with that
//! client listening.

use std::time::{Duration, Instant};

use futures::future::{select, Either};
use futures::StreamExt;
use serde::Serialize;
use zbus::message::Type as MessageType;
use zbus::{MatchRule, Message, MessageStream};

use crate::dbus::Client;
use crate::fixtures::{list_item, relabel, Stream};
use crate::stats::Summary;
use crate::world::AttachedApp;
use crate::{fail, Result};

const SIGNAL_TIMEOUT: Duration = Duration::from_secs(5);

/// Update results on one tree.
#[derive(Debug, Serialize)]
pub struct Updates {
    pub nodes: usize,
    /// Push → signal seen by the client.
    pub latency: Summary,
    /// Relabels whose signal never arrived (within 5 s).
    pub lost: usize,
    pub sustained_sent: usize,
    pub sustained_received: usize,
    pub sustained_per_s: f64,
}

/// Relabels the middle list item `iterations` times one by one, then `sustained` times back
/// to back.
pub fn measure(
    client: &Client,
    app: &AttachedApp,
    stream: &Stream,
    items: usize,
    iterations: usize,
    sustained: usize,
) -> Result<Updates> {
    let id = list_item(items / 2);
    let node = stream
        .initial_node(id)
        .ok_or_else(|| fail(format!("{} has no item {}", stream.name, items / 2)))?;
    let focus = stream.last_focus();
    let mut signals = subscribe(client, &app.root.dest, sustained + 64)?;
    let mut counter = 0usize;
    let mut push = |sender: &newton_producer::Sender| -> Result<()> {
        counter += 1;
        let update = relabel(id, &node, &format!("Relabelled {counter}"), focus);
        sender
            .update(newton_fixtures::SURFACE, update)
            .and_then(|()| sender.commit(newton_fixtures::SURFACE).map(|_| ()))
            .map_err(|e| fail(format!("cannot push a relabel: {e}")))
    };

    let mut latencies = Vec::new();
    let mut lost = 0;
    let warmup = 5.min(iterations);
    for i in 0..warmup + iterations {
        let start = Instant::now();
        push(&app.sender)?;
        match next_signal(&mut signals, SIGNAL_TIMEOUT) {
            Some(_) if i >= warmup => latencies.push(start.elapsed()),
            Some(_) => {}
            None => lost += 1,
        }
    }

    let start = Instant::now();
    for _ in 0..sustained {
        push(&app.sender)?;
    }
    let mut received = 0;
    while received < sustained && next_signal(&mut signals, SIGNAL_TIMEOUT).is_some() {
        received += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok(Updates {
        nodes: stream.nodes,
        latency: Summary::of(&latencies),
        lost,
        sustained_sent: sustained,
        sustained_received: received,
        sustained_per_s: received as f64 / elapsed.max(1e-9),
    })
}

/// A match rule on the client's connection for name changes emitted by `sender`.
fn subscribe(client: &Client, sender: &str, queue: usize) -> Result<MessageStream> {
    let rule = MatchRule::builder()
        .msg_type(MessageType::Signal)
        .sender(sender)
        .and_then(|b| b.interface("org.a11y.atspi.Event.Object"))
        .and_then(|b| b.member("PropertyChange"))
        .and_then(|b| b.arg(0, "accessible-name"))
        .map_err(|e| fail(format!("bad match rule: {e}")))?
        .build()
        .to_owned();
    async_io::block_on(MessageStream::for_match_rule(
        rule,
        client.connection(),
        Some(queue),
    ))
    .map_err(|e| fail(format!("cannot subscribe to PropertyChange signals: {e}")))
}

fn next_signal(stream: &mut MessageStream, timeout: Duration) -> Option<Message> {
    async_io::block_on(async {
        let next = Box::pin(stream.next());
        let timer = Box::pin(async_io::Timer::after(timeout));
        match select(next, timer).await {
            Either::Left((Some(Ok(message)), _)) => Some(message),
            _ => None,
        }
    })
}
