//! `demo`: what an AT sees of a pushed application, with nothing set up.
//! Uses the desktop's accessibility bus when there is one; otherwise starts
//! private session and accessibility buses with the registry. Runs the bridge
//! in-process, replays the bundled egui recording and prints the AT-SPI tree
//! as a client reads it over the bus.

use std::error::Error;
use std::time::{Duration, Instant};

use newton_producer::replay::{replay_into, ReplayOptions, Timing};
use newton_push_protocol::{RecordedLine, SenderMessage};

use crate::cli::DemoArgs;
use crate::demo_orca::DemoOrca;
use crate::in_process_bridge::InProcessBridge;
use newton_atspi_client::dump::{self, WalkLimits};
use newton_atspi_client::private_session::PrivateSession;

/// The bundled recording: egui 0.37 widgets (button, check box, text field,
/// slider) with focus moves, typing and value changes.
const BUNDLED_FIXTURE: &str = include_str!("../../fixtures/egui/egui-form-focus.jsonl");

pub fn run(args: DemoArgs) -> Result<(), Box<dyn Error>> {
    let (a11y_address, private) = accessibility_bus(args.private)?;
    let orca = private
        .as_ref()
        .filter(|_| !args.no_orca)
        .and_then(|session| {
            eprintln!("demo: starting a headless Orca (speech goes to its log only)");
            DemoOrca::start(
                &session.runtime_dir,
                &session.session_address,
                &session.a11y_address,
            )
            .map_err(|e| eprintln!("demo: Orca not run: {e}"))
            .ok()
        });
    let socket_dir =
        std::env::temp_dir().join(format!("newton-demo-socket-{}", std::process::id()));
    let socket = socket_dir.join("bridge.sock");
    let bridge = InProcessBridge::start(&socket, &a11y_address)?;
    let result = replay_and_dump(&args, &socket, &a11y_address, orca.is_some());
    if let Some(orca) = orca {
        let said = orca.stop(&a11y_address);
        let mut text = format!("\nWhat Orca said ({} utterances):\n", said.len());
        for utterance in said {
            text.push_str(&format!(
                "  \u{201c}{}\u{201d}\n",
                utterance.replace('\n', " ")
            ));
        }
        crate::print_out(&text)?;
    }
    let stopped = bridge.stop();
    let _ = std::fs::remove_dir_all(&socket_dir);
    result?;
    stopped
}

/// The desktop's bus, or a private one (kept alive by the returned guard).
fn accessibility_bus(
    force_private: bool,
) -> Result<(String, Option<PrivateSession>), Box<dyn Error>> {
    if !force_private {
        let desktop = async_io::block_on(futures::future::select(
            Box::pin(newton_atspi_daemon::a11y_bus::find_address()),
            Box::pin(async_io::Timer::after(Duration::from_secs(3))),
        ));
        if let futures::future::Either::Left((Ok(address), _)) = desktop {
            eprintln!("demo: using this desktop's accessibility bus");
            return Ok((address, None));
        }
    }
    eprintln!("demo: no desktop session; starting private session and accessibility buses");
    let session = PrivateSession::start()?;
    Ok((session.a11y_address.clone(), Some(session)))
}

fn replay_and_dump(
    args: &DemoArgs,
    socket: &std::path::Path,
    a11y_address: &str,
    paced: bool,
) -> Result<(), Box<dyn Error>> {
    let lines = match &args.fixture {
        Some(path) => newton_producer::load_recording(path)?,
        None => newton_producer::parse_recording(BUNDLED_FIXTURE.as_bytes())?,
    };
    let hello = lines
        .first()
        .and_then(|l| l.hello.clone())
        .ok_or("the fixture's first line must be the hello")?;
    let app_name = hello.app.name.clone();
    let sender = connect_when_ready(socket, hello)?;
    let (commits, rejected) = if paced {
        replay_paced(&sender, &lines)?
    } else {
        replay_all(&sender, &lines)?
    };
    eprintln!(
        "demo: replayed {commits} commits of \u{201c}{app_name}\u{201d} ({rejected} rejected); this is what an AT sees:\n"
    );
    let tree = async_io::block_on(async {
        let conn = newton_atspi_daemon::a11y_bus::connect(a11y_address).await?;
        let apps = dump::select_apps(dump::applications(&conn).await?, Some(&app_name))?;
        let mut trees = Vec::new();
        for (bus, _) in apps {
            trees.push(dump::walk_application(&conn, &bus, WalkLimits::default()).await);
        }
        Ok::<_, Box<dyn Error>>(trees)
    })?;
    if args.json {
        crate::print_out(&format!("{}\n", serde_json::to_string_pretty(&tree)?))?;
    } else {
        for app in &tree {
            crate::print_out(&dump::to_text(app))?;
        }
    }
    Ok(())
}

fn options() -> ReplayOptions {
    ReplayOptions {
        timing: Timing::AsFastAsPossible,
        wait_for_acks: Some(Duration::from_secs(30)),
        encoding: None,
        skip_goodbye: true,
    }
}

/// Every commit at once; returns (commits, rejections).
fn replay_all(
    sender: &newton_producer::Sender,
    lines: &[RecordedLine],
) -> Result<(usize, usize), Box<dyn Error>> {
    let summary = replay_into(sender, lines, options())?;
    Ok((summary.commits, summary.rejections.len()))
}

/// One commit at a time with a pause after each, so a listening Orca
/// presents every step (it drops events of an application it has not
/// finished discovering, hence the longer first pause).
fn replay_paced(
    sender: &newton_producer::Sender,
    lines: &[RecordedLine],
) -> Result<(usize, usize), Box<dyn Error>> {
    let (mut commits, mut rejected) = (0, 0);
    let mut first = true;
    for chunk in
        lines.split_inclusive(|line| matches!(line.message, Some(SenderMessage::Commit { .. })))
    {
        let summary = replay_into(sender, chunk, options())?;
        commits += summary.commits;
        rejected += summary.rejections.len();
        std::thread::sleep(if first {
            Duration::from_millis(1500)
        } else {
            Duration::from_millis(500)
        });
        first = false;
    }
    Ok((commits, rejected))
}

/// The bridge thread binds its socket asynchronously; wait for it.
fn connect_when_ready(
    socket: &std::path::Path,
    hello: newton_push_protocol::Hello,
) -> Result<newton_producer::Sender, Box<dyn Error>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match newton_producer::Sender::connect(socket, hello.clone()) {
            Ok(sender) => return Ok(sender),
            Err(error) if Instant::now() >= deadline => return Err(error.into()),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
