//! The crate's layers, checked from its source: every module is in one
//! layer of [`LAYERS`], and a module imports only modules of the layers
//! below its own (and of its own unit), with no import loop.
//!
//! Read from `src/`: every `use` (`crate::…`, `super::…`, `self::…`, a
//! child module's name), and every path written out in code or in a macro
//! (`crate::a::b`, `$crate::a::b`, `super::x`). Comments and string
//! literals are skipped. An import names the module that holds the item:
//! the longest module path the import starts with.
//!
//! A *unit* is a module with its submodules (`model::text` with
//! `model/text/*.rs`): imports inside a unit are free. A unit imports
//! units of lower layers; units of the same layer import each other only
//! where the layer says so (the model's do, the interfaces' never), and
//! never in a loop. An import the rules refuse fails the test unless it is
//! in [`ALLOWED_UPWARD`] with its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One layer: its name, whether its units may import each other (without
/// a loop), and its units. `a::b` is the module `a::b` with its submodules;
/// `a::*` makes each child of `a` a unit of its own. `""` is the crate
/// root (lib.rs): the public face, above everything, imported by nothing.
struct Layer {
    name: &'static str,
    siblings_import: bool,
    units: &'static [&'static str],
}

/// The layers, lowest first. The one place a module's layer is declared.
const LAYERS: &[Layer] = &[
    Layer {
        name: "1. model: objects and paths, states, roles, relations, coordinates, \
               derived text and grid models, budgets, errors, wire values",
        siblings_import: true,
        units: &["model", "model::*"],
    },
    Layer {
        name: "2. surface: the declaration (`declare_interface!`), replies, property values",
        siblings_import: true,
        units: &["surface"],
    },
    Layer {
        name: "3. interfaces (one file per AT-SPI interface) and events, each on its own",
        siblings_import: false,
        units: &["interfaces", "interfaces::*", "events"],
    },
    Layer {
        name: "4. declared: which declared interfaces each object serves",
        siblings_import: false,
        units: &["declared"],
    },
    Layer {
        name: "5. introspection",
        siblings_import: false,
        units: &["introspect"],
    },
    Layer {
        name: "6. dispatch",
        siblings_import: false,
        units: &["dispatch"],
    },
    Layer {
        name: "7. unit tests that ask several interfaces",
        siblings_import: false,
        units: &["block_layout_tests"],
    },
    Layer {
        name: "8. the crate root (lib.rs): re-exports",
        siblings_import: false,
        units: &[""],
    },
];

/// Imports the rules refuse but the crate keeps: (from unit, to unit, why).
const ALLOWED_UPWARD: &[(&str, &str, &str)] = &[];

#[test]
fn modules_import_only_lower_layers_and_never_in_a_loop() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let crate_ = Crate::read(&src);
    let mut problems = Vec::new();

    // Every module in exactly one unit; every unit pattern matches a module.
    let mut unit_of: BTreeMap<&str, (String, usize)> = BTreeMap::new();
    for module in crate_.files.keys() {
        match unit(module) {
            Some(found) => {
                unit_of.insert(module, found);
            }
            None => problems.push(format!(
                "module `{}` ({}) is in no layer: add it to LAYERS in {}",
                shown(module),
                crate_.files[module].display(),
                file!()
            )),
        }
    }
    for layer in LAYERS {
        for pattern in layer.units {
            let base = pattern.trim_end_matches("::*");
            let used = crate_.files.keys().any(|m| {
                if pattern.ends_with("::*") {
                    m.starts_with(&format!("{base}::"))
                } else {
                    m == base
                }
            });
            if !used {
                problems.push(format!(
                    "LAYERS names `{pattern}`, which matches no module: remove it"
                ));
            }
        }
    }

    // Unit → unit edges, with where each comes from.
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for import in &crate_.imports {
        let (Some((from, from_layer)), Some((to, to_layer))) = (
            unit_of.get(import.from.as_str()),
            unit_of.get(import.to.as_str()),
        ) else {
            continue;
        };
        if from == to {
            continue;
        }
        let site = format!(
            "{}:{}: `{}`",
            crate_.files[import.from.as_str()].display(),
            import.line,
            import.text
        );
        edges
            .entry((from.clone(), to.clone()))
            .or_default()
            .push(site.clone());
        let refused = if to_layer > from_layer {
            Some(format!(
                "`{}` (layer {}) imports `{}` of a higher layer ({})",
                shown(from),
                LAYERS[*from_layer].name,
                shown(to),
                LAYERS[*to_layer].name
            ))
        } else if to_layer == from_layer && !LAYERS[*from_layer].siblings_import {
            Some(format!(
                "`{}` imports `{}` of its own layer ({}), whose units stand on their own",
                shown(from),
                shown(to),
                LAYERS[*from_layer].name
            ))
        } else {
            None
        };
        if let Some(refused) = refused {
            let allowed = ALLOWED_UPWARD.iter().any(|(f, t, _)| f == from && t == to);
            if !allowed {
                problems.push(format!("{refused}\n    at {site}"));
            }
        }
    }
    for (from, to, _) in ALLOWED_UPWARD {
        if !edges.contains_key(&(from.to_string(), to.to_string())) {
            problems.push(format!(
                "ALLOWED_UPWARD lists `{from}` → `{to}`, which is no longer imported: remove it"
            ));
        }
    }

    // No loop among units.
    let graph: BTreeMap<&str, BTreeSet<&str>> =
        edges.keys().fold(BTreeMap::new(), |mut graph, (from, to)| {
            graph.entry(from.as_str()).or_default().insert(to.as_str());
            graph
        });
    for cycle in cycles(&graph) {
        let mut text = format!(
            "import loop: {}",
            cycle
                .iter()
                .chain(cycle.first())
                .map(|u| format!("`{}`", shown(u)))
                .collect::<Vec<_>>()
                .join(" → ")
        );
        for pair in cycle.iter().zip(cycle.iter().cycle().skip(1)) {
            if let Some(sites) = edges.get(&(pair.0.to_string(), pair.1.to_string())) {
                let _ = write!(text, "\n    at {}", sites[0]);
            }
        }
        problems.push(text);
    }

    assert!(
        problems.is_empty(),
        "atspi-shim's layers (ARCHITECTURE.md, \"atspi-shim in layers\"):\n\n{}\n",
        problems.join("\n\n")
    );
}

