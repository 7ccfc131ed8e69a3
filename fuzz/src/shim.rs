//! The `atspi_calls` harness: structured AT-SPI method calls, as an AT
//! client could send them, answered by `newton_atspi_shim::handle_call` from
//! a replica — one of the committed fixtures (generated and egui
//! recordings, at their first, middle and last commit) or a tree built from
//! the input. No bus: calls are `zbus::Message`s built in process.
//!
//! Each call picks a path (an exposed node, the app root, the cache, a
//! hyperlink object, a foreign surface, an unexposed or unknown node, or a
//! non-canonical path), an interface (mostly real ones, sometimes none or a
//! bogus one), a member (mostly one of that interface's) and arguments of
//! the member's signature (sometimes another signature) with values near
//! the object's counts and offsets, at the i32 extremes, and enum values out
//! of range.
//!
//! Checked for every call: the answer is a method return or a D-Bus error
//! replying to the call (none only for NO_REPLY_EXPECTED). Checked on the
//! target node after each call (cheap invariants): `ChildCount` equals the
//! length of `GetChildren`; `GetChildAtIndex(i)` answers the `i`-th of them,
//! whose `GetIndexInParent` is `i` and whose `Parent` is the node; indices
//! out of range are errors; for Text: `GetText(0, -1)` has `CharacterCount`
//! characters, the caret is in `-1..=count`, the selection and every
//! `Get*AtOffset`/`GetStringAtOffset`/`GetAttributeRun` range lies in
//! `0..=count` with text of the range's length (or is `-1, -1` outside);
//! hyperlinks of a Hypertext lie in the text.

use std::collections::HashMap;
use std::sync::OnceLock;

use accesskit::{NodeId, Role, TreeUpdate};
use newton_atspi_shim::{declared, handle_call, AppContext, DerivedModels, HostFacts};
use newton_cache::{AppReplica, Limits};
use newton_push_protocol::{AppInfo, Geometry, RecordedLine, SenderMessage, SurfaceId};
use serde::de::DeserializeOwned;
use serde::Serialize;
use zbus::message::{Flags, Message, Type as MessageType};
use zvariant::{DynamicType, OwnedObjectPath, OwnedValue, Type, Value};

use crate::input::Input;
use crate::trees::{edit_from_input, tree_from_input};

const UNIQUE_NAME: &str = ":1.42";
const DESKTOP: (&str, &str) = (":1.0", "/org/a11y/atspi/accessible/root");
const NODE_PREFIX: &str = "/org/a11y/atspi/accessible/";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
const TEXT: &str = "org.a11y.atspi.Text";
const HYPERTEXT: &str = "org.a11y.atspi.Hypertext";
const HYPERLINK: &str = "org.a11y.atspi.Hyperlink";

/// The fixtures the calls are answered from (compiled in, so the harness
/// needs no working directory).
const FIXTURES: &[(&str, &str)] = &[
    (
        "basic",
        include_str!("../../fixtures/generated-small/basic.jsonl"),
    ),
    (
        "doc-small",
        include_str!("../../fixtures/generated-small/doc-small.jsonl"),
    ),
    (
        "grid-small",
        include_str!("../../fixtures/generated-small/grid-small.jsonl"),
    ),
    (
        "egui-form-focus",
        include_str!("../../fixtures/egui/egui-form-focus.jsonl"),
    ),
    (
        "egui-widgets",
        include_str!("../../fixtures/egui/egui-widgets.jsonl"),
    ),
    (
        "egui-demo-tour",
        include_str!("../../fixtures/egui/egui-demo-tour.jsonl"),
    ),
];

/// A replica with the paths worth calling on.
pub struct Subject {
    pub name: String,
    pub replica: AppReplica,
    pub info: AppInfo,
    /// Kept text models and grids, as the daemon keeps per application.
    pub models: DerivedModels,
    /// Exposed nodes: (surface, node id).
    pub exposed: Vec<(u32, u64)>,
    /// Nodes that exist but are not exposed (text runs, hidden nodes).
    pub unexposed: Vec<(u32, u64)>,
}

impl Subject {
    fn ctx(&self) -> AppContext<'_> {
        AppContext {
            replica: &self.replica,
            info: &self.info,
            unique_name: UNIQUE_NAME,
            desktop: Some(DESKTOP),
            app_id: 3,
            host: &HOST,
            models: &self.models,
        }
    }

    fn from_replica(name: String, replica: AppReplica, info: AppInfo) -> Self {
        let mut exposed = Vec::new();
        let mut unexposed = Vec::new();
        for surface in replica.surfaces() {
            let Some(tree) = surface.tree() else { continue };
            let mut stack = vec![tree.state().root()];
            while let Some(node) = stack.pop() {
                let id = (surface.id().0, node.locate().0 .0);
                if node.role() == Role::TextRun || node.is_hidden() {
                    unexposed.push(id);
                } else {
                    exposed.push(id);
                }
                stack.extend(node.children());
            }
        }
        Self {
            name,
            replica,
            info,
            models: DerivedModels::new(),
            exposed,
            unexposed,
        }
    }
}

