//! The normative JSON Schema of protocol version 1 (`docs/schema/`), derived
//! from the Rust types with `schemars`: the hello, every message of both
//! directions, the tree payload (`accesskit::TreeUpdate`, from accesskit's
//! own `schemars` support), a recorded-stream line, and the vocabulary a
//! producer outside Rust needs (role names, property keys and types, the
//! bits of `actions` and `flags`), read from accesskit itself.
//!
//! Pure: [`files`] returns the file names and contents; the
//! `newton-fixtures schema` command writes them and a test checks that the
//! committed files equal them.

use accesskit::{Action, Node, Role, TreeUpdate};
use schemars::{generate::SchemaSettings, JsonSchema, Schema};
use serde_json::{json, Map, Value};

use crate::messages::{
    BridgeMessage, Hello, RecordedLine, SenderMessage, ACCESSKIT_VERSION, PROTOCOL_VERSION,
};

/// One generated file of `docs/schema/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaFile {
    /// File name inside the schema directory.
    pub name: &'static str,
    /// Its whole contents (ends with a newline).
    pub contents: String,
}

/// The command that regenerates `docs/schema/`, named in every file.
pub const REGENERATE: &str = "cargo run -p newton-fixtures -- schema --out docs/schema";

/// Every file of `docs/schema/`, in a stable order with stable contents.
pub fn files() -> Vec<SchemaFile> {
    let vocabulary = vocabulary();
    vec![
        json_file("hello.schema.json", hello_schema()),
        json_file("sender-message.schema.json", sender_message_schema()),
        json_file("bridge-message.schema.json", bridge_message_schema()),
        json_file("tree-update.schema.json", tree_update_schema()),
        json_file("recorded-line.schema.json", recorded_line_schema()),
        SchemaFile {
            name: "vocabulary.md",
            contents: vocabulary_markdown(&vocabulary),
        },
        json_file("vocabulary.json", vocabulary),
    ]
}

/// The schema of the hello (the sender's first frame, always JSON).
pub fn hello_schema() -> Value {
    schema_of::<Hello>(
        "hello",
        "The sender's first frame (always JSON). docs/protocol.md section 5.",
    )
}

/// The schema of one sender → bridge message after the hello.
pub fn sender_message_schema() -> Value {
    schema_of::<SenderMessage>(
        "sender message",
        "One sender-to-bridge message after the hello, in its JSON encoding. docs/protocol.md section 6.",
    )
}

/// The schema of one bridge → sender message (the welcome included).
pub fn bridge_message_schema() -> Value {
    schema_of::<BridgeMessage>(
        "bridge message",
        "One bridge-to-sender message, in its JSON encoding; the first one is `welcome` or `error`. docs/protocol.md section 7.",
    )
}

/// The schema of the tree payload alone (`update.update`).
pub fn tree_update_schema() -> Value {
    schema_of::<TreeUpdate>(
        "tree update",
        "The tree payload of an `update` message: an accesskit TreeUpdate in accesskit's own serde shape. docs/protocol.md section 4.1.",
    )
}

/// The schema of one line of a recorded stream (`*.jsonl`).
pub fn recorded_line_schema() -> Value {
    schema_of::<RecordedLine>(
        "recorded line",
        "One line of a recorded stream (*.jsonl): the hello or a sender message. docs/protocol.md section 12.",
    )
}

fn schema_of<T: JsonSchema>(title: &str, description: &str) -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let schema: Schema = generator.into_root_schema_for::<T>();
    let mut value = schema.to_value();
    close_property_maps(&mut value);
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "title".into(),
            Value::String(format!(
                "Newton push protocol {PROTOCOL_VERSION}: {title} (accesskit {ACCESSKIT_VERSION})"
            )),
        );
        object.insert("description".into(), Value::String(description.into()));
        object.insert(
            "$comment".into(),
            Value::String(format!(
                "Generated from the Rust types of newton-push-protocol and accesskit {ACCESSKIT_VERSION} by `{REGENERATE}`; do not edit."
            )),
        );
    }
    value
}

