//! `diff A B`: walks two AT-SPI applications as a client sees them (with
//! `dump`'s walker) and reports every difference, as text, JSON or JUnit XML.
//!
//! The comparison is a pure function over two [`DumpNode`] trees
//! ([`compare`]); only [`run`] touches the bus. Toolkit CI uses it to check
//! that two ways of exposing the same UI (e.g. a legacy AT-SPI
//! implementation and the bridge's cached one) look the same to an AT.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::allow::{self, Rules, Site};
use crate::cli::{DiffArgs, DiffFormat, DiffWalk};
use crate::progress::Progress;
use newton_atspi_client::dump::{self, DumpNode, WalkLimits};

/// Properties `--ignore` accepts (besides `states:NAME`).
pub const PROPERTIES: [&str; 15] = [
    "role",
    "name",
    "description",
    "states",
    "interfaces",
    "text",
    "caret",
    "actions",
    "value",
    "minimum",
    "maximum",
    "extents",
    "relations",
    "children",
    "errors",
];

/// What the comparison leaves out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Ignore {
    properties: BTreeSet<String>,
    states: BTreeSet<String>,
}

impl Ignore {
    /// Parses `--ignore` items: property names, or `states:NAME` for one state.
    pub fn parse(items: &[String]) -> Result<Self, String> {
        let mut ignore = Self::default();
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            if let Some(state) = item.strip_prefix("states:") {
                ignore.states.insert(state.to_owned());
            } else if PROPERTIES.contains(&item) {
                ignore.properties.insert(item.to_owned());
            } else {
                return Err(format!(
                    "--ignore: unknown property \u{201c}{item}\u{201d}; use one of {} or states:NAME",
                    PROPERTIES.join(", ")
                ));
            }
        }
        Ok(ignore)
    }

    fn skips(&self, property: &str) -> bool {
        self.properties.contains(property)
    }
}

/// One differing property of one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// Child indices from the application root: `/` is the root, `/0/2` its
    /// first child's third child (in A, see `b_path`; for an object only in
    /// B, its path in B).
    pub path: String,
    /// The object's path in B when it differs from A's (a `children` rule
    /// with `flatten` spliced objects out of one side).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_path: Option<String>,
    /// The object as `role “name”` (from A, or from whichever side has it).
    pub object: String,
    /// Which property differs (`presence` when the object exists on one side only).
    pub property: String,
    /// The value in A.
    pub a: String,
    /// The value in B.
    pub b: String,
    /// For list properties: the items only in A and only in B that this
    /// entry is about.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The `--allow` rule that allows this difference (allowed ones only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// The outcome of comparing two trees.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// A's application name, as given.
    pub a: String,
    /// B's application name, as given.
    pub b: String,
    /// True when nothing (that is not ignored) differs, allowed or not.
    pub identical: bool,
    /// True when every difference is allowed by an `--allow` rule (the
    /// exit status is 0 exactly then).
    pub passed: bool,
    /// Every object visited, as (path, object), in walk order: the JUnit
    /// test cases.
    #[serde(skip)]
    pub objects: Vec<(String, String)>,
    /// Objects compared (present on both sides).
    pub objects_compared: usize,
    /// Every difference no rule allows, in walk order.
    pub differences: Vec<Difference>,
    /// Every difference a rule allows, in walk order, each naming its rule.
    pub allowed: Vec<Difference>,
    /// Whether `--allow` rules were given.
    #[serde(skip)]
    pub rules_given: bool,
}

/// Compares two trees object by object (children matched by position, after
/// the `flatten` rules of `rules` spliced objects out), allowing what
/// `rules` allows. `root` is the index path both trees were found at (`"/"`
/// for whole applications, else `--under`'s): paths are reported from the
/// application, so path conditions of rules keep their meaning. `b_window`
/// is B's top-level window that `--under` starts in; `None` when B is
/// walked from its application, whose children are their own windows.
#[allow(clippy::too_many_arguments)]
pub fn compare_in_window(
    root: &str,
    a_name: &str,
    a: &DumpNode,
    b_name: &str,
    b: &DumpNode,
    b_window: Option<&DumpNode>,
    ignore: &Ignore,
    rules: &Rules,
) -> Report {
    let mut report = Report {
        a: a_name.to_owned(),
        b: b_name.to_owned(),
        identical: true,
        passed: true,
        objects: Vec::new(),
        objects_compared: 0,
        differences: Vec::new(),
        allowed: Vec::new(),
        rules_given: !rules.rules.is_empty(),
    };
    let flatten = rules.flatten_roles();
    let a_view = view(a, None, root.to_owned(), &flatten);
    let b_view = view(b, b_window, root.to_owned(), &flatten);
    let mut cx = Context {
        ignore,
        rules,
        report: &mut report,
    };
    cx.compare_node(&a_view, &b_view);
    report.passed = report.differences.is_empty();
    report.identical = report.passed && report.allowed.is_empty();
    report
}

/// A tree as compared: objects with a `flatten` role are spliced out (their
/// children, themselves flattened, take their place); each object keeps its
/// path in its own tree.
struct View<'a> {
    node: &'a DumpNode,
    /// The top-level window the object is in (the application's child it
    /// descends from), if known.
    window: Option<&'a DumpNode>,
    path: String,
    children: Vec<View<'a>>,
    /// The rule that spliced out at least one of this object's children.
    spliced_by: Option<&'a str>,
    /// The objects spliced out below this one (at any depth), each with its
    /// path and the children that took its place.
    spliced: Vec<(String, &'a DumpNode)>,
}

fn child_path(parent: &str, index: usize) -> String {
    match parent {
        "/" => format!("/{index}"),
        parent => format!("{parent}/{index}"),
    }
}

fn view<'a>(
    node: &'a DumpNode,
    window: Option<&'a DumpNode>,
    path: String,
    flatten: &[(&'a str, &'a str)],
) -> View<'a> {
    let mut children = Vec::with_capacity(node.children.len());
    let mut spliced_by = None;
    let mut spliced = Vec::new();
    for (index, child) in node.children.iter().enumerate() {
        let mut child_view = view(
            child,
            window_of(node, child, window),
            child_path(&path, index),
            flatten,
        );
        match flatten
            .iter()
            .find(|(_, role)| allow::glob(role, &child.role))
        {
            Some((rule, _)) => {
                spliced_by.get_or_insert(*rule);
                spliced.push((child_view.path.clone(), child));
                spliced.append(&mut child_view.spliced);
                children.extend(child_view.children);
            }
            None => children.push(child_view),
        }
    }
    View {
        node,
        window,
        path,
        children,
        spliced_by,
        spliced,
    }
}

/// The top-level window of `child` of `node`: `child` itself below the
/// application, else `node`'s.
fn window_of<'a>(
    node: &'a DumpNode,
    child: &'a DumpNode,
    window: Option<&'a DumpNode>,
) -> Option<&'a DumpNode> {
    if node.role == "application" {
        Some(child)
    } else {
        window
    }
}

struct Context<'r> {
    ignore: &'r Ignore,
    rules: &'r Rules,
    report: &'r mut Report,
}

/// One property's values on both sides.
enum Values {
    Scalar(String, String),
    /// Items, and whether their order matters.
    List(Vec<String>, Vec<String>, bool),
}

