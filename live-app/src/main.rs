//! A live application for the bridge: a real winit window (X11) with two
//! buttons, a check box and a single-line text field, driven by real keys,
//! made accessible through `newton-accesskit` (no accesskit_unix).
//!
//! Keys: Tab / Shift+Tab move focus; Space or Enter press the focused
//! button or toggle the check box; in the text field, typing inserts at the
//! caret, BackSpace deletes, Left/Right/Home/End move the caret. Every key
//! is first offered to the screen reader (`Adapter::key_event`); a key it
//! consumes is not acted on.
//!
//! What the application does is printed on stdout, one line per fact
//! (`focus Cancel`, `toggled true`, `text "ab" caret 2`, `consumed KP_Enter`,
//! `action Click on 3`), so tests can tell what it handled.
//!
//! `--stress FRAMES GO_FILE` instead updates a text node at 60 frames a
//! second for FRAMES frames once GO_FILE exists, then prints the adapter's
//! counters (the adapter test stops the bridge meanwhile).

#![forbid(unsafe_code)]

use std::io::Write;
use std::time::{Duration, Instant};

use accesskit::{
    Action, ActionData, ActionHandler, ActionRequest, ActivationHandler, DeactivationHandler, Node,
    NodeId, Rect, Role, TextPosition, TextSelection, Toggled, TreeId, TreeInfo, TreeUpdate,
};
use newton_accesskit::{Adapter, AppIdentity, KeyEvent, KeyEventKind};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, KeyEvent as WinitKeyEvent, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop, EventLoopProxy};
use winit::keyboard::{Key, ModifiersState, NamedKey};
use winit::platform::scancode::PhysicalKeyExtScancode;
use winit::window::{Window, WindowId};

const TITLE: &str = "Newton Live";
const WINDOW: NodeId = NodeId(0);
const OK: NodeId = NodeId(1);
const CANCEL: NodeId = NodeId(2);
const CHECK: NodeId = NodeId(3);
const NAME: NodeId = NodeId(4);
const NAME_RUN: NodeId = NodeId(5);
/// Tab order.
const FOCUSABLE: [NodeId; 4] = [OK, CANCEL, CHECK, NAME];
const CHAR_WIDTH: f64 = 8.0;

/// What the adapter's thread hands to the UI thread.
#[derive(Debug)]
enum UserEvent {
    /// An AT listens: the next update must be a full tree.
    InitialTreeRequested,
    Action(ActionRequest),
}

struct Activation(EventLoopProxy<UserEvent>);
impl ActivationHandler for Activation {
    fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
        // As accesskit_winit does: the tree lives on the UI thread.
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

/// The widgets' state.
struct Ui {
    focus: NodeId,
    checked: bool,
    text: Vec<char>,
    caret: usize,
}

impl Ui {
    fn new() -> Self {
        Self {
            focus: OK,
            checked: false,
            text: Vec::new(),
            caret: 0,
        }
    }

    fn tree(&self, full: bool) -> TreeUpdate {
        let text: String = self.text.iter().collect();
        let mut window = Node::new(Role::Window);
        window.set_label(TITLE);
        window.set_bounds(rect(0.0, 0.0, 400.0, 240.0));
        window.set_children(vec![OK, CANCEL, CHECK, NAME]);
        let mut nodes = vec![
            (WINDOW, window),
            (OK, button("OK", 20.0)),
            (CANCEL, button("Cancel", 120.0)),
            (CHECK, self.check_box()),
            (NAME, self.name_input(&text)),
            (NAME_RUN, name_run(&text)),
        ];
        if !full {
            nodes.retain(|(id, _)| *id != WINDOW);
        }
        TreeUpdate {
            nodes,
            tree: full.then(|| {
                let mut tree = TreeInfo::new(WINDOW);
                tree.toolkit_name = Some("winit".into());
                tree.toolkit_version = Some("0.30.13".into());
                tree
            }),
            tree_id: TreeId::ROOT,
            focus: self.focus,
        }
    }

    fn check_box(&self) -> Node {
        let mut node = Node::new(Role::CheckBox);
        node.set_label("Enable feature");
        node.set_bounds(rect(20.0, 70.0, 200.0, 24.0));
        node.set_toggled(if self.checked {
            Toggled::True
        } else {
            Toggled::False
        });
        node.add_action(Action::Click);
        node.add_action(Action::Focus);
        node
    }

