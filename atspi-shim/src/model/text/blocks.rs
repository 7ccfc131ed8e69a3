//! Per-block text: the layout browsers give Orca's web script.
//!
//! Under [`TextLayout::Blocks`] every exposed node of a document that has
//! children gets its own Text: its own `TextRun`s inline and one U+FFFC
//! (the embedded-object character) per exposed child, in child order. A
//! child's `Hyperlink.StartIndex` is the offset of its U+FFFC in its parent's
//! text, so the offsets agree with `GetChildAtIndex`, and a parent's
//! Hypertext lists every embedded child. A block's text is built from its
//! own children only: no answer walks the document.
//!
//! Which layout an application gets is a property of its producer: a web
//! engine names itself in its hello ([`TextLayout::for_toolkit`]), and Orca
//! runs its web script, written for this layout, on it. Any other producer
//! keeps the inline layout (one Text over the whole document, every run
//! inlined), which Orca's default script, written for inline text, reads:
//! it removes every U+FFFC from the line it speaks and expands none, so a
//! document made of U+FFFC would lose its words there (docs/interfaces.md,
//! "Per-block text").

use super::*;

/// How a document's text is laid out over its objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum TextLayout {
    /// One Text over a text-bearing node, its descendants' runs inlined
    /// (accesskit_unix's layout).
    #[default]
    Inline,
    /// Text on every block of a document, U+FFFC for child objects.
    Blocks,
}

/// Toolkit names of the web engines Orca 43.1–48.1 gives the web script
/// (`scripts/toolkits/`), compared case-insensitively.
const WEB_ENGINES: [&str; 3] = ["chromium", "gecko", "webkitgtk"];

impl TextLayout {
    /// The layout for an application whose hello names `toolkit`.
    pub(crate) fn for_toolkit(toolkit: &str) -> Self {
        if WEB_ENGINES
            .iter()
            .any(|engine| toolkit.eq_ignore_ascii_case(engine))
        {
            TextLayout::Blocks
        } else {
            TextLayout::Inline
        }
    }

    /// Whether `node`'s text is laid out per block: it is in a document and
    /// not in a text input (whose text, and that of anything inside it, stays
    /// inline: an input's value is one string to edit).
    pub(crate) fn is_block_text(self, node: &NodeRef) -> bool {
        self == TextLayout::Blocks && in_document_outside_inputs(node)
    }
}

/// The embedded-object character.
pub(crate) const EMBEDDED_OBJECT: char = '\u{FFFC}';

/// Whether `node` is a document root or inside one, with no text input
/// between. O(depth).
fn in_document_outside_inputs(node: &NodeRef) -> bool {
    let mut current = Some(*node);
    while let Some(node) = current {
        if node.is_text_input() {
            return false;
        }
        if crate::model::roles::is_document(&node) {
            return true;
        }
        current = node.parent();
    }
    false
}

/// Whether a block-text node has Text: it has a run or an exposed child
/// (stops at the first), or else a plain-string fallback.
pub(crate) fn has_block_text(node: &NodeRef) -> bool {
    node.children().any(|child| {
        child.role() == Role::TextRun || crate::model::exposure::is_exposed_child(&child)
    }) || plain_text_of(node).is_some()
}

/// Roles laid out within a line of their parent's text (a row's cells share
/// its line); every other child object is a block and starts (and ends) a
/// line, as in a browser.
fn is_inline(node: &NodeRef) -> bool {
    crate::model::roles::is_link(node)
        || matches!(
            node.role(),
            Role::Abbr
                | Role::Code
                | Role::Emphasis
                | Role::Image
                | Role::Mark
                | Role::Strong
                | Role::Time
                | Role::Button
                | Role::CheckBox
                | Role::RadioButton
                | Role::TextInput
                | Role::SearchInput
                | Role::ComboBox
                | Role::Cell
                | Role::GridCell
                | Role::ColumnHeader
                | Role::RowHeader
        )
}

impl<'a> TextModel<'a> {
    /// A block's text: its runs inline, one U+FFFC per exposed child.
    pub(crate) fn from_blocks(root: NodeRef<'a>) -> Self {
        let mut model = TextData::empty();
        let mut words = ProducerWords::default();
        let mut line_start_pending = true;
        for child in root.children() {
            if child.role() == Role::TextRun {
                let clusters = run_clusters(&child);
                let run = model.push_run(child.locate().0, &clusters, false);
                if line_start_pending || child.data().previous_on_line().is_none() {
                    model.run_line_starts.push(run.start);
                }
                line_start_pending = false;
                words.add_run(&child, &run);
                model.runs.push(run);
            } else if crate::model::exposure::is_exposed_child(&child) {
                let offset = model.push_embedded(child.locate().0);
                // An object is a word of its own.
                words.add_offset(offset);
                if is_inline(&child) {
                    if line_start_pending {
                        model.run_line_starts.push(offset);
                        line_start_pending = false;
                    }
                } else {
                    model.run_line_starts.push(offset);
                    line_start_pending = true;
                }
            }
        }
        model.trim_final_break();
        model.bytes.push(model.text.len());
        if model.run_line_starts.is_empty() {
            model.run_line_starts.push(0);
        }
        // The producer's word starts hold only within its runs (the final
        // break may be gone); an object starts a word either way.
        model.producer_words = words.finish(model.chars.len());
        model.holder = text_holder(&root).map(|holder| holder.locate().0);
        model.per_block = true;
        TextModel {
            root,
            data: Arc::new(model),
        }
    }
}