impl Context<'_> {
    fn compare_node(&mut self, a: &View<'_>, b: &View<'_>) {
        let object = label(a.node);
        let b_path = (a.path != b.path).then(|| b.path.clone());
        self.report.objects.push((a.path.clone(), object.clone()));
        self.report.objects_compared += 1;
        let site = Site {
            path: &a.path,
            a: Some(a.node),
            b: Some(b.node),
            b_window: b.window,
        };
        let entry = |property: &str, a_value: String, b_value: String| Difference {
            path: a.path.clone(),
            b_path: b_path.clone(),
            object: object.clone(),
            property: property.to_owned(),
            a: a_value,
            b: b_value,
            detail: String::new(),
            rule: None,
        };
        for (property, values) in property_values(a.node, b.node, self.ignore) {
            match values {
                Values::Scalar(a_value, b_value) => {
                    if a_value == b_value {
                        continue;
                    }
                    let rule = if property == "extents" {
                        self.rules
                            .allows_extents(&site, a.node.extents, b.node.extents)
                            .or_else(|| {
                                self.rules
                                    .allows_values(&site, property, &a_value, &b_value)
                            })
                    } else {
                        self.rules
                            .allows_values(&site, property, &a_value, &b_value)
                    };
                    let mut d = entry(property, a_value, b_value);
                    d.rule = rule.map(str::to_owned);
                    self.push(d);
                }
                Values::List(a_items, b_items, ordered) => {
                    if a_items == b_items {
                        continue;
                    }
                    let a_shown = a_items.join(list_separator(property));
                    let b_shown = b_items.join(list_separator(property));
                    let outcome = self.judge_items(&site, property, &a_items, &b_items, ordered);
                    for (rule, detail) in outcome.allowed {
                        let mut d = entry(property, a_shown.clone(), b_shown.clone());
                        d.detail = detail;
                        d.rule = Some(rule);
                        self.push(d);
                    }
                    if let Some(detail) = outcome.failure {
                        let mut d = entry(property, a_shown.clone(), b_shown.clone());
                        d.detail = detail;
                        self.push(d);
                    }
                }
            }
        }
        // A spliced-out object of B is still an object an AT reads (bug B1
        // hid in one): each must be as sound as the children that took its
        // place. (A's are the reference's own business.)
        for (path, spliced) in &b.spliced {
            self.check_spliced(path, spliced);
        }
        if self.ignore.skips("children") {
            return;
        }
        let flat_labels = |v: &View<'_>| {
            let labels: Vec<String> = v.children.iter().map(|c| label(c.node)).collect();
            shown_list(&labels)
        };
        if !self.report.rules_given {
            let (a_children, b_children) = (child_labels(a.node), child_labels(b.node));
            if a_children != b_children {
                self.push(entry("children", a_children, b_children));
            }
        } else if a.children.len() == b.children.len() {
            // Where the compared children sit below each object: differing
            // positions mean the flatten rule spliced different containers
            // out of the two sides.
            let below = |v: &View<'_>| -> Vec<String> {
                v.children
                    .iter()
                    .map(|c| {
                        c.path
                            .strip_prefix(v.path.as_str())
                            .unwrap_or(&c.path)
                            .trim_start_matches('/')
                            .to_owned()
                    })
                    .collect()
            };
            if let Some(rule) = a.spliced_by.or(b.spliced_by) {
                let (a_below, b_below) = (below(a), below(b));
                if a_below != b_below {
                    let mut d = entry("children", shown_list(&a_below), shown_list(&b_below));
                    d.detail = format!("compared as {}", flat_labels(b));
                    d.rule = Some(rule.to_owned());
                    self.push(d);
                }
            }
        } else {
            // Different numbers of children: match them by name, in order,
            // so objects present on one side only are named as such.
            let pairs = align(&a.children, &b.children);
            let mut only_one_side = 0;
            let mut rule = None;
            let mut refused = 0;
            for pair in &pairs {
                let (a_child, b_child) = match pair {
                    (Some(_), Some(_)) => continue,
                    (a_index, b_index) => (
                        a_index.map(|i| a.children[i].node),
                        b_index.map(|i| b.children[i].node),
                    ),
                };
                only_one_side += 1;
                match self.presence_rule(&a.path, a_child, b_child, Some(b.node)) {
                    Some(id) => {
                        rule.get_or_insert(id);
                    }
                    None => refused += 1,
                }
            }
            let mut d = entry("children", flat_labels(a), flat_labels(b));
            d.detail = format!(
                "{only_one_side} object(s) on one side only, {} of them allowed",
                only_one_side - refused
            );
            if refused == 0 {
                d.rule = rule;
            }
            self.push(d);
            for pair in pairs {
                match pair {
                    (Some(i), Some(j)) => self.compare_node(&a.children[i], &b.children[j]),
                    (Some(i), None) => {
                        let only_a = &a.children[i];
                        self.one_sided(only_a.path.clone(), Some(only_a.node), None, None);
                    }
                    (None, Some(j)) => {
                        let only_b = &b.children[j];
                        self.one_sided(only_b.path.clone(), None, Some(only_b.node), only_b.window);
                    }
                    (None, None) => {}
                }
            }
            return;
        }
        for (a_child, b_child) in a.children.iter().zip(&b.children) {
            self.compare_node(a_child, b_child);
        }
        let common = a.children.len().min(b.children.len());
        for only_a in a.children.iter().skip(common) {
            self.one_sided(only_a.path.clone(), Some(only_a.node), None, None);
        }
        for only_b in b.children.iter().skip(common) {
            self.one_sided(only_b.path.clone(), None, Some(only_b.node), only_b.window);
        }
    }

    fn presence_rule(
        &self,
        path: &str,
        a: Option<&DumpNode>,
        b: Option<&DumpNode>,
        b_window: Option<&DumpNode>,
    ) -> Option<String> {
        let shown = |node: Option<&DumpNode>| node.map_or_else(|| "absent".to_owned(), label);
        let site = Site {
            path,
            a,
            b,
            b_window,
        };
        self.rules
            .allows_values(&site, "presence", &shown(a), &shown(b))
            .map(str::to_owned)
    }

    /// Splits a list property's differing items into allowed ones (by rule)
    /// and the rest.
    fn judge_items(
        &self,
        site: &Site<'_>,
        property: &str,
        a_items: &[String],
        b_items: &[String],
        ordered: bool,
    ) -> ItemOutcome {
        let mut allowed: Vec<(String, Vec<String>)> = Vec::new();
        let mut refused = Vec::new();
        let mut kept_a = Vec::new();
        let mut kept_b = Vec::new();
        let sides = [(a_items, b_items, false), (b_items, a_items, true)];
        for (items, other, added) in sides {
            for item in items {
                if other.contains(item) {
                    if added {
                        kept_b.push(item.clone());
                    } else {
                        kept_a.push(item.clone());
                    }
                    continue;
                }
                let shown = format!("{} {item}", if added { "only in B:" } else { "only in A:" });
                match self.rules.allows_item(site, property, item, added) {
                    Some(rule) => match allowed.iter_mut().find(|(r, _)| r == rule) {
                        Some((_, items)) => items.push(shown),
                        None => allowed.push((rule.to_owned(), vec![shown])),
                    },
                    None => refused.push(shown),
                }
            }
        }
        if ordered && refused.is_empty() && kept_a != kept_b {
            refused.push("the items common to both are in another order".into());
        }
        ItemOutcome {
            allowed: allowed
                .into_iter()
                .map(|(rule, items)| (rule, items.join("; ")))
                .collect(),
            failure: (!refused.is_empty()).then(|| refused.join("; ")),
        }
    }

    /// An object present on one side only: its own test case, one
    /// `presence` difference (allowed only by a `presence` rule), and the
    /// same for each of its descendants: a rule allowing the object does not
    /// allow whatever lies inside it.
    fn one_sided(
        &mut self,
        path: String,
        a: Option<&DumpNode>,
        b: Option<&DumpNode>,
        b_window: Option<&DumpNode>,
    ) {
        let shown = |node: Option<&DumpNode>| node.map_or_else(|| "absent".to_owned(), label);
        let (a_value, b_value) = (shown(a), shown(b));
        let object = if a.is_some() {
            a_value.clone()
        } else {
            b_value.clone()
        };
        let rule = self.presence_rule(&path, a, b, b_window);
        self.report.objects.push((path.clone(), object.clone()));
        // Calls that failed on the one side that has it (an object listed
        // by its parent but not served, say).
        let errors: Vec<&str> = a
            .or(b)
            .map(|n| n.errors.iter().map(String::as_str).collect())
            .unwrap_or_default();
        self.push(Difference {
            path: path.clone(),
            b_path: None,
            object,
            property: "presence".into(),
            a: a_value,
            b: b_value,
            detail: errors.join("; "),
            rule,
        });
        if let Some(node) = a.or(b) {
            for (index, child) in node.children.iter().enumerate() {
                let child_path = child_path(&path, index);
                match (a, b) {
                    (Some(_), _) => self.one_sided(child_path, Some(child), None, None),
                    _ => self.one_sided(
                        child_path,
                        None,
                        Some(child),
                        window_of(node, child, b_window),
                    ),
                }
            }
        }
    }

    /// Checks an object a `flatten` rule spliced out of B's tree, which
    /// nothing on the other side is compared with: it must offer what every
    /// object offers (Accessible and Component, bug B1), enclose the boxes
    /// of its children, and be `showing` when one of them is. Each failure
    /// is a difference no rule allows.
    fn check_spliced(&mut self, path: &str, node: &DumpNode) {
        let object = label(node);
        let fail = |this: &mut Self, property: &str, value: String, detail: String| {
            let (a_value, b_value) = ("(spliced out)".to_owned(), value);
            this.push(Difference {
                path: path.to_owned(),
                b_path: None,
                object: object.clone(),
                property: property.to_owned(),
                a: a_value,
                b: b_value,
                detail,
                rule: None,
            });
        };
        for needed in ["Accessible", "Component"] {
            if !self.ignore.skips("interfaces")
                && !node
                    .interfaces
                    .iter()
                    .any(|i| allow::short_interface(i) == needed)
            {
                fail(
                    self,
                    "interfaces",
                    node.interfaces.join(", "),
                    format!("a spliced-out {} lacks {needed}", node.role),
                );
            }
        }
        if !self.ignore.skips("extents") {
            if let Some((x, y, w, h)) = node.extents {
                // Children on screen only: a clipping container does not
                // enclose what is scrolled out of it.
                let outside: Vec<String> = node
                    .children
                    .iter()
                    .filter(|c| c.states.iter().any(|s| s == "showing"))
                    .filter_map(|c| c.extents.map(|e| (c, e)))
                    .filter(|(_, (cx, cy, cw, ch))| {
                        // 1 px: the children's and the container's boxes are
                        // rounded separately (extents-rounding).
                        *cw > 0
                            && *ch > 0
                            && (*cx < x - 1
                                || *cy < y - 1
                                || cx + cw > x + w + 1
                                || cy + ch > y + h + 1)
                    })
                    .map(|(c, e)| format!("{} at {}", label(c), extents_shown(e)))
                    .collect();
                if !outside.is_empty() {
                    fail(
                        self,
                        "extents",
                        extents_shown((x, y, w, h)),
                        format!("does not enclose its children: {}", outside.join("; ")),
                    );
                }
            }
        }
        let showing = |n: &DumpNode| n.states.iter().any(|s| s == "showing");
        if !self.ignore.skips("states")
            && !self.ignore.states.contains("showing")
            && !showing(node)
            && node.children.iter().any(showing)
        {
            fail(
                self,
                "states",
                node.states.join(", "),
                "not showing, but a child is".into(),
            );
        }
    }

    fn push(&mut self, difference: Difference) {
        if difference.rule.is_some() {
            self.report.allowed.push(difference);
        } else {
            self.report.differences.push(difference);
        }
    }
}

