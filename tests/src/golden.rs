//! Golden files: compare a JSON value with tests/golden/<name>, or rewrite it when
//! NEWTON_UPDATE_GOLDENS=1.

use std::path::PathBuf;

use serde_json::Value;

use crate::{update_goldens, HarnessError, Result};

/// Path of a golden file in tests/golden.
pub fn golden_path(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(name)
}

/// The golden of Orca's speech for the Orca under test: `name` itself for Orca 43.1 (the
/// original lists), `orca48/<name>` for Orca 48 — Orcas word things differently, so each keeps
/// its own reviewed lists.
pub fn orca_golden(name: &str) -> Result<String> {
    Ok(match crate::OrcaVersion::current()?.golden_dir() {
        Some(dir) => format!("{dir}/{name}"),
        None => name.to_string(),
    })
}

/// Compares `actual` with the golden file `name`. Returns a readable description of the first
/// difference (path inside the JSON, expected and actual values) on mismatch. With
/// NEWTON_UPDATE_GOLDENS=1 the golden is rewritten instead and the check passes.
pub fn check_golden(name: &str, actual: &Value) -> Result<()> {
    let path = golden_path(name);
    let pretty = serde_json::to_string_pretty(actual)
        .map_err(|e| HarnessError::Other(e.to_string()))?
        + "\n";
    if update_goldens() {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(HarnessError::io(format!("create {}", parent.display())))?;
        }
        std::fs::write(&path, pretty)
            .map_err(HarnessError::io(format!("write golden {}", path.display())))?;
        eprintln!("newton-e2e: rewrote golden {}", path.display());
        return Ok(());
    }
    let text = std::fs::read_to_string(&path).map_err(HarnessError::io(format!(
        "read golden {} (create it with NEWTON_UPDATE_GOLDENS=1)",
        path.display()
    )))?;
    let expected: Value = serde_json::from_str(&text)
        .map_err(|e| HarnessError::Other(format!("golden {} is not JSON: {e}", path.display())))?;
    match first_difference(&expected, actual, "$") {
        None => Ok(()),
        Some(diff) => {
            let actual_path =
                std::env::temp_dir().join(format!("newton-e2e-actual-{}", name.replace('/', "-")));
            let _ = std::fs::write(&actual_path, &pretty);
            Err(HarnessError::Other(format!(
                "output differs from golden {}:\n{diff}\nfull actual output: {}\n\
                 (if the change is intended: NEWTON_UPDATE_GOLDENS=1, then review the diff)",
                path.display(),
                actual_path.display()
            )))
        }
    }
}

/// The first place where two JSON values differ, as "at <path>: expected X, got Y".
pub fn first_difference(expected: &Value, actual: &Value, at: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let keys: std::collections::BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            keys.into_iter().find_map(|k| {
                let here = format!("{at}.{k}");
                match (e.get(k), a.get(k)) {
                    (Some(ev), Some(av)) => first_difference(ev, av, &here),
                    (Some(ev), None) => Some(format!("at {here}: expected {ev}, key missing")),
                    (None, Some(av)) => Some(format!("at {here}: unexpected key with {av}")),
                    (None, None) => None,
                }
            })
        }
        (Value::Array(e), Value::Array(a)) => {
            let found = e
                .iter()
                .zip(a)
                .enumerate()
                .find_map(|(i, (ev, av))| first_difference(ev, av, &format!("{at}[{i}]")));
            found.or_else(|| {
                (e.len() != a.len())
                    .then(|| format!("at {at}: expected {} items, got {}", e.len(), a.len()))
            })
        }
        _ if expected == actual => None,
        _ => Some(format!("at {at}: expected {expected}, got {actual}")),
    }
}

#[cfg(test)]
mod tests {
    use super::first_difference;
    use serde_json::json;

    #[test]
    fn reports_the_first_differing_path() {
        let e = json!({"a": [1, {"b": "x"}], "c": 1});
        let a = json!({"a": [1, {"b": "y"}], "c": 1});
        assert_eq!(
            first_difference(&e, &a, "$").as_deref(),
            Some("at $.a[1].b: expected \"x\", got \"y\"")
        );
        assert_eq!(first_difference(&e, &e, "$"), None);
        assert!(first_difference(&json!([1]), &json!([1, 2]), "$")
            .is_some_and(|d| d.contains("expected 1 items, got 2")));
    }
}