/// Replays a fixture up to its `commits`-th commit (all of them for
/// `usize::MAX`). Messages the replica refuses are skipped.
fn replay(text: &str, commits: usize) -> (AppReplica, AppInfo, usize) {
    let mut replica = AppReplica::new(Limits::default());
    let mut info = AppInfo::default();
    let mut pending: HashMap<SurfaceId, Vec<TreeUpdate>> = HashMap::new();
    let mut done = 0;
    for line in text.lines() {
        let Ok(line) = serde_json::from_str::<RecordedLine>(line) else {
            continue;
        };
        if let Some(hello) = line.hello {
            info = hello.app;
        }
        let Some(message) = line.message else {
            continue;
        };
        match message {
            SenderMessage::CreateSurface { surface, title } => {
                let _ = replica.create_surface(surface, title);
            }
            SenderMessage::Update { surface, update } => {
                pending.entry(surface).or_default().push(update)
            }
            SenderMessage::Commit { surface, .. } => {
                let updates = pending.remove(&surface).unwrap_or_default();
                let _ = replica.commit(surface, updates, 0);
                done += 1;
                if done >= commits {
                    break;
                }
            }
            SenderMessage::Focus { surface } => {
                let _ = replica.set_focused_surface(surface);
            }
            SenderMessage::Geometry { surface, geometry } => {
                let _ = replica.set_geometry(surface, geometry);
            }
            SenderMessage::DestroySurface { surface } => {
                let _ = replica.destroy_surface(surface);
            }
            _ => {}
        }
    }
    (replica, info, done)
}

/// Every fixture at its first, middle and last commit; built once.
pub fn fixture_subjects() -> &'static [Subject] {
    static SUBJECTS: OnceLock<Vec<Subject>> = OnceLock::new();
    SUBJECTS.get_or_init(|| {
        let mut out = Vec::new();
        for (name, text) in FIXTURES {
            let (last, info, total) = replay(text, usize::MAX);
            for at in [1, total / 2] {
                if at >= 1 && at < total {
                    let (replica, info, _) = replay(text, at);
                    out.push(Subject::from_replica(format!("{name}@{at}"), replica, info));
                }
            }
            out.push(Subject::from_replica(format!("{name}@{total}"), last, info));
        }
        out
    })
}

/// A replica holding a tree built from the input (and a few edits), on
/// surface 1 at a geometry from the input; `None` when the validator
/// refuses the tree.
fn fuzzed_subject(input: &mut Input) -> Option<Subject> {
    let mut replica = AppReplica::new(Limits::default());
    let surface = SurfaceId(1);
    replica
        .create_surface(surface, Some("Fuzzed".into()))
        .ok()?;
    let _ = replica.set_focused_surface(Some(surface));
    let geometry = Geometry {
        x: input.i32_near(100),
        y: input.i32_near(50),
        width: 800,
        height: 600,
        scale: input.pick(&[1.0, 1.0, 2.0, 0.5, 1e-9, 1e9], 1.0),
    };
    let _ = replica.set_geometry(surface, geometry);
    let tree = tree_from_input(input);
    replica.commit(surface, vec![tree.clone()], 0).ok()?;
    for _ in 0..input.below(3) {
        let _ = replica.commit(surface, vec![edit_from_input(input, &tree)], 0);
    }
    if input.one_in(4) {
        // A second surface, so surface-level indices matter.
        let second = SurfaceId(2);
        if replica.create_surface(second, None).is_ok() {
            let _ = replica.commit(second, vec![tree_from_input(input)], 0);
        }
    }
    // A web engine's name selects the per-block text layout (text/blocks.rs).
    let toolkit_name = input.one_in(2).then(|| "Chromium".to_owned());
    let info = AppInfo {
        app_id: "org.newton.fuzz".into(),
        name: "Fuzz".into(),
        pid: None,
        toolkit_name,
        toolkit_version: None,
    };
    Some(Subject::from_replica("fuzzed".into(), replica, info))
}

/// What one input did, for statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallOutcome {
    pub calls: u64,
    pub returns: u64,
    pub errors: u64,
    /// Calls the message builder refused (not deliverable by a bus).
    pub unbuildable: u64,
}