/// Pairs children of two objects by name, in order: (A index, B index),
/// with None for an object found on one side only.
fn align(a: &[View<'_>], b: &[View<'_>]) -> Vec<(Option<usize>, Option<usize>)> {
    let mut pairs = Vec::with_capacity(a.len().max(b.len()));
    let mut next_b = 0;
    for (i, a_child) in a.iter().enumerate() {
        let found = b
            .get(next_b..)
            .unwrap_or_default()
            .iter()
            .position(|b_child| b_child.node.name == a_child.node.name);
        match found {
            Some(skip) => {
                pairs.extend((next_b..next_b + skip).map(|j| (None, Some(j))));
                pairs.push((Some(i), Some(next_b + skip)));
                next_b += skip + 1;
            }
            None => pairs.push((Some(i), None)),
        }
    }
    pairs.extend((next_b..b.len()).map(|j| (None, Some(j))));
    pairs
}

struct ItemOutcome {
    /// (rule, the items it allows, shown)
    allowed: Vec<(String, String)>,
    /// The items no rule allows, shown; None when there are none.
    failure: Option<String>,
}

fn list_separator(property: &str) -> &'static str {
    if property == "relations" {
        "; "
    } else {
        ", "
    }
}

/// Each compared property's values in A and B, minus ignored ones.
fn property_values(a: &DumpNode, b: &DumpNode, ignore: &Ignore) -> Vec<(&'static str, Values)> {
    let scalar =
        |f: &dyn Fn(&DumpNode) -> Option<String>| Values::Scalar(optional(f(a)), optional(f(b)));
    let list =
        |f: &dyn Fn(&DumpNode) -> Vec<String>, ordered: bool| Values::List(f(a), f(b), ordered);
    let errors = |n: &DumpNode| (!n.errors.is_empty()).then(|| n.errors.join("; "));
    let candidates: [(&'static str, Values); 14] = [
        ("role", scalar(&|n| Some(n.role.clone()))),
        ("name", scalar(&|n| Some(n.name.clone()))),
        ("description", scalar(&|n| Some(n.description.clone()))),
        ("states", list(&|n| states_shown(n, ignore), false)),
        ("interfaces", list(&|n| n.interfaces.clone(), false)),
        (
            "text",
            scalar(&|n| n.text.as_ref().map(|t| format!("{t:?}"))),
        ),
        ("caret", scalar(&|n| n.caret.map(|c| c.to_string()))),
        ("actions", list(&|n| n.actions.clone(), true)),
        ("value", scalar(&|n| n.value.map(number))),
        ("minimum", scalar(&|n| n.minimum.map(number))),
        ("maximum", scalar(&|n| n.maximum.map(number))),
        ("extents", scalar(&|n| n.extents.map(extents_shown))),
        ("relations", list(&|n| n.relations.clone(), false)),
        // Calls that failed while walking (a node budget exhausted
        // included): the two sides were not fully compared.
        ("errors", scalar(&errors)),
    ];
    candidates
        .into_iter()
        .filter(|(property, _)| !ignore.skips(property))
        .collect()
}

/// A number as `diff` shows it (and `--allow` patterns match it): plain
/// decimals, with an exponent for huge or tiny magnitudes (`f64::MAX` is
/// `1.7976931348623157e308`).
pub fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-6..1e15).contains(&magnitude) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

