//! Test harness: a replica fed from a recorded fixture stream, and helpers
//! to send method calls through `handle_call` and decode the replies.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};

use accesskit::TreeUpdate;
use newton_atspi_shim::{handle_call, AppContext, DerivedModels, Handled, HostFacts};
use newton_cache::{AppReplica, ChangeSet, Limits};
use newton_push_protocol::{AppInfo, RecordedLine, SenderMessage, SurfaceId};
use serde::de::DeserializeOwned;
use serde::Serialize;
use zbus::message::{Flags, Message, Type as MessageType};
use zvariant::{DynamicType, Type};

pub const UNIQUE_NAME: &str = ":1.42";
pub const DESKTOP: (&str, &str) = (":1.0", "/org/a11y/atspi/accessible/root");
pub const ROOT: &str = "/org/a11y/atspi/accessible/root";
pub const CACHE: &str = "/org/a11y/atspi/cache";
pub const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";

/// A replica plus the rest of a recorded stream.
pub struct Harness {
    pub replica: AppReplica,
    pub info: AppInfo,
    pub app_id: i32,
    /// Kept text models and grids, dropped after each change as the daemon does.
    pub models: DerivedModels,
    pending: BTreeMap<SurfaceId, Vec<TreeUpdate>>,
    rest: VecDeque<RecordedLine>,
}

impl Harness {
    /// Feeds `lines` up to and including the commit with serial `serial`.
    pub fn from_stream(lines: Vec<RecordedLine>, serial: u64) -> Self {
        let mut rest: VecDeque<RecordedLine> = lines.into();
        let hello = rest
            .pop_front()
            .and_then(|line| line.hello)
            .expect("stream starts with a hello");
        let mut harness = Harness {
            replica: AppReplica::new(Limits::default()),
            info: hello.app,
            app_id: 0,
            models: DerivedModels::new(),
            pending: BTreeMap::new(),
            rest,
        };
        harness.advance_to(serial);
        harness
    }

    /// A replica with one focused surface 1 at (100, 50) holding `tree`.
    pub fn custom(tree: TreeUpdate) -> Self {
        let mut harness = Harness {
            replica: AppReplica::new(Limits::default()),
            info: AppInfo {
                app_id: "org.newton.tests".to_owned(),
                name: "Shim tests".to_owned(),
                pid: None,
                toolkit_name: Some("Newton".to_owned()),
                toolkit_version: Some("1.0".to_owned()),
            },
            app_id: 0,
            models: DerivedModels::new(),
            pending: BTreeMap::new(),
            rest: VecDeque::new(),
        };
        let surface = SurfaceId(1);
        harness.apply(SenderMessage::CreateSurface {
            surface,
            title: Some("Custom".to_owned()),
        });
        harness.apply(SenderMessage::Focus {
            surface: Some(surface),
        });
        let geometry = newton_push_protocol::Geometry {
            x: 100,
            y: 50,
            width: 800,
            height: 600,
            scale: 1.0,
        };
        harness.apply(SenderMessage::Geometry { surface, geometry });
        harness
            .replica
            .commit(surface, vec![tree], 0)
            .expect("tree accepted");
        harness
    }

    /// The `basic` fixture after its first frame.
    pub fn basic() -> Self {
        Self::from_stream(newton_fixtures::basic(), 1)
    }

    /// Applies lines until the commit `serial` is applied (serial 0: only
    /// the lines before the first update); returns every change set
    /// produced on the way.
    pub fn advance_to(&mut self, serial: u64) -> Vec<ChangeSet> {
        let mut changes = Vec::new();
        while let Some(line) = self.rest.pop_front() {
            if serial == 0 && matches!(line.message, Some(SenderMessage::Update { .. })) {
                self.rest.push_front(line);
                break;
            }
            let Some(message) = line.message else {
                continue;
            };
            let done = matches!(message, SenderMessage::Commit { serial: s, .. } if s == serial);
            changes.extend(self.apply(message));
            if done {
                break;
            }
        }
        changes
    }

