//! A raw AT-SPI walker (plain D-Bus calls, no libatspi cache): what any
//! client gets when it asks each object directly. Roles come from `GetRole`
//! (accesskit_unix has no `GetRoleName`).

use std::collections::BTreeSet;

use atspi_common::{Role, StateSet};
use newton_atspi_client::calls::{accessible, action, component, text, value, ROOT};
use newton_e2e::BusClient;

const MAX_NODES: usize = 20_000;

/// One object as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Obj {
    pub role: String,
    pub name: String,
    pub description: String,
    pub states: BTreeSet<String>,
    pub interfaces: BTreeSet<String>,
    pub text: Option<String>,
    pub caret: Option<i32>,
    pub actions: Vec<String>,
    /// (current, minimum, maximum)
    pub value: Option<(f64, f64, f64)>,
    pub extents: Option<(i32, i32, i32, i32)>,
    /// "kind → target name"
    pub relations: BTreeSet<String>,
    pub errors: Vec<String>,
    pub children: Vec<Obj>,
}

/// The bus name of the desktop application called exactly `name`.
pub fn find_app(client: &BusClient, name: &str) -> Option<String> {
    client.applications_named(name).ok()?.into_iter().next()
}

/// Walks the application on `bus` from its root.
pub fn walk_app(client: &BusClient, bus: &str) -> Obj {
    let mut budget = MAX_NODES;
    walk(client, bus, ROOT, &mut budget)
}

fn walk(client: &BusClient, bus: &str, path: &str, budget: &mut usize) -> Obj {
    *budget = budget.saturating_sub(1);
    let mut obj = describe(client, bus, path);
    match client.call(&accessible::GET_CHILDREN, bus, path, &()) {
        Ok(children) => {
            for (child_bus, child_path) in children {
                if *budget == 0 {
                    obj.errors.push("node budget exhausted".into());
                    break;
                }
                if child_bus == bus {
                    obj.children
                        .push(walk(client, bus, child_path.as_str(), budget));
                }
            }
        }
        Err(e) => obj.errors.push(format!("GetChildren: {e}")),
    }
    obj
}

fn describe(client: &BusClient, bus: &str, path: &str) -> Obj {
    let mut errors = Vec::new();
    let role = match client.call(&accessible::GET_ROLE, bus, path, &()) {
        Ok(number) => Role::try_from(number)
            .map(|r| r.name().to_string())
            .unwrap_or_else(|_| format!("role-{number}")),
        Err(e) => {
            errors.push(format!("GetRole: {e}"));
            String::new()
        }
    };
    let states = match client.call(&accessible::GET_STATE, bus, path, &()) {
        Ok(words) => state_names(&words),
        Err(e) => {
            errors.push(format!("GetState: {e}"));
            BTreeSet::new()
        }
    };
    let interfaces: BTreeSet<String> = client
        .call(&accessible::GET_INTERFACES, bus, path, &())
        .unwrap_or_default()
        .into_iter()
        .map(|i| i.trim_start_matches("org.a11y.atspi.").to_string())
        .collect();
    let has = |i: &str| interfaces.contains(i);
    let text = has("Text")
        .then(|| client.call(&text::GET_TEXT, bus, path, &(0, -1)).ok())
        .flatten();
    let caret = has("Text")
        .then(|| client.get(&text::CARET_OFFSET, bus, path).ok())
        .flatten();
    let actions = if has("Action") {
        client
            .call(&action::GET_ACTIONS, bus, path, &())
            .map(|a| a.into_iter().map(|(name, _, _)| name).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let value = has("Value").then(|| value_of(client, bus, path)).flatten();
    let extents = has("Component")
        .then(|| client.call(&component::GET_EXTENTS, bus, path, &(0,)).ok())
        .flatten();
    Obj {
        role,
        name: client.get(&accessible::NAME, bus, path).unwrap_or_default(),
        description: client
            .get(&accessible::DESCRIPTION, bus, path)
            .unwrap_or_default(),
        states,
        interfaces,
        text,
        caret,
        actions,
        value,
        extents,
        relations: relations_of(client, bus, path),
        errors,
        children: Vec::new(),
    }
}

fn value_of(client: &BusClient, bus: &str, path: &str) -> Option<(f64, f64, f64)> {
    let get = |property| client.get(property, bus, path).ok();
    Some((
        get(&value::CURRENT_VALUE)?,
        get(&value::MINIMUM_VALUE)?,
        get(&value::MAXIMUM_VALUE)?,
    ))
}

fn relations_of(client: &BusClient, bus: &str, path: &str) -> BTreeSet<String> {
    let Ok(relations) = client.call(&accessible::GET_RELATION_SET, bus, path, &()) else {
        return BTreeSet::new();
    };
    let mut out = BTreeSet::new();
    for (kind, targets) in relations {
        for (target_bus, target_path) in targets {
            let target = client
                .get(&accessible::NAME, &target_bus, target_path.as_str())
                .unwrap_or_default();
            out.insert(format!("{} \u{2192} {target}", relation_name(kind)));
        }
    }
    out
}

pub use newton_atspi_client::dump::relation_name;

fn state_names(words: &[u32]) -> BTreeSet<String> {
    let low = u64::from(words.first().copied().unwrap_or(0));
    let high = u64::from(words.get(1).copied().unwrap_or(0));
    let set = StateSet::from_bits(low | (high << 32)).unwrap_or_else(|_| StateSet::empty());
    set.iter().map(|s| s.to_static_str().to_string()).collect()
}