/// accesskit's hand-written schema of a node's `properties` map leaves
/// extra keys open, but its deserializer refuses any key that is not a
/// property it knows; the published schema says what the decoder does.
fn close_property_maps(schema: &mut Value) {
    if let Some(properties) = schema.pointer_mut("/$defs/Properties") {
        if let Some(object) = properties.as_object_mut() {
            object.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
}

fn json_file(name: &'static str, value: Value) -> SchemaFile {
    let mut contents = serde_json::to_string_pretty(&value).unwrap_or_default();
    contents.push('\n');
    SchemaFile { name, contents }
}

/// Role names (with their postcard index), action names (with their bit in
/// `actions`/`childActions` and postcard index), flag names (with their bit
/// in `flags`) and property keys (with their schema), all read from
/// accesskit.
pub fn vocabulary() -> Value {
    json!({
        "$comment": format!(
            "Generated from accesskit {ACCESSKIT_VERSION} by `{REGENERATE}`; do not edit."
        ),
        "accesskitVersion": ACCESSKIT_VERSION,
        "roles": roles(),
        "actions": actions(),
        "flags": flags(),
        "properties": properties(),
        "valueTypes": value_types(),
    })
}

/// The shapes of the non-enum types property values and node entries use
/// (`Rect`, `Color`, …), summarised from the tree-update schema.
fn value_types() -> Value {
    let schema = tree_update_schema();
    let definitions = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    for name in [
        "NodeId",
        "TreeId",
        "TreeInfo",
        "Rect",
        "Affine",
        "Color",
        "TextDecoration",
        "TextDecorationStyle",
        "TextPosition",
        "TextSelection",
        "CustomAction",
    ] {
        let Some(definition) = definitions.get(name) else {
            continue;
        };
        let shape = match definition.get("properties").and_then(Value::as_object) {
            Some(fields) => {
                let required: Vec<&str> = definition
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let fields: Vec<String> = fields
                    .iter()
                    .map(|(field, field_schema)| {
                        let optional = if required.contains(&field.as_str()) {
                            ""
                        } else {
                            " (optional)"
                        };
                        format!(
                            "`{field}`: {}{optional}",
                            type_summary(field_schema, &definitions)
                        )
                    })
                    .collect();
                format!("object: {}", fields.join("; "))
            }
            None => type_summary(&json!({"$ref": format!("#/$defs/{name}")}), &definitions)
                .trim_start_matches(name)
                .trim_start_matches(": ")
                .to_owned(),
        };
        let shape = if shape.is_empty() {
            type_summary(definition, &definitions)
        } else {
            shape
        };
        out.insert(name.to_owned(), Value::String(shape));
    }
    Value::Object(out)
}

fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        other => format!("{other:?}"),
    }
}

fn roles() -> Vec<Value> {
    (0..=u8::MAX)
        .map_while(Role::n)
        .enumerate()
        .map(|(index, role)| json!({"name": wire_name(&role), "index": index}))
        .collect()
}

fn actions() -> Vec<Value> {
    (0..=u8::MAX)
        .map_while(Action::n)
        .enumerate()
        .map(|(index, action)| {
            let mut node = Node::new(Role::Unknown);
            node.add_action(action);
            json!({
                "name": wire_name(&action),
                "bit": node_field(&node, "actions"),
                "index": index,
            })
        })
        .collect()
}

type FlagSetter = fn(&mut Node);

/// Node flags are a private accesskit enum; each is read back as the bit
/// its public setter sets.
fn flags() -> Vec<Value> {
    let setters: [(&str, FlagSetter); 18] = [
        ("hidden", Node::set_hidden),
        ("multiselectable", Node::set_multiselectable),
        ("required", Node::set_required),
        ("visited", Node::set_visited),
        ("busy", Node::set_busy),
        ("liveAtomic", Node::set_live_atomic),
        ("modal", Node::set_modal),
        ("touchTransparent", Node::set_touch_transparent),
        ("readOnly", Node::set_read_only),
        ("disabled", Node::set_disabled),
        ("italic", Node::set_italic),
        ("clipsChildren", Node::set_clips_children),
        ("isLineBreakingObject", Node::set_is_line_breaking_object),
        ("isPageBreakingObject", Node::set_is_page_breaking_object),
        ("isSpellingError", Node::set_is_spelling_error),
        ("isGrammarError", Node::set_is_grammar_error),
        ("isSearchMatch", Node::set_is_search_match),
        ("isSuggestion", Node::set_is_suggestion),
    ];
    setters
        .iter()
        .map(|(name, set)| {
            let mut node = Node::new(Role::Unknown);
            set(&mut node);
            json!({"name": name, "bit": node_field(&node, "flags")})
        })
        .collect()
}

fn node_field(node: &Node, field: &str) -> Value {
    serde_json::to_value(node)
        .ok()
        .and_then(|value| value.get(field).cloned())
        .unwrap_or(Value::Null)
}