    fn name_input(&self, text: &str) -> Node {
        let mut node = Node::new(Role::TextInput);
        node.set_label("Name");
        node.set_value(text);
        node.set_bounds(rect(20.0, 120.0, 200.0, 28.0));
        node.set_children(vec![NAME_RUN]);
        let caret = TextPosition {
            node: NAME_RUN,
            character_index: self.caret,
        };
        node.set_text_selection(TextSelection {
            anchor: caret,
            focus: caret,
        });
        node.add_action(Action::Focus);
        node.add_action(Action::SetTextSelection);
        node.add_action(Action::SetValue);
        node
    }

    fn move_focus(&mut self, backwards: bool) {
        let at = FOCUSABLE.iter().position(|n| *n == self.focus).unwrap_or(0);
        let len = FOCUSABLE.len();
        let next = if backwards {
            (at + len - 1) % len
        } else {
            (at + 1) % len
        };
        self.focus = FOCUSABLE[next];
        say(&format!("focus {}", name_of(self.focus)));
    }

    /// Space or Enter on the focused widget.
    fn activate(&mut self, node: NodeId) {
        match node {
            OK | CANCEL => say(&format!("activated {}", name_of(node))),
            CHECK => {
                self.checked = !self.checked;
                say(&format!("toggled {}", self.checked));
            }
            _ => {}
        }
    }

    fn insert(&mut self, text: &str) {
        for c in text.chars().filter(|c| !c.is_control()) {
            self.text.insert(self.caret, c);
            self.caret += 1;
        }
        self.say_text();
    }

    fn say_text(&self) {
        let text: String = self.text.iter().collect();
        say(&format!("text {text:?} caret {}", self.caret));
    }

    /// One pressed key the screen reader did not consume. Returns whether
    /// the UI changed.
    fn key(&mut self, key: &Key, text: Option<&str>, shift: bool) -> bool {
        let in_text = self.focus == NAME;
        match key {
            Key::Named(NamedKey::Tab) => self.move_focus(shift),
            Key::Named(NamedKey::Space | NamedKey::Enter) if !in_text => self.activate(self.focus),
            Key::Named(NamedKey::Backspace) if in_text && self.caret > 0 => {
                self.caret -= 1;
                self.text.remove(self.caret);
                self.say_text();
            }
            Key::Named(NamedKey::ArrowLeft) if in_text => {
                self.caret = self.caret.saturating_sub(1);
                self.say_text();
            }
            Key::Named(NamedKey::ArrowRight) if in_text => {
                self.caret = (self.caret + 1).min(self.text.len());
                self.say_text();
            }
            Key::Named(NamedKey::Home) if in_text => {
                self.caret = 0;
                self.say_text();
            }
            Key::Named(NamedKey::End) if in_text => {
                self.caret = self.text.len();
                self.say_text();
            }
            _ => match text {
                Some(text) if in_text && !text.chars().all(char::is_control) => self.insert(text),
                _ => return false,
            },
        }
        true
    }

    /// An AT's action request. Returns whether the UI changed.
    fn action(&mut self, request: ActionRequest) -> bool {
        say(&format!(
            "action {:?} on {}",
            request.action, request.target_node.0
        ));
        let node = request.target_node;
        match (request.action, request.data) {
            (Action::Click, _) => self.activate(node),
            (Action::Focus, _) if FOCUSABLE.contains(&node) => {
                self.focus = node;
                say(&format!("focus {}", name_of(node)));
            }
            (Action::SetValue, Some(ActionData::Value(value))) if node == NAME => {
                self.text = value.chars().collect();
                self.caret = self.caret.min(self.text.len());
                self.say_text();
            }
            (Action::SetTextSelection, Some(ActionData::SetTextSelection(selection)))
                if node == NAME || node == NAME_RUN =>
            {
                self.caret = selection.focus.character_index.min(self.text.len());
                self.say_text();
            }
            _ => return false,
        }
        true
    }
}

fn button(label: &str, x: f64) -> Node {
    let mut node = Node::new(Role::Button);
    node.set_label(label);
    node.set_bounds(rect(x, 20.0, 80.0, 30.0));
    node.add_action(Action::Click);
    node.add_action(Action::Focus);
    node
}

fn name_run(text: &str) -> Node {
    let mut node = Node::new(Role::TextRun);
    let count = text.chars().count();
    node.set_value(text);
    node.set_character_lengths(text.chars().map(|c| c.len_utf8() as u8).collect::<Vec<_>>());
    node.set_character_positions(
        (0..count)
            .map(|i| (i as f64 * CHAR_WIDTH) as f32)
            .collect::<Vec<_>>(),
    );
    node.set_character_widths(vec![CHAR_WIDTH as f32; count]);
    node.set_word_starts(word_starts(text));
    node.set_bounds(rect(24.0, 126.0, count as f64 * CHAR_WIDTH, 16.0));
    node
}

fn word_starts(text: &str) -> Vec<u8> {
    let mut starts = Vec::new();
    let mut after_space = true;
    for (index, c) in text.chars().enumerate() {
        if !c.is_whitespace() && after_space {
            if let Ok(index) = u8::try_from(index) {
                starts.push(index);
            }
        }
        after_space = c.is_whitespace();
    }
    starts
}

fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
    Rect {
        x0: x,
        y0: y,
        x1: x + width,
        y1: y + height,
    }
}

