//! A live egui application for the bridge (test-only): a real egui 0.37
//! window (X11, GL through glutin/egui_glow; llvmpipe under Xvfb) with two
//! buttons, a check box and a single-line text field. egui's AccessKit
//! updates go through `newton-accesskit` (no accesskit_winit, no eframe);
//! the adapter's action requests come back as
//! `egui::Event::AccessKitActionRequest` (docs/egui.md).
//!
//! Keys go to egui only: they are not offered to the screen reader first
//! (`Adapter::key_event`), unlike `live-app/`.
//!
//! What the application does is printed on stdout, one line per fact
//! (`window shown`, `tree requested`, `action Click`, `clicked OK`,
//! `toggled true`, `text "ab"`, `focus <label>`), so tests can tell what it
//! handled.

use std::io::Write;
use std::num::NonZeroU32;
use std::sync::Arc;

use accesskit::{ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, TreeUpdate};
use egui_glow::glow;
use glutin::context::{NotCurrentGlContext as _, PossiblyCurrentContext};
use glutin::display::{GetGlDisplay as _, GlDisplay as _};
use glutin::surface::{GlSurface as _, Surface, WindowSurface};
use newton_accesskit::{Adapter, AppIdentity};
use winit::application::ApplicationHandler;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop, EventLoopProxy};
use winit::raw_window_handle::HasWindowHandle as _;
use winit::window::{Window, WindowId};

const TITLE: &str = "Newton Live egui";
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// What the adapter's thread hands to the UI thread.
#[derive(Debug)]
enum UserEvent {
    InitialTreeRequested,
    Action(ActionRequest),
}

struct Activation(EventLoopProxy<UserEvent>);
impl ActivationHandler for Activation {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        // The tree lives on the UI thread: egui builds it in the next frame.
        let _ = self.0.send_event(UserEvent::InitialTreeRequested);
        None
    }
}

struct Actions(EventLoopProxy<UserEvent>);
impl ActionHandler for Actions {
    fn do_action(&mut self, request: ActionRequest) {
        let _ = self.0.send_event(UserEvent::Action(request));
    }
}