/// Property keys with their value schemas, from accesskit's schema of the
/// `properties` map.
fn properties() -> Value {
    let schema = tree_update_schema();
    let definitions = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let keys = schema
        .pointer("/$defs/Properties/properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Map::new();
    for (key, value_schema) in keys {
        out.insert(
            key,
            json!({"type": type_summary(&value_schema, &definitions)}),
        );
    }
    Value::Object(out)
}

/// A short, human-readable type of a property value for the vocabulary.
fn type_summary(schema: &Value, definitions: &Value) -> String {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.trim_start_matches("#/$defs/");
        return match definitions.get(name) {
            Some(definition) if definition.get("enum").is_some() => {
                let values: Vec<String> = definition["enum"]
                    .as_array()
                    .map(|values| values.iter().map(|v| v.to_string()).collect())
                    .unwrap_or_default();
                format!("{name}: one of {}", values.join(", "))
            }
            Some(definition) if definition.get("oneOf").is_some() => {
                let values: Vec<String> = definition["oneOf"]
                    .as_array()
                    .map(|values| {
                        values
                            .iter()
                            .filter_map(|v| v.get("const").or_else(|| v.get("enum")))
                            .map(|v| v.to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                if values.is_empty() {
                    name.to_owned()
                } else {
                    format!("{name}: one of {}", values.join(", "))
                }
            }
            _ => name.to_owned(),
        };
    }
    if let Some(kinds) = schema.get("type").and_then(Value::as_array) {
        let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
        return kinds.join(" or ");
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => {
            let item = schema
                .get("items")
                .map(|items| type_summary(items, definitions))
                .unwrap_or_else(|| "any".into());
            match (schema.get("minItems"), schema.get("maxItems")) {
                (Some(min), Some(max)) if min == max => format!("array of {min} {item}"),
                _ => format!("array of {item}"),
            }
        }
        Some(kind) => match schema.get("format").and_then(Value::as_str) {
            Some(format) => format!("{kind} ({format})"),
            None => kind.to_owned(),
        },
        None => schema.to_string(),
    }
}

/// The vocabulary as Markdown tables, for producer authors.
fn vocabulary_markdown(vocabulary: &Value) -> String {
    let mut out = format!(
        "# Tree payload vocabulary (accesskit {ACCESSKIT_VERSION})\n\n\
         <!-- Generated by `{REGENERATE}`; do not edit. -->\n\n\
         What a producer outside Rust needs to build the tree payload of an `update` message \
         (docs/protocol.md section 4.1 explains its shape; `tree-update.schema.json` is the \
         normative schema). Everything here is read from accesskit {ACCESSKIT_VERSION} itself; \
         `vocabulary.json` has the same data.\n\n\
         * `role`: one of the role names below (JSON); postcard sends the index.\n\
         * `actions` and `childActions`: the sum (bitwise or) of the bits of the supported \
         actions; an `action` request names the action.\n\
         * `flags`: the sum (bitwise or) of the bits of the flags that are set.\n\
         * `properties`: an object with any of the keys below; an absent key is an unset \
         property. Unknown keys are refused.\n\n"
    );
    out.push_str("## Roles\n\n| Role | postcard index |\n|---|---|\n");
    for role in vocabulary["roles"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            role["name"].as_str().unwrap_or_default(),
            role["index"]
        ));
    }
    out.push_str("\n## Actions\n\n| Action | bit in `actions` | postcard index |\n|---|---|---|\n");
    for action in vocabulary["actions"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            action["name"].as_str().unwrap_or_default(),
            action["bit"],
            action["index"]
        ));
    }
    out.push_str("\n## Flags\n\n| Flag | bit in `flags` |\n|---|---|\n");
    for flag in vocabulary["flags"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            flag["name"].as_str().unwrap_or_default(),
            flag["bit"]
        ));
    }
    out.push_str("\n## Properties\n\n| Key | Value |\n|---|---|\n");
    if let Some(properties) = vocabulary["properties"].as_object() {
        for (key, property) in properties {
            out.push_str(&format!(
                "| `{key}` | {} |\n",
                property["type"].as_str().unwrap_or_default()
            ));
        }
    }
    out.push_str("\n## Value types\n\n| Type | Shape |\n|---|---|\n");
    if let Some(types) = vocabulary["valueTypes"].as_object() {
        for (name, shape) in types {
            out.push_str(&format!(
                "| `{name}` | {} |\n",
                shape.as_str().unwrap_or_default()
            ));
        }
    }
    out
}