fn states_shown(node: &DumpNode, ignore: &Ignore) -> Vec<String> {
    node.states
        .iter()
        .filter(|state| !ignore.states.contains(*state))
        .cloned()
        .collect()
}

fn extents_shown((x, y, width, height): (i32, i32, i32, i32)) -> String {
    format!("{width}\u{d7}{height} at ({x}, {y})")
}

fn optional(value: Option<String>) -> String {
    value.unwrap_or_else(|| "(none)".into())
}

fn label(node: &DumpNode) -> String {
    format!("{} \u{201c}{}\u{201d}", node.role, node.name)
}

/// `N [first, second, …]`, at most 20 entries shown.
fn shown_list(items: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut shown = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        shown.push_str(", \u{2026}");
    }
    format!("{} [{shown}]", items.len())
}

fn child_labels(node: &DumpNode) -> String {
    let labels: Vec<String> = node.children.iter().map(label).collect();
    format!("{} [{}]", node.children.len(), labels.join(", "))
}

fn where_shown(d: &Difference) -> String {
    match &d.b_path {
        Some(b_path) => format!("{} (B: {b_path})", d.path),
        None => d.path.clone(),
    }
}

/// One entry per difference no rule allows, then the allowed ones counted
/// per rule (with the first object each rule covered), and a summary line.
pub fn to_text(report: &Report) -> String {
    let mut out = String::new();
    for d in &report.differences {
        let _ = writeln!(
            out,
            "{} {}: {}\n  {}: {}\n  {}: {}",
            where_shown(d),
            d.object,
            d.property,
            report.a,
            d.a,
            report.b,
            d.b
        );
        if !d.detail.is_empty() {
            let _ = writeln!(out, "  ({})", d.detail);
        }
    }
    let mut per_rule: Vec<(&str, usize, &Difference)> = Vec::new();
    for d in &report.allowed {
        let rule = d.rule.as_deref().unwrap_or_default();
        match per_rule.iter_mut().find(|(r, _, _)| *r == rule) {
            Some((_, count, _)) => *count += 1,
            None => per_rule.push((rule, 1, d)),
        }
    }
    for (rule, count, first) in &per_rule {
        let detail = if first.detail.is_empty() {
            format!("{} \u{2192} {}", first.a, first.b)
        } else {
            first.detail.clone()
        };
        let _ = writeln!(
            out,
            "allowed ({rule}): {count} difference(s), e.g. {} {}: {}: {detail}",
            where_shown(first),
            first.object,
            first.property
        );
    }
    let objects_with_differences: BTreeSet<&str> =
        report.differences.iter().map(|d| d.path.as_str()).collect();
    let allowed = if report.rules_given {
        format!(", {} allowed by rules", report.allowed.len())
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{} difference(s) in {} object(s){allowed}; {} object(s) compared",
        report.differences.len(),
        objects_with_differences.len(),
        report.objects_compared
    );
    out
}

/// The report as a JSON document (`differences` and `allowed` in walk order).
pub fn to_json(report: &Report) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(report)
}

/// JUnit XML: one test case per object, one failure per differing property
/// no rule allows; differences a rule allows leave the case passed, each
/// noted in the case's `system-out` as `allowed (RULE): …`.
pub fn to_junit(report: &Report) -> String {
    let suite = format!("diff {} vs {}", report.a, report.b);
    let mut by_path: BTreeMap<&str, (Vec<&Difference>, Vec<&Difference>)> = BTreeMap::new();
    for d in &report.differences {
        by_path.entry(d.path.as_str()).or_default().0.push(d);
    }
    for d in &report.allowed {
        by_path.entry(d.path.as_str()).or_default().1.push(d);
    }
    let failing = by_path.values().filter(|(f, _)| !f.is_empty()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"newton-atspi-bridge diff\" tests=\"{}\" failures=\"{}\">",
        report.objects.len(),
        failing
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\">",
        xml_escape(&suite),
        report.objects.len(),
        failing
    );
    let none = (Vec::new(), Vec::new());
    for (path, object) in &report.objects {
        let (failures, allowed) = by_path.get(path.as_str()).unwrap_or(&none);
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml_escape(&suite),
            xml_escape(&format!("{path} {object}"))
        );
        if failures.is_empty() && allowed.is_empty() {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        for d in failures {
            let detail = if d.detail.is_empty() {
                String::new()
            } else {
                format!("\n({})", d.detail)
            };
            let _ = writeln!(
                out,
                "      <failure type=\"{}\" message=\"{} differs\">{}: {}\n{}: {}{}</failure>",
                xml_escape(&d.property),
                xml_escape(&d.property),
                xml_escape(&report.a),
                xml_escape(&d.a),
                xml_escape(&report.b),
                xml_escape(&d.b),
                xml_escape(&detail)
            );
        }
        if !allowed.is_empty() {
            out.push_str("      <system-out>");
            for d in allowed {
                let what = if d.detail.is_empty() {
                    format!("{} \u{2192} {}", d.a, d.b)
                } else {
                    d.detail.clone()
                };
                let _ = write!(
                    out,
                    "{}&#10;",
                    xml_escape(&format!(
                        "allowed ({}): {}: {what}",
                        d.rule.as_deref().unwrap_or_default(),
                        d.property
                    ))
                );
            }
            out.push_str("</system-out>\n");
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Escapes text for XML attributes and content; drops characters XML 1.0
/// cannot carry at all (accessible names come from applications).
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => {
                let _ = write!(out, "&#{};", c as u32);
            }
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// `diff A B`: Ok(true) when the trees differ in a way no `--allow` rule
/// allows, Ok(false) when they are identical or every difference is allowed.
pub fn run(args: DiffArgs) -> Result<bool, Box<dyn Error>> {
    let ignore = Ignore::parse(&args.ignore)?;
    let rules = match &args.allow {
        Some(path) => Rules::load(path)?,
        None => Rules::default(),
    };
    let limits = WalkLimits {
        max_depth: args.max_depth,
        max_nodes: args.max_nodes,
    };
    let under = match &args.under {
        Some(path) => {
            if matches!(args.walk, DiffWalk::Cache) {
                return Err(
                    "--under walks a subtree object by object: use it with --walk calls".into(),
                );
            }
            Some(index_path(path)?)
        }
        None => None,
    };
    let (a_side, b_side) = (Side::of(&args.a), Side::of(&args.b));
    let (a, b, b_window) = match (&a_side, &b_side) {
        (Side::Snapshot(a), Side::Snapshot(b)) => (
            load_snapshot(a, under.as_deref())?,
            load_snapshot(b, under.as_deref())?,
            snapshot_window(b, under.as_deref())?,
        ),
        _ => async_io::block_on(async {
            let address = match args.a11y_bus.clone().filter(|a| !a.is_empty()) {
                Some(address) => address,
                None => newton_atspi_daemon::a11y_bus::find_address().await?,
            };
            let conn = newton_atspi_daemon::a11y_bus::connect(&address).await?;
            wait_for_apps(&conn, &args.wait_for, Duration::from_secs(args.timeout)).await?;
            let apps = dump::applications(&conn).await?;
            let live = Live {
                conn: &conn,
                apps: &apps,
                walk: args.walk,
                under: under.as_deref(),
                limits,
            };
            // Both walks at once: each waits on its own application's answers.
            let (a, b) = futures::join!(live.tree(&a_side), live.tree(&b_side));
            let b_window = live.window(&b_side).await?;
            Ok::<_, Box<dyn Error>>((a?, b?, b_window))
        })?,
    };
    let root = args.under.as_deref().unwrap_or("/");
    let report = compare_in_window(
        root,
        &args.a,
        &a,
        &args.b,
        &b,
        b_window.as_ref(),
        &ignore,
        &rules,
    );
    let output = match args.format {
        DiffFormat::Text => to_text(&report),
        DiffFormat::Json => to_json(&report)? + "\n",
        DiffFormat::Junit => to_junit(&report),
    };
    crate::print_out(&output)?;
    Ok(!report.passed)
}

/// One operand of `diff`: a live application, or a snapshot file written by
/// `dump --json` (any operand ending in `.json`).
enum Side {
    Live(String),
    Snapshot(std::path::PathBuf),
}

impl Side {
    fn of(operand: &str) -> Self {
        match operand.ends_with(".json") {
            true => Side::Snapshot(operand.into()),
            false => Side::Live(operand.to_owned()),
        }
    }
}

/// The tree in a `dump --json APP` snapshot (an array holding one
/// application), or its subtree at `under`.
fn load_snapshot(path: &std::path::Path, under: Option<&[i32]>) -> Result<DumpNode, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("snapshot {shown}: {e}"))?;
    let trees: Vec<DumpNode> = serde_json::from_str(&text)
        .map_err(|e| format!("snapshot {shown}: not the output of `dump --json`: {e}"))?;
    let tree = match <[DumpNode; 1]>::try_from(trees) {
        Ok([tree]) => tree,
        Err(trees) => {
            return Err(format!(
                "snapshot {shown} holds {} applications; save one with `dump --json APP`",
                trees.len()
            ))
        }
    };
    let mut node = tree;
    for (depth, &index) in under.unwrap_or_default().iter().enumerate() {
        let count = node.children.len();
        node = usize::try_from(index)
            .ok()
            .filter(|&i| i < count)
            .map(|i| node.children.swap_remove(i))
            .ok_or_else(|| {
                format!(
                    "snapshot {shown}: --under: the object at depth {depth} has {count} children, \
                     no child {index}"
                )
            })?;
    }
    Ok(node)
}

/// The top-level window of a snapshot's `--under` subtree, without children
/// (as [`Live::window`] describes a live one).
fn snapshot_window(
    path: &std::path::Path,
    under: Option<&[i32]>,
) -> Result<Option<DumpNode>, String> {
    let Some(&window_index) = under.and_then(|u| u.first()) else {
        return Ok(None);
    };
    let mut window = load_snapshot(path, Some(&[window_index]))?;
    window.children.clear();
    Ok(Some(window))
}

/// What walking a live side needs.
struct Live<'a> {
    conn: &'a zbus::Connection,
    apps: &'a [(String, String)],
    walk: DiffWalk,
    under: Option<&'a [i32]>,
    limits: WalkLimits,
}

