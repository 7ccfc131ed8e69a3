//! `diff --allow FILE`: a list of intentional differences between the two
//! applications `diff` compares. Each rule has an id, a reason, the property
//! it covers, which direction (only in A, only in B, or A's and B's values)
//! and conditions on the object (path, roles, states, interfaces). A
//! difference some rule covers is reported as allowed (with the rule's id)
//! and does not fail `diff`; anything else still does.
//!
//! The file is JSON (format in [`RulesFile`]); the project's own list, for
//! `accesskit_unix` (A) against the bridge (B), is `docs/compat-rules.json`,
//! explained rule by rule in `docs/compat.md`.
//!
//! Rules come from a file the user chose, but are still checked strictly:
//! unknown keys, unknown properties, options that do not fit the property,
//! duplicate ids and rules that could allow nothing are typed errors naming
//! the rule. A rule must also say where its difference is intended (a path,
//! roles, states, interfaces, B's name, or `bOffScreen`) unless it says
//! `"everywhere": true`: a broad rule would excuse a wrong value on an object
//! it was never meant for. Patterns may name the object's own name as
//! `{name}` (B's, or A's for an object only in A; `{name:?}` quoted as `diff`
//! shows texts): `labelled-by → “{name}”` allows a label relation only to an
//! object of the same name.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

use newton_atspi_client::dump::DumpNode;

/// Properties whose values are compared as a whole (`a`/`b` patterns).
pub const SCALAR_PROPERTIES: [&str; 10] = [
    "role",
    "name",
    "description",
    "text",
    "caret",
    "value",
    "minimum",
    "maximum",
    "extents",
    "presence",
];

/// Properties whose values are lists compared item by item
/// (`added`/`removed` patterns).
pub const LIST_PROPERTIES: [&str; 4] = ["states", "interfaces", "actions", "relations"];

/// The rules file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RulesFile {
    /// Free text: what the file is for.
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
    /// Free text: which application is meant to be `diff`'s A.
    #[serde(default)]
    #[allow(dead_code)]
    a: String,
    /// Free text: which application is meant to be `diff`'s B.
    #[serde(default)]
    #[allow(dead_code)]
    b: String,
    rules: Vec<RawRule>,
}

/// One rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRule {
    id: String,
    reason: String,
    /// Where the rule is explained (e.g. `docs/compat.md #17`); free text.
    #[serde(default)]
    #[allow(dead_code)]
    doc: String,
    property: String,
    a: Option<String>,
    b: Option<String>,
    #[serde(default)]
    added: Vec<String>,
    #[serde(default)]
    removed: Vec<String>,
    tolerance: Option<u32>,
    flatten: Option<String>,
    path: Option<String>,
    #[serde(default)]
    a_role: Vec<String>,
    #[serde(default)]
    b_role: Vec<String>,
    #[serde(default)]
    a_has: Vec<String>,
    #[serde(default)]
    b_has: Vec<String>,
    #[serde(default)]
    a_lacks: Vec<String>,
    #[serde(default)]
    b_lacks: Vec<String>,
    /// B's extents lie entirely outside its top-level window's (off screen).
    #[serde(default)]
    b_off_screen: bool,
    /// Patterns for B's name.
    #[serde(default)]
    b_name: Vec<String>,
    /// The rule is meant for every object (no condition needed).
    #[serde(default)]
    everywhere: bool,
}

/// A state or interface an object must have (or lack).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Feature {
    State(String),
    Interface(String),
}

impl Feature {
    fn parse(rule: &str, text: &str) -> Result<Self, AllowError> {
        if let Some(state) = text.strip_prefix("state:") {
            Ok(Feature::State(state.to_owned()))
        } else if let Some(interface) = text.strip_prefix("interface:") {
            Ok(Feature::Interface(short_interface(interface).to_owned()))
        } else {
            Err(AllowError::Rule {
                id: rule.to_owned(),
                problem: format!("\u{201c}{text}\u{201d} is neither state:NAME nor interface:NAME"),
            })
        }
    }

    fn holds(&self, node: &DumpNode) -> bool {
        match self {
            Feature::State(state) => node.states.iter().any(|s| s == state),
            Feature::Interface(interface) => node
                .interfaces
                .iter()
                .any(|i| short_interface(i) == interface),
        }
    }
}