/// The fuzz entry point.
pub fn atspi_calls(data: &[u8]) -> CallOutcome {
    let mut input = Input::new(data);
    let choice = input.byte();
    let fuzzed;
    let subject = if choice.is_multiple_of(2) {
        fuzzed = fuzzed_subject(&mut input);
        match &fuzzed {
            Some(subject) => subject,
            None => return CallOutcome::default(),
        }
    } else {
        let all = fixture_subjects();
        match all.get(usize::from(choice / 2) % all.len().max(1)) {
            Some(subject) => subject,
            None => return CallOutcome::default(),
        }
    };
    let trace = std::env::var_os("NEWTON_FUZZ_TRACE_CALLS").is_some();
    if trace {
        eprintln!("subject {}:\n{}", subject.name, subject.replica.dump());
    }
    let mut outcome = CallOutcome::default();
    for _ in 0..1 + input.below(24) {
        if input.is_empty() {
            break;
        }
        one_call(subject, &mut input, &mut outcome);
    }
    outcome
}

/// Argument shapes of the members the shim answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sig {
    None,
    I,
    U,
    S,
    Ii,
    Iu,
    Ib,
    Is,
    Iii,
    Iiu,
    Uii,
    Isi,
    Iiuii,
    Iiiiu,
    Iiiiuuu,
    Ss,
    Ssv,
    Matches,
    MatchesFrom,
    MatchesTo,
    Selections,
}

const ALL_SIGS: &[Sig] = &[
    Sig::None,
    Sig::I,
    Sig::U,
    Sig::S,
    Sig::Ii,
    Sig::Iu,
    Sig::Ib,
    Sig::Is,
    Sig::Iii,
    Sig::Iiu,
    Sig::Uii,
    Sig::Isi,
    Sig::Iiuii,
    Sig::Iiiiu,
    Sig::Iiiiuuu,
    Sig::Ss,
    Sig::Ssv,
    Sig::Matches,
    Sig::MatchesFrom,
    Sig::MatchesTo,
    Sig::Selections,
];

/// The members a call may name, by interface: every method of the shim's own declarations
/// (`newton_atspi_shim::declared::interfaces`, so a member declared there is fuzzed without a
/// change here), then the standard D-Bus interfaces every object answers, which the
/// declarations do not cover.
type MemberTable = Vec<(&'static str, Vec<(&'static str, Sig)>)>;

const STANDARD_METHODS: &[(&str, &[(&str, Sig)])] = &[
    (
        PROPERTIES,
        &[("Get", Sig::Ss), ("GetAll", Sig::S), ("Set", Sig::Ssv)],
    ),
    (
        "org.freedesktop.DBus.Peer",
        &[("Ping", Sig::None), ("GetMachineId", Sig::None)],
    ),
    (
        "org.freedesktop.DBus.Introspectable",
        &[("Introspect", Sig::None)],
    ),
];

fn methods() -> &'static MemberTable {
    static METHODS: OnceLock<MemberTable> = OnceLock::new();
    METHODS.get_or_init(|| {
        let declared = declared::interfaces().into_iter().map(|interface| {
            let members = interface.methods.iter().map(|method| {
                let args: String = method
                    .inputs
                    .iter()
                    .map(|a| a.signature.to_string())
                    .collect();
                // A body of several arguments shows its signature as one structure.
                let signature = if method.inputs.len() > 1 {
                    format!("({args})")
                } else {
                    args
                };
                let sig = Sig::with_signature(&signature).unwrap_or_else(|| {
                    panic!(
                        "the shim declares {}.{} with arguments ({signature}), which the \
                         atspi_calls harness cannot build: add a Sig for them (fuzz/src/shim.rs)",
                        interface.name, method.name
                    )
                });
                (method.name, sig)
            });
            (interface.name, members.collect())
        });
        let standard = STANDARD_METHODS
            .iter()
            .map(|(interface, members)| (*interface, members.to_vec()));
        declared.chain(standard).collect()
    })
}

impl Sig {
    /// The shape whose calls carry `signature` (the concatenated argument signatures of a
    /// declared method), found by building one call of each shape.
    fn with_signature(signature: &str) -> Option<Sig> {
        ALL_SIGS
            .iter()
            .copied()
            .find(|sig| sig.signature().as_deref() == Some(signature))
    }

    /// The body signature of this shape's calls.
    fn signature(self) -> Option<String> {
        let builder = method_call("/", None, "Probe", false).ok()?;
        let hints = Hints {
            near: 0,
            some_path: "/".to_owned(),
        };
        let call = build(builder, self, &mut Input::new(&[]), &hints).ok()?;
        Some(call.body().signature().to_string())
    }
}

/// Every declared property's name, for `Properties.Get`/`Set` calls on any interface, and a
/// few that no interface has (the declarations again: a property declared there is fuzzed).
fn property_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<&'static str> = declared::interfaces()
            .iter()
            .flat_map(|interface| interface.properties.iter().map(|p| p.name))
            .chain(UNDECLARED_PROPERTY_NAMES.iter().copied())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    })
}

