//! `org.a11y.atspi.Collection`: searching the exposed tree with a match rule
//! (Orca 51's structural navigation has no fallback without it).
//!
//! Rule `(aiia{ss}iaiiasib)`: states (bit array over AT-SPI state numbers)
//! and match type, attributes and match type, roles (bit array over AT-SPI
//! role numbers, any length) and match type, short interface names (case
//! insensitive, `action(click)` also requires an action named "click") and
//! match type, invert. Match types: ALL 1, ANY 2, NONE 3, EMPTY 4 (the
//! object has none of that kind); INVALID 0 matches only when the criterion
//! is empty; any other number is InvalidArgs. Attribute values may list
//! alternatives separated by `:` (`\:` is a literal colon); names and values
//! compare case-insensitively.
//! For roles, ALL with several roles can never match (an object has one
//! role), as in atk-bridge.
//!
//! Traversal: canonical pre-order of the exposed tree below the collection
//! object, never the object itself; `traverse == false` looks at children
//! only. `count` 0 = unlimited. Sort orders: REVERSE_CANONICAL (results
//! reversed after the limit); every other one (INVALID, CANONICAL, FLOW,
//! TAB, REVERSE_FLOW, REVERSE_TAB) is answered canonically; a number past
//! REVERSE_TAB (6) is InvalidArgs, as is a tree traversal type past INORDER.
//! GetMatchesFrom: RESTRICT_CHILDREN = descendants of `current`;
//! RESTRICT_SIBLING = `current`'s descendants then its following siblings
//! with their subtrees; INORDER = everything after `current` in canonical
//! order within the collection. GetMatchesTo: everything before `current`
//! in canonical order (within its parent for RESTRICT_* with limit_scope,
//! else within the collection), nearest first for CANONICAL (as atk-bridge
//! answers), with `count` keeping the nearest matches.

use std::collections::HashMap;

use accesskit_consumer::NodeRef;
use zvariant::OwnedObjectPath;

use crate::model::actions;
use crate::model::context::NodeCtx;
use crate::model::describe;
use crate::model::exposure;
use crate::model::exposure::exposed_children;
use crate::model::implements;
use crate::model::names;
use crate::model::objects;
use crate::model::paths::{self, ObjectAddress, ObjectRef};
use crate::model::wire::{MatchType, SortOrder, TreeTraversalType, WireEnum};
use crate::surface::declare_interface;
use crate::{model::error::CallError, model::roles, model::states};

declare_interface! {
    pub(crate) static COLLECTION = names::COLLECTION, on node {
        fn GetMatches(rule: WireRule, sortby: u32 as SortOrder, count: i32, traverse: bool)
            -> (matches: Vec<ObjectRef>) = get_matches, heavy;
        fn GetMatchesTo(
            current_object: OwnedObjectPath,
            rule: WireRule,
            sortby: u32 as SortOrder,
            tree: u32 as TreeTraversalType,
            limit_scope: bool,
            count: i32,
            traverse: bool,
        ) -> (matches: Vec<ObjectRef>) = get_matches_to, heavy;
        fn GetMatchesFrom(
            current_object: OwnedObjectPath,
            rule: WireRule,
            sortby: u32 as SortOrder,
            tree: u32 as TreeTraversalType,
            count: i32,
            traverse: bool,
        ) -> (matches: Vec<ObjectRef>) = get_matches_from, heavy;
        fn GetActiveDescendant() -> (descendant: ObjectRef) = active_descendant;
        property version: u32 = crate::surface::interface_version;
    }
}

/// The wire form of a match rule.
type WireRule = (
    Vec<i32>,
    i32,
    HashMap<String, String>,
    i32,
    Vec<i32>,
    i32,
    Vec<String>,
    i32,
    bool,
);

fn get_matches(
    ctx: &NodeCtx,
    rule: WireRule,
    sort: SortOrder,
    count: i32,
    traverse: bool,
) -> Result<Vec<ObjectRef>, CallError> {
    let rule = Rule::parse(rule)?;
    let mut found = Vec::new();
    collect_descendants(&rule, ctx, &ctx.node, traverse, limit(count), &mut found);
    Ok(finish(ctx, found, sort))
}

fn get_matches_from(
    ctx: &NodeCtx,
    current: OwnedObjectPath,
    rule: WireRule,
    sort: SortOrder,
    tree: TreeTraversalType,
    count: i32,
    traverse: bool,
) -> Result<Vec<ObjectRef>, CallError> {
    let rule = Rule::parse(rule)?;
    let current = current_node(ctx, current.as_str())?;
    let found = matches_from(ctx, &rule, current, tree, limit(count), traverse);
    Ok(finish(ctx, found, sort))
}