struct Deactivation;
impl DeactivationHandler for Deactivation {
    fn deactivate_accessibility(&mut self) {}
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The widgets' state.
#[derive(Default)]
struct Widgets {
    checked: bool,
    text: String,
}

impl Widgets {
    fn ui(&mut self, ui: &mut egui::Ui) {
        ui.heading(TITLE);
        ui.horizontal(|ui| {
            if ui.button("OK").clicked() {
                say("clicked OK");
            }
            if ui.button("Cancel").clicked() {
                say("clicked Cancel");
            }
        });
        if ui.checkbox(&mut self.checked, "Enable feature").changed() {
            say(&format!("toggled {}", self.checked));
        }
        ui.horizontal(|ui| {
            ui.label("Name");
            if ui.text_edit_singleline(&mut self.text).changed() {
                say(&format!("text {:?}", self.text));
            }
        });
    }
}

struct Gl {
    window: Window,
    surface: Surface<WindowSurface>,
    context: PossiblyCurrentContext,
    painter: egui_glow::Painter,
}

struct App {
    proxy: EventLoopProxy<UserEvent>,
    ctx: egui::Context,
    gl: Option<Gl>,
    state: Option<egui_winit::State>,
    adapter: Option<Adapter>,
    widgets: Widgets,
    last_focus: Option<accesskit::NodeId>,
}

fn fonts() -> egui::FontDefinitions {
    let mut fonts = egui::FontDefinitions::empty();
    match std::fs::read(FONT) {
        Ok(bytes) => {
            fonts.font_data.insert(
                "DejaVuSans".into(),
                Arc::new(egui::FontData::from_owned(bytes)),
            );
            for family in [egui::FontFamily::Proportional, egui::FontFamily::Monospace] {
                fonts.families.insert(family, vec!["DejaVuSans".into()]);
            }
        }
        Err(error) => eprintln!("newton-live-egui: cannot read {FONT}: {error}"),
    }
    fonts
}

fn create_gl(event_loop: &ActiveEventLoop) -> Result<Gl, String> {
    let attributes = Window::default_attributes()
        .with_title(TITLE)
        .with_inner_size(winit::dpi::LogicalSize::new(400.0, 240.0))
        .with_visible(false);
    let (window, config) = glutin_winit::DisplayBuilder::new()
        .with_preference(glutin_winit::ApiPreference::FallbackEgl)
        .with_window_attributes(Some(attributes))
        .build(
            event_loop,
            glutin::config::ConfigTemplateBuilder::new(),
            |mut configs| configs.next().expect("at least one GL config"),
        )
        .map_err(|e| format!("no GL display: {e}"))?;
    let window = window.ok_or("no window")?;
    let display = config.display();
    let raw = window
        .window_handle()
        .map_err(|e| format!("no window handle: {e}"))?
        .as_raw();
    let context_attributes = glutin::context::ContextAttributesBuilder::new().build(Some(raw));
    // SAFETY: the window handle is valid while `window` lives, which the
    // context and surface do not outlive (they are dropped together in Gl).
    let not_current = unsafe { display.create_context(&config, &context_attributes) }
        .map_err(|e| format!("no GL context: {e}"))?;
    let (width, height): (u32, u32) = window.inner_size().into();
    let surface_attributes = glutin::surface::SurfaceAttributesBuilder::<WindowSurface>::new()
        .build(
            raw,
            NonZeroU32::new(width.max(1)).expect("non-zero"),
            NonZeroU32::new(height.max(1)).expect("non-zero"),
        );
    // SAFETY: as above.
    let surface = unsafe { display.create_window_surface(&config, &surface_attributes) }
        .map_err(|e| format!("no GL surface: {e}"))?;
    let context = not_current
        .make_current(&surface)
        .map_err(|e| format!("cannot make the GL context current: {e}"))?;
    // SAFETY: the loader is the current context's display.
    let gl = unsafe {
        glow::Context::from_loader_function(|symbol| {
            let symbol = std::ffi::CString::new(symbol).expect("no NUL in a GL symbol");
            display.get_proc_address(&symbol)
        })
    };
    let painter = egui_glow::Painter::new(Arc::new(gl), "", None, false)
        .map_err(|e| format!("no egui painter: {e}"))?;
    Ok(Gl {
        window,
        surface,
        context,
        painter,
    })
}

impl App {
    fn redraw(&mut self, event_loop: &ActiveEventLoop) {
        let (Some(gl), Some(state)) = (self.gl.as_mut(), self.state.as_mut()) else {
            return;
        };
        let input = state.take_egui_input(&gl.window);
        let widgets = &mut self.widgets;
        let mut output = self.ctx.run_ui(input, |ui| widgets.ui(ui));
        if let Some(update) = output.platform_output.accesskit_update.take() {
            if self.last_focus != Some(update.focus) {
                self.last_focus = Some(update.focus);
                let label = update
                    .nodes
                    .iter()
                    .find(|(id, _)| *id == update.focus)
                    .and_then(|(_, node)| node.label().map(str::to_owned))
                    .unwrap_or_default();
                say(&format!("focus {label}"));
            }
            if let Some(adapter) = self.adapter.as_mut() {
                adapter.update_if_active(|| update);
            }
        }
        state.handle_platform_output(&gl.window, output.platform_output);
        for (id, deltas) in output.textures_delta.set.drain() {
            for delta in deltas {
                gl.painter.set_texture(id, &delta);
            }
        }
        let primitives = self.ctx.tessellate(output.shapes, output.pixels_per_point);
        let size = gl.window.inner_size();
        gl.painter
            .clear([size.width, size.height], [0.1, 0.1, 0.1, 1.0]);
        gl.painter.paint_primitives(
            [size.width, size.height],
            output.pixels_per_point,
            &primitives,
        );
        if let Err(error) = gl.surface.swap_buffers(&gl.context) {
            eprintln!("newton-live-egui: swap_buffers: {error}");
        }
        for id in output.textures_delta.free.drain() {
            gl.painter.free_texture(id);
        }
        let delay = output
            .viewport_output
            .get(&egui::ViewportId::ROOT)
            .map_or(std::time::Duration::MAX, |v| v.repaint_delay);
        if delay.is_zero() {
            gl.window.request_redraw();
        } else if let Some(at) = std::time::Instant::now().checked_add(delay) {
            event_loop.set_control_flow(ControlFlow::WaitUntil(at));
        }
    }

