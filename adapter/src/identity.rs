//! Who the process is, for the hello.

use std::sync::{Mutex, OnceLock};

use newton_push_protocol::AppInfo;

/// The application's identity as the toolkit knows it. Fields left `None`
/// come from the process: the executable's file name for the id and name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppIdentity {
    /// Stable application id (desktop-file id).
    pub app_id: Option<String>,
    /// Human-readable name (the AT-SPI application's name).
    pub name: Option<String>,
    /// Toolkit name (AT-SPI `ToolkitName`), e.g. "winit" or "egui".
    pub toolkit_name: Option<String>,
    /// Toolkit version.
    pub toolkit_version: Option<String>,
}

/// [`set_app_identity`] came after the connection was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityError;

impl std::fmt::Display for IdentityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the application's identity is sent when the first Adapter is created; \
             call set_app_identity before Adapter::new",
        )
    }
}

impl std::error::Error for IdentityError {}

static IDENTITY: Mutex<Option<AppIdentity>> = Mutex::new(None);
static FROZEN: OnceLock<AppInfo> = OnceLock::new();

/// Sets the identity the hello carries. Must come before the first
/// [`crate::Adapter::new`]; later calls return [`IdentityError`].
pub fn set_app_identity(identity: AppIdentity) -> Result<(), IdentityError> {
    if FROZEN.get().is_some() {
        return Err(IdentityError);
    }
    *IDENTITY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(identity);
    Ok(())
}

/// The hello's identity, fixed at first use.
pub(crate) fn app_info() -> AppInfo {
    FROZEN
        .get_or_init(|| {
            let given = IDENTITY
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone()
                .unwrap_or_default();
            let executable = executable_name();
            AppInfo {
                app_id: given.app_id.unwrap_or_else(|| executable.clone()),
                name: given.name.unwrap_or(executable),
                pid: Some(std::process::id()),
                toolkit_name: given.toolkit_name,
                toolkit_version: given.toolkit_version,
            }
        })
        .clone()
}

fn executable_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|path| path.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| format!("pid-{}", std::process::id()))
}