/// What a rule allows.
#[derive(Debug, Clone, PartialEq)]
pub enum Allowance {
    /// A's value matches `a` and B's matches `b` (scalar properties).
    Values { a: String, b: String },
    /// Items only in A matching `removed`, only in B matching `added`.
    Items {
        added: Vec<String>,
        removed: Vec<String>,
    },
    /// Extents differing by at most this much per coordinate.
    Tolerance(u32),
    /// Objects with a matching role are spliced out of both trees (their
    /// children take their place) before children are matched.
    Flatten(String),
}

/// One checked rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub id: String,
    pub reason: String,
    pub property: String,
    pub allowance: Allowance,
    path: Option<String>,
    a_role: Vec<String>,
    b_role: Vec<String>,
    a_has: Vec<Feature>,
    b_has: Vec<Feature>,
    a_lacks: Vec<Feature>,
    b_lacks: Vec<Feature>,
    b_off_screen: bool,
    b_name: Vec<String>,
    /// Declared `everywhere` (no condition).
    pub everywhere: bool,
}

/// Every rule of one file, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    pub rules: Vec<Rule>,
}

/// Why a rules file was refused.
#[derive(Debug, thiserror::Error)]
pub enum AllowError {
    #[error("--allow {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("--allow: not a rules file: {0}")]
    Json(#[from] serde_json::Error),
    #[error("--allow: rule \u{201c}{id}\u{201d}: {problem}")]
    Rule { id: String, problem: String },
}

impl Rules {
    /// Reads and checks a rules file.
    pub fn load(path: &Path) -> Result<Self, AllowError> {
        let text = std::fs::read_to_string(path).map_err(|source| AllowError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// Checks a rules document (JSON text).
    pub fn parse(text: &str) -> Result<Self, AllowError> {
        let file: RulesFile = serde_json::from_str(text)?;
        let mut ids = BTreeSet::new();
        let mut rules = Vec::with_capacity(file.rules.len());
        for raw in file.rules {
            let rule = check(raw)?;
            if !ids.insert(rule.id.clone()) {
                return Err(AllowError::Rule {
                    id: rule.id,
                    problem: "the id is used twice".into(),
                });
            }
            rules.push(rule);
        }
        Ok(Rules { rules })
    }

    /// The role patterns of every flatten rule.
    pub fn flatten_roles(&self) -> Vec<(&str, &str)> {
        self.rules
            .iter()
            .filter_map(|r| match &r.allowance {
                Allowance::Flatten(role) => Some((r.id.as_str(), role.as_str())),
                _ => None,
            })
            .collect()
    }

    /// The first rule allowing scalar `property` to be `a_value` in A and
    /// `b_value` in B at this object.
    pub fn allows_values(
        &self,
        at: &Site<'_>,
        property: &str,
        a_value: &str,
        b_value: &str,
    ) -> Option<&str> {
        self.first(at, property, |allowance| match allowance {
            Allowance::Values { a, b } => glob(&at.fill(a), a_value) && glob(&at.fill(b), b_value),
            _ => false,
        })
    }

    /// The first rule allowing `item` of list `property` to be only in B
    /// (`added`) or only in A (`!added`) at this object.
    pub fn allows_item(
        &self,
        at: &Site<'_>,
        property: &str,
        item: &str,
        added: bool,
    ) -> Option<&str> {
        let item = if property == "interfaces" {
            short_interface(item)
        } else {
            item
        };
        self.first(at, property, |allowance| match allowance {
            Allowance::Items {
                added: only_b,
                removed: only_a,
            } => {
                let patterns = if added { only_b } else { only_a };
                patterns.iter().any(|p| glob(&at.fill(p), item))
            }
            _ => false,
        })
    }

    /// The first rule allowing extents this far apart.
    pub fn allows_extents(
        &self,
        at: &Site<'_>,
        a: Option<(i32, i32, i32, i32)>,
        b: Option<(i32, i32, i32, i32)>,
    ) -> Option<&str> {
        let (Some(a), Some(b)) = (a, b) else {
            return None;
        };
        let apart = [a.0 - b.0, a.1 - b.1, a.2 - b.2, a.3 - b.3]
            .iter()
            .map(|d| d.unsigned_abs())
            .max()
            .unwrap_or(0);
        self.first(
            at,
            "extents",
            |allowance| matches!(allowance, Allowance::Tolerance(t) if apart <= *t),
        )
    }

    fn first<'r>(
        &'r self,
        at: &Site<'_>,
        property: &str,
        allows: impl Fn(&Allowance) -> bool,
    ) -> Option<&'r str> {
        self.rules
            .iter()
            .find(|rule| rule.property == property && rule.applies(at) && allows(&rule.allowance))
            .map(|rule| rule.id.as_str())
    }
}

/// The object a difference is on: its path in A and both sides' nodes.
pub struct Site<'a> {
    pub path: &'a str,
    pub a: Option<&'a DumpNode>,
    pub b: Option<&'a DumpNode>,
    /// The top-level window B's object is in, if known.
    pub b_window: Option<&'a DumpNode>,
}