/// The checker reads what it must: nested groups, renames, `self`, globs,
/// relative paths, inline modules, paths in code and macros; not comments
/// or strings.
#[test]
fn the_reader_finds_every_kind_of_import() {
    let files: BTreeMap<String, PathBuf> = ["", "a", "a::b", "a::b::c", "d", "e"]
        .iter()
        .map(|m| (m.to_string(), PathBuf::from(format!("{m}.rs"))))
        .collect();
    let source = r#"
        //! Talks about crate::d in a comment.
        use crate::{a::{self, b::c as renamed}, d::*};
        use {std::fmt, super::e};
        mod inner { use super::super::d; }
        fn f() { let _ = "crate::e"; $crate::a::b::c::item(); let _ = 'x'; }
        /* crate::e in a block comment */
        fn g<'a>(x: &'a str) -> &'a str { crate::e::h(); x }
    "#;
    let imports = imports_of(source, "a::b", &files);
    let found: BTreeSet<(String, usize)> = imports.iter().map(|i| (i.to.clone(), i.line)).collect();
    let expected: BTreeSet<(String, usize)> = [
        ("a", 3),
        ("a::b::c", 3),
        ("d", 3),
        ("a", 4),
        ("a", 5),
        ("a::b::c", 6),
        ("e", 8),
    ]
    .iter()
    .map(|(m, l)| (m.to_string(), *l))
    .collect();
    assert_eq!(found, expected);
}

fn shown(module: &str) -> &str {
    if module.is_empty() {
        "crate root"
    } else {
        module
    }
}

/// The unit and layer index of `module`.
fn unit(module: &str) -> Option<(String, usize)> {
    let mut best: Option<(usize, String, usize)> = None;
    for (index, layer) in LAYERS.iter().enumerate() {
        for pattern in layer.units {
            let found = if let Some(base) = pattern.strip_suffix("::*") {
                module
                    .strip_prefix(base)
                    .and_then(|rest| rest.strip_prefix("::"))
                    .map(|rest| format!("{base}::{}", rest.split("::").next().unwrap_or(rest)))
                    .map(|unit| (base.len() + 1, unit))
            } else if module == *pattern
                || (!pattern.is_empty() && module.starts_with(&format!("{pattern}::")))
            {
                Some((pattern.len(), pattern.to_string()))
            } else {
                None
            };
            if let Some((specificity, unit)) = found {
                if best.as_ref().is_none_or(|(s, _, _)| specificity > *s) {
                    best = Some((specificity, unit, index));
                }
            }
        }
    }
    best.map(|(_, unit, index)| (unit, index))
}

