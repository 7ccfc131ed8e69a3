//! Layer 2, the surface machinery (on the model only): the declaration, replies
//! (`reply.rs`) and property values (`properties.rs`).
//!
//! The declared AT-SPI surface: each interface's methods and properties,
//! declared once with [`declare_interface!`], from which dispatch (with or
//! without an interface field), `Properties.Get/GetAll` and `Introspect`
//! are all derived.
//!
//! A declaration names each member, its arguments and results with their Rust
//! types (the D-Bus signatures are those types' `zvariant::Type`
//! signatures, so a declaration cannot disagree with what the handler
//! decodes or answers) and a typed handler:
//!
//! ```text
//! declare_interface! {
//!     pub(crate) static ACTION = "org.a11y.atspi.Action", on node {
//!         fn DoAction(index: i32) -> (success: bool) = do_action, acting;
//!         fn GetMatches(rule: WireRule, …) -> (matches: Vec<ObjectRef>) = get_matches, heavy;
//!         fn GetName(index: i32) -> (name: String) = name;
//!         property NActions: i32 = n_actions;
//!     }
//! }
//! // In Value's declaration: `property CurrentValue: f64 = current, writable set_current;`
//! ```
//!
//! Handlers take the receiver (`on node`: `&NodeCtx`, `on node_ref`: the
//! node's `NodeRef` alone, `on text`: `TextOn` (the node and where it lives,
//! which tests build without a replica), `on app`: `&AppContext`, `on any`:
//! [`Target`]) and the decoded arguments, and return
//! `Result<T, CallError>`: `T` is the single result, or the tuple of several;
//! `acting` handlers return [`Acted`] (the result plus the action request
//! routed to the sender). `heavy` marks a method whose cost grows with the
//! tree ([`Method::heavy`]): the bridge answers it on its heavy-call thread,
//! whether or not the call names the interface. A method carries at most
//! one marker. `heavy over ESTIMATE` (after `acting` too: `acting over
//! ESTIMATE`; on a property, `, heavy over ESTIMATE` last) marks a member
//! whose cost grows with what `ESTIMATE` counts for the call's object (its
//! children, its relation targets, its tree): heavy only where the estimate
//! is over `dispatch::INLINE_WORK` (`dispatch::is_heavy_here`, above this
//! layer; the estimates themselves are the model's, on a [`Target`]).
//! Getters return `Result<T, CallError>` of the property's type;
//! `writable SETTER` makes a property writable, and `Properties.Set` calls
//! the setter with the receiver and the value, which returns what the write
//! asks of the bridge ([`Written`]); every other property answers that it
//! is read-only. The derived code decodes the body once (InvalidArgs with
//! the expected signature otherwise) and builds the reply within the message
//! budget, so handlers are plain functions, tested without D-Bus messages.
//!
//! An argument AT-SPI sends as an integer naming one of a fixed set is
//! declared with its wire type and the enumeration it decodes into,
//! `coord_type: u32 as CoordType`: the signature is the wire type's, the
//! handler takes the enumeration, and a number outside it is InvalidArgs
//! naming the argument ([`crate::model::wire`]).
//!
//! Options after the receiver: `property names in any case` (Table: older
//! definitions spell `nRows`), and `tested through (call_fn, get_fn)`, which
//! generates test-only entry points taking the receiver itself, so tests of
//! the text family run the real decoding and replies on a bare tree.

use std::fmt::Write as _;

use zbus::message::Message;
use zvariant::{OwnedValue, Signature};

use crate::model::error::CallError;
use crate::surface::reply::Handled;

pub(crate) mod properties;
pub mod reply;
#[cfg(test)]
pub(crate) mod testing;

/// The object a declared handler answers for (in the model, where the
/// cost estimates of `heavy over ESTIMATE` take it too).
pub(crate) use crate::model::context::Target;