/// Property names no declaration has: one that does not exist, an empty one, and Table's as
/// older interface definitions spell them (`nRows`: found in any case, see
/// `Interface::property_names_any_case`).
const UNDECLARED_PROPERTY_NAMES: &[&str] = &["Bogus", "", "nRows", "nColumns"];

/// A path to call: mostly exposed nodes; the node id chosen is returned
/// when the path is an exposed node.
fn pick_path(subject: &Subject, input: &mut Input) -> (String, Option<(u32, u64)>) {
    let node = |s: u32, n: u64| format!("{NODE_PREFIX}{s}_{n}");
    match input.byte() % 16 {
        0..=8 => match subject
            .exposed
            .get(input.below(subject.exposed.len()))
            .copied()
        {
            Some((s, n)) => (node(s, n), Some((s, n))),
            None => ("/org/a11y/atspi/accessible/root".into(), None),
        },
        9 => ("/org/a11y/atspi/accessible/root".into(), None),
        10 => ("/org/a11y/atspi/cache".into(), None),
        11 => {
            let (s, n) = subject
                .exposed
                .get(input.below(subject.exposed.len()))
                .copied()
                .unwrap_or((1, 0));
            (format!("{}_hyperlink", node(s, n)), None)
        }
        12 => {
            let (s, n) = subject
                .unexposed
                .get(input.below(subject.unexposed.len()))
                .copied()
                .unwrap_or((1, 999_999));
            (node(s, n), None)
        }
        13 => {
            let (s, n) = subject
                .exposed
                .get(input.below(subject.exposed.len()))
                .copied()
                .unwrap_or((1, 0));
            // A foreign surface, or an unknown node.
            if input.one_in(2) {
                (node(s.wrapping_add(7), n), None)
            } else {
                (node(s, n.wrapping_add(1_000_003)), None)
            }
        }
        _ => (
            input.string(&[
                "/",
                "/org/a11y/atspi/accessible/01_2",
                "/org/a11y/atspi/accessible/1_02",
                "/org/a11y/atspi/accessible/1_",
                "/org/a11y/atspi/accessible/_1",
                "/org/a11y/atspi/accessible/1_1_hyperlink_hyperlink",
                "/org/a11y/atspi/accessible/4294967296_1",
                "/org/a11y/atspi/accessible/1_18446744073709551616",
                "/org/a11y/atspi/accessible/1_18446744073709551615",
                "/org/a11y/atspi/null",
                "/org/a11y/atspi",
                "/org/a11y/atspi/accessible",
                "/org/a11y/atspi/accessible/root/x",
            ]),
            None,
        ),
    }
}

/// `own`: the interfaces the object implements (its `GetInterfaces`), which
/// are chosen three times in four when known.
fn pick_interface_and_member(input: &mut Input, own: &[String]) -> (Option<String>, String, Sig) {
    let mine = (!own.is_empty() && !input.one_in(4))
        .then(|| own.get(input.below(own.len())))
        .flatten()
        .and_then(|name| methods().iter().find(|(n, _)| n == name));
    let (interface, members) = mine
        .or_else(|| methods().get(input.below(methods().len())))
        .map(|(interface, members)| (*interface, members.as_slice()))
        .unwrap_or((ACCESSIBLE, &[]));
    let (member, sig) = if members.is_empty() || input.one_in(16) {
        (
            input.string(&["Bogus", "GetChildAtIndex", "Get", "Introspect"]),
            input.pick(ALL_SIGS, Sig::None),
        )
    } else {
        members
            .get(input.below(members.len()))
            .map(|(member, sig)| ((*member).to_owned(), *sig))
            .unwrap_or(("GetRole".to_owned(), Sig::None))
    };
    // Another signature than the member's now and then.
    let sig = if input.one_in(12) {
        input.pick(ALL_SIGS, Sig::None)
    } else {
        sig
    };
    let interface = match input.byte() % 24 {
        0 => None,
        1 => Some(input.string(&["org.a11y.atspi.Bogus", "org.a11y.atspi.accessible"])),
        _ => Some(interface.to_owned()),
    };
    (interface, member, sig)
}

type Ref = (String, OwnedObjectPath);

fn object_path(text: &str) -> OwnedObjectPath {
    OwnedObjectPath::try_from(text)
        .or_else(|_| OwnedObjectPath::try_from("/"))
        .unwrap_or_default()
}

/// One match rule `(aiia{ss}iaiiasib)`.
type WireRule = (
    Vec<i32>,
    i32,
    HashMap<String, String>,
    i32,
    Vec<i32>,
    i32,
    Vec<String>,
    i32,
    bool,
);

