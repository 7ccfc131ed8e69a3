//! Scratch probe for docs/egui.md: one egui 0.37 frame painted with egui_glow on a glutin context
//! (llvmpipe under Xvfb), printing the GL renderer and the accesskit 0.25 TreeUpdate egui produced.
//! Not part of the bridge workspace; unwraps are fine in a probe.
use egui_glow::glow;
use glutin::context::NotCurrentGlContext as _;
use glutin::display::{GetGlDisplay as _, GlDisplay as _};
use glutin::surface::GlSurface as _;
use std::num::NonZeroU32;
use std::sync::Arc;
use winit::raw_window_handle::HasWindowHandle as _;

struct Probe;
impl winit::application::ApplicationHandler for Probe {
    fn resumed(&mut self, el: &winit::event_loop::ActiveEventLoop) {
        let attrs = winit::window::WindowAttributes::default().with_title("egui probe");
        let (win, cfg) = glutin_winit::DisplayBuilder::new()
            .with_preference(glutin_winit::ApiPreference::FallbackEgl)
            .with_window_attributes(Some(attrs))
            .build(el, glutin::config::ConfigTemplateBuilder::new(), |mut c| {
                c.next().unwrap()
            })
            .unwrap();
        let win = win.unwrap();
        let disp = cfg.display();
        let rwh = win.window_handle().unwrap().as_raw();
        let ctx_attrs = glutin::context::ContextAttributesBuilder::new().build(Some(rwh));
        let nc = unsafe { disp.create_context(&cfg, &ctx_attrs).unwrap() };
        let (w, h): (u32, u32) = win.inner_size().into();
        let sa = glutin::surface::SurfaceAttributesBuilder::<glutin::surface::WindowSurface>::new()
            .build(
                rwh,
                NonZeroU32::new(w).unwrap(),
                NonZeroU32::new(h).unwrap(),
            );
        let surf = unsafe { disp.create_window_surface(&cfg, &sa).unwrap() };
        let gctx = nc.make_current(&surf).unwrap();
        let gl = unsafe {
            glow::Context::from_loader_function(|s| {
                disp.get_proc_address(&std::ffi::CString::new(s).unwrap())
            })
        };
        use glow::HasContext as _;
        println!("GL_RENDERER = {}", unsafe {
            gl.get_parameter_string(glow::RENDERER)
        });
        let mut painter = egui_glow::Painter::new(Arc::new(gl), "", None, false).unwrap();
        let ctx = egui::Context::default();
        ctx.enable_accesskit();
        let mut state =
            egui_winit::State::new(ctx.clone(), egui::ViewportId::ROOT, el, None, None, None);
        let mut checked = false;
        let mut text = String::new();
        let mut out = ctx.run_ui(state.take_egui_input(&win), |ui| {
            let _ = ui.button("OK");
            let _ = ui.button("Cancel");
            ui.checkbox(&mut checked, "Remember");
            ui.text_edit_singleline(&mut text);
        });
        let upd = out.platform_output.accesskit_update.take().unwrap();
        println!(
            "accesskit 0.25 TreeUpdate: {} nodes, focus {:?}",
            upd.nodes.len(),
            upd.focus
        );
        for (id, n) in &upd.nodes {
            println!("  {id:?} {:?} {:?}", n.role(), n.label());
        }
        for (id, deltas) in out.textures_delta.set.drain() {
            for d in deltas {
                painter.set_texture(id, &d);
            }
        }
        let prims = ctx.tessellate(out.shapes, out.pixels_per_point);
        painter.paint_primitives([w, h], out.pixels_per_point, &prims);
        surf.swap_buffers(&gctx).unwrap();
        println!("painted {} primitives", prims.len());
        painter.destroy();
        el.exit();
    }
    fn window_event(
        &mut self,
        _: &winit::event_loop::ActiveEventLoop,
        _: winit::window::WindowId,
        _: winit::event::WindowEvent,
    ) {
    }
}

fn main() {
    let el = winit::event_loop::EventLoop::new().unwrap();
    el.run_app(&mut Probe).unwrap();
}