fn name_of(node: NodeId) -> &'static str {
    match node {
        OK => "OK",
        CANCEL => "Cancel",
        CHECK => "Enable feature",
        NAME => "Name",
        _ => "?",
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The X keysym of a winit key, as the screen reader's key bindings and key
/// echo expect it.
fn keysym(key: &Key) -> u32 {
    match key {
        Key::Named(named) => named_keysym(named),
        Key::Character(text) => text.chars().next().map_or(0, char_keysym),
        _ => 0,
    }
}

fn char_keysym(c: char) -> u32 {
    match u32::from(c) {
        code @ (0x20..=0x7e | 0xa0..=0xff) => code,
        code => 0x0100_0000 + code,
    }
}

fn named_keysym(key: &NamedKey) -> u32 {
    match key {
        NamedKey::Tab => 0xff09,
        NamedKey::Enter => 0xff0d,
        NamedKey::Space => 0x20,
        NamedKey::Backspace => 0xff08,
        NamedKey::Escape => 0xff1b,
        NamedKey::Delete => 0xffff,
        NamedKey::Home => 0xff50,
        NamedKey::ArrowLeft => 0xff51,
        NamedKey::ArrowUp => 0xff52,
        NamedKey::ArrowRight => 0xff53,
        NamedKey::ArrowDown => 0xff54,
        NamedKey::PageUp => 0xff55,
        NamedKey::PageDown => 0xff56,
        NamedKey::End => 0xff57,
        NamedKey::Insert => 0xff63,
        NamedKey::Shift => 0xffe1,
        NamedKey::Control => 0xffe3,
        NamedKey::Alt => 0xffe9,
        NamedKey::Super => 0xffeb,
        NamedKey::CapsLock => 0xffe5,
        NamedKey::NumLock => 0xff7f,
        NamedKey::F1 => 0xffbe,
        NamedKey::F2 => 0xffbf,
        NamedKey::F3 => 0xffc0,
        NamedKey::F4 => 0xffc1,
        NamedKey::F5 => 0xffc2,
        NamedKey::F6 => 0xffc3,
        NamedKey::F7 => 0xffc4,
        NamedKey::F8 => 0xffc5,
        NamedKey::F9 => 0xffc6,
        NamedKey::F10 => 0xffc7,
        NamedKey::F11 => 0xffc8,
        NamedKey::F12 => 0xffc9,
        _ => 0,
    }
}

/// The keypad's keys carry their own keysyms (KP_Enter, KP_Up, …), which
/// winit folds into the main keys' names: take them from the physical key.
fn keypad_keysym(physical: &winit::keyboard::PhysicalKey) -> Option<u32> {
    use winit::keyboard::{KeyCode, PhysicalKey};
    let PhysicalKey::Code(code) = physical else {
        return None;
    };
    Some(match code {
        KeyCode::NumpadEnter => 0xff8d,
        KeyCode::NumpadAdd => 0xffab,
        KeyCode::NumpadSubtract => 0xffad,
        KeyCode::NumpadMultiply => 0xffaa,
        KeyCode::NumpadDivide => 0xffaf,
        KeyCode::NumpadDecimal => 0xff9f,
        KeyCode::Numpad0 => 0xff9e,
        KeyCode::Numpad1 => 0xff9c,
        KeyCode::Numpad2 => 0xff99,
        KeyCode::Numpad3 => 0xff9b,
        KeyCode::Numpad4 => 0xff96,
        KeyCode::Numpad5 => 0xff9d,
        KeyCode::Numpad6 => 0xff98,
        KeyCode::Numpad7 => 0xff95,
        KeyCode::Numpad8 => 0xff97,
        KeyCode::Numpad9 => 0xff9a,
        _ => return None,
    })
}

fn x_modifiers(modifiers: ModifiersState) -> u16 {
    let mut mask = 0;
    if modifiers.shift_key() {
        mask |= 1;
    }
    if modifiers.control_key() {
        mask |= 4;
    }
    if modifiers.alt_key() {
        mask |= 8;
    }
    if modifiers.super_key() {
        mask |= 64;
    }
    mask
}

fn key_event(event: &WinitKeyEvent, modifiers: ModifiersState, started: Instant) -> KeyEvent {
    let keycode = event
        .physical_key
        .to_scancode()
        .map_or(0, |scancode| (scancode + 8) as u16);
    KeyEvent {
        kind: match event.state {
            ElementState::Pressed => KeyEventKind::Press,
            ElementState::Released => KeyEventKind::Release,
        },
        keysym: keypad_keysym(&event.physical_key).unwrap_or_else(|| keysym(&event.logical_key)),
        keycode,
        modifiers: x_modifiers(modifiers),
        text: event
            .text
            .as_ref()
            .map(|t| t.to_string())
            .or_else(|| match &event.logical_key {
                Key::Character(c) => Some(c.to_string()),
                _ => None,
            }),
        timestamp_ms: started.elapsed().as_millis() as u32,
    }
}

struct App {
    proxy: EventLoopProxy<UserEvent>,
    window: Option<Window>,
    adapter: Option<Adapter>,
    ui: Ui,
    modifiers: ModifiersState,
    started: Instant,
    full_tree_due: bool,
}

impl App {
    fn push(&mut self) {
        let Some(adapter) = self.adapter.as_mut() else {
            return;
        };
        let full = std::mem::take(&mut self.full_tree_due);
        let ui = &self.ui;
        adapter.update_if_active(|| ui.tree(full));
    }

    fn update_bounds(&mut self) {
        let (Some(window), Some(adapter)) = (&self.window, self.adapter.as_mut()) else {
            return;
        };
        let outer = window.outer_position().unwrap_or_default();
        let inner = window.inner_position().unwrap_or_default();
        let size = window.inner_size();
        let outer_size = window.outer_size();
        adapter.set_root_window_bounds(
            rect(
                outer.x.into(),
                outer.y.into(),
                outer_size.width.into(),
                outer_size.height.into(),
            ),
            rect(
                inner.x.into(),
                inner.y.into(),
                size.width.into(),
                size.height.into(),
            ),
        );
    }
}

impl ApplicationHandler<UserEvent> for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() {
            return;
        }
        let attributes = Window::default_attributes()
            .with_title(TITLE)
            .with_inner_size(winit::dpi::LogicalSize::new(400.0, 240.0))
            // As accesskit_winit: the window appears once the adapter exists.
            .with_visible(false);
        let window = match event_loop.create_window(attributes) {
            Ok(window) => window,
            Err(error) => {
                eprintln!("newton-live-app: cannot create the window: {error}");
                event_loop.exit();
                return;
            }
        };
        self.adapter = Some(Adapter::with_title(
            Some(TITLE.into()),
            Activation(self.proxy.clone()),
            Actions(self.proxy.clone()),
            Deactivation,
        ));
        window.set_visible(true);
        self.window = Some(window);
        self.update_bounds();
        say("window shown");
    }

    fn user_event(&mut self, _: &ActiveEventLoop, event: UserEvent) {
        match event {
            UserEvent::InitialTreeRequested => {
                self.full_tree_due = true;
                say("tree requested");
            }
            UserEvent::Action(request) => {
                self.ui.action(request);
            }
        }
        self.push();
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Focused(focused) => {
                if let Some(adapter) = self.adapter.as_mut() {
                    adapter.update_window_focus_state(focused);
                }
                say(&format!("window focused {focused}"));
            }
            WindowEvent::Moved(_) | WindowEvent::Resized(_) => self.update_bounds(),
            WindowEvent::ModifiersChanged(modifiers) => self.modifiers = modifiers.state(),
            WindowEvent::KeyboardInput { event, .. } => {
                let forwarded = key_event(&event, self.modifiers, self.started);
                let consumed = self
                    .adapter
                    .as_ref()
                    .is_some_and(|adapter| adapter.key_event(forwarded.clone()));
                if consumed {
                    if event.state == ElementState::Pressed {
                        say(&format!("consumed keysym {:#x}", forwarded.keysym));
                    }
                    return;
                }
                if event.state != ElementState::Pressed {
                    return;
                }
                let shift = self.modifiers.shift_key();
                if self
                    .ui
                    .key(&event.logical_key, event.text.as_deref(), shift)
                {
                    self.push();
                } else {
                    say(&format!("ignored keysym {:#x}", forwarded.keysym));
                }
            }
            _ => {}
        }
    }
}