fn match_type(input: &mut Input) -> i32 {
    match input.byte() % 8 {
        0..=5 => i32::from(input.byte() % 5),
        6 => input.pick(&[-1, 5, 6, i32::MAX, i32::MIN], -1),
        _ => input.u32() as i32,
    }
}

fn rule(input: &mut Input) -> WireRule {
    let states: Vec<i32> = (0..input.below(4))
        .map(|_| match input.byte() % 4 {
            0 => -1,
            1 => 0,
            _ => input.u32() as i32,
        })
        .collect();
    let mut attributes = HashMap::new();
    for _ in 0..input.below(3) {
        attributes.insert(
            input.string(&["toolkit", "level", "xml-roles", "tag", "", "class"]),
            input.string(&["egui", "1", "heading:button", "a\\:b", ":", "", "\\"]),
        );
    }
    let roles: Vec<i32> = (0..input.below(6))
        .map(|_| match input.byte() % 4 {
            0 => -1,
            1 => 1 << input.below(31),
            _ => input.u32() as i32,
        })
        .collect();
    let interfaces: Vec<String> = (0..input.below(3))
        .map(|_| {
            input.string(&[
                "text",
                "Action(click)",
                "action(",
                "action()",
                "table",
                "EditableText",
                "hyperlink",
                "",
                "(",
            ])
        })
        .collect();
    (
        states,
        match_type(input),
        attributes,
        match_type(input),
        roles,
        match_type(input),
        interfaces,
        match_type(input),
        input.one_in(2),
    )
}

fn any_value(input: &mut Input) -> Value<'static> {
    match input.byte() % 6 {
        0 => Value::from(input.i32_near(0)),
        1 => Value::from(input.pick(&[0.5, f64::NAN, f64::INFINITY, -1e300, 3.0], 0.0)),
        2 => Value::from(input.string(&["x", ""])),
        3 => Value::from(input.one_in(2)),
        4 => Value::from(input.u32()),
        _ => Value::from(input.byte()),
    }
}

/// What the arguments refer to, for the checks after the call.
struct Hints {
    /// An offset or index near which the arguments were chosen.
    near: i32,
    /// A node path of the subject (for `current` arguments).
    some_path: String,
}

fn build(
    builder: zbus::message::Builder<'_>,
    sig: Sig,
    input: &mut Input,
    hints: &Hints,
) -> zbus::Result<Message> {
    let i = |input: &mut Input| input.i32_near(hints.near);
    let coord = |input: &mut Input| input.enum_u32(3);
    let reference = |input: &mut Input| -> Ref {
        let path = if input.one_in(4) {
            input.string(&["/", "/org/a11y/atspi/accessible/1_1"])
        } else {
            hints.some_path.clone()
        };
        let name = if input.one_in(4) { ":1.7" } else { UNIQUE_NAME };
        (name.to_owned(), object_path(&path))
    };
    match sig {
        Sig::None => builder.build(&()),
        Sig::I => builder.build(&(i(input),)),
        Sig::U => builder.build(&(input.enum_u32(8),)),
        Sig::S => builder.build(&(input.string(&[TEXT, ACCESSIBLE, "Title", "URI", ""]),)),
        Sig::Ii => builder.build(&(i(input), i(input))),
        Sig::Iu => builder.build(&(i(input), input.enum_u32(8))),
        Sig::Ib => builder.build(&(i(input), input.one_in(2))),
        Sig::Is => builder.build(&(
            i(input),
            input.string(&["weight", "invalid", "fg-color", ""]),
        )),
        Sig::Iii => builder.build(&(i(input), i(input), i(input))),
        Sig::Iiu => builder.build(&(i(input), i(input), coord(input))),
        Sig::Uii => builder.build(&(coord(input), i(input), i(input))),
        Sig::Isi => builder.build(&(i(input), input.string(&["x", "€\u{1F600}", ""]), i(input))),
        Sig::Iiuii => builder.build(&(i(input), i(input), coord(input), i(input), i(input))),
        Sig::Iiiiu => builder.build(&(i(input), i(input), i(input), i(input), coord(input))),
        Sig::Iiiiuuu => builder.build(&(
            i(input),
            i(input),
            i(input),
            i(input),
            coord(input),
            input.enum_u32(3),
            input.enum_u32(3),
        )),
        Sig::Ss => {
            let interface = pick_interface_name(input);
            builder.build(&(interface, input.string(property_names())))
        }
        Sig::Ssv => {
            let interface = pick_interface_name(input);
            let name = input.string(property_names());
            builder.build(&(interface, name, any_value(input)))
        }
        Sig::Matches => builder.build(&(
            rule(input),
            input.enum_u32(6),
            input.i32_near(0),
            input.one_in(2),
        )),
        Sig::MatchesFrom => {
            let current = reference(input).1;
            builder.build(&(
                current,
                rule(input),
                input.enum_u32(6),
                input.enum_u32(3),
                input.i32_near(0),
                input.one_in(2),
            ))
        }
        Sig::MatchesTo => {
            let current = reference(input).1;
            builder.build(&(
                current,
                rule(input),
                input.enum_u32(6),
                input.enum_u32(3),
                input.one_in(2),
                input.i32_near(0),
                input.one_in(2),
            ))
        }
        Sig::Selections => {
            let selections: Vec<(Ref, i32, Ref, i32, bool)> = (0..input.below(3))
                .map(|_| {
                    (
                        reference(input),
                        i(input),
                        reference(input),
                        i(input),
                        input.one_in(2),
                    )
                })
                .collect();
            builder.build(&(selections,))
        }
    }
}