#[allow(clippy::too_many_arguments)] // the wire method's seven arguments
fn get_matches_to(
    ctx: &NodeCtx,
    current: OwnedObjectPath,
    rule: WireRule,
    sort: SortOrder,
    tree: TreeTraversalType,
    limit_scope: bool,
    count: i32,
    traverse: bool,
) -> Result<Vec<ObjectRef>, CallError> {
    let rule = Rule::parse(rule)?;
    let current = current_node(ctx, current.as_str())?;
    let mut found = matches_to(ctx, &rule, current, tree, limit_scope, traverse);
    // Nearest first (atk-bridge's CANONICAL answer here), keeping the
    // `count` nearest; REVERSE_CANONICAL gives them farthest first.
    found.reverse();
    if let Some(max) = limit(count) {
        found.truncate(max);
    }
    Ok(finish(ctx, found, sort))
}

fn active_descendant(ctx: &NodeCtx) -> Result<ObjectRef, CallError> {
    Ok(ctx
        .node
        .active_descendant()
        .filter(exposure::is_exposed)
        .map_or_else(paths::null_ref, |n| ctx.ref_to(&n)))
}

/// The caller's `count` (0 or negative: all), never over
/// [`MAX_COLLECTION_MATCHES`](crate::model::budgets::MAX_COLLECTION_MATCHES).
fn limit(count: i32) -> Option<usize> {
    let asked = usize::try_from(count).ok().filter(|c| *c > 0);
    Some(
        asked.map_or(crate::model::budgets::MAX_COLLECTION_MATCHES, |c| {
            c.min(crate::model::budgets::MAX_COLLECTION_MATCHES)
        }),
    )
}

/// The matches as references, in `sort` order: only REVERSE_CANONICAL
/// reverses them; every other order is answered canonically (see the module
/// doc).
fn finish(ctx: &NodeCtx, found: Vec<NodeRef>, sort: SortOrder) -> Vec<ObjectRef> {
    let mut refs: Vec<ObjectRef> = found.iter().map(|n| ctx.ref_to(n)).collect();
    if sort == SortOrder::ReverseCanonical {
        refs.reverse();
    }
    refs
}

/// `current` must be an exposed node of the same surface inside the
/// collection's subtree (or the collection itself).
fn current_node<'a>(ctx: &NodeCtx<'a>, path: &str) -> Result<NodeRef<'a>, CallError> {
    let unknown = || CallError::UnknownObject(path.to_owned());
    let Some(ObjectAddress::Node { surface, node }) = paths::parse(path) else {
        return Err(unknown());
    };
    if surface != ctx.surface.id() {
        return Err(CallError::InvalidArgs(format!(
            "{path} is not inside this collection"
        )));
    }
    let current = objects::node_ctx(ctx.app, ctx.surface, node)
        .ok_or_else(unknown)?
        .node;
    if current.id() != ctx.node.id() && !current.is_descendant_of(&ctx.node) {
        return Err(CallError::InvalidArgs(format!(
            "{path} is not inside this collection"
        )));
    }
    Ok(current)
}

/// Pre-order over the exposed subtree below `root` (not `root`), pushing
/// matches until `max`.
fn collect_descendants<'a>(
    rule: &Rule,
    ctx: &NodeCtx<'a>,
    root: &NodeRef<'a>,
    traverse: bool,
    max: Option<usize>,
    found: &mut Vec<NodeRef<'a>>,
) {
    let mut stack: Vec<NodeRef<'a>> = exposed_children(root).rev().collect();
    while let Some(node) = stack.pop() {
        if max.is_some_and(|m| found.len() >= m) {
            return;
        }
        if rule.matches(ctx, &node) {
            found.push(node);
        }
        if traverse {
            stack.extend(exposed_children(&node).rev());
        }
    }
}