impl Live<'_> {
    /// The side's tree: walked when live, read when a snapshot.
    async fn tree(&self, side: &Side) -> Result<DumpNode, String> {
        let name = match side {
            Side::Snapshot(path) => return load_snapshot(path, self.under),
            Side::Live(name) => name,
        };
        let bus = one_app(self.apps, name)?;
        Ok(match (self.walk, self.under) {
            (DiffWalk::Calls, under) => {
                let path = match under {
                    Some(indices) => dump::object_at(self.conn, &bus, indices)
                        .await
                        .map_err(|e| format!("{name}: {e}"))?,
                    None => dump::ROOT.to_owned(),
                };
                let progress = Progress::new(&format!("diff: {name}"));
                let tree = dump::walk_from_reporting(self.conn, &bus, &path, self.limits, &|n| {
                    progress.visited(n)
                })
                .await;
                progress.finish();
                tree
            }
            (DiffWalk::Cache, _) => dump::cache_tree(self.conn, &bus, self.limits).await,
        })
    }

    /// The top-level window a `--under` subtree lies in, described without
    /// children: its extents tell what is off screen. None without `--under`.
    async fn window(&self, side: &Side) -> Result<Option<DumpNode>, String> {
        let (Some(&window_index), DiffWalk::Calls) =
            (self.under.and_then(|u| u.first()), self.walk)
        else {
            return Ok(None);
        };
        let name = match side {
            Side::Snapshot(path) => return snapshot_window(path, self.under),
            Side::Live(name) => name,
        };
        let bus = one_app(self.apps, name)?;
        let window = dump::object_at(self.conn, &bus, &[window_index])
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        let only_it = WalkLimits {
            max_depth: 0,
            max_nodes: 1,
        };
        Ok(Some(
            dump::walk_from(self.conn, &bus, &window, only_it).await,
        ))
    }
}