    /// Applies lines up to and including the next commit; `None` once the
    /// stream has no commit left.
    pub fn next_commit(&mut self) -> Option<Vec<ChangeSet>> {
        let mut changes = Vec::new();
        while let Some(line) = self.rest.pop_front() {
            let Some(message) = line.message else {
                continue;
            };
            let is_commit = matches!(message, SenderMessage::Commit { .. });
            changes.extend(self.apply(message));
            if is_commit {
                return Some(changes);
            }
        }
        None
    }

    pub fn apply(&mut self, message: SenderMessage) -> Vec<ChangeSet> {
        let changes = self.apply_to_replica(message);
        self.models.retain_current(&self.replica);
        changes
    }

    fn apply_to_replica(&mut self, message: SenderMessage) -> Vec<ChangeSet> {
        match message {
            SenderMessage::CreateSurface { surface, title } => {
                self.replica
                    .create_surface(surface, title)
                    .expect("create surface");
                Vec::new()
            }
            SenderMessage::Update { surface, update } => {
                self.pending.entry(surface).or_default().push(update);
                Vec::new()
            }
            SenderMessage::Commit { surface, .. } => {
                let updates = self.pending.remove(&surface).unwrap_or_default();
                vec![self
                    .replica
                    .commit(surface, updates, 0)
                    .expect("commit accepted")]
            }
            SenderMessage::Focus { surface } => {
                self.replica.set_focused_surface(surface).expect("focus")
            }
            SenderMessage::Geometry { surface, geometry } => {
                self.replica
                    .set_geometry(surface, geometry)
                    .expect("geometry");
                Vec::new()
            }
            SenderMessage::DestroySurface { surface } => {
                vec![self.replica.destroy_surface(surface).expect("destroy")]
            }
            _ => Vec::new(),
        }
    }

    /// Commits one update on surface 1 directly.
    pub fn commit(&mut self, update: TreeUpdate) -> ChangeSet {
        let changes = self
            .replica
            .commit(SurfaceId(1), vec![update], 0)
            .expect("commit accepted");
        self.models.retain_current(&self.replica);
        changes
    }

    pub fn ctx(&self) -> AppContext<'_> {
        AppContext {
            replica: &self.replica,
            info: &self.info,
            unique_name: UNIQUE_NAME,
            desktop: Some(DESKTOP),
            app_id: self.app_id,
            host: &HOST,
            models: &self.models,
        }
    }

    /// Sends a call and returns what `handle_call` produced.
    pub fn handle<B: Serialize + DynamicType>(
        &self,
        path: &str,
        interface: &str,
        member: &str,
        body: &B,
    ) -> Handled {
        let call = method_call(path, Some(interface), member, body, false);
        handle_call(&self.ctx(), &call).expect("a reply")
    }

    /// Sends a call that must succeed and decodes its reply as `R`.
    pub fn ok<R, B>(&self, path: &str, interface: &str, member: &str, body: &B) -> R
    where
        R: DeserializeOwned + Type,
        B: Serialize + DynamicType,
    {
        let handled = self.handle(path, interface, member, body);
        let reply = handled.reply;
        assert_eq!(
            reply.message_type(),
            MessageType::MethodReturn,
            "{interface}.{member} on {path} failed: {:?} {:?}",
            reply.header().error_name().map(|n| n.to_string()),
            reply.body().deserialize::<String>().ok()
        );
        reply.body().deserialize::<R>().expect("reply decodes")
    }

    /// Sends a call that must fail; returns (error name, message).
    pub fn err<B: Serialize + DynamicType>(
        &self,
        path: &str,
        interface: &str,
        member: &str,
        body: &B,
    ) -> (String, String) {
        let reply = self.handle(path, interface, member, body).reply;
        assert_eq!(
            reply.message_type(),
            MessageType::Error,
            "{interface}.{member} on {path} should fail"
        );
        let name = reply
            .header()
            .error_name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        let text = reply.body().deserialize::<String>().unwrap_or_default();
        (name, text)
    }

    /// `Properties.Get` decoded as `R`.
    pub fn prop<R: TryFrom<zvariant::OwnedValue>>(
        &self,
        path: &str,
        interface: &str,
        name: &str,
    ) -> R {
        let value: zvariant::OwnedValue = self.ok(
            path,
            "org.freedesktop.DBus.Properties",
            "Get",
            &(interface, name),
        );
        R::try_from(value)
            .ok()
            .expect("property has the expected type")
    }
}

