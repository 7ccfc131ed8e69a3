//! Giving the process the application's name.
//!
//! accesskit_unix names its one AT-SPI application after the executable's
//! file name (`std::env::current_exe()`), with no API to change it. To make
//! the legacy copy's `Name` comparable with the bridged copy's (which comes
//! from the hello), the process re-executes itself through a hard link (or,
//! across file systems, a copy) whose file name is the wanted name. The link
//! is removed once accesskit_unix has read the name.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the re-executed process: the directory holding its link.
const NAMED_DIR_VAR: &str = "NEWTON_LEGACY_NAMED_DIR";

/// Longest file name most file systems accept, in bytes.
const MAX_FILE_NAME: usize = 255;

/// The file name accesskit_unix will report for `name`: `/` (impossible in
/// a file name) becomes `_`, as do the names `.` and `..`; the name is cut
/// to 255 bytes on a character boundary.
pub fn file_name_for(name: &str) -> String {
    let mut out: String = name.replace('/', "_");
    if out == "." || out == ".." {
        out = out.replace('.', "_");
    }
    while out.len() > MAX_FILE_NAME {
        out.pop();
    }
    out
}

/// The executable's current file name (what accesskit_unix reports now).
pub fn current_name() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.file_name()?.to_string_lossy().into_owned())
}

/// Re-executes this process under `name` unless it already runs under it.
/// Returns only when no re-exec was needed, or with an error saying why it
/// failed (the caller may go on under the executable's own name).
pub fn ensure_named(name: &str) -> Result<(), String> {
    let wanted = file_name_for(name);
    if wanted.is_empty() || current_name().as_deref() == Some(wanted.as_str()) {
        return Ok(());
    }
    if std::env::var_os(NAMED_DIR_VAR).is_some() {
        return Err(format!(
            "re-executed once already but the executable is still not named \u{201c}{wanted}\u{201d}"
        ));
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the running executable: {e}"))?;
    let (dir, link) = named_link(&exe, &wanted)?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let error = Command::new(&link)
        .args(args)
        .env(NAMED_DIR_VAR, &dir)
        .exec();
    let _ = fs::remove_dir_all(&dir);
    Err(format!("cannot re-execute as {}: {error}", link.display()))
}

/// Removes the link made by [`ensure_named`], once accesskit_unix has read
/// the name (after the first tree is exposed). Harmless when there is none.
pub fn remove_link() {
    if let Some(dir) = std::env::var_os(NAMED_DIR_VAR) {
        let dir = PathBuf::from(dir);
        // Only ever our own directory: it must carry our prefix.
        let ours = dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(DIR_PREFIX));
        if ours {
            let _ = fs::remove_dir_all(&dir);
        }
    }
}

const DIR_PREFIX: &str = ".newton-legacy-";

/// A private directory holding `wanted` → the executable: next to the
/// executable if possible (a hard link, instantaneous), else in the
/// temporary directory (a hard link, or a copy across file systems).
fn named_link(exe: &Path, wanted: &str) -> Result<(PathBuf, PathBuf), String> {
    let unique = format!("{DIR_PREFIX}{}", std::process::id());
    let mut candidates = Vec::new();
    if let Some(parent) = exe.parent() {
        candidates.push(parent.join(&unique));
    }
    candidates.push(std::env::temp_dir().join(&unique));
    let mut last_error = String::from("no directory to create the link in");
    for dir in candidates {
        match link_in(&dir, exe, wanted) {
            Ok(link) => return Ok((dir, link)),
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                last_error = e;
            }
        }
    }
    Err(last_error)
}

fn link_in(dir: &Path, exe: &Path, wanted: &str) -> Result<PathBuf, String> {
    fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let link = dir.join(wanted);
    if fs::hard_link(exe, &link).is_err() {
        fs::copy(exe, &link)
            .map_err(|e| format!("cannot copy {} to {}: {e}", exe.display(), link.display()))?;
        fs::set_permissions(&link, fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot make {} executable: {e}", link.display()))?;
    }
    Ok(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_valid_file_names() {
        assert_eq!(file_name_for("egui form"), "egui form");
        assert_eq!(file_name_for("a/b"), "a_b");
        assert_eq!(file_name_for(".."), "__");
        let long = "é".repeat(200);
        let cut = file_name_for(&long);
        assert!(cut.len() <= 255 && long.starts_with(&cut));
    }
}