/// An `acting` handler's answer: the reply value and the request (if any)
/// the application is asked to perform. The reply never waits for it.
pub(crate) struct Acted<T> {
    pub answer: T,
    pub action: Option<accesskit::ActionRequest>,
}

impl<T> Acted<T> {
    pub fn with(answer: T, action: accesskit::ActionRequest) -> Self {
        Self {
            answer,
            action: Some(action),
        }
    }

    pub fn without(answer: T) -> Self {
        Self {
            answer,
            action: None,
        }
    }
}

pub(crate) type CallFn = for<'t, 'a> fn(Target<'t, 'a>, &Message) -> Result<Handled, CallError>;
pub(crate) type GetFn = for<'t, 'a> fn(Target<'t, 'a>) -> Result<OwnedValue, CallError>;
pub(crate) type SetFn =
    for<'t, 'a, 'v> fn(Target<'t, 'a>, &zvariant::Value<'v>) -> Result<Written, CallError>;

/// What writing a property asks of the bridge (dispatch turns it into the
/// reply and the request).
#[derive(Debug)]
pub(crate) enum Written {
    /// `Application.Id`: the registry's id for the application.
    AppId(i32),
    /// `Value.CurrentValue`: an action for the producer.
    Action(accesskit::ActionRequest),
}

/// One argument or result of a method.
pub struct Arg {
    pub name: &'static str,
    pub signature: &'static Signature,
}

/// One declared method.
pub struct Method {
    pub name: &'static str,
    pub inputs: &'static [Arg],
    pub outputs: &'static [Arg],
    /// Declared `heavy`: its cost grows with the tree (`Cache.GetItems`,
    /// `Collection.GetMatches*`), so the bridge answers it off the thread
    /// that answers every other call. Found for a call by
    /// `declared::declared_method`, with or without an interface field.
    pub heavy: bool,
    /// Declared `heavy over ESTIMATE`: the work a call does on its object,
    /// in objects visited or listed, estimated in O(1) from the replica.
    pub(crate) estimate: Option<Estimate>,
    pub(crate) call: CallFn,
}

/// A declared cost estimate: about how many objects a call visits or lists
/// on `target` (its children, its relation targets, its tree), without
/// doing the work.
pub(crate) type Estimate = for<'t, 'a> fn(Target<'t, 'a>) -> usize;

/// One declared property.
pub struct Property {
    pub name: &'static str,
    pub signature: &'static Signature,
    /// Declared `writable SETTER`: `Properties.Set` calls the setter;
    /// introspection says `readwrite`.
    pub writable: bool,
    /// Declared `heavy over ESTIMATE`, as for a method.
    pub(crate) estimate: Option<Estimate>,
    pub(crate) get: GetFn,
    pub(crate) set: Option<SetFn>,
}

/// One declared AT-SPI interface.
pub struct Interface {
    pub name: &'static str,
    pub methods: &'static [Method],
    pub properties: &'static [Property],
    /// `Properties.Get` also finds a property named in another case (Table:
    /// older interface definitions spell `nRows` what libatspi asks as `NRows`).
    pub property_names_any_case: bool,
}

impl Interface {
    pub fn method(&self, member: &str) -> Option<&Method> {
        self.methods.iter().find(|m| m.name == member)
    }

    pub fn property(&self, name: &str) -> Option<&Property> {
        let any_case = self.property_names_any_case;
        (self.properties.iter().find(|p| p.name == name)).or_else(|| {
            any_case
                .then(|| {
                    self.properties
                        .iter()
                        .find(|p| p.name.eq_ignore_ascii_case(name))
                })
                .flatten()
        })
    }

    /// Answers `member` for `target`.
    pub(crate) fn call(
        &self,
        target: Target,
        member: &str,
        call: &Message,
    ) -> Result<Handled, CallError> {
        let method = self
            .method(member)
            .ok_or_else(|| CallError::UnknownMethod {
                interface: self.name.to_owned(),
                member: member.to_owned(),
            })?;
        (method.call)(target, call)
    }

