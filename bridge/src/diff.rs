//! `diff A B`: walks two AT-SPI applications as a client sees them (with
//! `dump`'s walker) and reports every difference, as text, JSON or JUnit XML.
//!
//! The comparison is a pure function over two [`DumpNode`] trees
//! ([`compare`]); only [`run`] touches the bus. Toolkit CI uses it to check
//! that two ways of exposing the same UI (e.g. a legacy AT-SPI
//! implementation and the bridge's cached one) look the same to an AT.

use std::collections::BTreeSet;
use std::error::Error;
use std::fmt::Write as _;

use serde::Serialize;

use crate::cli::{DiffArgs, DiffFormat};
use crate::dump::{self, DumpNode, WalkLimits};

/// Properties `--ignore` accepts (besides `states:NAME`).
pub const PROPERTIES: [&str; 12] = [
    "role",
    "name",
    "description",
    "states",
    "interfaces",
    "text",
    "caret",
    "actions",
    "value",
    "extents",
    "relations",
    "children",
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
pub struct Difference {
    /// Child indices from the application root: `/` is the root, `/0/2` its
    /// first child's third child.
    pub path: String,
    /// The object as `role “name”` (from A, or from whichever side has it).
    pub object: String,
    /// Which property differs (`presence` when the object exists on one side only).
    pub property: String,
    /// The value in A.
    pub a: String,
    /// The value in B.
    pub b: String,
}

/// The outcome of comparing two trees.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// A's application name, as given.
    pub a: String,
    /// B's application name, as given.
    pub b: String,
    /// True when nothing (that is not ignored) differs.
    pub identical: bool,
    /// Every object visited, as (path, object), in walk order: the JUnit
    /// test cases.
    #[serde(skip)]
    pub objects: Vec<(String, String)>,
    /// Objects compared (present on both sides).
    pub objects_compared: usize,
    /// Every difference, in walk order.
    pub differences: Vec<Difference>,
}

/// Compares two trees object by object (children matched by position).
pub fn compare(a_name: &str, a: &DumpNode, b_name: &str, b: &DumpNode, ignore: &Ignore) -> Report {
    let mut report = Report {
        a: a_name.to_owned(),
        b: b_name.to_owned(),
        identical: true,
        objects: Vec::new(),
        objects_compared: 0,
        differences: Vec::new(),
    };
    compare_node("/".to_owned(), a, b, ignore, &mut report);
    report.identical = report.differences.is_empty();
    report
}

fn compare_node(path: String, a: &DumpNode, b: &DumpNode, ignore: &Ignore, report: &mut Report) {
    let object = label(a);
    report.objects.push((path.clone(), object.clone()));
    report.objects_compared += 1;
    for (property, a_value, b_value) in property_values(a, b, ignore) {
        if a_value != b_value {
            report.differences.push(Difference {
                path: path.clone(),
                object: object.clone(),
                property: property.to_owned(),
                a: a_value,
                b: b_value,
            });
        }
    }
    if ignore.skips("children") {
        return;
    }
    let a_children = child_labels(a);
    let b_children = child_labels(b);
    if a_children != b_children {
        report.differences.push(Difference {
            path: path.clone(),
            object,
            property: "children".into(),
            a: a_children,
            b: b_children,
        });
    }
    let child_path = |index: usize| match path.as_str() {
        "/" => format!("/{index}"),
        parent => format!("{parent}/{index}"),
    };
    for (index, (a_child, b_child)) in a.children.iter().zip(&b.children).enumerate() {
        compare_node(child_path(index), a_child, b_child, ignore, report);
    }
    let common = a.children.len().min(b.children.len());
    for (index, only_a) in a.children.iter().enumerate().skip(common) {
        note_one_sided(child_path(index), label(only_a), "absent".into(), report);
    }
    for (index, only_b) in b.children.iter().enumerate().skip(common) {
        note_one_sided(child_path(index), "absent".into(), label(only_b), report);
    }
}

/// An object present on one side only: its own test case, one failure.
fn note_one_sided(path: String, a: String, b: String, report: &mut Report) {
    let object = if a == "absent" { b.clone() } else { a.clone() };
    report.objects.push((path.clone(), object.clone()));
    report.differences.push(Difference {
        path,
        object,
        property: "presence".into(),
        a,
        b,
    });
}

