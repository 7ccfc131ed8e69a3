//! D-Bus messages for the crate's unit tests: a call as the bus delivers
//! it, and the body of a reply.

use serde::de::DeserializeOwned;
use serde::Serialize;
use zvariant::{DynamicType, Type};

use crate::surface::reply::Handled;

pub(crate) fn message<B: Serialize + DynamicType>(
    interface: &str,
    member: &str,
    body: &B,
) -> zbus::Message {
    zbus::Message::method_call("/org/a11y/atspi/accessible/7_1", member)
        .and_then(|b| b.interface(interface))
        .and_then(|b| b.build(body))
        .expect("test message builds")
}

pub(crate) fn body<T: DeserializeOwned + Type>(handled: &Handled) -> T {
    handled
        .reply
        .body()
        .deserialize::<T>()
        .expect("reply has the expected signature")
}