    /// The value of property `name` of `target`.
    pub(crate) fn get(&self, target: Target, name: &str) -> Result<OwnedValue, CallError> {
        let property = self
            .property(name)
            .ok_or_else(|| CallError::UnknownProperty(name.to_owned()))?;
        (property.get)(target)
    }

    /// Writes property `name` of `target` (`Properties.Set`) through its
    /// declared setter; a property declared without one is read-only.
    pub(crate) fn set(
        &self,
        target: Target,
        name: &str,
        value: &zvariant::Value<'_>,
    ) -> Result<Written, CallError> {
        let property = self
            .property(name)
            .ok_or_else(|| CallError::UnknownProperty(name.to_owned()))?;
        match property.set {
            Some(set) => set(target, value),
            None => Err(CallError::Failed(format!(
                "property \u{201c}{}.{}\u{201d} is read-only",
                self.name, property.name
            ))),
        }
    }

    /// Every property of `target`, for `GetAll`.
    pub(crate) fn get_all(
        &self,
        target: Target,
    ) -> Result<std::collections::HashMap<String, OwnedValue>, CallError> {
        self.properties
            .iter()
            .map(|p| Ok((p.name.to_owned(), (p.get)(target)?)))
            .collect()
    }

    /// The interface's `<interface>` element of the introspection XML.
    pub(crate) fn write_introspection(&self, xml: &mut String) {
        let _ = writeln!(xml, "  <interface name=\"{}\">", self.name);
        for method in self.methods {
            if method.inputs.is_empty() && method.outputs.is_empty() {
                let _ = writeln!(xml, "    <method name=\"{}\"/>", method.name);
                continue;
            }
            let _ = writeln!(xml, "    <method name=\"{}\">", method.name);
            let args = (method.inputs.iter().map(|a| (a, "in")))
                .chain(method.outputs.iter().map(|a| (a, "out")));
            for (arg, direction) in args {
                let _ = writeln!(
                    xml,
                    "      <arg name=\"{}\" type=\"{}\" direction=\"{direction}\"/>",
                    arg.name, arg.signature
                );
            }
            xml.push_str("    </method>\n");
        }
        for property in self.properties {
            let access = if property.writable {
                "readwrite"
            } else {
                "read"
            };
            let _ = writeln!(
                xml,
                "    <property name=\"{}\" type=\"{}\" access=\"{access}\"/>",
                property.name, property.signature
            );
        }
        xml.push_str("  </interface>\n");
    }
}