/// Waits until every application in `wanted` is on the desktop (as
/// [`one_app`] selects it) with at least one child, polling the registry.
async fn wait_for_apps(
    conn: &zbus::Connection,
    wanted: &[String],
    timeout: Duration,
) -> Result<(), String> {
    if wanted.is_empty() {
        return Ok(());
    }
    let deadline = Instant::now() + timeout;
    loop {
        let apps = dump::applications(conn).await.unwrap_or_default();
        let mut missing = Vec::new();
        for name in wanted {
            let ready = match one_app(&apps, name) {
                Ok(bus) => dump::object_at(conn, &bus, &[0]).await.is_ok(),
                Err(_) => false,
            };
            if !ready {
                missing.push(name.as_str());
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let present: Vec<&str> = apps.iter().map(|(_, name)| name.as_str()).collect();
            return Err(format!(
                "--wait-for: {} not on the desktop with a window after {} s; applications there: {}",
                missing.join(", "),
                timeout.as_secs(),
                if present.is_empty() { "none".to_owned() } else { present.join(", ") }
            ));
        }
        async_io::Timer::after(Duration::from_millis(100)).await;
    }
}

/// `/0/0/3` → `[0, 0, 3]`; `/` → `[]`.
fn index_path(path: &str) -> Result<Vec<i32>, String> {
    let invalid = || format!("--under {path}: expected an index path such as /0/0/3");
    let rest = path.strip_prefix('/').ok_or_else(invalid)?;
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    rest.split('/')
        .map(|index| {
            index
                .parse::<i32>()
                .ok()
                .filter(|i| *i >= 0)
                .ok_or_else(invalid)
        })
        .collect()
}

/// The bus name of the one application `wanted` selects: a unique bus name
/// (`:1.42`, for two instances with the same name), else as `dump` selects.
fn one_app(apps: &[(String, String)], wanted: &str) -> Result<String, String> {
    if wanted.starts_with(':') {
        return apps
            .iter()
            .find(|(bus, _)| bus == wanted)
            .map(|(bus, _)| bus.clone())
            .ok_or_else(|| format!("no application on the bus has the unique name {wanted}"));
    }
    let selected = dump::select_apps(apps.to_vec(), Some(wanted))?;
    match selected.as_slice() {
        [(bus, _)] => Ok(bus.clone()),
        _ => {
            let buses: Vec<&str> = selected.iter().map(|(bus, _)| bus.as_str()).collect();
            Err(format!(
                "several applications are named \u{201c}{wanted}\u{201d} ({}); give a unique bus name instead",
                buses.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_takes_an_index_path_only() {
        assert_eq!(index_path("/"), Ok(vec![]));
        assert_eq!(index_path("/0/0/3"), Ok(vec![0, 0, 3]));
        for bad in ["", "0/1", "/0/x", "/0/-1", "/0//1"] {
            assert!(index_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_subtree_is_reported_with_whole_paths() {
        let a = node("panel", "", vec![node("label", "x", vec![])]);
        let mut b = node("panel", "", vec![node("label", "y", vec![])]);
        let under = |b: &DumpNode| {
            compare_in_window(
                "/0/2",
                "A",
                &a,
                "B",
                b,
                None,
                &Ignore::default(),
                &Rules::default(),
            )
        };
        let report = under(&b);
        assert!(!report.passed);
        let paths: Vec<(&str, &str)> = report
            .differences
            .iter()
            .map(|d| (d.path.as_str(), d.property.as_str()))
            .collect();
        assert_eq!(paths, [("/0/2", "children"), ("/0/2/0", "name")]);
        b.children[0].name = "x".into();
        let report = under(&b);
        assert!(report.passed, "{report:?}");
    }

    fn node(role: &str, name: &str, children: Vec<DumpNode>) -> DumpNode {
        DumpNode {
            role: role.into(),
            name: name.into(),
            description: String::new(),
            states: vec!["enabled".into(), "focusable".into(), "sensitive".into()],
            interfaces: vec!["org.a11y.atspi.Accessible".into()],
            text: None,
            caret: None,
            actions: Vec::new(),
            value: None,
            minimum: None,
            maximum: None,
            extents: Some((0, 0, 100, 20)),
            relations: Vec::new(),
            errors: Vec::new(),
            children,
        }
    }

    fn window() -> DumpNode {
        node(
            "application",
            "App",
            vec![node(
                "frame",
                "Main",
                vec![
                    node("push button", "OK", vec![]),
                    node("label", "Hi", vec![]),
                ],
            )],
        )
    }

    fn compare_with(b: &DumpNode, ignore: &[&str]) -> Report {
        let ignore = Ignore::parse(&ignore.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        compare_in_window(
            "/",
            "A",
            &window(),
            "B",
            b,
            None,
            &ignore.unwrap(),
            &Rules::default(),
        )
    }

    fn button(tree: &mut DumpNode) -> &mut DumpNode {
        &mut tree.children[0].children[0]
    }

    #[test]
    fn identical_trees_have_no_differences() {
        let report = compare_with(&window(), &[]);
        assert!(report.identical);
        assert_eq!(report.objects_compared, 4);
        assert_eq!(report.objects.len(), 4);
    }

    #[test]
    fn reports_each_differing_property_with_its_path() {
        let mut b = window();
        button(&mut b).name = "Okay".into();
        button(&mut b).states.push("focused".into());
        button(&mut b).extents = Some((5, 5, 100, 20));
        let report = compare_with(&b, &[]);
        let properties: Vec<(&str, &str)> = report
            .differences
            .iter()
            .map(|d| (d.path.as_str(), d.property.as_str()))
            .collect();
        assert_eq!(
            properties,
            [
                ("/0", "children"),
                ("/0/0", "name"),
                ("/0/0", "states"),
                ("/0/0", "extents")
            ]
        );
        let name = &report.differences[1];
        assert_eq!((name.a.as_str(), name.b.as_str()), ("OK", "Okay"));
    }

    #[test]
    fn ignores_properties_and_single_states() {
        let mut b = window();
        button(&mut b).states.push("focused".into());
        button(&mut b).extents = None;
        assert!(compare_with(&b, &["extents", "states:focused"]).identical);
        assert!(!compare_with(&b, &["extents"]).identical);
        assert!(Ignore::parse(&["colour".into()]).is_err());
    }

    #[test]
    fn reports_missing_reordered_and_extra_children() {
        let mut b = window();
        b.children[0].children.reverse();
        let report = compare_with(&b, &["role", "name"]);
        assert_eq!(report.differences[0].property, "children");
        assert!(report.differences[0].a.starts_with("2 [push button"));
        assert!(report.differences[0].b.starts_with("2 [label"));

        let mut b = window();
        b.children[0]
            .children
            .push(node("check box", "More", vec![]));
        let report = compare_with(&b, &[]);
        let extra = report.differences.last().unwrap();
        assert_eq!(
            (
                extra.path.as_str(),
                extra.property.as_str(),
                extra.a.as_str()
            ),
            ("/0/2", "presence", "absent")
        );
        assert_eq!(
            report.objects.len(),
            5,
            "the extra object is a test case too"
        );
    }

    #[test]
    fn text_output_names_path_property_and_both_values() {
        let mut b = window();
        button(&mut b).description = "Accept".into();
        let text = to_text(&compare_with(&b, &[]));
        assert!(text.contains("/0/0 push button \u{201c}OK\u{201d}: description"));
        assert!(text.contains("  B: Accept"));
        assert!(text.ends_with("1 difference(s) in 1 object(s); 4 object(s) compared\n"));
    }

    #[test]
    fn json_output_is_a_stable_document() {
        let mut b = window();
        button(&mut b).role = "toggle button".into();
        let json: serde_json::Value =
            serde_json::from_str(&to_json(&compare_with(&b, &[])).unwrap()).unwrap();
        assert_eq!(json["identical"], false);
        assert_eq!(json["objectsCompared"], 4);
        assert_eq!(json["differences"][1]["path"], "/0/0");
        assert_eq!(json["differences"][1]["property"], "role");
        assert_eq!(json["differences"][1]["b"], "toggle button");
        assert!(json.get("objects").is_none());
    }

    #[test]
    fn junit_has_a_case_per_object_and_a_failure_per_property() {
        let mut b = window();
        button(&mut b).name = "<Okay & go>".into();
        button(&mut b).text = Some("x".into());
        let xml = to_junit(&compare_with(&b, &[]));
        assert_eq!(xml.matches("<testcase ").count(), 4);
        assert_eq!(
            xml.matches("<failure ").count(),
            3,
            "children of the frame; name and text of the button"
        );
        assert!(xml.contains("tests=\"4\" failures=\"2\""));
        assert!(xml.contains("&lt;Okay &amp; go&gt;"));
        assert!(!xml.contains("<Okay"));
    }

    fn compat_rules() -> Rules {
        Rules::parse(include_str!("../../docs/compat-rules.json")).expect("docs/compat-rules.json")
    }

    #[test]
    fn every_compat_rule_is_explained_in_compat_md() {
        let prose = include_str!("../../docs/compat.md");
        let rules = compat_rules();
        assert!(rules.rules.len() >= 20);
        for rule in &rules.rules {
            assert!(
                prose.contains(&format!("`{}`", rule.id)),
                "docs/compat.md does not cite rule {}",
                rule.id
            );
        }
    }

    /// A legacy (accesskit_unix) window and the bridged one, differing only
    /// in documented ways.
    fn legacy_and_bridged() -> (DumpNode, DumpNode) {
        let mut legacy_button = node("push button", "OK", vec![]);
        legacy_button.actions = vec!["click".into()];
        legacy_button
            .interfaces
            .push("org.a11y.atspi.Action".into());
        legacy_button.extents = Some((8, 8, 33, 20));
        let mut legacy_spin = node("spin button", "Speed", vec![]);
        legacy_spin.states.push("selectable-text".into());
        legacy_spin.value = Some(5.0);
        legacy_spin.minimum = Some(-f64::MAX);
        legacy_spin.maximum = Some(f64::MAX);
        let legacy = node(
            "application",
            "app (legacy)",
            vec![node("frame", "", vec![legacy_button, legacy_spin])],
        );

        let mut bridged_button = node("push button", "OK", vec![]);
        bridged_button.actions = vec!["click".into(), "focus".into()];
        bridged_button.interfaces = vec![
            "org.a11y.atspi.Accessible".into(),
            "org.a11y.atspi.Action".into(),
            "org.a11y.atspi.Collection".into(),
        ];
        bridged_button.extents = Some((8, 8, 34, 20));
        let mut bridged_spin = node("spin button", "Speed", vec![]);
        bridged_spin.interfaces.push("org.a11y.atspi.Text".into());
        bridged_spin.relations = vec!["labelled-by \u{2192} \u{201c}Speed\u{201d}".into()];
        bridged_spin.text = Some("5".into());
        bridged_spin.caret = Some(0);
        bridged_spin.value = Some(5.0);
        bridged_spin.minimum = Some(-f64::MAX);
        bridged_spin.maximum = Some(f64::MAX);
        // The bridge keeps a GenericContainer as a panel (a Component
        // enclosing its children) and names the window after the surface title.
        let mut panel = node("panel", "", vec![bridged_button, bridged_spin]);
        panel.interfaces.push("org.a11y.atspi.Component".into());
        panel.extents = Some((0, 0, 400, 300));
        let bridged = node(
            "application",
            "app",
            vec![node("frame", "Form", vec![panel])],
        );
        (legacy, bridged)
    }

    fn with_rules(legacy: &DumpNode, bridged: &DumpNode) -> Report {
        compare_in_window(
            "/",
            "L",
            legacy,
            "B",
            bridged,
            None,
            &Ignore::default(),
            &compat_rules(),
        )
    }

    #[test]
    fn compat_rules_allow_the_documented_differences() {
        let (legacy, bridged) = legacy_and_bridged();
        let report = with_rules(&legacy, &bridged);
        assert!(report.passed, "{}", to_text(&report));
        assert!(!report.identical);
        let mut rules: Vec<&str> = report
            .allowed
            .iter()
            .filter_map(|d| d.rule.as_deref())
            .collect();
        rules.sort();
        rules.dedup();
        assert_eq!(
            rules,
            [
                "app-name",
                "collection",
                "extents-rounding",
                "extra-actions",
                "label-relations",
                "selectable-text-legacy",
                "structural-panels",
                "text-caret",
                "text-content-spin",
                "text-interface",
                "window-title"
            ]
        );
        // Objects under a spliced panel are named by their path on each side.
        let button = report
            .allowed
            .iter()
            .find(|d| d.rule.as_deref() == Some("extra-actions"))
            .unwrap();
        assert_eq!(
            (button.path.as_str(), button.b_path.as_deref()),
            ("/0/0", Some("/0/0/0"))
        );
        assert_eq!(button.detail, "only in B: focus");
        // Without the rules the same trees fail.
        assert!(
            !compare_in_window(
                "/",
                "L",
                &legacy,
                "B",
                &bridged,
                None,
                &Ignore::default(),
                &Rules::default()
            )
            .passed
        );
    }

    #[test]
    fn compat_rules_still_fail_on_every_other_difference() {
        type Change = fn(&mut DumpNode);
        let cases: [(&str, Change); 7] = [
            ("name", |b| {
                b.name = "Cancel".into();
            }),
            ("actions", |b| b.actions = vec!["focus".into()]),
            ("actions", |b| {
                b.actions = vec!["focus".into(), "click".into(), "press".into()]
            }),
            ("states", |b| b.states.push("focused".into())),
            ("extents", |b| b.extents = Some((8, 8, 36, 20))),
            ("interfaces", |b| {
                b.interfaces.push("org.a11y.atspi.Table".into())
            }),
            ("relations", |b| {
                b.relations
                    .push("controller-for \u{2192} \u{201c}y\u{201d}".into())
            }),
        ];
        for (property, change) in cases {
            let (legacy, mut bridged) = legacy_and_bridged();
            change(&mut bridged.children[0].children[0].children[0]);
            let report = with_rules(&legacy, &bridged);
            assert!(!report.passed, "{property}: {}", to_text(&report));
            assert_eq!(report.differences.len(), 1, "{}", to_text(&report));
            assert_eq!(report.differences[0].property, property);
        }
        // Actions the legacy side has must keep their order.
        let (mut legacy, mut bridged) = legacy_and_bridged();
        legacy.children[0].children[0].actions = vec!["click".into(), "press".into()];
        bridged.children[0].children[0].children[0].actions =
            vec!["press".into(), "focus".into(), "click".into()];
        let report = with_rules(&legacy, &bridged);
        assert_eq!(
            report.differences[0].detail,
            "the items common to both are in another order"
        );
        // An object missing from the bridged side.
        let (legacy, mut bridged) = legacy_and_bridged();
        bridged.children[0].children[0].children.pop();
        let report = with_rules(&legacy, &bridged);
        assert_eq!(report.differences[0].property, "children");
        assert_eq!(report.differences[1].property, "presence");
        // A walk error fails whatever the rules.
        let (legacy, mut bridged) = legacy_and_bridged();
        bridged
            .errors
            .push("node budget exhausted; children omitted".into());
        assert_eq!(
            with_rules(&legacy, &bridged).differences[0].property,
            "errors"
        );
    }

    #[test]
    fn allowed_differences_are_reported_apart_in_every_format() {
        let (legacy, mut bridged) = legacy_and_bridged();
        bridged.children[0].children[0].children[0].name = "Cancel".into();
        let report = with_rules(&legacy, &bridged);
        let text = to_text(&report);
        assert!(
            text.contains("allowed (collection): 1 difference(s), e.g. /0/0 (B: /0/0/0)"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "1 difference(s) in 1 object(s), 11 allowed by rules; 4 object(s) compared\n"
            ),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&to_json(&report).unwrap()).unwrap();
        assert_eq!(json["passed"], false);
        assert_eq!(json["differences"].as_array().unwrap().len(), 1);
        assert_eq!(json["allowed"][0]["rule"], "app-name");
        assert_eq!(json["allowed"][0]["path"], "/");
        let xml = to_junit(&report);
        assert!(xml.contains("tests=\"4\" failures=\"1\""), "{xml}");
        assert_eq!(xml.matches("<failure ").count(), 1);
        assert!(
            xml.contains(
                "<system-out>allowed (app-name): name: app (legacy) \u{2192} app&#10;</system-out>"
            ),
            "{xml}"
        );
        assert!(
            xml.contains("allowed (extra-actions): actions: only in B: focus&#10;"),
            "{xml}"
        );
    }

    /// Only `collection` and `extents-rounding` apply to every object; every
    /// other rule names where its difference is intended.
    #[test]
    fn no_compat_rule_applies_unconditionally_but_the_declared_ones() {
        let rules = compat_rules();
        let everywhere: Vec<&str> = rules
            .rules
            .iter()
            .filter(|r| r.everywhere)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(everywhere, ["collection", "extents-rounding"]);
    }

    /// The bridged button of [`legacy_and_bridged`] (below the spliced panel).
    fn bridged_button(bridged: &mut DumpNode) -> &mut DumpNode {
        &mut bridged.children[0].children[0].children[0]
    }

    /// Each planted fault: (what, the change to the bridged tree, the
    /// property that must fail). Every one lies where a broad-looking rule
    /// (named in the comment) would have excused it before.
    #[test]
    fn compat_rules_catch_planted_faults() {
        type Plant = fn(&mut DumpNode, &mut DumpNode);
        let cases: [(&str, Plant, &str); 15] = [
            // label-relations: the target must be the label naming the object.
            (
                "labelled-by to the wrong object",
                |_, b| {
                    b.children[0].children[0].children[1].relations =
                        vec!["labelled-by \u{2192} \u{201c}Brightness\u{201d}".into()]
                },
                "relations",
            ),
            // offscreen-neighbour-showing: only outside the parent's box.
            (
                "showing removed from an on-screen button",
                |a, _| a.children[0].children[0].states.push("showing".into()),
                "states",
            ),
            // offscreen-objects: only outside the parent's box.
            (
                "an on-screen object only in B",
                |_, b| {
                    b.children[0].children[0]
                        .children
                        .push(node("push button", "Extra", vec![]))
                },
                "presence",
            ),
            // offscreen-objects: a rule for an object is not one for its contents.
            (
                "a bridge-only subtree with a wrong name inside it",
                |_, b| {
                    let mut item =
                        node("list item", "Item 99", vec![node("label", "Wrong", vec![])]);
                    item.extents = Some((0, 5000, 100, 20));
                    item.children[0].extents = Some((0, 5000, 100, 20));
                    b.children[0].children[0].children.push(item);
                },
                "presence",
            ),
            // action-interface: only on focusable objects.
            (
                "an Action interface on a label that is not focusable",
                |a, b| {
                    let mut legacy_label = node("label", "Hi", vec![]);
                    legacy_label.states.clear();
                    let mut label = legacy_label.clone();
                    label.interfaces.push("org.a11y.atspi.Action".into());
                    a.children[0].children.push(legacy_label);
                    b.children[0].children[0].children.push(label);
                },
                "interfaces",
            ),
            // extra-actions: increment and decrement only with a value.
            (
                "increment on a push button",
                |_, b| bridged_button(b).actions.push("increment".into()),
                "actions",
            ),
            // expanded-states: only on combo boxes and toggle buttons.
            (
                "expanded on a push button",
                |_, b| {
                    bridged_button(b)
                        .states
                        .extend(["expandable".into(), "expanded".into()])
                },
                "states",
            ),
            // text-interface: only on labels and spin buttons.
            (
                "a Text interface on a push button",
                |_, b| {
                    bridged_button(b)
                        .interfaces
                        .push("org.a11y.atspi.Text".into())
                },
                "interfaces",
            ),
            // text-content: a label's text is its name.
            (
                "a label whose text is not its name",
                |a, b| {
                    let legacy_label = node("label", "Volume", vec![]);
                    let mut label = legacy_label.clone();
                    label.interfaces.push("org.a11y.atspi.Text".into());
                    label.text = Some("Volume!".into());
                    a.children[0].children.push(legacy_label);
                    b.children[0].children[0].children.push(label);
                },
                "text",
            ),
            // No rule excuses bounds: an invented minimum fails.
            (
                "an invented minimum",
                |_, b| b.children[0].children[0].children[1].minimum = Some(3.0),
                "minimum",
            ),
            // app-states: only the application's own states.
            (
                "focused on the application",
                |_, b| b.states.push("focused".into()),
                "states",
            ),
            // No rule excuses a role change: a colour button is a push button.
            (
                "a push button exposed as a color chooser",
                |_, b| bridged_button(b).role = "color chooser".into(),
                "role",
            ),
            // structural-panels: the spliced panel itself (bug B1).
            (
                "a panel without Component",
                |_, b| {
                    b.children[0].children[0].interfaces.pop();
                },
                "interfaces",
            ),
            (
                "a panel not enclosing its children",
                |_, b| {
                    let panel = &mut b.children[0].children[0];
                    panel.extents = Some((0, 0, 20, 20));
                    panel.states.push("showing".into());
                    panel.children[0].states.push("showing".into());
                },
                "extents",
            ),
            (
                "a panel not showing around a showing child",
                |a, b| {
                    a.children[0].children[0].states.push("showing".into());
                    bridged_button(b).states.push("showing".into());
                },
                "states",
            ),
        ];
        for (what, plant, property) in cases {
            let (mut legacy, mut bridged) = legacy_and_bridged();
            plant(&mut legacy, &mut bridged);
            let report = with_rules(&legacy, &bridged);
            assert!(!report.passed, "{what}: not caught\n{}", to_text(&report));
            assert!(
                report.differences.iter().any(|d| d.property == property),
                "{what}: no {property} failure\n{}",
                to_text(&report)
            );
        }
    }

    /// The same rules do excuse the intended differences at the intended
    /// places: an off-screen neighbour and an off-screen list item only in B.
    #[test]
    fn offscreen_rules_excuse_objects_off_screen() {
        let (mut legacy, mut bridged) = legacy_and_bridged();
        let mut neighbour = node("list item", "Item 41", vec![]);
        neighbour.extents = Some((0, 900, 100, 20));
        let mut legacy_neighbour = neighbour.clone();
        legacy_neighbour.states.push("showing".into());
        let mut hidden = node("list item", "Item 42", vec![]);
        hidden.extents = Some((0, 920, 100, 20));
        let mut list = node("list", "Items", vec![node("list item", "Item 0", vec![])]);
        list.extents = Some((0, 0, 100, 100));
        let mut legacy_list = list.clone();
        legacy_list.children.push(legacy_neighbour);
        list.children.push(neighbour);
        list.children.push(hidden);
        legacy.children[0].children.push(legacy_list);
        bridged.children[0].children[0].children.push(list);
        let report = with_rules(&legacy, &bridged);
        assert!(report.passed, "{}", to_text(&report));
        for rule in ["offscreen-neighbour-showing", "offscreen-objects"] {
            assert!(
                report
                    .allowed
                    .iter()
                    .any(|d| d.rule.as_deref() == Some(rule)),
                "{rule} unused: {}",
                to_text(&report)
            );
        }
    }

    /// `--under`: the subtree's top-level window comes separately, so an
    /// off-screen section of a long document is recognised as off screen.
    #[test]
    fn a_subtree_is_judged_off_screen_by_its_window() {
        let mut section = node("section", "Section 2000", vec![]);
        section.extents = Some((0, 90_000, 400, 40));
        let mut legacy_section = section.clone();
        legacy_section.states.push("showing".into());
        let mut window = node("frame", "Doc", vec![]);
        window.extents = Some((0, 0, 400, 300));
        let under = |b: &DumpNode, w: Option<&DumpNode>| {
            compare_in_window(
                "/0/0/1999",
                "L",
                &legacy_section,
                "B",
                b,
                w,
                &Ignore::default(),
                &compat_rules(),
            )
        };
        let report = under(&section, Some(&window));
        assert!(report.passed, "{}", to_text(&report));
        assert_eq!(
            report.allowed[0].rule.as_deref(),
            Some("offscreen-neighbour-showing")
        );
        assert!(
            !under(&section, None).passed,
            "no window: the geometry is unknown"
        );
        // On screen in its window: showing may not go.
        section.extents = Some((0, 100, 400, 40));
        assert!(!under(&section, Some(&window)).passed);
    }

    #[test]
    fn xml_escape_drops_characters_xml_cannot_carry() {
        assert_eq!(xml_escape("a\u{1}b\"c\nd"), "ab&quot;c&#10;d");
    }
}