fn pick_interface_name(input: &mut Input) -> String {
    if input.one_in(10) {
        return input.string(&["org.a11y.atspi.Bogus", ""]);
    }
    methods()
        .get(input.below(methods().len()))
        .map(|(name, _)| (*name).to_owned())
        .unwrap_or_default()
}

fn method_call(
    path: &str,
    interface: Option<&str>,
    member: &str,
    no_reply: bool,
) -> zbus::Result<zbus::message::Builder<'static>> {
    let mut builder = Message::method_call(path.to_owned(), member.to_owned())?;
    if let Some(interface) = interface {
        builder = builder.interface(interface.to_owned())?;
    }
    builder = builder.destination(UNIQUE_NAME)?.sender(":1.7")?;
    if no_reply {
        builder = builder.with_flags(Flags::NoReplyExpected)?;
    }
    Ok(builder)
}

fn one_call(subject: &Subject, input: &mut Input, outcome: &mut CallOutcome) {
    let (path, node) = pick_path(subject, input);
    let own: Vec<String> = if node.is_some() {
        let caller = Caller { subject };
        let mut own: Vec<String> = caller
            .ok(&path, ACCESSIBLE, "GetInterfaces", &())
            .unwrap_or_default();
        own.push(PROPERTIES.to_owned());
        own
    } else {
        Vec::new()
    };
    let (interface, member, sig) = pick_interface_and_member(input, &own);
    let no_reply = input.one_in(16);
    let some_path = subject
        .exposed
        .get(input.below(subject.exposed.len()))
        .map(|(s, n)| format!("{NODE_PREFIX}{s}_{n}"))
        .unwrap_or_else(|| "/org/a11y/atspi/accessible/root".into());
    let near = input.i32_near(0).clamp(-4, 64);
    let hints = Hints { near, some_path };
    let Ok(builder) = method_call(&path, interface.as_deref(), &member, no_reply) else {
        outcome.unbuildable += 1;
        return;
    };
    let Ok(call) = build(builder, sig, input, &hints) else {
        outcome.unbuildable += 1;
        return;
    };
    let ctx = subject.ctx();
    outcome.calls += 1;
    if std::env::var_os("NEWTON_FUZZ_TRACE_CALLS").is_some() {
        eprintln!(
            "call {interface:?}.{member} on {path} ({sig:?}): {:?}",
            call.body().signature().to_string()
        );
    }
    let handled = handle_call(&ctx, &call);
    if no_reply {
        if let Some(handled) = &handled {
            assert!(
                !handled.reply_wanted,
                "a NO_REPLY_EXPECTED call wants its reply sent"
            );
        }
    } else {
        let Some(handled) = handled else {
            panic!("{interface:?}.{member} on {path}: no answer to a method call");
        };
        check_reply(&call, &handled.reply);
        match handled.reply.message_type() {
            MessageType::MethodReturn => outcome.returns += 1,
            _ => outcome.errors += 1,
        }
    }
    if let Some((surface, id)) = node {
        check_node(subject, &format!("{NODE_PREFIX}{surface}_{id}"), near);
    }
}

fn check_reply(call: &Message, reply: &Message) {
    let kind = reply.message_type();
    assert!(
        kind == MessageType::MethodReturn || kind == MessageType::Error,
        "the answer is a {kind:?}"
    );
    assert_eq!(
        reply.header().reply_serial(),
        Some(call.primary_header().serial_num()),
        "the answer does not reply to the call"
    );
    if kind == MessageType::Error {
        assert!(
            reply.header().error_name().is_some(),
            "error without a name"
        );
    }
}

// ---------------------------------------------------------------------------
// Invariants, through the same entry point.

struct Caller<'a> {
    subject: &'a Subject,
}