/// `--stress FRAMES GO_FILE`: one window whose text node changes every
/// frame at 60 fps. Prints "stress ready" once its first tree went out,
/// waits for GO_FILE to exist, runs the frames, prints the counters, then
/// idles (the adapter keeps writing) until killed.
fn stress(frames: u64, go_file: &std::path::Path) {
    struct Full;
    impl ActivationHandler for Full {
        fn request_initial_tree(&mut self) -> Option<TreeUpdate> {
            Some(stress_tree(0, true))
        }
    }
    struct NoActions;
    impl ActionHandler for NoActions {
        fn do_action(&mut self, _: ActionRequest) {}
    }
    let mut adapter = Adapter::with_title(Some(TITLE.into()), Full, NoActions, Deactivation);
    adapter.update_window_focus_state(true);
    while adapter.stats().updates_sent == 0 {
        std::thread::sleep(Duration::from_millis(10));
    }
    say("stress ready");
    while !go_file.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let frame_time = Duration::from_micros(16_667);
    let mut slowest = Duration::ZERO;
    let started = Instant::now();
    for frame in 1..=frames {
        let before = Instant::now();
        adapter.update_if_active(|| stress_tree(frame, false));
        slowest = slowest.max(before.elapsed());
        let next = started + frame_time * frame as u32;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let stats = adapter.stats();
    say(&format!(
        "stress done frames={frames} built={} skipped={} max_queued={} collapses={} sent={} \
         initial_trees={} slowest_call_us={}",
        stats.updates_built,
        stats.updates_skipped,
        stats.max_queued,
        stats.collapses,
        stats.updates_sent,
        stats.initial_trees,
        slowest.as_micros()
    ));
    // The adapter asks for a full tree once the bridge reads again; it
    // must show the last frame, which the activation handler cannot know:
    // keep the last frame current by updating it once a second.
    loop {
        std::thread::sleep(Duration::from_secs(1));
        adapter.update_if_active(|| stress_tree(frames, false));
    }
}

/// A window holding one 4 KiB label that names the frame: large enough that
/// a stopped bridge fills the socket's buffers within a few seconds.
fn stress_tree(frame: u64, full: bool) -> TreeUpdate {
    let mut window = Node::new(Role::Window);
    window.set_label("Stress");
    window.set_children(vec![NodeId(1)]);
    let mut label = Node::new(Role::Label);
    label.set_value(format!("frame {frame} {}", "x".repeat(4096)));
    let mut nodes = vec![(NodeId(1), label)];
    if full {
        nodes.insert(0, (WINDOW, window));
    }
    TreeUpdate {
        nodes,
        tree: full.then(|| TreeInfo::new(WINDOW)),
        tree_id: TreeId::ROOT,
        focus: WINDOW,
    }
}

fn main() {
    let _ = newton_accesskit::set_app_identity(AppIdentity {
        app_id: Some("org.newton.LiveApp".into()),
        name: Some(TITLE.into()),
        toolkit_name: Some("winit".into()),
        toolkit_version: Some("0.30.13".into()),
    });
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, frames, go_file] = &args[..] {
        if flag == "--stress" {
            match frames.parse() {
                Ok(frames) => return stress(frames, std::path::Path::new(go_file)),
                Err(_) => {
                    eprintln!("usage: newton-live-app [--stress FRAMES GO_FILE]");
                    std::process::exit(2);
                }
            }
        }
    }
    let event_loop = match EventLoop::<UserEvent>::with_user_event().build() {
        Ok(event_loop) => event_loop,
        Err(error) => {
            eprintln!("newton-live-app: cannot open the display ({error}); is DISPLAY set?");
            std::process::exit(1);
        }
    };
    let mut app = App {
        proxy: event_loop.create_proxy(),
        window: None,
        adapter: None,
        ui: Ui::new(),
        modifiers: ModifiersState::empty(),
        started: Instant::now(),
        full_tree_due: false,
    };
    if let Err(error) = event_loop.run_app(&mut app) {
        eprintln!("newton-live-app: the event loop failed: {error}");
        std::process::exit(1);
    }
}
