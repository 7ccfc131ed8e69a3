//! The text model: a node's text flattened once into a string with a
//! code-point index, its runs and geometry, and the cache that keeps the
//! model between calls while the surface does not change.

use super::*;

/// Character AccessKit uses to mask password characters.
pub(crate) const MASK: char = '\u{2022}';

/// The producer's word starts, collected run by run as offsets in the text
/// being built.
#[derive(Default)]
pub(super) struct ProducerWords {
    starts: Vec<usize>,
    any_from_producer: bool,
}

impl ProducerWords {
    /// Adds the word starts `node` (a text run) gives, as offsets of `run`.
    pub(super) fn add_run(&mut self, node: &NodeRef, run: &Run) {
        let starts = node.data().word_starts();
        self.any_from_producer |= !starts.is_empty();
        self.starts.extend(
            starts
                .iter()
                .filter_map(|&i| run.clusters.get(usize::from(i)).copied()),
        );
    }

    /// A word start the text itself makes (an embedded object is a word).
    pub(super) fn add_offset(&mut self, offset: usize) {
        self.starts.push(offset);
    }

    /// The starts within a text of `len` characters, or `None` when the
    /// producer gave none (word boundaries are then found in the text).
    pub(super) fn finish(mut self, len: usize) -> Option<Vec<usize>> {
        self.starts.retain(|&start| start <= len);
        self.any_from_producer.then_some(self.starts)
    }
}

/// One `TextRun` as placed in the flattened text.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    /// The text run's node id (resolve it with [`TextModel::run_node`]).
    pub node: NodeId,
    /// Code-point offsets of the run in the whole text.
    pub start: usize,
    pub end: usize,
    /// Global code-point offset at which each AccessKit character starts.
    pub clusters: Vec<usize>,
}

/// A node's text flattened for code-point arithmetic.
pub(crate) struct TextModel<'a> {
    pub root: NodeRef<'a>,
    pub(crate) data: Arc<TextData>,
}

impl std::ops::Deref for TextModel<'_> {
    type Target = TextData;
    fn deref(&self) -> &TextData {
        &self.data
    }
}

/// The node-independent part of a [`TextModel`]: owned, so it can be kept
/// between calls while the surface does not change (building it is
/// O(whole text), and Orca asks many questions of one text in a row).
pub(crate) struct TextData {
    pub text: String,
    /// Byte index of every code point, followed by `text.len()`.
    pub(super) bytes: Vec<usize>,
    /// The code points of `text`, for boundary scans.
    pub(super) chars: Vec<char>,
    /// Empty for the plain-string backend.
    pub runs: Vec<Run>,
    /// Word starts the producer supplied; `None` when no run has any.
    pub(super) producer_words: Option<Vec<usize>>,
    /// Offsets where a run without `previous_on_line` starts.
    pub(super) run_line_starts: Vec<usize>,
    /// Each boundary's sorted cut points, computed on first use: they are
    /// O(whole text) to find, and Orca asks for words and lines of one
    /// text many times between two commits.
    pub(super) boundary_points: BoundaryPoints,
    /// The text's links, computed on first use (`link_index.rs`):
    /// O(runs × depth) to find, and Orca's braille asks for every link of
    /// the focused text one by one.
    pub(crate) link_index: std::sync::OnceLock<LinkIndex>,
    /// Per-block layout: each exposed child's node and the offset of its
    /// U+FFFC, in text order (empty in the inline layout).
    pub(super) embedded: Vec<(NodeId, usize)>,
    /// Built by `from_blocks`: geometry comes from the block's own runs
    /// and children, not from AccessKit's range over the node's subtree.
    pub(super) per_block: bool,
    /// Per-block layout: the node holding the producer's text selection
    /// (`supports_text_ranges`), when it is not the block itself.
    pub(crate) holder: Option<NodeId>,
}

/// Lazily computed cut points, one slot per [`Boundary`] except `Char`.
#[derive(Default)]
pub(crate) struct BoundaryPoints {
    slots: [std::sync::OnceLock<Vec<usize>>; 7],
}

impl BoundaryPoints {
    pub(crate) fn slot(&self, boundary: Boundary) -> Option<&std::sync::OnceLock<Vec<usize>>> {
        let index = match boundary {
            Boundary::Char => return None,
            Boundary::WordStart => 0,
            Boundary::WordEnd => 1,
            Boundary::SentenceStart => 2,
            Boundary::SentenceEnd => 3,
            Boundary::LineStart => 4,
            Boundary::LineEnd => 5,
            Boundary::Paragraph => 6,
        };
        self.slots.get(index)
    }
}

