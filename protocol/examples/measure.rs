//! Measures what the protocol layer costs for one full tree: payload size,
//! encode time, and `ReceiverSession::feed` time (framing + decode +
//! buffering until commit), fed whole and in 64 KiB chunks as a socket
//! delivers it. Run: `cargo run --release -p newton-push-protocol --example measure`.

use std::time::{Duration, Instant};

use accesskit::{Action, Node, NodeId, Rect, Role, TreeId, TreeInfo, TreeUpdate};
use newton_push_protocol::{
    encode_frame, encode_hello, encode_sender_message, AppInfo, Encoding, Hello, ReceiverConfig,
    ReceiverEvent, ReceiverSession, SenderMessage, SurfaceId, PROTOCOL_VERSION,
};

const RUNS: usize = 15;

/// A window holding a list of `items` items, each with a label, bounds and
/// two actions (as in the Newton notes' measurements).
fn list_tree(items: u64) -> TreeUpdate {
    let mut list = Node::new(Role::List);
    list.set_children((2..items + 2).map(NodeId).collect::<Vec<_>>());
    let mut nodes = Vec::with_capacity(items as usize + 2);
    let mut window = Node::new(Role::Window);
    window.set_children(vec![NodeId(1)]);
    nodes.push((NodeId(0), window));
    nodes.push((NodeId(1), list));
    for id in 2..items + 2 {
        let mut item = Node::new(Role::ListItem);
        item.set_label(format!("Item number {id}"));
        let y = id as f64 * 20.0;
        item.set_bounds(Rect {
            x0: 0.0,
            y0: y,
            x1: 300.0,
            y1: y + 20.0,
        });
        item.add_action(Action::Click);
        item.add_action(Action::Focus);
        nodes.push((NodeId(id), item));
    }
    TreeUpdate {
        nodes,
        tree: Some(TreeInfo::new(NodeId(0))),
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    }
}

fn stream(encoding: Encoding, update: TreeUpdate) -> (Vec<u8>, usize) {
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        encoding,
        app: AppInfo {
            app_id: "measure".into(),
            name: "measure".into(),
            ..Default::default()
        },
        accesskit_version: None,
    };
    let surface = SurfaceId(1);
    let mut bytes = encode_frame(&encode_hello(&hello).unwrap_or_default()).unwrap_or_default();
    let mut update_len = 0;
    for message in [
        SenderMessage::CreateSurface {
            surface,
            title: None,
        },
        SenderMessage::Update { surface, update },
        SenderMessage::Commit { surface, serial: 1 },
    ] {
        let payload = encode_sender_message(&message, encoding).unwrap_or_default();
        update_len = update_len.max(payload.len());
        bytes.extend(encode_frame(&payload).unwrap_or_default());
    }
    (bytes, update_len)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

fn time_feed(bytes: &[u8], chunk: usize) -> Duration {
    let samples = (0..RUNS)
        .map(|_| {
            let mut session = ReceiverSession::new(ReceiverConfig::default());
            let started = Instant::now();
            let mut commits = 0;
            for piece in bytes.chunks(chunk) {
                commits += session
                    .feed(piece)
                    .iter()
                    .filter(|e| matches!(e, ReceiverEvent::Commit { .. }))
                    .count();
            }
            let elapsed = started.elapsed();
            assert_eq!(commits, 1, "the stream must decode to one commit");
            elapsed
        })
        .collect();
    median(samples)
}

fn time_encode(encoding: Encoding, update: &TreeUpdate) -> Duration {
    let message = SenderMessage::Update {
        surface: SurfaceId(1),
        update: update.clone(),
    };
    let samples = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let payload = encode_sender_message(&message, encoding).unwrap_or_default();
            let elapsed = started.elapsed();
            assert!(!payload.is_empty());
            elapsed
        })
        .collect();
    median(samples)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn main() {
    println!("items  encoding  update bytes  encode ms  feed whole ms  feed 64KiB-chunks ms  chunked/whole");
    for items in [1_000u64, 10_000, 100_000] {
        let update = list_tree(items);
        for encoding in [Encoding::Json, Encoding::Postcard] {
            let (bytes, update_len) = stream(encoding, update.clone());
            let encode = time_encode(encoding, &update);
            let whole = time_feed(&bytes, bytes.len());
            let chunked = time_feed(&bytes, 64 * 1024);
            println!(
                "{items:>6}  {:<8}  {update_len:>12}  {:>9.2}  {:>13.2}  {:>20.2}  {:>13.2}",
                format!("{encoding:?}"),
                ms(encode),
                ms(whole),
                ms(chunked),
                chunked.as_secs_f64() / whole.as_secs_f64().max(f64::MIN_POSITIVE),
            );
        }
    }
}
