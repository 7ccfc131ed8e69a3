//! The trees the suite attaches: list and document streams of chosen sizes (from
//! newton-fixtures), a one-node tree (the legacy memory baseline), and one-node relabels.

use std::path::{Path, PathBuf};

use accesskit::{Node, NodeId, Role, TreeId, TreeInfo, TreeUpdate};
use newton_push_protocol::{AppInfo, Encoding, Hello, RecordedLine, SenderMessage, SurfaceId};

use crate::{fail, Result};

/// First node id of list items in `newton_fixtures::list_stream`.
const LIST_ITEM_BASE: u64 = 1_000;

/// A stream plus what the suite needs to know about it.
pub struct Stream {
    pub name: String,
    pub lines: Vec<RecordedLine>,
    /// Nodes in the tree after the last frame (as the generator documents it).
    pub nodes: usize,
}

impl Stream {
    /// The same stream announced under another application name, so each attached copy can be
    /// found on the desktop by name.
    pub fn renamed(&self, app_name: &str) -> Stream {
        let mut lines = self.lines.clone();
        if let Some(hello) = lines.first_mut().and_then(|l| l.hello.as_mut()) {
            hello.app.name = app_name.to_owned();
        }
        Stream {
            name: app_name.to_owned(),
            lines,
            nodes: self.nodes,
        }
    }

    /// The same stream announced as made by `toolkit` (the hello's `toolkit_name`): a web
    /// engine's name gives its documents the bridge's per-block text layout.
    pub fn with_toolkit(mut self, toolkit: &str) -> Stream {
        if let Some(hello) = self.lines.first_mut().and_then(|l| l.hello.as_mut()) {
            hello.app.toolkit_name = Some(toolkit.to_owned());
        }
        self
    }

    /// The stream up to and including its first commit: the full tree, nothing after it, so
    /// a reader of the stream knows the tree every copy of it shows.
    pub fn first_frame(mut self) -> Stream {
        let first_commit = self
            .lines
            .iter()
            .position(|l| matches!(l.message, Some(SenderMessage::Commit { .. })));
        if let Some(last) = first_commit {
            self.lines.truncate(last + 1);
        }
        self
    }

    /// The stream's first update (the full tree).
    pub fn first_tree(&self) -> Option<&TreeUpdate> {
        self.updates().first().copied()
    }

    pub fn hello(&self) -> Result<Hello> {
        self.lines
            .first()
            .and_then(|l| l.hello.clone())
            .ok_or_else(|| fail(format!("stream {} has no hello", self.name)))
    }

    /// Writes the stream as JSON lines (for child processes: replay, legacy reference).
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        let path = dir.join(format!("{}.jsonl", self.name.replace(' ', "-")));
        newton_fixtures::write_jsonl(&path, &self.lines)
            .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }

    /// The focus the last update left (an incremental update must restate it).
    pub fn last_focus(&self) -> NodeId {
        self.updates().last().map_or(NodeId(1), |u| u.focus)
    }

    /// A node as the stream's first (full) update defines it.
    pub fn initial_node(&self, id: NodeId) -> Option<Node> {
        self.updates()
            .first()
            .and_then(|u| u.nodes.iter().find(|(n, _)| *n == id))
            .map(|(_, node)| node.clone())
    }

    fn updates(&self) -> Vec<&TreeUpdate> {
        self.lines
            .iter()
            .filter_map(|l| match &l.message {
                Some(SenderMessage::Update { update, .. }) => Some(update),
                _ => None,
            })
            .collect()
    }
}

/// A list of `items` items: window → list → items (2 + items nodes).
pub fn list(items: usize) -> Stream {
    Stream {
        name: format!("bench-list-{items}"),
        lines: newton_fixtures::list_stream(items),
        nodes: items + 2,
    }
}

/// A document of `blocks` blocks of 25 nodes (2 + 25 × blocks nodes).
pub fn doc(blocks: usize) -> Stream {
    Stream {
        name: format!("bench-doc-{}", blocks * 25 + 2),
        lines: newton_fixtures::doc_stream(blocks),
        nodes: blocks * 25 + 2,
    }
}

/// The id of list item `index` (stable unless the stream replaced it; items 100–109 are).
pub fn list_item(index: usize) -> NodeId {
    NodeId(LIST_ITEM_BASE + index as u64)
}

/// A tree of one window node: what a process costs before it has a tree worth the name.
pub fn one_node() -> Stream {
    let hello = Hello {
        protocol: newton_push_protocol::PROTOCOL_VERSION,
        encoding: Encoding::Json,
        app: AppInfo {
            app_id: "org.newton.bench.one".into(),
            name: "bench one node".into(),
            ..Default::default()
        },
        accesskit_version: None,
    };
    let surface = SurfaceId(1);
    let mut window = Node::new(Role::Window);
    window.set_label("One node");
    let update = TreeUpdate {
        nodes: vec![(NodeId(1), window)],
        tree: Some(TreeInfo {
            root: NodeId(1),
            toolkit_name: None,
            toolkit_version: None,
        }),
        tree_id: TreeId::ROOT,
        focus: NodeId(1),
    };
    let message = |message| RecordedLine {
        at_ms: 0,
        hello: None,
        message: Some(message),
    };
    Stream {
        name: "bench-one-node".into(),
        lines: vec![
            RecordedLine {
                at_ms: 0,
                hello: Some(hello),
                message: None,
            },
            message(SenderMessage::CreateSurface {
                surface,
                title: Some("One node".into()),
            }),
            message(SenderMessage::Update { surface, update }),
            message(SenderMessage::Commit { surface, serial: 1 }),
        ],
        nodes: 1,
    }
}

/// An update relabelling one node (all its other properties kept).
pub fn relabel(id: NodeId, node: &Node, label: &str, focus: NodeId) -> TreeUpdate {
    let mut node = node.clone();
    node.set_label(label);
    TreeUpdate {
        nodes: vec![(id, node)],
        tree: None,
        tree_id: TreeId::ROOT,
        focus,
    }
}