/// The string a node without text runs exposes, if it exposes Text at all.
pub(crate) fn plain_text_of(node: &NodeRef) -> Option<String> {
    if node.supports_text_ranges() {
        return None;
    }
    let data = node.data();
    if node.is_text_input() {
        let value = data.value().unwrap_or_default();
        return Some(if node.is_password_input() {
            masked_plain(value)
        } else {
            value.to_string()
        });
    }
    if node.role() == Role::Label {
        return data.value().or_else(|| data.label()).map(str::to_string);
    }
    if has_name_as_text(node) {
        return node.label();
    }
    None
}

/// Column and row headers and headings carry their name as Text, as a
/// browser's header cells and headings do: Orca 48.1 reads them as blocks of
/// text and takes their words from Text alone (without it, "column header."
/// or "blank heading 2"), while the name keeps Orca 43.1's wording.
pub(crate) fn has_name_as_text(node: &NodeRef) -> bool {
    matches!(
        node.role(),
        Role::ColumnHeader | Role::RowHeader | Role::Heading
    )
}

/// AccessKit's masking rule: mask unless every character is the same (the
/// producer already masked it).
pub(crate) fn masked_plain(value: &str) -> String {
    if has_distinct(value.chars()) {
        value.chars().map(|_| MASK).collect()
    } else {
        value.to_string()
    }
}

pub(crate) fn has_distinct<T: PartialEq>(mut items: impl Iterator<Item = T>) -> bool {
    match items.next() {
        Some(first) => items.any(|item| item != first),
        None => false,
    }
}

/// The `TextRun` nodes making up `node`'s text, in order, as
/// accesskit_consumer collects them (other descendants are looked through).
pub(crate) fn text_runs<'a>(
    node: &NodeRef<'a>,
) -> impl DoubleEndedIterator<Item = NodeRef<'a>> + use<'a> {
    node.filtered_children(|child: &NodeRef| {
        if child.role() == Role::TextRun {
            FilterResult::Include
        } else {
            FilterResult::ExcludeNode
        }
    })
}

/// The AccessKit characters of one run as string slices. Stops at the
/// first length that does not fit the value (the validator rejects such
/// runs; this keeps a bad one from panicking).
pub(crate) fn run_clusters<'a>(run: &NodeRef<'a>) -> Vec<&'a str> {
    let data = run.data();
    let value = data.value().unwrap_or_default();
    let mut clusters = Vec::with_capacity(data.character_lengths().len());
    let mut at = 0usize;
    for &length in data.character_lengths() {
        let end = at + usize::from(length);
        match value.get(at..end) {
            Some(cluster) => clusters.push(cluster),
            None => break,
        }
        at = end;
    }
    clusters
}

impl<'a> TextModel<'a> {
    /// The model of `node`'s text in `layout`, or `None` when it has no Text.
    pub(crate) fn of(node: NodeRef<'a>, layout: TextLayout) -> Option<Self> {
        if layout.is_block_text(&node) {
            let has_children = node.children().any(|child| {
                child.role() == Role::TextRun || crate::model::exposure::is_exposed_child(&child)
            });
            if has_children {
                return Some(Self::from_blocks(node));
            }
            return plain_text_of(&node).map(|text| Self::plain(node, text));
        }
        if node.supports_text_ranges() {
            return Some(Self::from_runs(node));
        }
        plain_text_of(&node).map(|text| Self::plain(node, text))
    }

    pub(crate) fn plain(root: NodeRef<'a>, text: String) -> Self {
        let mut bytes: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        bytes.push(text.len());
        let data = TextData {
            chars: text.chars().collect(),
            text,
            bytes,
            run_line_starts: vec![0],
            ..TextData::empty()
        };
        TextModel {
            root,
            data: Arc::new(data),
        }
    }

    pub(crate) fn from_runs(root: NodeRef<'a>) -> Self {
        let pieces: Vec<(NodeRef<'a>, Vec<&'a str>)> = text_runs(&root)
            .map(|run| (run, run_clusters(&run)))
            .collect();
        let masked = root.is_password_input()
            && has_distinct(pieces.iter().flat_map(|(_, clusters)| clusters.iter()));
        let mut model = TextData {
            runs: Vec::with_capacity(pieces.len()),
            ..TextData::empty()
        };
        let mut words = ProducerWords::default();
        for (node, clusters) in pieces {
            let run = model.push_run(node.locate().0, &clusters, masked);
            if node.data().previous_on_line().is_none() {
                model.run_line_starts.push(run.start);
            }
            if !root.is_password_input() {
                words.add_run(&node, &run);
            }
            model.runs.push(run);
        }
        model.bytes.push(model.text.len());
        model.producer_words = words.finish(model.chars.len());
        TextModel {
            root,
            data: Arc::new(model),
        }
    }

