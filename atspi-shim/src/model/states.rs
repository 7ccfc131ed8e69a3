//! The AT-SPI state set of an exposed node, computed from the replica and
//! the compositor's focus fact.

use accesskit::{Action, Orientation, Role, Toggled};
use accesskit_consumer::NodeRef;
use atspi_common::{State, StateSet};
use newton_cache::SurfaceReplica;

use crate::model::context::NodeCtx;
use crate::model::exposure::exposure_filter;

/// `GetState` (and the Cache item's `au`).
pub(crate) fn state_set(ctx: &NodeCtx) -> StateSet {
    let node = &ctx.node;
    let mut set = StateSet::empty();
    set.insert(State::Visible);
    let focused = is_focused(ctx.surface, node);
    if focused || is_on_screen(node) {
        set.insert(State::Showing);
    }
    if !node.is_disabled() {
        set.insert(State::Enabled | State::Sensitive);
    }
    if is_focusable(node) {
        set.insert(State::Focusable);
    }
    if focused {
        set.insert(State::Focused);
    }
    if ctx.surface.is_focused() && (node.is_root() || is_active_dialog(ctx.surface, node)) {
        set.insert(State::Active);
    }
    insert_toggle_states(node, &mut set);
    if is_indeterminate_progress(node) {
        set.insert(State::Indeterminate);
    }
    insert_selection_states(node, &mut set);
    insert_expansion_states(node, &mut set);
    insert_text_states(node, &mut set);
    insert_flag_states(node, &mut set);
    set
}

/// A dialog inside the window that holds the focus: the innermost dialog
/// around the tree's focus.
fn is_active_dialog(surface: &SurfaceReplica, node: &NodeRef) -> bool {
    if !node.is_dialog() {
        return false;
    }
    let Some(state) = surface.tree().map(|tree| tree.state()) else {
        return false;
    };
    let mut current = state.node_by_id(state.focus_id_in_tree());
    while let Some(candidate) = current {
        if candidate.is_dialog() {
            return candidate.id() == node.id();
        }
        current = candidate.parent();
    }
    false
}

/// Whether the node advertises a way to take focus (or already has it).
pub(crate) fn is_focusable(node: &NodeRef) -> bool {
    node.supports_action(Action::Focus, &exposure_filter) || node.is_focused_in_tree()
}

/// The node that has keyboard focus in `surface`, if the compositor says the
/// surface is focused: the tree's focus, or its active descendant.
pub(crate) fn focused_node(surface: &SurfaceReplica) -> Option<NodeRef<'_>> {
    if !surface.is_focused() {
        return None;
    }
    let state = surface.tree()?.state();
    let focus = state.node_by_id(state.focus_id_in_tree())?;
    Some(focus.active_descendant().unwrap_or(focus))
}

pub(crate) fn is_focused(surface: &SurfaceReplica, node: &NodeRef) -> bool {
    focused_node(surface).is_some_and(|focus| focus.id() == node.id())
}

/// Visible on screen: not entirely outside the surface root's bounds. Nodes
/// without bounds count as on screen (we cannot tell).
///
/// SHOWING is this, or keyboard focus: a producer may move focus to a node it
/// has not scrolled into view yet (a grid's focused cell), and the user is
/// there. Orca 43.1 reads a focused table cell as its row's showing cells, so
/// a focused cell without SHOWING was not spoken at all, where accesskit_unix
/// (every node showing) has it said. A node off screen therefore gains and
/// loses SHOWING with focus (`events::Out::focus_state`).
pub(crate) fn is_on_screen(node: &NodeRef) -> bool {
    let Some(bounds) = node.bounding_box() else {
        return true;
    };
    if node.is_root() {
        return true;
    }
    let mut root = *node;
    while let Some(parent) = root.parent() {
        root = parent;
    }
    match root.bounding_box() {
        Some(window) if window.width() > 0.0 && window.height() > 0.0 => {
            let overlap = bounds.intersect(window);
            !(overlap.is_empty() && bounds.area() > 0.0)
        }
        _ => true,
    }
}