/// Every loop of the graph, each once (one per strongly connected set of
/// units, shown as a shortest loop through its first unit).
fn cycles<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    let reach = |from: &'a str| -> BTreeMap<&'a str, &'a str> {
        // Breadth first: each reached unit with the unit it was reached from.
        let mut parent = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(unit) = queue.pop_front() {
            for next in graph.get(unit).into_iter().flatten() {
                if !parent.contains_key(next) {
                    parent.insert(*next, unit);
                    queue.push_back(*next);
                }
            }
        }
        parent
    };
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut loops = Vec::new();
    for &unit in graph.keys() {
        if seen.contains(unit) {
            continue;
        }
        let parent = reach(unit);
        if !parent.contains_key(unit) {
            continue;
        }
        // The path back to `unit`, found breadth first, is a shortest loop.
        let mut path = vec![];
        let mut at = parent[unit];
        while at != unit {
            path.push(at);
            at = parent[at];
        }
        path.push(unit);
        path.reverse();
        // Mark the whole strongly connected set as reported.
        for (&member, _) in parent.iter() {
            if reach(member).contains_key(unit) {
                seen.insert(member);
            }
        }
        loops.push(path);
    }
    loops
}

/// The crate's modules (module path → file) and the imports between them.
struct Crate {
    files: BTreeMap<String, PathBuf>,
    imports: Vec<Import>,
}

struct Import {
    from: String,
    to: String,
    line: usize,
    text: String,
}