impl Site<'_> {
    /// `pattern` with `{name}` replaced by the object's name (B's, else A's),
    /// `{name:?}` by the name quoted as `diff` shows texts, and `{value}` by
    /// B's current value as `diff` shows numbers.
    fn fill(&self, pattern: &str) -> String {
        if !pattern.contains('{') {
            return pattern.to_owned();
        }
        let name = self.b.or(self.a).map_or("", |n| n.name.as_str());
        let value = self
            .b
            .and_then(|b| b.value)
            .map_or_else(|| "(none)".to_owned(), crate::diff::number);
        pattern
            .replace("{name:?}", &format!("{name:?}"))
            .replace("{name}", name)
            .replace("{value}", &value)
    }

    /// B's extents do not overlap its top-level window's (the object is off
    /// screen, which is what AT-SPI's `showing` says); false when one of the
    /// two has no extents. When the walk read no extents at all (`--walk
    /// cache`: neither has any) the geometry cannot be checked and the
    /// condition holds; the other conditions of the rule still apply, and a
    /// full walk checks the geometry.
    fn b_off_screen(&self) -> bool {
        match (
            self.b.and_then(|b| b.extents),
            self.b_window.and_then(|w| w.extents),
        ) {
            (Some((x, y, w, h)), Some((px, py, pw, ph))) => {
                x >= px + pw || px >= x + w || y >= py + ph || py >= y + h
            }
            (None, None) => true,
            _ => false,
        }
    }
}

impl Rule {
    fn applies(&self, at: &Site<'_>) -> bool {
        if let Some(path) = &self.path {
            if !path_glob(path, at.path) {
                return false;
            }
        }
        let role_ok = |patterns: &[String], node: Option<&DumpNode>| {
            patterns.is_empty() || node.is_some_and(|n| patterns.iter().any(|p| glob(p, &n.role)))
        };
        let has = |features: &[Feature], node: Option<&DumpNode>| {
            features.is_empty() || node.is_some_and(|n| features.iter().all(|f| f.holds(n)))
        };
        let lacks = |features: &[Feature], node: Option<&DumpNode>| {
            features.is_empty() || node.is_some_and(|n| features.iter().all(|f| !f.holds(n)))
        };
        (!self.b_off_screen || at.b_off_screen())
            && (self.b_name.is_empty()
                || at
                    .b
                    .is_some_and(|b| self.b_name.iter().any(|p| glob(p, &b.name))))
            && role_ok(&self.a_role, at.a)
            && role_ok(&self.b_role, at.b)
            && has(&self.a_has, at.a)
            && has(&self.b_has, at.b)
            && lacks(&self.a_lacks, at.a)
            && lacks(&self.b_lacks, at.b)
    }
}

