//! Routing one received method call to the interface that answers it.
//!
//! Objects: the app root (Accessible + Application), the cache object, every
//! exposed replica node (Accessible plus whatever the node supports, see
//! `model/implements.rs`, paired with declarations in `declared.rs`), and the hyperlink object of every exposed link node
//! (Hyperlink only, as atk-bridge serves its AtkHyperlink objects). Standard interfaces: `Properties` (Get, GetAll,
//! Set of the properties declared `writable SETTER`: `Application.Id`,
//! `Value.CurrentValue`), `Peer` (any path) and `Introspectable`.

use zbus::message::{Flags, Header, Message, Type as MessageType};
use zvariant::{OwnedValue, Value};

use crate::declared::{declared_interface, first_declaring, served_interface, served_interfaces};
pub use crate::declared::{declared_method, DeclaredMethod};
use crate::introspect;
use crate::model::context::AppContext;
use crate::model::error::CallError;
use crate::model::names;
use crate::model::resolve::{resolve, Object};
use crate::surface::reply::{args, method_return, Handled};
use crate::surface::{Estimate, Target, Written};

/// Who the handlers of `object` answer for.
fn target<'t, 'a>(app: &'t AppContext<'a>, object: &'t Object<'a>) -> Target<'t, 'a> {
    match object {
        Object::Root | Object::Cache => Target::App(app),
        Object::Node(ctx) | Object::Hyperlink(ctx) => Target::Node(ctx),
    }
}

/// Answers one message received on the application's connection.
///
/// Returns `None` for anything that needs no answer: signals, replies, and
/// NO_REPLY_EXPECTED calls without side effects. A NO_REPLY_EXPECTED call
/// with a side effect (an action, `Application.Id`) returns `Some` with
/// `reply_wanted == false`.
pub fn handle_call(app: &AppContext, call: &Message) -> Option<Handled> {
    let header = call.header();
    if header.message_type() != MessageType::MethodCall {
        return None;
    }
    let reply_wanted = !header.primary().flags().contains(Flags::NoReplyExpected);
    let mut handled = match route(app, call) {
        Ok(handled) => handled,
        Err(error) => Handled::reply(error_reply(call, &error)?),
    };
    if !reply_wanted {
        if handled.action.is_none() && handled.set_app_id.is_none() {
            return None;
        }
        handled.reply_wanted = false;
    }
    Some(handled)
}

/// An error reply to `call`. `None` only if the message could not be built
/// at all (a call without a serial, which the bus never delivers).
pub fn error_reply(call: &Message, error: &CallError) -> Option<Message> {
    let header = call.header();
    let text = error.to_string();
    Message::error(&header, error.name())
        .and_then(|builder| builder.build(&(text.as_str(),)))
        .ok()
        .or_else(|| {
            Message::error(&header, error.name())
                .and_then(|builder| builder.build(&()))
                .ok()
        })
}

fn route(app: &AppContext, call: &Message) -> Result<Handled, CallError> {
    let header = call.header();
    let path = header.path().map(|p| p.as_str()).unwrap_or("/");
    let member = header.member().map(|m| m.as_str()).unwrap_or("");
    let interface = header.interface().map(|i| i.as_str());
    if interface == Some(names::PEER) {
        return peer(app, member, call);
    }
    if interface == Some(names::INTROSPECTABLE) {
        return introspect::call(app, path, member, call);
    }
    let object = resolve(app, path)?;
    if interface == Some(names::PROPERTIES) {
        return properties(app, &object, path, member, call);
    }
    let target = target(app, &object);
    match interface {
        Some(name) => served_interface(&object, path, name)?.call(target, member, call),
        // No interface field: the first interface of the object that
        // declares the member.
        None => first_declaring(served_interfaces(&object), member)
            .ok_or_else(|| CallError::UnknownMethod {
                interface: "(none)".to_owned(),
                member: member.to_owned(),
            })?
            .call(target, member, call),
    }
}