impl TextData {
    /// An empty text of no runs.
    pub(crate) fn empty() -> Self {
        TextData {
            text: String::new(),
            bytes: Vec::new(),
            chars: Vec::new(),
            runs: Vec::new(),
            producer_words: None,
            run_line_starts: Vec::new(),
            boundary_points: BoundaryPoints::default(),
            link_index: std::sync::OnceLock::new(),
            embedded: Vec::new(),
            holder: None,
            per_block: false,
        }
    }

    /// Drops the hard line break that ends a block's last run: inline
    /// text ends each block's runs with one (AccessKit's document text
    /// flows on), but a block's own text ends where the block does, as a
    /// browser's does, and Orca would say the break with the line.
    fn trim_final_break(&mut self) {
        let Some(run) = self.runs.last_mut() else {
            return;
        };
        let len = self.chars.len();
        if run.end != len || run.end == run.start {
            return;
        }
        let breaks = |c: Option<&char>| c.is_some_and(|&c| is_hard_line_break(c));
        if !breaks(self.chars.last()) {
            return;
        }
        let mut cut = len - 1;
        if self.chars.get(cut) == Some(&'\n')
            && cut > run.start
            && self.chars.get(cut - 1) == Some(&'\r')
        {
            cut -= 1;
        }
        self.chars.truncate(cut);
        if let Some(&byte) = self.bytes.get(cut) {
            self.text.truncate(byte);
        }
        self.bytes.truncate(cut);
        run.end = cut;
        run.clusters.retain(|&start| start < cut);
    }

    /// Appends one U+FFFC standing for `child`; returns its offset.
    fn push_embedded(&mut self, child: NodeId) -> usize {
        let offset = self.bytes.len();
        self.bytes.push(self.text.len());
        self.text.push(EMBEDDED_OBJECT);
        self.chars.push(EMBEDDED_OBJECT);
        self.embedded.push((child, offset));
        offset
    }

    /// The embedded children in text order, with their offsets.
    pub(crate) fn embedded(&self) -> &[(NodeId, usize)] {
        &self.embedded
    }
}

/// Where a selection end lies for a block's text.
enum Place {
    /// In one of the block's own runs, at this offset.
    Here(usize),
    /// Inside the child object whose U+FFFC is at this offset.
    InChild(usize),
    /// Before the block, or after it, in document order.
    Before,
    After,
}

impl<'a> TextModel<'a> {
    /// The part of the document's selection that lies in this block, as a
    /// browser shows a selection across blocks: from its start (or the
    /// block's) to its end (or the block's); a child object the selection
    /// starts or ends in is selected as its U+FFFC.
    pub(super) fn block_selection(&self) -> Option<(usize, usize)> {
        let holder = self.selection_source()?;
        let selection = holder.data().text_selection()?;
        let anchor = self.locate_end(&holder, &selection.anchor)?;
        let focus = self.locate_end(&holder, &selection.focus)?;
        let (first, last) = if anchor.0 <= focus.0 {
            (anchor.1, focus.1)
        } else {
            (focus.1, anchor.1)
        };
        let start = match first {
            Place::Here(offset) | Place::InChild(offset) => offset,
            Place::Before => 0,
            Place::After => return None,
        };
        let end = match last {
            Place::Here(offset) => offset,
            Place::InChild(offset) => offset + 1,
            Place::After => self.len(),
            Place::Before => return None,
        };
        (start < end).then_some((start, end))
    }

    /// A selection end's place in document order (its run's index path
    /// below `holder`, then its character) and relative to this block.
    fn locate_end(
        &self,
        holder: &NodeRef<'a>,
        end: &accesskit::TextPosition,
    ) -> Option<((Vec<usize>, usize), Place)> {
        let run = self
            .root
            .tree_state
            .node_by_tree_local_id(end.node, TreeId::ROOT)?;
        let order = (index_path(holder, &run)?, end.character_index);
        if let Some(offset) = self.offset_of(end) {
            return Some((order, Place::Here(offset)));
        }
        if let Some(child) = child_holding(&self.root, &run) {
            let id = child.locate().0;
            let (_, offset) = self.embedded().iter().find(|(c, _)| *c == id)?;
            return Some((order, Place::InChild(*offset)));
        }
        let place = if index_path(holder, &self.root)? < order.0 {
            Place::After
        } else {
            Place::Before
        };
        Some((order, place))
    }
}

/// The child indices from `ancestor` down to `node`; `None` when `node` is
/// not below `ancestor`.
fn index_path(ancestor: &NodeRef, node: &NodeRef) -> Option<Vec<usize>> {
    let mut path = Vec::new();
    let mut current = *node;
    while current.id() != ancestor.id() {
        let (parent, index) = current.parent_and_index()?;
        path.push(index);
        current = parent;
    }
    path.reverse();
    Some(path)
}

