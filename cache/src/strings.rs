//! D-Bus strings cannot hold NUL: a message carrying one is invalid, and the
//! bus daemon (or the AT's libdbus, peer-to-peer) drops the connection that
//! sent it. Producer strings are therefore cleaned on the way in: every NUL
//! becomes a space (one byte, like NUL, so text-run character lengths and
//! every offset stay valid). Costs one scan of each string of the update;
//! allocates only for strings that held a NUL.

use accesskit::{CustomAction, Node, TreeUpdate};

/// `text` with every NUL replaced by a space, if it held any.
pub fn without_nul(text: &str) -> Option<String> {
    text.contains('\0').then(|| text.replace('\0', " "))
}

macro_rules! clean_strings {
    ($node:ident: $($get:ident => $set:ident),* $(,)?) => {
        $(
            if let Some(clean) = $node.$get().and_then(without_nul) {
                $node.$set(clean);
            }
        )*
    };
}

/// Replaces NUL by a space in every string property of `node`.
pub fn clean_node(node: &mut Node) {
    clean_strings!(node:
        label => set_label,
        description => set_description,
        value => set_value,
        access_key => set_access_key,
        author_id => set_author_id,
        class_name => set_class_name,
        font_family => set_font_family,
        html_tag => set_html_tag,
        inner_html => set_inner_html,
        keyboard_shortcut => set_keyboard_shortcut,
        language => set_language,
        placeholder => set_placeholder,
        role_description => set_role_description,
        state_description => set_state_description,
        tooltip => set_tooltip,
        url => set_url,
        row_index_text => set_row_index_text,
        column_index_text => set_column_index_text,
        braille_label => set_braille_label,
        braille_role_description => set_braille_role_description,
    );
    if node
        .custom_actions()
        .iter()
        .any(|action| action.description.contains('\0'))
    {
        let actions: Vec<CustomAction> = node
            .custom_actions()
            .iter()
            .map(|action| CustomAction {
                id: action.id,
                description: without_nul(&action.description)
                    .unwrap_or_else(|| action.description.clone()),
            })
            .collect();
        node.set_custom_actions(actions);
    }
}

/// Replaces NUL by a space in every string of the updates.
pub fn clean_updates(updates: &mut [TreeUpdate]) {
    for update in updates {
        for (_, node) in &mut update.nodes {
            clean_node(node);
        }
        if let Some(tree) = &mut update.tree {
            for text in [&mut tree.toolkit_name, &mut tree.toolkit_version]
                .into_iter()
                .flatten()
            {
                if let Some(clean) = without_nul(text) {
                    *text = clean;
                }
            }
        }
    }
}