fn matches_from<'a>(
    ctx: &NodeCtx<'a>,
    rule: &Rule,
    current: NodeRef<'a>,
    tree: TreeTraversalType,
    max: Option<usize>,
    traverse: bool,
) -> Vec<NodeRef<'a>> {
    let mut found = Vec::new();
    match tree {
        TreeTraversalType::RestrictChildren => {
            collect_descendants(rule, ctx, &current, traverse, max, &mut found)
        }
        TreeTraversalType::RestrictSibling => {
            collect_descendants(rule, ctx, &current, traverse, max, &mut found);
            for sibling in following_siblings(&current) {
                push_subtree(rule, ctx, sibling, traverse, max, &mut found);
            }
        }
        TreeTraversalType::Inorder => {
            collect_descendants(rule, ctx, &current, true, max, &mut found);
            let mut node = current;
            while node.id() != ctx.node.id() {
                for sibling in following_siblings(&node) {
                    push_subtree(rule, ctx, sibling, true, max, &mut found);
                }
                match node.parent() {
                    Some(parent) => node = parent,
                    None => break,
                }
            }
        }
    }
    found
}

/// Everything before `current` in canonical order, within the scope.
fn matches_to<'a>(
    ctx: &NodeCtx<'a>,
    rule: &Rule,
    current: NodeRef<'a>,
    tree: TreeTraversalType,
    limit_scope: bool,
    traverse: bool,
) -> Vec<NodeRef<'a>> {
    let restricted = matches!(
        tree,
        TreeTraversalType::RestrictChildren | TreeTraversalType::RestrictSibling
    );
    let scope = match (restricted, limit_scope, current.parent()) {
        (true, true, Some(parent)) if current.id() != ctx.node.id() => parent,
        _ => ctx.node,
    };
    let mut found = Vec::new();
    let mut stack: Vec<NodeRef<'a>> = exposed_children(&scope).rev().collect();
    while let Some(node) = stack.pop() {
        if node.id() == current.id() {
            break;
        }
        if rule.matches(ctx, &node) {
            found.push(node);
        }
        if traverse || tree == TreeTraversalType::Inorder {
            stack.extend(exposed_children(&node).rev());
        }
    }
    found
}

fn push_subtree<'a>(
    rule: &Rule,
    ctx: &NodeCtx<'a>,
    node: NodeRef<'a>,
    traverse: bool,
    max: Option<usize>,
    found: &mut Vec<NodeRef<'a>>,
) {
    if max.is_some_and(|m| found.len() >= m) {
        return;
    }
    if rule.matches(ctx, &node) {
        found.push(node);
    }
    if traverse {
        collect_descendants(rule, ctx, &node, traverse, max, found);
    }
}

fn following_siblings<'a>(node: &NodeRef<'a>) -> Vec<NodeRef<'a>> {
    node.following_siblings()
        .filter(exposure::is_exposed_child)
        .collect()
}

/// A parsed match rule.
struct Rule {
    states: u64,
    states_match: MatchType,
    attributes: Vec<(String, Vec<String>)>,
    attributes_match: MatchType,
    roles: Vec<u32>,
    roles_match: MatchType,
    interfaces: Vec<InterfaceCriterion>,
    interfaces_match: MatchType,
    invert: bool,
}

/// `text`, or `action(click)` (an action interface with a named action).
struct InterfaceCriterion {
    full_name: String,
    action: Option<String>,
}

impl Rule {
    fn parse(wire: WireRule) -> Result<Self, CallError> {
        let (
            states,
            states_match,
            attributes,
            attributes_match,
            roles,
            roles_match,
            interfaces,
            interfaces_match,
            invert,
        ) = wire;
        // In the rule's order, so the first invalid one is the one named.
        let states_match = MatchType::decode(states_match, "rule.states_match")?;
        let attributes_match = MatchType::decode(attributes_match, "rule.attributes_match")?;
        let roles_match = MatchType::decode(roles_match, "rule.roles_match")?;
        let interfaces_match = MatchType::decode(interfaces_match, "rule.interfaces_match")?;
        let states = bits(&states)
            .filter(|bit| *bit < 64)
            .fold(0u64, |acc, bit| acc | (1 << bit));
        Ok(Rule {
            states,
            states_match,
            attributes: attributes
                .into_iter()
                .map(|(name, value)| (name.to_lowercase(), alternatives(&value)))
                .collect(),
            attributes_match,
            roles: bits(&roles).collect(),
            roles_match,
            interfaces: interfaces
                .iter()
                .map(|name| InterfaceCriterion::parse(name))
                .collect(),
            interfaces_match,
            invert,
        })
    }

    fn matches(&self, ctx: &NodeCtx, node: &NodeRef) -> bool {
        let candidate = ctx.with_node(*node);
        let matched = self.states_match(&candidate)
            && self.roles_match(&candidate)
            && self.interfaces_match(&candidate)
            && self.attributes_match(&candidate);
        matched != self.invert
    }