impl Caller<'_> {
    fn call<B: Serialize + DynamicType>(
        &self,
        path: &str,
        interface: &str,
        member: &str,
        body: &B,
    ) -> Message {
        let call = method_call(path, Some(interface), member, false)
            .and_then(|builder| builder.build(body))
            .unwrap_or_else(|e| panic!("cannot build {interface}.{member}: {e}"));
        let ctx = self.subject.ctx();
        let handled = handle_call(&ctx, &call)
            .unwrap_or_else(|| panic!("{interface}.{member} on {path}: no answer"));
        check_reply(&call, &handled.reply);
        handled.reply
    }

    /// The decoded reply, or `None` for an error reply.
    fn ok<R: DeserializeOwned + Type, B: Serialize + DynamicType>(
        &self,
        path: &str,
        interface: &str,
        member: &str,
        body: &B,
    ) -> Option<R> {
        let reply = self.call(path, interface, member, body);
        if reply.message_type() != MessageType::MethodReturn {
            if std::env::var_os("NEWTON_FUZZ_TRACE_CALLS").is_some() {
                eprintln!(
                    "{interface}.{member} on {path}: {:?} {:?}",
                    reply.header().error_name().map(|n| n.to_string()),
                    reply.body().deserialize::<String>().ok()
                );
            }
            return None;
        }
        match reply.body().deserialize::<R>() {
            Ok(value) => Some(value),
            Err(e) => panic!("{interface}.{member} on {path}: reply does not decode: {e}"),
        }
    }

    fn property<R: TryFrom<OwnedValue>>(
        &self,
        path: &str,
        interface: &str,
        name: &str,
    ) -> Option<R> {
        let value: OwnedValue = self.ok(path, PROPERTIES, "Get", &(interface, name))?;
        R::try_from(value).ok()
    }
}

/// The cheap invariants of one exposed node.
fn check_node(subject: &Subject, path: &str, near: i32) {
    let caller = Caller { subject };
    let Some(count) = caller.property::<i32>(path, ACCESSIBLE, "ChildCount") else {
        panic!("ChildCount of the exposed node {path} fails");
    };
    assert!(count >= 0, "{path}: ChildCount {count}");
    let children: Vec<Ref> = caller
        .ok(path, ACCESSIBLE, "GetChildren", &())
        .unwrap_or_else(|| panic!("GetChildren of {path} fails"));
    assert_eq!(
        children.len(),
        count as usize,
        "{path}: ChildCount differs from GetChildren"
    );
    let mut sample: Vec<i32> = vec![0, 1, count - 1, near];
    sample.retain(|i| (0..count).contains(i));
    sample.dedup();
    for index in sample {
        let child: Ref = caller
            .ok(path, ACCESSIBLE, "GetChildAtIndex", &(index,))
            .unwrap_or_else(|| panic!("{path}: GetChildAtIndex({index}) of {count} fails"));
        assert_eq!(
            Some(&child),
            children.get(index as usize),
            "{path}: GetChildAtIndex({index}) is not GetChildren[{index}]"
        );
        let child_path = child.1.as_str();
        let back: i32 = caller
            .ok(child_path, ACCESSIBLE, "GetIndexInParent", &())
            .unwrap_or_else(|| panic!("{child_path}: GetIndexInParent fails"));
        assert_eq!(
            back, index,
            "{child_path}: index in parent {back}, child {index} of {path}"
        );
        let parent: Ref = caller
            .property(child_path, ACCESSIBLE, "Parent")
            .unwrap_or_else(|| panic!("{child_path}: Parent fails"));
        assert_eq!(
            parent.1.as_str(),
            path,
            "{child_path}: Parent is not {path}"
        );
    }
    for index in [count, -1, i32::MIN, i32::MAX] {
        if index >= 0 && index < count {
            continue;
        }
        let reply = caller.call(path, ACCESSIBLE, "GetChildAtIndex", &(index,));
        assert_eq!(
            reply.message_type(),
            MessageType::Error,
            "{path}: GetChildAtIndex({index}) of {count} answered"
        );
    }
    let interfaces: Vec<String> = caller
        .ok(path, ACCESSIBLE, "GetInterfaces", &())
        .unwrap_or_default();
    if interfaces.iter().any(|i| i == TEXT) {
        check_text(&caller, path, near);
    }
    if interfaces.iter().any(|i| i == HYPERTEXT) {
        check_hypertext(&caller, path);
    }
}

fn check_range(path: &str, what: &str, len: i32, text: Option<&str>, start: i32, end: i32) {
    if (start, end) == (-1, -1) {
        return;
    }
    assert!(
        0 <= start && start <= end && end <= len,
        "{path}: {what} range {start}..{end} outside 0..={len}"
    );
    if let Some(text) = text {
        assert_eq!(
            text.chars().count(),
            (end - start) as usize,
            "{path}: {what} text {text:?} is not {start}..{end}"
        );
    }
}