/// The child of `block` that `node` lies in, when it lies below a child.
fn child_holding<'a>(block: &NodeRef<'a>, node: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    let mut current = *node;
    loop {
        let parent = current.parent()?;
        if parent.id() == block.id() {
            return Some(current);
        }
        current = parent;
    }
}

/// The nearest ancestor-or-self of `node` whose text AccessKit models as a
/// range (a document, a label): where the producer keeps the text
/// selection, and where selection actions go.
pub(crate) fn text_holder<'a>(node: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    let mut current = Some(*node);
    while let Some(node) = current {
        if node.supports_text_ranges() {
            return Some(node);
        }
        current = node.parent();
    }
    None
}

impl TextModel<'_> {
    /// Surface-relative bounds of `[start, end)` in a block: the union of
    /// its characters' boxes (a child object's box for its U+FFFC); for an
    /// empty range the zero-width box at `start`.
    pub(super) fn block_bounds(&self, start: usize, end: usize) -> Option<Rect> {
        if start > end || end > self.len() {
            return None;
        }
        if start == end {
            return self.caret_box(start);
        }
        (start..end)
            .filter_map(|offset| self.piece_rect(offset))
            .reduce(|a, b| a.union(b))
    }

    /// The zero-width box before the character at `offset` (after the last
    /// one at the end of the text).
    fn caret_box(&self, offset: usize) -> Option<Rect> {
        if let Some(rect) = self.piece_rect(offset) {
            return Some(Rect::new(rect.x0, rect.y0, rect.x0, rect.y1));
        }
        let last = self.piece_rect(offset.checked_sub(1)?)?;
        Some(Rect::new(last.x1, last.y0, last.x1, last.y1))
    }

    /// The box of the character at `offset`: a run's character, or the
    /// child object an U+FFFC stands for.
    fn piece_rect(&self, offset: usize) -> Option<Rect> {
        if let Ok(index) = self.embedded().binary_search_by_key(&offset, |&(_, at)| at) {
            let (child, _) = self.embedded().get(index)?;
            return self
                .root
                .tree_state
                .node_by_tree_local_id(*child, TreeId::ROOT)?
                .bounding_box();
        }
        let run = self
            .runs
            .iter()
            .find(|run| run.start <= offset && offset < run.end)?;
        let character = run.clusters.partition_point(|&start| start <= offset);
        cluster_rect(&self.run_node(run)?, character.checked_sub(1)?)
    }

    /// The offset of the character whose box holds `point`, if any.
    pub(super) fn block_offset_at_point(&self, point: Point) -> Option<usize> {
        (0..self.len()).find(|&offset| {
            self.piece_rect(offset)
                .is_some_and(|rect| rect.contains(point))
        })
    }
}

/// The surface-relative box of AccessKit character `index` of `run`, from
/// its `character_positions` and `character_widths` along its text
/// direction (the whole run's box when it has no per-character metrics).
fn cluster_rect(run: &NodeRef, index: usize) -> Option<Rect> {
    let data = run.data();
    let mut rect = data.bounds()?;
    let metrics = data.character_positions().zip(data.character_widths());
    if let Some((positions, widths)) = metrics {
        let start = f64::from(*positions.get(index)?);
        let end = start + f64::from(*widths.get(index)?);
        match data.text_direction().unwrap_or(TextDirection::LeftToRight) {
            TextDirection::LeftToRight => (rect.x0, rect.x1) = (rect.x0 + start, rect.x0 + end),
            TextDirection::RightToLeft => (rect.x0, rect.x1) = (rect.x1 - end, rect.x1 - start),
            TextDirection::TopToBottom => (rect.y0, rect.y1) = (rect.y0 + start, rect.y0 + end),
            TextDirection::BottomToTop => (rect.y0, rect.y1) = (rect.y1 - end, rect.y1 - start),
        }
    }
    Some(run.transform().transform_rect_bbox(rect))
}

/// Where an offset of `holder`'s inline text (the producer's text range,
/// in which the replica reports text edits and the caret) falls in the
/// per-block layout: the block showing that character, and the offset
/// there. At a boundary between two runs the later run's block wins (the
/// caret before its first character); at the very end, the last run's.
pub(crate) fn block_offset<'a>(
    holder: &NodeRef<'a>,
    offset: usize,
) -> Option<(NodeRef<'a>, usize)> {
    let inline = TextModel::from_runs(*holder);
    let run = inline
        .runs
        .iter()
        .find(|run| run.start <= offset && offset < run.end)
        .or_else(|| inline.runs.iter().rev().find(|run| run.end == offset))?;
    let block = inline.run_node(run)?.parent()?;
    let model = TextModel::from_blocks(block);
    let in_block = model.runs.iter().find(|r| r.node == run.node)?;
    let at = (in_block.start + (offset - run.start)).min(in_block.end);
    Some((block, at))
}