    /// The shared model itself (tests of the cache).
    #[cfg(test)]
    pub(crate) fn data(&self) -> &Arc<TextData> {
        &self.data
    }

    /// The node of one of this text's runs.
    pub(crate) fn run_node(&self, run: &Run) -> Option<NodeRef<'a>> {
        self.root
            .tree_state
            .node_by_tree_local_id(run.node, TreeId::ROOT)
    }
}

impl TextData {
    pub(crate) fn push_run(&mut self, node: NodeId, clusters: &[&str], masked: bool) -> Run {
        let start = self.bytes.len();
        let mut starts = Vec::with_capacity(clusters.len());
        for cluster in clusters {
            starts.push(self.bytes.len());
            if masked {
                self.bytes.push(self.text.len());
                self.text.push(MASK);
                self.chars.push(MASK);
            } else {
                for c in cluster.chars() {
                    self.bytes.push(self.text.len());
                    self.text.push(c);
                    self.chars.push(c);
                }
            }
        }
        Run {
            node,
            start,
            end: self.bytes.len(),
            clusters: starts,
        }
    }
}

impl<'a> TextModel<'a> {
    /// Length in code points.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len().saturating_sub(1)
    }

    /// `offset` as a valid position `0..=len`.
    pub(crate) fn offset(&self, offset: i32) -> Option<usize> {
        usize::try_from(offset).ok().filter(|&o| o <= self.len())
    }

    /// The text between two code-point offsets (clamped, never panics).
    pub(crate) fn slice(&self, start: usize, end: usize) -> &str {
        let byte = |o: usize| self.bytes.get(o.min(self.len())).copied().unwrap_or(0);
        self.text
            .get(byte(start)..byte(end.max(start)))
            .unwrap_or_default()
    }

    pub(crate) fn chars(&self) -> &[char] {
        &self.chars
    }

    /// atk's `get_text`: `end == -1` means the end; a negative start, an
    /// end before the start or a start past the end give "".
    pub(crate) fn get_text(&self, start: i32, end: i32) -> String {
        let len = self.len();
        let Some(start) = usize::try_from(start).ok().filter(|&s| s <= len) else {
            return String::new();
        };
        let end = match end {
            -1 => len,
            e if e < 0 => return String::new(),
            e => usize::try_from(e).map_or(len, |e| e.min(len)),
        };
        if end < start {
            return String::new();
        }
        self.slice(start, end).to_string()
    }

    pub(crate) fn char_at(&self, offset: i32) -> Option<char> {
        self.chars.get(usize::try_from(offset).ok()?).copied()
    }

    /// One Get*Offset answer: `(text, start, end)`, `("", -1, -1)` for an
    /// offset outside `0..=len`.
    pub(crate) fn unit(&self, offset: i32, boundary: Boundary, which: Which) -> (String, i32, i32) {
        let Some(offset) = self.offset(offset) else {
            return (String::new(), -1, -1);
        };
        let (start, end) = self.unit_range(offset, boundary, which);
        (
            self.slice(start, end).to_string(),
            to_i32(start),
            to_i32(end),
        )
    }

    pub(crate) fn unit_range(
        &self,
        offset: usize,
        boundary: Boundary,
        which: Which,
    ) -> (usize, usize) {
        let len = self.len();
        if boundary == Boundary::Char {
            return char_unit(len, offset, which);
        }
        let points = self.points(boundary);
        match which {
            Which::At => unit_at(points, len, offset),
            Which::Before => unit_before(points, len, offset),
            Which::After => unit_after(points, len, offset),
        }
    }

    /// Sorted cut points for `boundary`, always including 0; computed once
    /// per model (the model is shared while its surface does not change).
    pub(crate) fn points(&self, boundary: Boundary) -> &[usize] {
        match self.data.boundary_points.slot(boundary) {
            Some(slot) => slot.get_or_init(|| self.compute_points(boundary)),
            // Characters need no cut points: `unit_range` answers them directly.
            None => &[],
        }
    }

    pub(crate) fn compute_points(&self, boundary: Boundary) -> Vec<usize> {
        let mut points = match boundary {
            Boundary::Char => (0..=self.len()).collect(),
            Boundary::WordStart => self.word_starts(),
            Boundary::WordEnd => self.word_ends(),
            Boundary::SentenceStart => self.sentences().0,
            Boundary::SentenceEnd => self.sentences().1,
            Boundary::LineStart => self.line_starts(),
            Boundary::LineEnd => self.line_ends(),
            Boundary::Paragraph => self.paragraph_starts(),
        };
        points.push(0);
        sorted_unique(points)
    }

    pub(crate) fn paragraph_starts(&self) -> Vec<usize> {
        let mut starts = vec![0];
        starts.extend(
            self.chars()
                .iter()
                .enumerate()
                .filter(|(_, &c)| is_paragraph_break(c))
                .map(|(i, _)| i + 1),
        );
        starts
    }

    pub(crate) fn line_starts(&self) -> Vec<usize> {
        let chars = self.chars();
        let mut starts = self.run_line_starts.clone();
        for (i, &c) in chars.iter().enumerate() {
            // "\r\n" is one break: the line starts after the "\n".
            let crlf = c == '\r' && chars.get(i + 1) == Some(&'\n');
            if is_hard_line_break(c) && !crlf {
                starts.push(i + 1);
            }
        }
        sorted_unique(starts)
    }

    /// Line ends: each line start minus the hard break before it, plus the end.
    pub(crate) fn line_ends(&self) -> Vec<usize> {
        let chars = self.chars();
        let mut ends: Vec<usize> = self
            .line_starts()
            .into_iter()
            .filter(|&start| start > 0)
            .map(|start| {
                let mut end = start;
                if end > 0 && chars.get(end - 1).is_some_and(|&c| is_hard_line_break(c)) {
                    end -= 1;
                    if end > 0 && chars.get(end) == Some(&'\n') && chars.get(end - 1) == Some(&'\r')
                    {
                        end -= 1;
                    }
                }
                end
            })
            .collect();
        ends.push(self.len());
        sorted_unique(ends)
    }

    pub(crate) fn word_starts(&self) -> Vec<usize> {
        let mut starts = self.paragraph_starts();
        if self.root.is_password_input() {
            return starts;
        }
        match &self.producer_words {
            Some(words) => starts.extend(words.iter().copied()),
            None => {
                let chars = self.chars();
                starts.extend((1..chars.len()).filter(|&i| {
                    chars.get(i).is_some_and(|c| !c.is_whitespace())
                        && chars.get(i - 1).is_some_and(|c| c.is_whitespace())
                }));
            }
        }
        sorted_unique(starts)
    }

    /// A word ends where its trailing whitespace starts; whitespace-only
    /// words (leading indentation) have no end.
    pub(crate) fn word_ends(&self) -> Vec<usize> {
        let chars = self.chars();
        let mut starts = self.word_starts();
        starts.push(self.len());
        let starts = sorted_unique(starts);
        starts
            .windows(2)
            .filter_map(|pair| {
                let (start, mut end) = (pair[0], pair[1]);
                while end > start && chars.get(end - 1).is_some_and(|c| c.is_whitespace()) {
                    end -= 1;
                }
                (end > start).then_some(end)
            })
            .collect()
    }

    /// Approximate sentence (starts, ends); see the module doc.
    pub(crate) fn sentences(&self) -> (Vec<usize>, Vec<usize>) {
        let chars = self.chars();
        let n = chars.len();
        let (mut starts, mut ends) = (vec![0], Vec::new());
        let mut content = false;
        let mut i = 0;
        while i < n {
            let c = chars.get(i).copied().unwrap_or(' ');
            if is_paragraph_break(c) {
                if content {
                    ends.push(i);
                }
                starts.push(i + 1);
                content = false;
                i += 1;
            } else if is_sentence_terminal(c) {
                let mut j = i + 1;
                while j < n
                    && chars
                        .get(j)
                        .is_some_and(|&c| is_sentence_terminal(c) || is_sentence_closer(c))
                {
                    j += 1;
                }
                let followed_by_space = chars
                    .get(j)
                    .is_some_and(|&c| c.is_whitespace() && !is_paragraph_break(c));
                if j >= n || followed_by_space {
                    ends.push(j);
                    content = false;
                    let mut k = j;
                    while k < n
                        && chars
                            .get(k)
                            .is_some_and(|&c| c.is_whitespace() && !is_paragraph_break(c))
                    {
                        k += 1;
                    }
                    if k < n && !chars.get(k).is_some_and(|&c| is_paragraph_break(c)) {
                        starts.push(k);
                    }
                    i = k;
                } else {
                    content = true;
                    i = j;
                }
            } else {
                content |= !c.is_whitespace();
                i += 1;
            }
        }
        ends.push(n);
        (sorted_unique(starts), sorted_unique(ends))
    }

    // -- caret and selection -------------------------------------------------

    /// Code-point offset of an AccessKit text position inside this text.
    pub(crate) fn offset_of(&self, position: &TextPosition) -> Option<usize> {
        let run = self.runs.iter().find(|run| run.node == position.node)?;
        Some(
            run.clusters
                .get(position.character_index)
                .copied()
                .unwrap_or(run.end),
        )
    }

    /// The AccessKit position at a code-point offset: the character that
    /// contains it, at a run boundary the start of the following run, at
    /// the very end the end of the last run.
    pub(crate) fn position_at(&self, offset: usize) -> Option<TextPosition> {
        let run = self
            .runs
            .iter()
            .find(|run| run.start <= offset && offset < run.end)
            .or_else(|| self.runs.iter().rev().find(|run| run.end <= offset))?;
        let index = run
            .clusters
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        let character_index = if offset >= run.end {
            run.clusters.len()
        } else {
            index
        };
        Some(TextPosition {
            node: run.node,
            character_index,
        })
    }

    pub(crate) fn raw_selection(&self) -> Option<(usize, usize)> {
        let selection = self.selection_source()?.data().text_selection()?;
        Some((
            self.offset_of(&selection.anchor)?,
            self.offset_of(&selection.focus)?,
        ))
    }

    /// The node whose text selection this text shows: itself, or in the
    /// per-block layout the document (or label) that holds the selection.
    pub(crate) fn selection_source(&self) -> Option<NodeRef<'a>> {
        match self.holder {
            Some(holder) => self
                .root
                .tree_state
                .node_by_tree_local_id(holder, TreeId::ROOT),
            None => Some(self.root),
        }
    }

    /// The caret (the selection's focus), if the node has one. A block of
    /// the per-block layout has it when the focus is in one of its runs,
    /// wherever the anchor is.
    pub(crate) fn caret(&self) -> Option<usize> {
        if self.per_block {
            let selection = self.selection_source()?.data().text_selection()?;
            return self.offset_of(&selection.focus);
        }
        self.raw_selection().map(|(_, focus)| focus)
    }

    /// The selected range `(start, end)`, when it is not empty. A block of
    /// the per-block layout shows the part of the document's selection that
    /// lies in it (`block_selection`).
    pub(crate) fn selection(&self) -> Option<(usize, usize)> {
        if self.per_block {
            return self.block_selection();
        }
        let (anchor, focus) = self.raw_selection()?;
        (anchor != focus).then(|| (anchor.min(focus), anchor.max(focus)))
    }

    /// A selection from code-point offsets given by a client; `None` when
    /// either is out of range or the node has no runs.
    pub(crate) fn selection_for(&self, start: i32, end: i32) -> Option<TextSelection> {
        self.selection_between(self.offset(start)?, self.offset(end)?)
    }

    pub(crate) fn selection_between(&self, anchor: usize, focus: usize) -> Option<TextSelection> {
        Some(TextSelection {
            anchor: self.position_at(anchor)?,
            focus: self.position_at(focus)?,
        })
    }

    // -- attributes ------------------------------------------------------------

    /// `(attributes, start, end)` of the attribute run containing `offset`
    /// (`-1` = the caret). Without defaults, attributes equal to the
    /// node's defaults are left out, as atk's run attributes are.
    pub(crate) fn attribute_run(
        &self,
        offset: i32,
        include_defaults: bool,
    ) -> (BTreeMap<String, String>, i32, i32) {
        let offset = if offset == -1 {
            Some(self.caret().unwrap_or(0))
        } else {
            self.offset(offset)
        };
        let Some(offset) = offset else {
            return (BTreeMap::new(), -1, -1);
        };
        let defaults = attributes_of(&self.root, &self.root);
        let spans = self.attribute_spans();
        let span = spans
            .iter()
            .find(|(start, end, _)| *start <= offset && offset < *end)
            .or_else(|| spans.last().filter(|(_, end, _)| *end <= offset));
        let Some((start, end, attributes)) = span else {
            let all = if include_defaults {
                defaults
            } else {
                BTreeMap::new()
            };
            return (all, 0, to_i32(self.len()));
        };
        let mut result = if include_defaults {
            defaults.clone()
        } else {
            BTreeMap::new()
        };
        for (name, value) in attributes {
            if include_defaults || defaults.get(name) != Some(value) {
                result.insert(name.clone(), value.clone());
            }
        }
        (result, to_i32(*start), to_i32(*end))
    }

    /// Maximal spans of equal attributes: runs merged with their
    /// neighbours when nothing differs.
    pub(crate) fn attribute_spans(&self) -> Vec<(usize, usize, BTreeMap<String, String>)> {
        let mut spans: Vec<(usize, usize, BTreeMap<String, String>)> = Vec::new();
        for run in self.runs.iter().filter(|run| run.end > run.start) {
            let Some(node) = self.run_node(run) else {
                continue;
            };
            let attributes = attributes_of(&node, &self.root);
            match spans.last_mut() {
                Some(last) if last.2 == attributes && last.1 == run.start => last.1 = run.end,
                _ => spans.push((run.start, run.end, attributes)),
            }
        }
        spans
    }

    // -- geometry ------------------------------------------------------------------

    /// Surface-relative bounds of `[start, end)`; `None` without per-character
    /// geometry or for a bad range.
    pub(crate) fn bounds(&self, start: usize, end: usize) -> Option<Rect> {
        if self.per_block {
            return self.block_bounds(start, end);
        }
        if self.runs.is_empty() || start > end || end > self.len() {
            return None;
        }
        let root = self.root;
        let first = root.text_position_from_global_usv_index(start)?;
        let mut range = first.to_degenerate_range();
        if end > start {
            let last = root
                .text_position_from_global_usv_index(end)?
                .biased_to_end();
            range.set_end(last);
        }
        range.bounding_boxes().into_iter().reduce(|a, b| a.union(b))
    }

    /// Extents of the character at `offset`; at the end of the text, the
    /// zero-width caret box there.
    pub(crate) fn character_rect(&self, offset: i32) -> Option<Rect> {
        let offset = self.offset(offset)?;
        self.bounds(offset, (offset + 1).min(self.len()))
    }

    /// atk's `get_range_extents`: nothing for a negative start or an empty
    /// or reversed range; the end is clamped to the text.
    pub(crate) fn range_rect(&self, start: i32, end: i32) -> Option<Rect> {
        let start = usize::try_from(start).ok().filter(|&s| s < self.len())?;
        let end = usize::try_from(end)
            .ok()
            .filter(|&e| e > start)?
            .min(self.len());
        self.bounds(start, end)
    }

    /// The offset of the character under a surface-relative point; `None`
    /// when the point is outside the node or there is no geometry.
    pub(crate) fn offset_at_point(&self, (x, y): (f64, f64)) -> Option<usize> {
        if self.per_block {
            return self.block_offset_at_point(Point::new(x, y));
        }
        // Without per-character geometry the consumer would answer the end
        // of the text for any point; atk's answer for "unknown" is -1.
        let has_geometry = self
            .runs
            .iter()
            .filter_map(|run| self.run_node(run))
            .any(|node| {
                node.data().character_positions().is_some() && node.data().bounds().is_some()
            });
        if !has_geometry {
            return None;
        }
        let point = Point::new(x, y);
        if !self
            .root
            .bounding_box()
            .is_some_and(|bounds| bounds.contains(point))
        {
            return None;
        }
        let local = self.root.transform().inverse() * point;
        let position = self.root.text_position_at_point(local);
        let offset = self.offset_of(&position.to_raw())?;
        Some(offset)
    }

    /// The node to scroll for `ScrollSubstring*`: the run holding the start
    /// (the end for bottom/right hints), or the node itself without runs.
    pub(crate) fn scroll_target(
        &self,
        start: i32,
        end: i32,
        hint: Option<ScrollHint>,
    ) -> Option<NodeRef<'a>> {
        let (start, end) = (self.offset(start)?, self.offset(end)?);
        if self.runs.is_empty() {
            return Some(self.root);
        }
        let toward_end = matches!(
            hint,
            Some(ScrollHint::BottomRight | ScrollHint::BottomEdge | ScrollHint::RightEdge)
        );
        let offset = if toward_end {
            end.max(start).saturating_sub(1)
        } else {
            start.min(end)
        };
        let position = self.position_at(offset)?;
        self.runs
            .iter()
            .find(|run| run.node == position.node)
            .and_then(|run| self.run_node(run))
    }
}

// ---------------------------------------------------------------------------
