//! Per-frame cost of an eframe application's AccessKit update on the UI thread: the
//! `accesskit_unix` shim (`patch/accesskit_unix`, pushing to the bridge) against the registry's
//! `accesskit_unix` 0.24.1 (in-process AT-SPI), the same egui frames, side by side in one process
//! and one run (docs/adoption.md).
//!
//! The parent starts a private session and the bridge, then runs this binary again as a child
//! (`--eframe-cost-app FRAMES`) in that session. The child runs egui headless with the UI of
//! `live-eframe/` (eframe's documented hello world), with one window of each adapter; as
//! `accesskit_winit` does, each activation handler answers `None` and the next frame's update
//! (egui sends its whole tree every frame) starts the tree. Once both are active, each frame
//! types one character into the text field (every tenth a Backspace), and what is timed is each
//! adapter's `update_if_active` with that frame's update, as `accesskit_winit` calls it after
//! every frame: the shim queues it for the adapter's thread; accesskit_unix applies it to its
//! `accesskit_consumer` tree and computes the AT-SPI events. The egui frame itself, the same for
//! both, is timed too, for scale.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use accesskit::{ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, TreeUpdate};
use serde::{Deserialize, Serialize};

use crate::stats::Summary;
use crate::world::{wait_for, World, READY_TIMEOUT};
use crate::{fail, Result};

/// Between two frames, as a 60 fps application leaves its UI thread idle at most.
const PACE: Duration = Duration::from_millis(4);
/// egui needs glyphs to lay text out; the same font live-egui loads (fonts-dejavu-core).
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// The result of one run.
#[derive(Debug, Serialize)]
pub struct EframeCost {
    pub frames: usize,
    /// Nodes of egui's tree (the last frame's update).
    pub nodes: usize,
    pub egui_frame: Summary,
    pub shim: Summary,
    pub accesskit_unix: Summary,
    /// The shim's counters: every frame built and sent, none collapsed.
    pub shim_built: u64,
    pub shim_sent: u64,
    pub shim_collapses: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct ChildReport {
    nodes: usize,
    egui_ns: Vec<u64>,
    shim_ns: Vec<u64>,
    unix_ns: Vec<u64>,
    built: u64,
    sent: u64,
    collapses: u64,
}

/// Parent: the session, the bridge and the measuring child.
pub fn measure(files: std::path::PathBuf, frames: usize) -> Result<EframeCost> {
    let mut world = World::start(files)?;
    let exe = std::env::current_exe()
        .map_err(|e| fail(format!("cannot find this executable to run the child: {e}")))?;
    let mut cmd = world.session.command(exe);
    cmd.env(newton_push_protocol::SOCKET_ENV_VAR, &world.socket)
        .arg("--eframe-cost-app")
        .arg(frames.to_string());
    let timeout = READY_TIMEOUT + PACE * (frames as u32) * 20;
    let (status, stdout) = world
        .session
        .run("eframe-cost-app", cmd, timeout)
        .map_err(|e| fail(format!("the eframe-cost child did not finish: {e}")))?;
    if !status.success() {
        let err = world.session.dir().join("logs/eframe-cost-app.err");
        let text = std::fs::read_to_string(&err).unwrap_or_default();
        return Err(fail(format!(
            "the eframe-cost child failed ({status}): {}",
            text.trim()
        )));
    }
    let last = stdout.lines().last().unwrap_or_default();
    let report: ChildReport = serde_json::from_str(last)
        .map_err(|e| fail(format!("the eframe-cost child's report {last:?}: {e}")))?;
    let durations =
        |ns: &[u64]| -> Vec<Duration> { ns.iter().map(|&n| Duration::from_nanos(n)).collect() };
    Ok(EframeCost {
        frames,
        nodes: report.nodes,
        egui_frame: Summary::of(&durations(&report.egui_ns)),
        shim: Summary::of(&durations(&report.shim_ns)),
        accesskit_unix: Summary::of(&durations(&report.unix_ns)),
        shim_built: report.built,
        shim_sent: report.sent,
        shim_collapses: report.collapses,
    })
}

/// The markdown table of one run.
pub fn markdown(cost: &EframeCost) -> String {
    let ratio = crate::stats::ratio(cost.shim.median_us, cost.accesskit_unix.median_us)
        .map(|r| format!("{r:.2}×"))
        .unwrap_or_else(|| "n/a".into());
    format!(
        "## An eframe application's update_if_active per frame ({} nodes, {} frames, one character typed per frame)\n\n\
         | on the UI thread | median | p99 |\n|---|---|---|\n\
         | egui frame (the same for both) | {:.1} µs | {:.1} µs |\n\
         | accesskit_unix shim (queued for the bridge) | {:.1} µs | {:.1} µs |\n\
         | accesskit_unix 0.24.1 (in-process AT-SPI) | {:.1} µs | {:.1} µs |\n\n\
         shim / accesskit_unix median: {ratio}; the shim built {}, sent {}, collapsed {} times\n",
        cost.nodes,
        cost.frames,
        cost.egui_frame.median_us,
        cost.egui_frame.p99_us,
        cost.shim.median_us,
        cost.shim.p99_us,
        cost.accesskit_unix.median_us,
        cost.accesskit_unix.p99_us,
        cost.shim_built,
        cost.shim_sent,
        cost.shim_collapses,
    )
}

/// Answers `None` and records the request, as accesskit_winit's handler does (it posts
/// `InitialTreeRequested`; egui then sends its tree on the next frame).
struct Activation(Arc<AtomicBool>);

impl ActivationHandler for Activation {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        self.0.store(true, Ordering::SeqCst);
        None
    }
}