    fn states_match(&self, ctx: &NodeCtx) -> bool {
        if self.states == 0 {
            return true;
        }
        let have = states::state_set(ctx).bits();
        match self.states_match {
            MatchType::All => have & self.states == self.states,
            MatchType::Any => have & self.states != 0,
            MatchType::None => have & self.states == 0,
            MatchType::Empty => have == 0,
            MatchType::Invalid => false,
        }
    }

    fn roles_match(&self, ctx: &NodeCtx) -> bool {
        if self.roles.is_empty() {
            return true;
        }
        let role = roles::atspi_role(&ctx.node) as u32;
        match self.roles_match {
            MatchType::All => self.roles.len() == 1 && self.roles.first() == Some(&role),
            MatchType::Any => self.roles.contains(&role),
            MatchType::None => !self.roles.contains(&role),
            MatchType::Empty | MatchType::Invalid => false,
        }
    }

    fn interfaces_match(&self, ctx: &NodeCtx) -> bool {
        if self.interfaces.is_empty() {
            return true;
        }
        let have = implements::node_interface_names(ctx);
        let action_names: Vec<String> = if self.interfaces.iter().any(|c| c.action.is_some()) {
            actions::actions(ctx)
                .into_iter()
                .map(|a| a.name.to_lowercase())
                .collect()
        } else {
            Vec::new()
        };
        let satisfied = |criterion: &InterfaceCriterion| {
            have.iter()
                .any(|name| name.eq_ignore_ascii_case(&criterion.full_name))
                && criterion
                    .action
                    .as_ref()
                    .is_none_or(|wanted| action_names.contains(wanted))
        };
        match self.interfaces_match {
            MatchType::All => self.interfaces.iter().all(satisfied),
            MatchType::Any => self.interfaces.iter().any(satisfied),
            MatchType::None => !self.interfaces.iter().any(satisfied),
            MatchType::Empty | MatchType::Invalid => false,
        }
    }

    fn attributes_match(&self, ctx: &NodeCtx) -> bool {
        if self.attributes.is_empty() {
            return true;
        }
        let have: HashMap<String, String> = describe::attributes(ctx)
            .into_iter()
            .map(|(name, value)| (name.to_lowercase(), value.to_lowercase()))
            .collect();
        let satisfied = |(name, values): &(String, Vec<String>)| {
            have.get(name)
                .is_some_and(|value| values.iter().any(|wanted| wanted == value))
        };
        match self.attributes_match {
            MatchType::All => self.attributes.iter().all(satisfied),
            MatchType::Any => self.attributes.iter().any(satisfied),
            MatchType::None => !self.attributes.iter().any(satisfied),
            MatchType::Empty => have.is_empty(),
            MatchType::Invalid => false,
        }
    }
}

impl InterfaceCriterion {
    fn parse(name: &str) -> Self {
        let (base, action) = match name.split_once('(') {
            Some((base, rest)) => (base, Some(rest.trim_end_matches(')').trim().to_lowercase())),
            None => (name, None),
        };
        let base = base.trim();
        let full_name = if base.contains('.') {
            base.to_owned()
        } else {
            format!("org.a11y.atspi.{base}")
        };
        InterfaceCriterion { full_name, action }
    }
}

/// Set bit numbers of a bit array sent as `ai` (32 bits per element).
fn bits(words: &[i32]) -> impl Iterator<Item = u32> + '_ {
    // Roles and states fit in 8 words (256 bits); more is ignored so a huge
    // array cannot make a huge rule.
    words.iter().take(8).enumerate().flat_map(|(word, value)| {
        let value = *value as u32;
        (0..32u32)
            .filter(move |bit| value & (1 << bit) != 0)
            .map(move |bit| word as u32 * 32 + bit)
    })
}

/// `a:b\:c` → ["a", "b:c"], lower-cased.
fn alternatives(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            ':' => out.push(std::mem::take(&mut current)),
            other => current.push(other),
        }
    }
    out.push(current);
    out.into_iter().map(|v| v.to_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_arrays_and_alternatives() {
        assert_eq!(bits(&[0b101, 1]).collect::<Vec<_>>(), vec![0, 2, 32]);
        assert_eq!(bits(&[i32::MIN]).collect::<Vec<_>>(), vec![31]);
        assert_eq!(alternatives("Grid:Tree\\:X"), vec!["grid", "tree:x"]);
        let criterion = InterfaceCriterion::parse("action(Click)");
        assert_eq!(
            (criterion.full_name.as_str(), criterion.action.as_deref()),
            ("org.a11y.atspi.action", Some("click"))
        );
    }
}