/// A full tree: `nodes[0]` is the root.
pub fn full_tree(
    nodes: Vec<(accesskit::NodeId, accesskit::Node)>,
    focus: accesskit::NodeId,
) -> TreeUpdate {
    let root = nodes.first().map(|(id, _)| *id).expect("a root");
    TreeUpdate {
        nodes,
        tree: Some(accesskit::TreeInfo::new(root)),
        tree_id: accesskit::TreeId::ROOT,
        focus,
    }
}

/// A node with a role, an optional label and bounds.
pub fn make(
    role: accesskit::Role,
    label: Option<&str>,
    bounds: (f64, f64, f64, f64),
) -> accesskit::Node {
    let mut node = accesskit::Node::new(role);
    if let Some(label) = label {
        node.set_label(label);
    }
    let (x, y, w, h) = bounds;
    node.set_bounds(accesskit::Rect::new(x, y, x + w, y + h));
    node
}

/// A method call as a client would send it.
pub fn method_call<B: Serialize + DynamicType>(
    path: &str,
    interface: Option<&str>,
    member: &str,
    body: &B,
    no_reply: bool,
) -> Message {
    let mut builder = Message::method_call(path, member).expect("valid path and member");
    if let Some(interface) = interface {
        builder = builder.interface(interface).expect("valid interface");
    }
    builder = builder.destination(UNIQUE_NAME).expect("valid destination");
    if no_reply {
        builder = builder.with_flags(Flags::NoReplyExpected).expect("flag");
    }
    builder.build(body).expect("message builds")
}

pub fn node(id: u64) -> String {
    format!("/org/a11y/atspi/accessible/1_{id}")
}

#[allow(unused_imports)] // not every test file decodes references
pub use newton_atspi_client::wire::ObjectRef as Ref;

pub fn node_ref(id: u64) -> Ref {
    (
        UNIQUE_NAME.to_owned(),
        zvariant::OwnedObjectPath::try_from(node(id)).expect("path"),
    )
}

#[allow(unused_imports)] // not every test file decodes cache items
pub use newton_atspi_client::wire::CacheItem;

/// Decoded event signal: (path, interface, member, detail, detail1, detail2).
pub type Event = (String, String, String, String, i32, i32);

pub fn decode_events(messages: &[Message]) -> Vec<Event> {
    messages
        .iter()
        .map(|m| {
            let header = m.header();
            let path = header.path().map(|p| p.to_string()).unwrap_or_default();
            let interface = header
                .interface()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let member = header.member().map(|i| i.to_string()).unwrap_or_default();
            let (detail, d1, d2) = if interface.starts_with("org.a11y.atspi.Event.") {
                let (detail, d1, d2, _any, _props): (
                    String,
                    i32,
                    i32,
                    zvariant::OwnedValue,
                    std::collections::HashMap<String, zvariant::OwnedValue>,
                ) = m.body().deserialize().expect("siiva{sv} body");
                (detail, d1, d2)
            } else {
                (String::new(), 0, 0)
            };
            (path, interface, member, detail, d1, d2)
        })
        .collect()
}

/// The event's any_data, decoded as `T`.
pub fn any_data<T: TryFrom<zvariant::OwnedValue>>(message: &Message) -> T {
    let (_, _, _, any, _): (
        String,
        i32,
        i32,
        zvariant::OwnedValue,
        std::collections::HashMap<String, zvariant::OwnedValue>,
    ) = message.body().deserialize().expect("siiva{sv} body");
    T::try_from(any)
        .ok()
        .expect("any_data has the expected type")
}

/// The "C" locale and the placeholder machine id: what a host without either
/// gives, and independent of the environment the tests run in.
static HOST: std::sync::LazyLock<HostFacts> = std::sync::LazyLock::new(HostFacts::default);
