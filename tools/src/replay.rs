//! `replay FILE`: a producer playing a recording (`record`'s JSON lines)
//! into a running bridge through its sender socket.

use std::time::Duration;

use newton_push_protocol::Encoding;

use crate::cli::ReplayArgs;

/// `replay FILE`: pushes a recorded stream into a running bridge.
pub fn replay(args: ReplayArgs) -> Result<(), Box<dyn std::error::Error>> {
    use newton_producer::replay::{replay_into, ReplayOptions, ReplayTarget, Timing};
    let path = match args.socket {
        Some(path) => path,
        None => newton_push_protocol::default_socket_path()?,
    };
    let lines = newton_producer::load_recording(&args.file)?;
    let mut hello = lines
        .first()
        .and_then(|line| line.hello.clone())
        .ok_or_else(|| format!("{}: the first line must be the hello", args.file.display()))?;
    if args.postcard {
        hello.encoding = Encoding::Postcard;
    }
    let sender: Box<dyn ReplayTarget> = if args.reconnect {
        let sender = newton_producer::ReconnectingSender::new(&path, hello, Default::default())?;
        if !sender.wait_connected(Duration::from_secs(60)) {
            return Err(format!(
                "no bridge answered at {} within 60 s: {}",
                path.display(),
                sender.last_error().unwrap_or_default()
            )
            .into());
        }
        Box::new(sender)
    } else {
        Box::new(newton_producer::Sender::connect(&path, hello)?)
    };
    let options = ReplayOptions {
        timing: if args.fast {
            Timing::AsFastAsPossible
        } else {
            Timing::Recorded
        },
        wait_for_acks: Some(Duration::from_secs(60)),
        encoding: None,
        skip_goodbye: args.stay,
    };
    let summary = replay_into(sender.as_ref(), &lines, options)?;
    println!(
        "replayed {} messages ({} commits) in {:.1} ms; {} rejected",
        summary.messages_sent,
        summary.commits,
        summary.elapsed.as_secs_f64() * 1000.0,
        summary.rejections.len()
    );
    for rejection in &summary.rejections {
        println!(
            "  surface {} commit {}: {} ({})",
            rejection.surface.0, rejection.serial, rejection.rule, rejection.reason
        );
    }
    if args.stay {
        if args.reconnect {
            println!("staying connected (reconnecting after bridge restarts); press Ctrl+C to remove the application");
        } else {
            println!("staying connected; press Ctrl+C to remove the application");
        }
        let mut signals =
            async_signal::Signals::new([async_signal::Signal::Term, async_signal::Signal::Int])?;
        async_io::block_on(futures::StreamExt::next(&mut signals));
    }
    drop(sender);
    if summary.rejections.is_empty() {
        Ok(())
    } else {
        Err(format!("{} commit(s) were rejected", summary.rejections.len()).into())
    }
}
