//! D-Bus errors returned to AT clients. Every bad argument becomes one of
//! these; nothing an AT sends can panic the bridge.

/// An error reply. `name()` is the D-Bus error name; `message()` its text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The object is gone or never existed. The message uses the GDBus
    /// wording Orca 51 matches to mark objects dead.
    #[error("Object does not exist at path \u{201c}{0}\u{201d}")]
    UnknownObject(String),
    #[error("No such interface \u{201c}{interface}\u{201d} on object at path {path}")]
    UnknownInterface { interface: String, path: String },
    #[error("No such method \u{201c}{member}\u{201d} on interface \u{201c}{interface}\u{201d}")]
    UnknownMethod { interface: String, member: String },
    #[error("No such property \u{201c}{0}\u{201d}")]
    UnknownProperty(String),
    #[error("{0}")]
    InvalidArgs(String),
    #[error("{0}")]
    NotSupported(String),
    #[error("{0}")]
    Failed(String),
}

impl CallError {
    pub fn name(&self) -> &'static str {
        match self {
            CallError::UnknownObject(_) => "org.freedesktop.DBus.Error.UnknownObject",
            CallError::UnknownInterface { .. } => "org.freedesktop.DBus.Error.UnknownInterface",
            CallError::UnknownMethod { .. } => "org.freedesktop.DBus.Error.UnknownMethod",
            CallError::UnknownProperty(_) => "org.freedesktop.DBus.Error.UnknownProperty",
            CallError::InvalidArgs(_) => "org.freedesktop.DBus.Error.InvalidArgs",
            CallError::NotSupported(_) => "org.freedesktop.DBus.Error.NotSupported",
            CallError::Failed(_) => "org.freedesktop.DBus.Error.Failed",
        }
    }
}
