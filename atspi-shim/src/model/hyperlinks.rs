//! Hypertexts and hyperlinks in a text's environment (`text_env.rs`): which
//! texts offer Hypertext, which nodes are Hyperlinks and where each one's
//! anchor lies in its hypertext, and the references between them.
//!
//! In the inline layout a link is the span of its text runs in the nearest
//! text-bearing ancestor's text (no U+FFFC); in the per-block layout
//! (`text/blocks.rs`) a block's links are its child objects, one U+FFFC
//! each. See `interfaces/hypertext.rs` for the whole story.

use accesskit::TreeId;
use accesskit_consumer::NodeRef;

use crate::model::exposure;
use crate::model::paths::local_id;
use crate::model::paths::{self, ObjectAddress, ObjectRef};
use crate::model::roles::is_link;
use crate::model::text::{link_index, text_parent, LinkIndex, TextLayout};
use crate::model::text_env::{model_at, Env};

/// `(unique name, path)` of a node of this surface.
pub(crate) fn object_ref(env: &Env, node: &NodeRef) -> ObjectRef {
    paths::node_ref(env.unique_name, env.surface, local_id(node))
}

/// The node of this surface a `(so)` reference names, if it is one.
pub(crate) fn node_of<'a>(
    env: &Env,
    context: &NodeRef<'a>,
    reference: &ObjectRef,
) -> Option<NodeRef<'a>> {
    // Clients may leave the bus name empty for objects of the app they call.
    if !reference.0.is_empty() && reference.0 != env.unique_name {
        return None;
    }
    match paths::parse(reference.1.as_str())? {
        ObjectAddress::Node { surface, node } if surface == env.surface => {
            context.tree_state.node_by_tree_local_id(node, TreeId::ROOT)
        }
        _ => None,
    }
}

/// The most links a text of the inline layout may have and still offer
/// Hypertext (the per-block layout has no limit: a block lists only its own
/// children, so this walk stays per block there). Orca 43.1's
/// default script enumerates every link of the focused text (three calls
/// each: `GetLink`, `StartIndex`, `EndIndex`) on every braille refresh
/// (`braille.Text.getAttributeMask`), so a 12,000-link document froze it
/// for over a minute per focus change (docs/interfaces.md, "Hypertext").
/// Beyond the limit the links stay reachable as objects — each keeps its
/// Hyperlink interface with its offsets, Collection finds them — but the
/// text does not list them.
pub(crate) const MAX_HYPERTEXT_LINKS: usize = 256;

/// Whether `node` offers Hypertext: a text with at least one link (in the
/// inline layout at most [`MAX_HYPERTEXT_LINKS`]), judged on its text model
/// (cached, like the link list). In the per-block layout a block's links
/// are its child objects: having a child object is answered from its
/// children, without building its model. In the inline layout a
/// plain-text node has no runs, hence no links; checking first spares
/// building its model.
pub(crate) fn has_links(env: &Env, node: &NodeRef) -> bool {
    if env.layout.is_block_text(node) {
        return node
            .children()
            .any(|child| exposure::is_exposed_child(&child));
    }
    node.supports_text_ranges()
        && model_at(env, *node).is_some_and(|model| offers_hypertext(env, link_index(&model)))
}

/// The inline layout caps the links a text lists (see
/// [`MAX_HYPERTEXT_LINKS`]); a block lists all of its child objects.
pub(crate) fn offers_hypertext(env: &Env, links: &LinkIndex) -> bool {
    match env.layout {
        TextLayout::Blocks => links.len() > 0,
        TextLayout::Inline => (1..=MAX_HYPERTEXT_LINKS).contains(&links.len()),
    }
}

/// Links are hyperlinks in either layout; in the per-block layout so is
/// every child object of a block (its anchor is its U+FFFC there, as in a
/// browser), which is how Orca's web script finds a child's offset in its
/// parent's text.
pub(crate) fn is_hyperlink(env: &Env, node: &NodeRef) -> bool {
    is_link(node) || embedding_block(env, node).is_some()
}

/// The block whose text holds `node`'s U+FFFC, in the per-block layout.
fn embedding_block<'a>(env: &Env, node: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    if node.is_root() || !crate::model::exposure::is_exposed(node) {
        return None;
    }
    node.parent()
        .filter(|parent| env.layout.is_block_text(parent))
}

/// The link's code-point span in its hypertext: its U+FFFC in its block
/// (per-block layout), else its runs in its nearest text-bearing ancestor.
pub(crate) fn span_in_parent(env: &Env, link: &NodeRef) -> Option<(usize, usize)> {
    let parent = match embedding_block(env, link) {
        Some(block) => block,
        None => text_parent(link)?,
    };
    let model = model_at(env, parent)?;
    link_index(&model).span_of(local_id(link))
}