struct NoActions;
impl ActionHandler for NoActions {
    fn do_action(&mut self, _request: ActionRequest) {}
}

struct NoDeactivation;
impl DeactivationHandler for NoDeactivation {
    fn deactivate_accessibility(&mut self) {}
}

/// live-eframe's UI (eframe's documented hello world plus egui's documented check box).
struct HelloWorld {
    name: String,
    age: u32,
    my_boolean: bool,
}

impl HelloWorld {
    fn ui(&mut self, ui: &mut egui::Ui) {
        egui::CentralPanel::default().show(ui, |ui| {
            ui.heading("My egui Application");
            ui.horizontal(|ui| {
                let name_label = ui.label("Your name: ");
                ui.text_edit_singleline(&mut self.name)
                    .labelled_by(name_label.id);
            });
            ui.add(egui::Slider::new(&mut self.age, 0..=120).text("age"));
            if ui.button("Increment").clicked() {
                self.age += 1;
            }
            ui.checkbox(&mut self.my_boolean, "Checkbox");
            ui.label(format!("Hello '{}', age {}", self.name, self.age));
        });
    }
}

fn fonts() -> Result<egui::FontDefinitions> {
    let bytes = std::fs::read(FONT).map_err(|e| {
        fail(format!(
            "cannot read {FONT} ({e}): egui needs a font to lay text out; install fonts-dejavu-core"
        ))
    })?;
    let mut fonts = egui::FontDefinitions::empty();
    fonts.font_data.insert(
        "DejaVuSans".into(),
        Arc::new(egui::FontData::from_owned(bytes)),
    );
    for family in [egui::FontFamily::Proportional, egui::FontFamily::Monospace] {
        fonts.families.insert(family, vec!["DejaVuSans".into()]);
    }
    Ok(fonts)
}

fn key(key: egui::Key) -> egui::Event {
    egui::Event::Key {
        key,
        physical_key: None,
        pressed: true,
        repeat: false,
        modifiers: egui::Modifiers::NONE,
    }
}