/// Declares one AT-SPI interface as a `static` [`Interface`]; see the
/// module documentation for the syntax.
macro_rules! declare_interface {
    (
        $(#[$attr:meta])*
        $vis:vis static $NAME:ident = $iface:expr, on $receiver:ident
            $(, property names in $any_case:ident case)?
            $(, tested through ($test_call:ident, $test_get:ident))? {
            $(
                fn $member:ident ( $($arg:ident : $arg_ty:ty $(as $arg_enum:ty)?),* $(,)? )
                    -> ( $($out:ident : $out_ty:ty),* $(,)? )
                    = $handler:path $(, $marker:ident $(over $estimate:path)?)? ;
            )*
            $(
                property $prop:ident : $prop_ty:ty = $getter:path $(, writable $setter:path)?
                    $(, heavy over $prop_estimate:path)? ;
            )*
        }
    ) => {
        $(#[$attr])*
        $vis static $NAME: $crate::surface::Interface = $crate::surface::Interface {
            name: $iface,
            methods: &[$(
                $crate::surface::Method {
                    name: stringify!($member),
                    inputs: &[$($crate::surface::Arg {
                        name: stringify!($arg),
                        signature: <$arg_ty as zvariant::Type>::SIGNATURE,
                    }),*],
                    outputs: &[$($crate::surface::Arg {
                        name: stringify!($out),
                        signature: <$out_ty as zvariant::Type>::SIGNATURE,
                    }),*],
                    heavy: declare_interface!(@heavy $($marker $(over $estimate)?)?),
                    estimate: declare_interface!(@estimate $($(over $estimate)?)?),
                    call: |target, call| {
                        let receiver = declare_interface!(@receiver $receiver target);
                        declare_interface!(@decode call [$($arg : $arg_ty $(as $arg_enum)?),*]);
                        let answer: declare_interface!(@answer_type [$($marker)?] [$($out_ty),*])
                            = $handler(receiver $(, $arg)*)?;
                        declare_interface!(@answer call answer [$($out),*] [$($marker)?])
                    },
                }
            ),*],
            properties: &[$(
                $crate::surface::Property {
                    name: stringify!($prop),
                    signature: <$prop_ty as zvariant::Type>::SIGNATURE,
                    writable: declare_interface!(@writable $($setter)?),
                    estimate: declare_interface!(@estimate $(over $prop_estimate)?),
                    get: |target| {
                        let receiver = declare_interface!(@receiver $receiver target);
                        let value: $prop_ty = $getter(receiver)?;
                        $crate::surface::properties::owned(value)
                    },
                    set: declare_interface!(@setter $receiver $($setter)?),
                }
            ),*],
            property_names_any_case: declare_interface!(@any_case $($any_case)?),
        };

        declare_interface!(@test_fns [$($test_call $test_get)?] $NAME $receiver {
            $(
                fn $member($($arg: $arg_ty $(as $arg_enum)?),*) -> ($($out: $out_ty),*)
                    = $handler [$($marker)?];
            )*
            $( property $prop: $prop_ty = $getter; )*
        });
    };

    (@test_fns [] $($rest:tt)*) => {};
    (@test_fns [$test_call:ident $test_get:ident] $NAME:ident $receiver:ident {
        $(
            fn $member:ident($($arg:ident : $arg_ty:ty $(as $arg_enum:ty)?),*)
                -> ($($out:ident : $out_ty:ty),*) = $handler:path [$($marker:ident)?];
        )*
        $( property $prop:ident : $prop_ty:ty = $getter:path; )*
    }) => {
        /// The declared methods on a receiver built by the test (no
        /// `NodeCtx` needed): decoding, handler and reply as dispatched.
        #[cfg(test)]
        #[allow(dead_code, unused_variables)]
        pub(crate) fn $test_call(
            receiver: declare_interface!(@receiver_type $receiver),
            member: &str,
            call: &zbus::message::Message,
        ) -> Result<$crate::surface::reply::Handled, $crate::model::error::CallError> {
            $(
                if member == stringify!($member) {
                    declare_interface!(@decode call [$($arg : $arg_ty $(as $arg_enum)?),*]);
                    let answer: declare_interface!(@answer_type [$($marker)?] [$($out_ty),*])
                        = $handler(receiver $(, $arg)*)?;
                    return declare_interface!(@answer call answer [$($out),*] [$($marker)?]);
                }
            )*
            Err($crate::model::error::CallError::UnknownMethod {
                interface: $NAME.name.to_owned(),
                member: member.to_owned(),
            })
        }

        /// The declared properties on a receiver built by the test.
        #[cfg(test)]
        #[allow(dead_code, unused_variables)] // an interface's tests may use only one

        pub(crate) fn $test_get(
            receiver: declare_interface!(@receiver_type $receiver),
            name: &str,
        ) -> Result<zvariant::OwnedValue, $crate::model::error::CallError> {
            $(
                if name == stringify!($prop) {
                    let value: $prop_ty = $getter(receiver)?;
                    return $crate::surface::properties::owned(value);
                }
            )*
            Err($crate::model::error::CallError::UnknownProperty(name.to_owned()))
        }
    };

    (@receiver node $target:ident) => { $target.node()? };
    (@receiver app $target:ident) => { $target.app()? };
    (@receiver node_ref $target:ident) => { $target.node()?.node };
    (@receiver any $target:ident) => { $target };
    (@receiver text $target:ident) => { $crate::model::text_env::TextOn::of($target.node()?) };

    (@receiver_type text) => { $crate::model::text_env::TextOn<'_> };

    (@decode $call:ident []) => { $crate::surface::reply::no_args($call)? };
    // The body decodes as the wire types; an argument declared `WIRE as
    // ENUM` then decodes into its enumeration, InvalidArgs naming it if its
    // number is outside (`wire.rs`).
    (@decode $call:ident [$($arg:ident : $arg_ty:ty $(as $arg_enum:ty)?),+]) => {
        let ($($arg,)+): ($($arg_ty,)+) = $crate::surface::reply::args($call)?;
        $($(
            let $arg = <$arg_enum as $crate::model::wire::WireEnum>::decode($arg, stringify!($arg))?;
        )?)+
    };

    (@answer $call:ident $answer:ident [$($out:ident),*] [$(heavy)?]) => {
        Ok($crate::surface::reply::Handled::reply($crate::surface::reply::method_return(
            $call,
            declare_interface!(@body $answer [$($out),*]),
        )?))
    };
    (@answer $call:ident $answer:ident [$($out:ident),*] [acting]) => {{
        let $crate::surface::Acted { answer, action } = $answer;
        let reply = $crate::surface::reply::method_return($call, declare_interface!(@body answer [$($out),*]))?;
        Ok(match action {
            Some(action) => $crate::surface::reply::Handled::with_action(reply, action),
            None => $crate::surface::reply::Handled::reply(reply),
        })
    }};

    // The handler's answer has the declared result types, so the reply's
    // signature is the declared one.
    (@answer_type [$(heavy)?] [$out_ty:ty]) => { $out_ty };
    (@answer_type [$(heavy)?] [$($out_ty:ty),*]) => { ($($out_ty),*) };
    (@answer_type [acting] [$out_ty:ty]) => { $crate::surface::Acted<$out_ty> };
    (@answer_type [acting] [$($out_ty:ty),*]) => { $crate::surface::Acted<($($out_ty),*)> };

    // One result is sent as a one-field body; several are the handler's tuple.
    (@body $answer:ident [$out:ident]) => { &($answer,) };
    (@body $answer:ident [$($out:ident),*]) => { &$answer };

    (@any_case) => { false };
    (@any_case any) => { true };

    // The one marker a method may carry: `acting` or `heavy` (an unknown
    // word matches no rule and does not compile).
    (@heavy) => { false };
    (@heavy heavy) => { true };
    (@heavy acting) => { false };
    // `heavy over ESTIMATE`, `acting over ESTIMATE`: heavy where the estimate says.
    (@heavy $marker:ident over $estimate:path) => { false };

    (@estimate) => { None };
    (@estimate over $estimate:path) => { Some($estimate) };

    // `writable SETTER`: Properties.Set calls the setter with the receiver.
    (@writable) => { false };
    (@writable $setter:path) => { true };
    (@setter $receiver:ident) => { None };
    (@setter $receiver:ident $setter:path) => {
        Some(|target, value| {
            let receiver = declare_interface!(@receiver $receiver target);
            $setter(receiver, value)
        })
    };
}

pub(crate) use declare_interface;

/// The `version` every interface but Application has in at-spi2-core's XML
/// since 2.58 ("incremented by one every time a new method, signal, or
/// property is added to this interface"); atk-bridge answers each with
/// libatspi's `ATSPI_<INTERFACE>_VERSION`, 1 for all of them in 2.62. The
/// bridge serves every interface as of that version.
pub(crate) const INTERFACE_VERSION: u32 = 1;

/// The getter of every declared `version` property, whatever the receiver.
pub(crate) fn interface_version<R>(_receiver: R) -> Result<u32, CallError> {
    Ok(INTERFACE_VERSION)
}