/// Each compared property as display strings for A and B, minus ignored ones.
fn property_values(
    a: &DumpNode,
    b: &DumpNode,
    ignore: &Ignore,
) -> Vec<(&'static str, String, String)> {
    let both = |f: &dyn Fn(&DumpNode) -> String| (f(a), f(b));
    let candidates: [(&'static str, (String, String)); 11] = [
        ("role", both(&|n| n.role.clone())),
        ("name", both(&|n| n.name.clone())),
        ("description", both(&|n| n.description.clone())),
        ("states", both(&|n| states_shown(n, ignore))),
        ("interfaces", both(&|n| n.interfaces.join(", "))),
        (
            "text",
            both(&|n| optional(n.text.as_ref().map(|t| format!("{t:?}")))),
        ),
        ("caret", both(&|n| optional(n.caret.map(|c| c.to_string())))),
        ("actions", both(&|n| n.actions.join(", "))),
        ("value", both(&|n| optional(n.value.map(|v| v.to_string())))),
        ("extents", both(&|n| optional(n.extents.map(extents_shown)))),
        ("relations", both(&|n| n.relations.join("; "))),
    ];
    candidates
        .into_iter()
        .filter(|(property, _)| !ignore.skips(property))
        .map(|(property, (a, b))| (property, a, b))
        .collect()
}

fn states_shown(node: &DumpNode, ignore: &Ignore) -> String {
    let states: Vec<&str> = node
        .states
        .iter()
        .map(String::as_str)
        .filter(|state| !ignore.states.contains(*state))
        .collect();
    states.join(", ")
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

fn child_labels(node: &DumpNode) -> String {
    let labels: Vec<String> = node.children.iter().map(label).collect();
    format!("{} [{}]", node.children.len(), labels.join(", "))
}

/// One line per difference and a summary line.
pub fn to_text(report: &Report) -> String {
    let mut out = String::new();
    for d in &report.differences {
        let _ = writeln!(
            out,
            "{} {}: {}\n  {}: {}\n  {}: {}",
            d.path, d.object, d.property, report.a, d.a, report.b, d.b
        );
    }
    let objects_with_differences: BTreeSet<&str> =
        report.differences.iter().map(|d| d.path.as_str()).collect();
    let _ = writeln!(
        out,
        "{} difference(s) in {} object(s); {} object(s) compared",
        report.differences.len(),
        objects_with_differences.len(),
        report.objects_compared
    );
    out
}

/// The report as a JSON document (`differences` in walk order).
pub fn to_json(report: &Report) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(report)
}

/// JUnit XML: one test case per object, one failure per differing property.
pub fn to_junit(report: &Report) -> String {
    let suite = format!("diff {} vs {}", report.a, report.b);
    let failing: BTreeSet<&str> = report.differences.iter().map(|d| d.path.as_str()).collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"newton-atspi-bridge diff\" tests=\"{}\" failures=\"{}\">",
        report.objects.len(),
        failing.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\">",
        xml_escape(&suite),
        report.objects.len(),
        failing.len()
    );
    for (path, object) in &report.objects {
        let failures: Vec<&Difference> = report
            .differences
            .iter()
            .filter(|d| &d.path == path)
            .collect();
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml_escape(&suite),
            xml_escape(&format!("{path} {object}"))
        );
        if failures.is_empty() {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        for d in failures {
            let _ = writeln!(
                out,
                "      <failure type=\"{}\" message=\"{} differs\">{}: {}\n{}: {}</failure>",
                xml_escape(&d.property),
                xml_escape(&d.property),
                xml_escape(&report.a),
                xml_escape(&d.a),
                xml_escape(&report.b),
                xml_escape(&d.b)
            );
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

/// `diff A B`: Ok(true) when the trees differ, Ok(false) when identical.
pub fn run(args: DiffArgs) -> Result<bool, Box<dyn Error>> {
    let ignore = Ignore::parse(&args.ignore)?;
    let limits = WalkLimits {
        max_depth: args.max_depth,
        max_nodes: args.max_nodes,
    };
    let (a, b) = async_io::block_on(async {
        let address = match args.a11y_bus.clone().filter(|a| !a.is_empty()) {
            Some(address) => address,
            None => crate::a11y_bus::find_address().await?,
        };
        let conn = crate::a11y_bus::connect(&address).await?;
        let apps = dump::applications(&conn).await?;
        let a_bus = one_app(&apps, &args.a)?;
        let b_bus = one_app(&apps, &args.b)?;
        let a = dump::walk_application(&conn, &a_bus, limits).await;
        let b = dump::walk_application(&conn, &b_bus, limits).await;
        Ok::<_, Box<dyn Error>>((a, b))
    })?;
    let report = compare(&args.a, &a, &args.b, &b, &ignore);
    let output = match args.format {
        DiffFormat::Text => to_text(&report),
        DiffFormat::Json => to_json(&report)? + "\n",
        DiffFormat::Junit => to_junit(&report),
    };
    crate::print_out(&output)?;
    Ok(!report.identical)
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
        compare("A", &window(), "B", b, &ignore.unwrap())
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

    #[test]
    fn xml_escape_drops_characters_xml_cannot_carry() {
        assert_eq!(xml_escape("a\u{1}b\"c\nd"), "ab&quot;c&#10;d");
    }
}