/// Child (`--eframe-cost-app FRAMES`): egui, both adapters, the timed calls, a JSON report.
pub fn run_app(frames: usize) -> Result<()> {
    let ctx = egui::Context::default();
    ctx.set_fonts(fonts()?);
    ctx.enable_accesskit();
    let mut app = HelloWorld {
        name: "Arthur".to_owned(),
        age: 42,
        my_boolean: true,
    };
    let shim_asked = Arc::new(AtomicBool::new(false));
    let unix_asked = Arc::new(AtomicBool::new(false));
    let mut shim = accesskit_unix_shim::Adapter::new(
        Activation(shim_asked.clone()),
        NoActions,
        NoDeactivation,
    );
    let mut unix =
        accesskit_unix::Adapter::new(Activation(unix_asked.clone()), NoActions, NoDeactivation);
    shim.update_window_focus_state(true);
    unix.update_window_focus_state(true);
    let start = Instant::now();
    let mut frame = |events: Vec<egui::Event>| -> Option<TreeUpdate> {
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(800.0, 600.0),
            )),
            time: Some(start.elapsed().as_secs_f64()),
            focused: true,
            events,
            ..Default::default()
        };
        let mut output = ctx.run_ui(input, |ui| app.ui(ui));
        // Nothing is painted here: the font atlas's upload is dropped on purpose.
        output.textures_delta.clear();
        output.platform_output.accesskit_update.take()
    };
    // Frames until both adapters have asked and taken a full tree.
    wait_for(
        "both adapters to ask for the tree (the bridge; accesskit_unix with the bus enabled)",
        READY_TIMEOUT,
        || {
            if let Some(update) = frame(Vec::new()) {
                shim.update_if_active(|| update.clone());
                unix.update_if_active(|| update);
            }
            std::thread::sleep(Duration::from_millis(20));
            Ok(shim_asked.load(Ordering::SeqCst) && unix_asked.load(Ordering::SeqCst))
        },
    )?;
    // Tab focuses the text field; a few frames let both settle.
    for events in [vec![key(egui::Key::Tab)], Vec::new(), Vec::new()] {
        if let Some(update) = frame(events) {
            shim.update_if_active(|| update.clone());
            unix.update_if_active(|| update);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let shim_stats = newton_stats(&shim);
    let (mut egui_ns, mut shim_ns, mut unix_ns) = (Vec::new(), Vec::new(), Vec::new());
    let mut nodes = 0;
    for round in 0..frames {
        let event = if round % 10 == 9 {
            key(egui::Key::Backspace)
        } else {
            egui::Event::Text("a".into())
        };
        let began = Instant::now();
        let update = frame(vec![event]);
        egui_ns.push(began.elapsed().as_nanos() as u64);
        let Some(update) = update else {
            return Err(fail("egui gave no AccessKit update with AccessKit enabled"));
        };
        nodes = update.nodes.len();
        let copy = update.clone();
        // Alternate which adapter goes first, so neither always follows the other's work.
        let mut time_shim = |update: TreeUpdate| {
            let began = Instant::now();
            shim.update_if_active(|| update);
            shim_ns.push(began.elapsed().as_nanos() as u64);
        };
        let mut time_unix = |update: TreeUpdate| {
            let began = Instant::now();
            unix.update_if_active(|| update);
            unix_ns.push(began.elapsed().as_nanos() as u64);
        };
        if round % 2 == 0 {
            time_shim(update);
            time_unix(copy);
        } else {
            time_unix(copy);
            time_shim(update);
        }
        std::thread::sleep(PACE);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while newton_stats(&shim).1 - shim_stats.1 < frames as u64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let after = newton_stats(&shim);
    let report = ChildReport {
        nodes,
        egui_ns,
        shim_ns,
        unix_ns,
        built: after.0 - shim_stats.0,
        sent: after.1 - shim_stats.1,
        collapses: after.2 - shim_stats.2,
    };
    let json = serde_json::to_string(&report)
        .map_err(|e| fail(format!("cannot encode the report: {e}")))?;
    println!("{json}");
    Ok(())
}

/// The shim's adapter keeps accesskit_unix's API, which has no counters: newton-accesskit's
/// process-wide counters are the shim's, its one window in this process.
fn newton_stats(_shim: &accesskit_unix_shim::Adapter) -> (u64, u64, u64) {
    let stats = newton_accesskit::process_stats();
    (stats.updates_built, stats.updates_sent, stats.collapses)
}