fn check_text(caller: &Caller, path: &str, near: i32) {
    let Some(len) = caller.property::<i32>(path, TEXT, "CharacterCount") else {
        panic!("{path}: CharacterCount fails");
    };
    assert!(len >= 0, "{path}: CharacterCount {len}");
    let all: String = caller
        .ok(path, TEXT, "GetText", &(0i32, -1i32))
        .unwrap_or_else(|| panic!("{path}: GetText fails"));
    assert_eq!(
        all.chars().count(),
        len as usize,
        "{path}: GetText(0, -1) length differs from CharacterCount"
    );
    let caret: i32 = caller
        .property(path, TEXT, "CaretOffset")
        .unwrap_or_else(|| panic!("{path}: CaretOffset fails"));
    assert!(
        (-1..=len).contains(&caret),
        "{path}: caret {caret} outside -1..={len}"
    );
    if let Some((start, end)) = caller.ok::<(i32, i32), _>(path, TEXT, "GetSelection", &(0i32,)) {
        check_range(path, "selection", len, None, start, end);
    }
    for offset in [0, near, len, len + 1, -1, caret] {
        for boundary in 0..7u32 {
            for member in [
                "GetTextAtOffset",
                "GetTextBeforeOffset",
                "GetTextAfterOffset",
            ] {
                if let Some((text, start, end)) =
                    caller.ok::<(String, i32, i32), _>(path, TEXT, member, &(offset, boundary))
                {
                    check_range(path, member, len, Some(&text), start, end);
                    if (0..=len).contains(&offset) {
                        assert!(
                            start >= 0,
                            "{path}: {member}({offset}) gave -1 inside the text"
                        );
                    } else {
                        assert_eq!(
                            (start, end),
                            (-1, -1),
                            "{path}: {member}({offset}) outside 0..={len}"
                        );
                    }
                    if member == "GetTextAtOffset" && start >= 0 && boundary == 0 {
                        assert!(
                            start <= offset && offset <= end,
                            "{path}: char at {offset} is {start}..{end}"
                        );
                    }
                }
            }
        }
        for granularity in 0..5u32 {
            if let Some((text, start, end)) = caller.ok::<(String, i32, i32), _>(
                path,
                TEXT,
                "GetStringAtOffset",
                &(offset, granularity),
            ) {
                check_range(path, "GetStringAtOffset", len, Some(&text), start, end);
            }
        }
        if let Some((_, start, end)) = caller.ok::<(HashMap<String, String>, i32, i32), _>(
            path,
            TEXT,
            "GetAttributeRun",
            &(offset, true),
        ) {
            check_range(path, "GetAttributeRun", len, None, start, end);
        }
    }
}

fn check_hypertext(caller: &Caller, path: &str) {
    let len: i32 = caller.property(path, TEXT, "CharacterCount").unwrap_or(0);
    let Some(links) = caller.ok::<i32, _>(path, HYPERTEXT, "GetNLinks", &()) else {
        return;
    };
    assert!(links >= 0);
    for index in 0..links.min(4) {
        let link: Ref = caller
            .ok(path, HYPERTEXT, "GetLink", &(index,))
            .unwrap_or_else(|| panic!("{path}: GetLink({index}) of {links} fails"));
        let link_path = link.1.as_str();
        let start: i32 = caller
            .property(link_path, HYPERLINK, "StartIndex")
            .unwrap_or_else(|| panic!("{link_path}: StartIndex fails"));
        let end: i32 = caller
            .property(link_path, HYPERLINK, "EndIndex")
            .unwrap_or_else(|| panic!("{link_path}: EndIndex fails"));
        check_range(path, "hyperlink", len, None, start, end);
        if end > start {
            let back: i32 = caller
                .ok(path, HYPERTEXT, "GetLinkIndex", &(start,))
                .unwrap_or(-1);
            assert!(
                (0..links).contains(&back),
                "{path}: link {index} starts at {start}, GetLinkIndex says {back}"
            );
        }
    }
    // Out of range: the null reference (atk returns no link).
    for index in [links, -1] {
        let link: Option<Ref> = caller.ok(path, HYPERTEXT, "GetLink", &(index,));
        if let Some(link) = link {
            assert_eq!(
                link.1.as_str(),
                "/org/a11y/atspi/null",
                "{path}: GetLink({index}) of {links} answered a link"
            );
        }
    }
}

/// The node ids of a subject, for tests and the trace tool.
pub fn exposed_paths(subject: &Subject) -> Vec<String> {
    subject
        .exposed
        .iter()
        .map(|(s, n)| format!("{NODE_PREFIX}{s}_{}", NodeId(*n).0))
        .collect()
}

/// The "C" locale and the placeholder machine id: what a host without either
/// gives, and independent of the environment the tests run in.
static HOST: std::sync::LazyLock<HostFacts> = std::sync::LazyLock::new(HostFacts::default);
