//! Building replies: every interface handler returns a [`Handled`].

use serde::Serialize;
use zbus::message::Message;
use zvariant::DynamicType;

use crate::model::error::CallError;

/// The result of one handled method call: the reply to send and, when the
/// call asked the application to do something, the action request to route
/// to its sender (the reply never waits for the application).
pub struct Handled {
    pub reply: Message,
    pub action: Option<accesskit::ActionRequest>,
    /// `Properties.Set(Application.Id)`: the id the registry gave this
    /// application; the bridge stores it and passes it back as
    /// `AppContext::app_id`.
    pub set_app_id: Option<i32>,
    /// False when the caller flagged the call NO_REPLY_EXPECTED: then only
    /// `action` / `set_app_id` matter and `reply` must not be sent.
    pub reply_wanted: bool,
}

impl Handled {
    pub fn reply(reply: Message) -> Self {
        Self {
            reply,
            action: None,
            set_app_id: None,
            reply_wanted: true,
        }
    }

    pub fn with_action(reply: Message, action: accesskit::ActionRequest) -> Self {
        Self {
            reply,
            action: Some(action),
            set_app_id: None,
            reply_wanted: true,
        }
    }
}

/// A method return for `call` carrying `body`; a reply over
/// [`MAX_MESSAGE_BYTES`](crate::model::budgets::MAX_MESSAGE_BYTES) is refused
/// (the caller answers `Failed` instead, which libatspi survives; a message
/// over the D-Bus limits would cost the application its connection).
pub fn method_return<B>(call: &Message, body: &B) -> Result<Message, CallError>
where
    B: Serialize + DynamicType,
{
    let reply = Message::method_return(&call.header())
        .and_then(|builder| builder.build(body))
        .map_err(|e| CallError::Failed(format!("could not build the reply: {e}")))?;
    within_message_budget(reply)
}

/// `message` if its serialized size is within the budget, else the error
/// naming rule `max-message-bytes`.
pub fn within_message_budget(message: Message) -> Result<Message, CallError> {
    let size = message.data().len();
    if size > crate::model::budgets::MAX_MESSAGE_BYTES {
        return Err(CallError::Failed(format!(
            "the answer would take {size} bytes, over the bridge's message budget of {} \
             (rule max-message-bytes); ask for less (a count, a range)",
            crate::model::budgets::MAX_MESSAGE_BYTES
        )));
    }
    Ok(message)
}

/// Decodes the call's arguments, answering InvalidArgs (with the expected
/// signature) when the client sent something else.
pub fn args<T>(call: &Message) -> Result<T, CallError>
where
    T: serde::de::DeserializeOwned + zvariant::Type,
{
    call.body().deserialize::<T>().map_err(|e| {
        CallError::InvalidArgs(format!(
            "expected arguments of signature \u{201c}{}\u{201d}: {e}",
            T::SIGNATURE
        ))
    })
}

/// Members without arguments still reject a wrong signature.
pub(crate) fn no_args(call: &Message) -> Result<(), CallError> {
    let signature = call.body().signature().to_string();
    if signature.is_empty() {
        Ok(())
    } else {
        Err(CallError::InvalidArgs(format!(
            "expected no arguments, got signature \u{201c}{signature}\u{201d}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::budgets::MAX_MESSAGE_BYTES;

    fn call() -> Message {
        Message::method_call("/org/a11y/atspi/accessible/root", "GetText")
            .and_then(|b| b.interface("org.a11y.atspi.Text"))
            .and_then(|b| b.build(&(0i32, -1i32)))
            .expect("a method call")
    }

    #[test]
    fn a_reply_over_the_message_budget_is_refused_by_rule() {
        // Nothing in a reply is bounded but by this generic cap: one string just over it.
        let body = "x".repeat(MAX_MESSAGE_BYTES + 1);
        match method_return(&call(), &body) {
            Err(CallError::Failed(reason)) => {
                assert!(reason.contains("rule max-message-bytes"), "{reason}");
            }
            Err(other) => panic!("wrong error: {other:?}"),
            Ok(reply) => panic!("a reply of {} bytes was sent", reply.data().len()),
        }
    }

    #[test]
    fn a_reply_within_the_message_budget_goes_whole() {
        let body = "x".repeat(MAX_MESSAGE_BYTES - 1024);
        let reply = method_return(&call(), &body).expect("within the budget");
        assert!(reply.data().len() <= MAX_MESSAGE_BYTES);
        assert!(reply.data().len() > MAX_MESSAGE_BYTES - 2048);
    }
}