/// Toggle buttons report PRESSED; check boxes, switches and checkable menu
/// items report CHECKED. Never both: one toggle must give one state-changed
/// event, and Orca 43.1 speaks each of `checked` and `pressed` on a toggle
/// button ("pressed", "pressed"); libatspi caches states from the events, so
/// a state reported without its event would go stale. Orca reads a toggle
/// button's state from either (`_generateToggleState`).
fn insert_toggle_states(node: &NodeRef, set: &mut StateSet) {
    let Some(toggled) = node.toggled() else {
        return;
    };
    set.insert(State::Checkable);
    match toggled {
        Toggled::True => set.insert(toggle_state(node)),
        Toggled::Mixed => set.insert(State::Indeterminate),
        Toggled::False => {}
    }
}

/// A progress indicator without a value (egui's spinner) is busy with no
/// known progress: INDETERMINATE, as GTK's pulsing progress bar and
/// accesskit_unix say.
pub(crate) fn is_indeterminate_progress(node: &NodeRef) -> bool {
    node.role() == Role::ProgressIndicator && node.numeric_value().is_none()
}

/// The one state that says a toggled node is on.
pub(crate) fn toggle_state(node: &NodeRef) -> State {
    if is_toggle_button(node) {
        State::Pressed
    } else {
        State::Checked
    }
}

pub(crate) fn is_toggle_button(node: &NodeRef) -> bool {
    matches!(node.role(), Role::Button | Role::DisclosureTriangle) && node.toggled().is_some()
}

fn insert_selection_states(node: &NodeRef, set: &mut StateSet) {
    if node.is_selectable() {
        set.insert(State::Selectable);
    }
    if node.is_selected() == Some(true) {
        set.insert(State::Selected);
    }
    if node.is_multiselectable() {
        set.insert(State::Multiselectable);
    }
}

fn insert_expansion_states(node: &NodeRef, set: &mut StateSet) {
    if node.supports_expand_collapse() {
        set.insert(State::Expandable);
    }
    match node.data().is_expanded() {
        Some(true) => set.insert(State::Expanded),
        Some(false) => set.insert(State::Collapsed),
        None => {}
    }
    if node.has_popup().is_some() {
        set.insert(State::HasPopup);
    }
}

fn insert_text_states(node: &NodeRef, set: &mut StateSet) {
    if node.is_text_input() {
        if node.is_multiline() {
            set.insert(State::MultiLine);
        } else {
            set.insert(State::SingleLine);
        }
        if !node.data().is_read_only() && !node.is_disabled() {
            set.insert(State::Editable);
        }
    }
    if node.supports_text_ranges() {
        set.insert(State::SelectableText);
    }
}

fn insert_flag_states(node: &NodeRef, set: &mut StateSet) {
    let data = node.data();
    if node.is_read_only_supported() && data.is_read_only() {
        set.insert(State::ReadOnly);
    }
    if node.is_required() {
        set.insert(State::Required);
    }
    if node.is_modal() {
        set.insert(State::Modal);
    }
    if node.is_busy() {
        set.insert(State::Busy);
    }
    if data.is_visited() {
        set.insert(State::Visited);
    }
    if data.invalid().is_some() {
        set.insert(State::InvalidEntry);
    }
    if node.role() == Role::DefaultButton {
        set.insert(State::IsDefault);
    }
    if data.tooltip().is_some() {
        set.insert(State::HasTooltip);
    }
    match node.orientation() {
        Some(Orientation::Horizontal) => set.insert(State::Horizontal),
        Some(Orientation::Vertical) => set.insert(State::Vertical),
        None => {}
    }
}

/// The app root is always enabled and showing.
pub(crate) fn root_states() -> atspi_common::StateSet {
    use atspi_common::State;
    atspi_common::StateSet::new(State::Enabled | State::Sensitive | State::Showing | State::Visible)
}
