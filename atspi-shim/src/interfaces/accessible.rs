//! `org.a11y.atspi.Accessible` for replica nodes and for the app root.

use std::collections::HashMap;

use atspi_common::StateSet;

use crate::model::describe;
use crate::model::exposure;
use crate::model::implements;
use crate::model::index::{client_index, to_i32};
use crate::model::names;
use crate::model::objects::{self};
use crate::model::paths::{self, ObjectRef};
use crate::surface::{declare_interface, Target};
use crate::{model::error::CallError, model::relations, model::roles, model::states};

declare_interface! {
    /// Served by every exposed node and by the app root (`Target::App`).
    pub(crate) static ACCESSIBLE = names::ACCESSIBLE, on any {
        fn GetChildAtIndex(index: i32) -> (child: ObjectRef)
            = child_at_index, heavy over objects::counted_width;
        fn GetChildren() -> (children: Vec<ObjectRef>) = children, heavy over objects::width;
        fn GetIndexInParent() -> (index: i32) = index_in_parent, heavy over objects::sibling_work;
        fn GetRelationSet() -> (relations: Vec<(u32, Vec<ObjectRef>)>)
            = relation_set, heavy over relations::targets_work;
        fn GetRole() -> (role: u32) = role;
        fn GetRoleName() -> (name: String) = role_name;
        fn GetLocalizedRoleName() -> (name: String) = localized_role_name;
        fn GetState() -> (states: StateSet) = state;
        fn GetAttributes() -> (attributes: HashMap<String, String>) = object_attributes;
        fn GetApplication() -> (application: ObjectRef) = application;
        fn GetInterfaces() -> (interfaces: Vec<String>) = interfaces;
        property version: u32 = crate::surface::interface_version;
        property Name: String = name_of;
        property Description: String = description_of;
        property Parent: ObjectRef = parent;
        property ChildCount: i32 = child_count, heavy over objects::counted_width;
        property Locale: String = locale_of;
        property AccessibleId: String = accessible_id;
        property HelpText: String = help_text;
    }
}

fn child_at_index(target: Target, index: i32) -> Result<ObjectRef, CallError> {
    let wanted = client_index(index)?;
    match target {
        Target::App(app) => objects::root_children(app)
            .nth(wanted)
            .map(|child| child.object_ref()),
        Target::Node(ctx) => {
            objects::child_at(ctx.surface, &ctx.node, wanted).map(|child| ctx.ref_to(&child))
        }
    }
    .ok_or_else(|| out_of_range(index))
}

fn children(target: Target) -> Result<Vec<ObjectRef>, CallError> {
    Ok(match target {
        Target::App(app) => objects::root_children(app)
            .map(|child| child.object_ref())
            .collect(),
        Target::Node(ctx) => exposure::exposed_children(&ctx.node)
            .map(|child| ctx.ref_to(&child))
            .collect(),
    })
}

fn index_in_parent(target: Target) -> Result<i32, CallError> {
    Ok(match target {
        // The registry knows our place on the desktop; atk-bridge answers -1 too.
        Target::App(_) => -1,
        Target::Node(ctx) => to_i32(objects::index_in_parent(ctx)),
    })
}

fn relation_set(target: Target) -> Result<Vec<(u32, Vec<ObjectRef>)>, CallError> {
    Ok(match target {
        Target::App(_) => Vec::new(),
        Target::Node(ctx) => relations::relation_set(ctx),
    })
}

fn role(target: Target) -> Result<u32, CallError> {
    Ok(match target {
        Target::App(_) => atspi_common::Role::Application as u32,
        Target::Node(ctx) => roles::atspi_role(&ctx.node) as u32,
    })
}

fn role_name(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(_) => atspi_common::Role::Application.name().to_owned(),
        Target::Node(ctx) => roles::role_name(roles::atspi_role(&ctx.node)).to_owned(),
    })
}

/// An author's role description is what the user should hear.
fn localized_role_name(target: Target) -> Result<String, CallError> {
    match target {
        Target::App(_) => role_name(target),
        Target::Node(ctx) => Ok(ctx
            .node
            .role_description()
            .unwrap_or_else(|| roles::role_name(roles::atspi_role(&ctx.node)))
            .to_owned()),
    }
}

fn state(target: Target) -> Result<StateSet, CallError> {
    Ok(match target {
        Target::App(_) => states::root_states(),
        Target::Node(ctx) => states::state_set(ctx),
    })
}

fn object_attributes(target: Target) -> Result<HashMap<String, String>, CallError> {
    Ok(match target {
        Target::App(app) => {
            HashMap::from([("toolkit".to_owned(), describe::toolkit_name(app).to_owned())])
        }
        Target::Node(ctx) => describe::attributes(ctx),
    })
}

fn application(target: Target) -> Result<ObjectRef, CallError> {
    Ok(match target {
        Target::App(app) => app.root_ref(),
        Target::Node(ctx) => ctx.app.root_ref(),
    })
}

fn interfaces(target: Target) -> Result<Vec<String>, CallError> {
    let names = match target {
        Target::App(_) => implements::root_interface_names(),
        Target::Node(ctx) => implements::node_interface_names(ctx),
    };
    Ok(names.into_iter().map(str::to_owned).collect())
}

fn name_of(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(app) => app.info.name.clone(),
        Target::Node(ctx) => describe::name(ctx),
    })
}

fn description_of(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(_) => String::new(),
        Target::Node(ctx) => describe::description(&ctx.node),
    })
}

fn parent(target: Target) -> Result<ObjectRef, CallError> {
    Ok(match target {
        Target::App(app) => paths::desktop_ref(app.desktop),
        Target::Node(ctx) => describe::parent_ref(ctx),
    })
}

fn child_count(target: Target) -> Result<i32, CallError> {
    Ok(to_i32(match target {
        Target::App(app) => objects::root_children(app).count(),
        Target::Node(ctx) => objects::child_count(ctx.surface, &ctx.node),
    }))
}

fn locale_of(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(app) => app.host.object_locale().to_owned(),
        Target::Node(ctx) => describe::locale(ctx),
    })
}

fn accessible_id(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(_) => String::new(),
        Target::Node(ctx) => ctx.node.author_id().unwrap_or_default().to_owned(),
    })
}

fn help_text(target: Target) -> Result<String, CallError> {
    Ok(match target {
        Target::App(_) => String::new(),
        Target::Node(ctx) => ctx.node.data().tooltip().unwrap_or_default().to_owned(),
    })
}

pub(crate) fn out_of_range(index: i32) -> CallError {
    CallError::InvalidArgs(format!("child index {index} is out of range"))
}