    fn update_bounds(&mut self) {
        let (Some(gl), Some(adapter)) = (&self.gl, self.adapter.as_mut()) else {
            return;
        };
        let window = &gl.window;
        let outer = window.outer_position().unwrap_or_default();
        let inner = window.inner_position().unwrap_or_default();
        let size = window.inner_size();
        let outer_size = window.outer_size();
        let rect = |x: i32, y: i32, w: u32, h: u32| accesskit::Rect {
            x0: x.into(),
            y0: y.into(),
            x1: f64::from(x) + f64::from(w),
            y1: f64::from(y) + f64::from(h),
        };
        adapter.set_root_window_bounds(
            rect(outer.x, outer.y, outer_size.width, outer_size.height),
            rect(inner.x, inner.y, size.width, size.height),
        );
    }
}

impl ApplicationHandler<UserEvent> for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gl.is_some() {
            return;
        }
        let gl = match create_gl(event_loop) {
            Ok(gl) => gl,
            Err(error) => {
                eprintln!("newton-live-egui: {error}");
                event_loop.exit();
                return;
            }
        };
        self.state = Some(egui_winit::State::new(
            self.ctx.clone(),
            egui::ViewportId::ROOT,
            event_loop,
            Some(gl.window.scale_factor() as f32),
            None,
            None,
        ));
        self.adapter = Some(Adapter::with_title(
            Some(TITLE.into()),
            Activation(self.proxy.clone()),
            Actions(self.proxy.clone()),
            Deactivation,
        ));
        gl.window.set_visible(true);
        gl.window.request_redraw();
        self.gl = Some(gl);
        self.update_bounds();
        say("window shown");
    }

    fn user_event(&mut self, _: &ActiveEventLoop, event: UserEvent) {
        match event {
            UserEvent::InitialTreeRequested => {
                // egui puts a full tree in every frame's update from now on.
                self.ctx.enable_accesskit();
                say("tree requested");
            }
            UserEvent::Action(request) => {
                say(&format!(
                    "action {:?} on {}",
                    request.action, request.target_node.0
                ));
                if let Some(state) = self.state.as_mut() {
                    state
                        .egui_input_mut()
                        .events
                        .push(egui::Event::AccessKitActionRequest(request));
                }
            }
        }
        if let Some(gl) = &self.gl {
            gl.window.request_redraw();
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match &event {
            WindowEvent::CloseRequested => {
                if let Some(gl) = self.gl.as_mut() {
                    gl.painter.destroy();
                }
                event_loop.exit();
                return;
            }
            WindowEvent::RedrawRequested => {
                self.redraw(event_loop);
                return;
            }
            WindowEvent::Focused(focused) => {
                if let Some(adapter) = self.adapter.as_mut() {
                    adapter.update_window_focus_state(*focused);
                }
                say(&format!("window focused {focused}"));
            }
            WindowEvent::Moved(_) => self.update_bounds(),
            WindowEvent::Resized(size) => {
                if let Some(gl) = &self.gl {
                    if let (Some(w), Some(h)) =
                        (NonZeroU32::new(size.width), NonZeroU32::new(size.height))
                    {
                        gl.surface.resize(&gl.context, w, h);
                    }
                }
                self.update_bounds();
            }
            _ => {}
        }
        let (Some(gl), Some(state)) = (self.gl.as_ref(), self.state.as_mut()) else {
            return;
        };
        let response = state.on_window_event(&gl.window, &event);
        if response.repaint {
            gl.window.request_redraw();
        }
    }

    fn new_events(&mut self, _: &ActiveEventLoop, cause: winit::event::StartCause) {
        if let winit::event::StartCause::ResumeTimeReached { .. } = cause {
            if let Some(gl) = &self.gl {
                gl.window.request_redraw();
            }
        }
    }
}

fn main() {
    let _ = newton_accesskit::set_app_identity(AppIdentity {
        app_id: Some("org.newton.LiveEgui".into()),
        name: Some(TITLE.into()),
        toolkit_name: Some("egui".into()),
        toolkit_version: Some("0.37.0".into()),
    });
    let event_loop = match EventLoop::<UserEvent>::with_user_event().build() {
        Ok(event_loop) => event_loop,
        Err(error) => {
            eprintln!("newton-live-egui: cannot open the display ({error}); is DISPLAY set?");
            std::process::exit(1);
        }
    };
    let ctx = egui::Context::default();
    ctx.set_fonts(fonts());
    let mut app = App {
        proxy: event_loop.create_proxy(),
        ctx,
        gl: None,
        state: None,
        adapter: None,
        widgets: Widgets::default(),
        last_focus: None,
    };
    if let Err(error) = event_loop.run_app(&mut app) {
        eprintln!("newton-live-egui: the event loop failed: {error}");
        std::process::exit(1);
    }
}