/// The work, in objects visited or listed, up to which a member declared
/// `heavy over ESTIMATE` is answered where it arrives (the bridge's
/// executor); over it, on the heavy-call thread. About a millisecond
/// (`GetChildren` costs about 0.9 µs a child in a release build:
/// `atspi-shim/tests/wide.rs`).
pub const INLINE_WORK: usize = 2_000;

/// Whether `call` is heavy on this replica: its method is declared `heavy`,
/// or declared `heavy over ESTIMATE` (a method, or a property read by
/// `Properties.Get`, or any of an interface's properties by `GetAll`) and
/// the estimate for the call's object is over [`INLINE_WORK`]. O(depth):
/// the path is resolved, the work is not done. A call that does not
/// resolve is not heavy (its error is cheap).
pub fn is_heavy_here(app: &AppContext, call: &Message) -> bool {
    let header = call.header();
    if let Some(declared) = declared_method(&header) {
        if declared.method.heavy {
            return true;
        }
        let Some(estimate) = declared.method.estimate else {
            return false;
        };
        return estimated_over(app, &header, estimate);
    }
    if header.interface().map(|i| i.as_str()) != Some(names::PROPERTIES) {
        return false;
    }
    let estimates: Vec<_> = match header.member().map(|m| m.as_str()) {
        Some("Get") => args::<(String, String)>(call)
            .ok()
            .and_then(|(interface, name)| declared_interface(&interface)?.property(&name))
            .and_then(|property| property.estimate)
            .into_iter()
            .collect(),
        Some("GetAll") => args::<(String,)>(call)
            .ok()
            .and_then(|(interface,)| declared_interface(&interface))
            .map(|iface| iface.properties.iter().filter_map(|p| p.estimate).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    (estimates.into_iter()).any(|estimate| estimated_over(app, &header, estimate))
}

fn estimated_over(app: &AppContext, header: &Header, estimate: Estimate) -> bool {
    let path = header.path().map(|p| p.as_str()).unwrap_or("/");
    match resolve(app, path) {
        Ok(object) => estimate(target(app, &object)) > INLINE_WORK,
        Err(_) => false,
    }
}

fn peer(app: &AppContext, member: &str, call: &Message) -> Result<Handled, CallError> {
    match member {
        "Ping" => Ok(Handled::reply(method_return(call, &())?)),
        "GetMachineId" => Ok(Handled::reply(method_return(
            call,
            &(app.host.machine_id(),),
        )?)),
        _ => Err(CallError::UnknownMethod {
            interface: names::PEER.to_owned(),
            member: member.to_owned(),
        }),
    }
}

fn properties(
    app: &AppContext,
    object: &Object,
    path: &str,
    member: &str,
    call: &Message,
) -> Result<Handled, CallError> {
    let target = target(app, object);
    match member {
        "Get" => {
            let (interface, name): (String, String) = args(call)?;
            let value = served_interface(object, path, &interface)?.get(target, &name)?;
            Ok(Handled::reply(method_return(call, &(Value::from(value),))?))
        }
        "GetAll" => {
            let (interface,): (String,) = args(call)?;
            let all = served_interface(object, path, &interface)?.get_all(target)?;
            Ok(Handled::reply(method_return(call, &(all,))?))
        }
        "Set" => {
            let (interface, name, value): (String, String, OwnedValue) = args(call)?;
            set_property(target, object, path, &interface, &name, &value, call)
        }
        _ => Err(CallError::UnknownMethod {
            interface: names::PROPERTIES.to_owned(),
            member: member.to_owned(),
        }),
    }
}

/// `Properties.Set`, through the setter the property's declaration names.
fn set_property(
    target: Target,
    object: &Object,
    path: &str,
    interface: &str,
    name: &str,
    value: &OwnedValue,
    call: &Message,
) -> Result<Handled, CallError> {
    let written = served_interface(object, path, interface)?.set(target, name, value)?;
    let reply = method_return(call, &())?;
    Ok(match written {
        Written::AppId(id) => {
            let mut handled = Handled::reply(reply);
            handled.set_app_id = Some(id);
            handled
        }
        Written::Action(action) => Handled::with_action(reply, action),
    })
}