impl Crate {
    fn read(src: &Path) -> Self {
        let mut paths = Vec::new();
        collect_files(src, &mut paths);
        let files: BTreeMap<String, PathBuf> = paths
            .into_iter()
            .map(|path| {
                let relative = path.strip_prefix(src).expect("below src");
                let mut segments: Vec<String> = relative
                    .with_extension("")
                    .iter()
                    .map(|s| s.to_string_lossy().into_owned())
                    .collect();
                if matches!(segments.last().map(String::as_str), Some("mod" | "lib")) {
                    segments.pop();
                }
                let shown = Path::new("atspi-shim/src").join(relative);
                (segments.join("::"), shown)
            })
            .collect();
        let mut imports = Vec::new();
        for module in files.keys() {
            let path = src.join(
                files[module]
                    .strip_prefix("atspi-shim/src")
                    .expect("shown below src"),
            );
            let source = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            imports.extend(imports_of(&source, module, &files));
        }
        Crate { files, imports }
    }
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A token of the source with its line: an identifier (or `$crate`), `::`,
/// or one punctuation character.
#[derive(Clone, Debug, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

/// The source's tokens, without comments, strings and character literals.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let newlines = |from: usize, to: usize| chars[from..to].iter().filter(|c| **c == '\n').count();
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += newlines(start, i.min(chars.len()));
        } else if c == '"' || (c == 'r' && matches!(next, Some('"' | '#')) && raw_start(&chars, i))
        {
            let start = i;
            i = string_end(&chars, i);
            line += newlines(start, i.min(chars.len()));
        } else if c == 'b' && next == Some('"') {
            let start = i;
            i = string_end(&chars, i + 1);
            line += newlines(start, i.min(chars.len()));
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && is_ident(chars[i]) {
                    i += 1;
                }
            }
        } else if is_ident(c) || (c == '$' && next.is_some_and(is_ident)) {
            let start = i;
            i += 1;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            out.push(Token {
                text: chars[start..i].iter().collect(),
                line,
            });
        } else if c == ':' && next == Some(':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// Tokens as source text: a space only between two words (`a as b`).
fn spaced(tokens: &[Token]) -> String {
    let mut text = String::new();
    let word = |t: &str| t.chars().next().is_some_and(|c| is_ident(c) || c == '$');
    for (i, token) in tokens.iter().enumerate() {
        if i > 0 && (word(&tokens[i - 1].text) && word(&token.text) || tokens[i - 1].text == ",") {
            text.push(' ');
        }
        text.push_str(&token.text);
    }
    text
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `r` at `i` starts a raw string (`r"…"`, `r#"…"#`), not an
/// identifier ending in r.
fn raw_start(chars: &[char], i: usize) -> bool {
    let before_is_ident = i > 0 && is_ident(chars[i - 1]);
    if before_is_ident {
        return false;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    chars.get(j) == Some(&'"')
}

/// The index after the string literal starting at `i` (`"…"` or `r#"…"#`).
fn string_end(chars: &[char], mut i: usize) -> usize {
    if chars[i] == 'r' {
        i += 1;
        let mut hashes = 0;
        while chars.get(i) == Some(&'#') {
            hashes += 1;
            i += 1;
        }
        i += 1; // the opening quote
        while i < chars.len() {
            if chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
                return i + 1 + hashes;
            }
            i += 1;
        }
        return i;
    }
    i += 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The imports in `source`, the file of `module`, among `files`' modules.
fn imports_of(source: &str, module: &str, files: &BTreeMap<String, PathBuf>) -> Vec<Import> {
    let tokens = tokens(source);
    let mut imports = Vec::new();
    // The inline modules (`mod tests { … }`) we are in, with the brace
    // depth each opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let current = |inline: &[(String, usize)]| -> Vec<String> {
        let mut segments: Vec<String> = split(module);
        segments.extend(inline.iter().map(|(name, _)| name.clone()));
        segments
    };
    while i < tokens.len() {
        let token = tokens[i].text.as_str();
        match token {
            "{" => {
                depth += 1;
                i += 1;
            }
            "}" => {
                depth = depth.saturating_sub(1);
                while inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
                i += 1;
            }
            "mod" if tokens.get(i + 2).is_some_and(|t| t.text == "{") => {
                let name = tokens[i + 1].text.clone();
                depth += 1;
                inline.push((name, depth));
                i += 3;
            }
            "use" => {
                let end = (i..tokens.len())
                    .find(|&j| tokens[j].text == ";")
                    .unwrap_or(tokens.len());
                let text = spaced(&tokens[i + 1..end]);
                let here = current(&inline);
                for path in use_paths(&tokens[i + 1..end]) {
                    if let Some(to) = resolve(&path, &here, files, true) {
                        imports.push(Import {
                            from: module.to_owned(),
                            to,
                            line: tokens[i].line,
                            text: format!("use {text};"),
                        });
                    }
                }
                i = end + 1;
            }
            "crate" | "$crate" | "super" | "self"
                if tokens.get(i + 1).is_some_and(|t| t.text == "::")
                    && !(i > 0 && tokens[i - 1].text == "::") =>
            {
                let mut path = vec![token.to_owned()];
                let mut j = i + 1;
                while tokens.get(j).is_some_and(|t| t.text == "::")
                    && tokens.get(j + 1).is_some_and(|t| {
                        t.text
                            .chars()
                            .next()
                            .is_some_and(|c| is_ident(c) || c == '$')
                    })
                {
                    path.push(tokens[j + 1].text.clone());
                    j += 2;
                }
                let here = current(&inline);
                if let Some(to) = resolve(&path, &here, files, false) {
                    imports.push(Import {
                        from: module.to_owned(),
                        to,
                        line: tokens[i].line,
                        text: path.join("::"),
                    });
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    imports
}

fn split(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_owned).collect()
    }
}

/// The paths a use tree names, each as its segments (`self` in a group
/// names the group's prefix; `as` renames are dropped).
fn use_paths(tokens: &[Token]) -> Vec<Vec<String>> {
    fn tree(tokens: &[Token], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        while *at < tokens.len() {
            match tokens[*at].text.as_str() {
                "::" => *at += 1,
                "{" => {
                    *at += 1;
                    loop {
                        tree(tokens, at, &path, out);
                        match tokens.get(*at).map(|t| t.text.as_str()) {
                            Some(",") => *at += 1,
                            Some("}") => {
                                *at += 1;
                                break;
                            }
                            _ => break,
                        }
                        if tokens.get(*at).is_some_and(|t| t.text == "}") {
                            *at += 1;
                            break;
                        }
                    }
                    return;
                }
                "," | "}" => break,
                "as" => *at += 2,
                "*" => {
                    *at += 1;
                }
                "self" if !path.is_empty() => *at += 1,
                segment => {
                    path.push(segment.to_owned());
                    *at += 1;
                }
            }
        }
        if !path.is_empty() {
            out.push(path);
        }
    }
    let mut out = Vec::new();
    let mut at = 0;
    // Skip a visibility prefix such as `pub(crate)` (the tokens start after `use`).
    tree(tokens, &mut at, &[], &mut out);
    out
}

/// The module of the crate that `path`, written in module `here`, names:
/// the longest module path it starts with. `None` for other crates.
fn resolve(
    path: &[String],
    here: &[String],
    files: &BTreeMap<String, PathBuf>,
    in_use: bool,
) -> Option<String> {
    let mut absolute: Vec<String>;
    let mut rest = path;
    match path.first()?.as_str() {
        "crate" | "$crate" => {
            absolute = Vec::new();
            rest = &path[1..];
        }
        "super" | "self" => {
            absolute = here.to_vec();
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        absolute.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        first => {
            // A name in scope: a child module of this module (2018 paths).
            let mut child = here.to_vec();
            child.push(first.to_owned());
            if !in_use || !is_module(&child, files) {
                return None;
            }
            absolute = here.to_vec();
        }
    }
    absolute.extend(rest.iter().cloned());
    // Inline modules are part of their file: the longest file module.
    while !absolute.is_empty() && !is_module(&absolute, files) {
        absolute.pop();
    }
    Some(absolute.join("::"))
}

fn is_module(segments: &[String], files: &BTreeMap<String, PathBuf>) -> bool {
    files.contains_key(&segments.join("::"))
}