fn check(raw: RawRule) -> Result<Rule, AllowError> {
    let id = raw.id.trim().to_owned();
    let fail = |problem: String| AllowError::Rule {
        id: if id.is_empty() {
            "(no id)".into()
        } else {
            id.clone()
        },
        problem,
    };
    if id.is_empty() {
        return Err(fail("every rule needs an id".into()));
    }
    if raw.reason.trim().is_empty() {
        return Err(fail("every rule needs a reason".into()));
    }
    let property = raw.property.as_str();
    let scalar = SCALAR_PROPERTIES.contains(&property);
    let list = LIST_PROPERTIES.contains(&property);
    let structure = property == "children";
    if !(scalar || list || structure) {
        return Err(fail(format!(
            "unknown property \u{201c}{property}\u{201d}; use one of {}, {} or children",
            SCALAR_PROPERTIES.join(", "),
            LIST_PROPERTIES.join(", ")
        )));
    }
    let has_values = raw.a.is_some() || raw.b.is_some();
    let has_items = !raw.added.is_empty() || !raw.removed.is_empty();
    let kinds = [
        has_values,
        has_items,
        raw.tolerance.is_some(),
        raw.flatten.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() > 1 {
        return Err(fail(
            "give only one of a/b, added/removed, tolerance, flatten".into(),
        ));
    }
    let allowance = if list {
        if !has_items {
            return Err(fail(format!(
                "{property} is a list: give added (items only in B) and/or removed (items only in A)"
            )));
        }
        Allowance::Items {
            added: raw.added,
            removed: raw.removed,
        }
    } else if structure {
        let Some(role) = raw.flatten else {
            return Err(fail(
                "children rules give flatten: the role of the objects spliced out".into(),
            ));
        };
        Allowance::Flatten(role)
    } else if let Some(tolerance) = raw.tolerance {
        if property != "extents" {
            return Err(fail("tolerance is for extents only".into()));
        }
        Allowance::Tolerance(tolerance)
    } else if has_items || raw.flatten.is_some() {
        return Err(fail(format!(
            "{property} is a single value: give a and/or b (patterns for A's and B's values)"
        )));
    } else {
        let any_condition = raw.path.is_some()
            || !raw.a_role.is_empty()
            || !raw.b_role.is_empty()
            || !raw.a_has.is_empty()
            || !raw.b_has.is_empty()
            || !raw.a_lacks.is_empty()
            || !raw.b_lacks.is_empty();
        if !has_values && !any_condition {
            return Err(fail(format!(
                "allows every {property} difference everywhere; use --ignore {property} for that"
            )));
        }
        Allowance::Values {
            a: raw.a.unwrap_or_else(|| "*".into()),
            b: raw.b.unwrap_or_else(|| "*".into()),
        }
    };
    if structure && (raw.path.is_some() || !raw.a_role.is_empty() || !raw.b_role.is_empty()) {
        return Err(fail(
            "children rules apply everywhere; flatten names the role".into(),
        ));
    }
    let conditioned = raw.path.is_some()
        || !raw.a_role.is_empty()
        || !raw.b_role.is_empty()
        || !raw.a_has.is_empty()
        || !raw.b_has.is_empty()
        || !raw.a_lacks.is_empty()
        || !raw.b_lacks.is_empty()
        || raw.b_off_screen
        || !raw.b_name.is_empty()
        // Exact values on both sides say where by themselves.
        || matches!(&allowance, Allowance::Values { a, b } if !a.contains('*') && !b.contains('*'));
    if !structure && !conditioned && !raw.everywhere {
        return Err(fail(
            "says nowhere where the difference is intended: give a path, roles, states or \
             interfaces (aRole/bRole/aHas/bHas/aLacks/bLacks, bName, bOffScreen), or \
             \"everywhere\": true for a difference every object has"
                .into(),
        ));
    }
    if raw.everywhere && (conditioned || structure) {
        return Err(fail(
            "everywhere is for rules without conditions (children rules need none)".into(),
        ));
    }
    let features = |list: &[String]| -> Result<Vec<Feature>, AllowError> {
        list.iter().map(|f| Feature::parse(&id, f)).collect()
    };
    Ok(Rule {
        property: raw.property.clone(),
        reason: raw.reason,
        allowance,
        path: raw.path,
        a_role: raw.a_role,
        b_role: raw.b_role,
        a_has: features(&raw.a_has)?,
        b_has: features(&raw.b_has)?,
        a_lacks: features(&raw.a_lacks)?,
        b_lacks: features(&raw.b_lacks)?,
        b_off_screen: raw.b_off_screen,
        b_name: raw.b_name,
        everywhere: raw.everywhere,
        id,
    })
}

/// `org.a11y.atspi.Text` → `Text`; short names stay.
pub fn short_interface(name: &str) -> &str {
    name.strip_prefix("org.a11y.atspi.").unwrap_or(name)
}

/// `*` matches any run of characters (none included); everything else
/// matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Paths as `diff` prints them (`/`, `/0`, `/0/2`): `*` matches one
/// segment's characters, `**` any number of whole segments.
pub fn path_glob(pattern: &str, path: &str) -> bool {
    let segments = |p: &str| -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    fn matches(pattern: &[String], path: &[String]) -> bool {
        match pattern.split_first() {
            None => path.is_empty(),
            Some((head, tail)) if head == "**" => {
                (0..=path.len()).any(|skip| matches(tail, &path[skip..]))
            }
            Some((head, tail)) => match path.split_first() {
                Some((segment, rest)) => glob(head, segment) && matches(tail, rest),
                None => false,
            },
        }
    }
    matches(&segments(pattern), &segments(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_of_characters() {
        assert!(glob("*", ""));
        assert!(glob("", ""));
        assert!(!glob("", "x"));
        assert!(glob(
            "labelled-by \u{2192} *",
            "labelled-by \u{2192} \u{201c}Name\u{201d}"
        ));
        assert!(!glob("label-for \u{2192} *", "labelled-by \u{2192} x"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("a*c*e", "abcd"));
        assert!(glob("*table*", "table column header"));
        assert!(glob("ab*b", "ab b") && !glob("ab*b", "ab"));
    }

    #[test]
    fn path_globs_match_segments() {
        assert!(path_glob("/", "/"));
        assert!(!path_glob("/", "/0"));
        assert!(path_glob("/*", "/3"));
        assert!(!path_glob("/*", "/3/1"));
        assert!(path_glob("/**", "/"));
        assert!(path_glob("/**", "/3/1/4"));
        assert!(path_glob("/0/**/2", "/0/5/6/2"));
        assert!(!path_glob("/0/**/2", "/1/2"));
    }

    fn refused(json: &str) -> String {
        Rules::parse(json).unwrap_err().to_string()
    }

    #[test]
    fn bad_files_are_refused_naming_the_rule() {
        let one = |rule: &str| format!("{{\"rules\": [{rule}]}}");
        assert!(refused("[]").contains("not a rules file"));
        assert!(refused(&one(
            r#"{"id":"x","reason":"r","property":"colour","a":"*"}"#
        ))
        .contains("rule \u{201c}x\u{201d}: unknown property"));
        assert!(refused(&one(
            r#"{"id":"x","reason":"r","property":"states","a":"*"}"#
        ))
        .contains("states is a list"));
        assert!(refused(&one(
            r#"{"id":"x","reason":"r","property":"name","added":["*"]}"#
        ))
        .contains("single value"));
        assert!(
            refused(&one(r#"{"id":"x","reason":"r","property":"name"}"#)).contains("--ignore name")
        );
        assert!(refused(&one(
            r#"{"id":"x","reason":"r","property":"role","tolerance":1}"#
        ))
        .contains("extents only"));
        assert!(refused(&one(
            r#"{"id":"x","reason":"r","property":"states","added":["a"],"bHas":["focused"]}"#
        ))
        .contains("neither state:NAME nor interface:NAME"));
        assert!(
            refused(&one(r#"{"id":"","reason":"r","property":"name","a":""}"#))
                .contains("needs an id")
        );
        assert!(
            refused(&one(r#"{"id":"x","reason":" ","property":"name","a":""}"#))
                .contains("needs a reason")
        );
        assert!(refused(&one(
            r#"{"id":"x","reason":"r","property":"name","a":"","colour":1}"#
        ))
        .contains("unknown field"));
        let twice = r#"{"rules":[{"id":"x","reason":"r","property":"name","a":"","path":"/"},
                                 {"id":"x","reason":"r","property":"role","a":"","path":"/"}]}"#;
        assert!(refused(twice).contains("used twice"));
        // A rule must say where its difference is intended.
        assert!(refused(&one(
            r#"{"id":"x","reason":"r","property":"states","added":["showing"]}"#
        ))
        .contains("says nowhere where the difference is intended"));
        assert!(refused(&one(
            r#"{"id":"x","reason":"r","property":"states","added":["a"],"path":"/","everywhere":true}"#
        ))
        .contains("everywhere is for rules without conditions"));
        assert!(Rules::parse(&one(
            r#"{"id":"x","reason":"r","property":"states","added":["a"],"everywhere":true}"#
        ))
        .is_ok());
    }
}
