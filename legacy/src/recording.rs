//! A recorded stream cut into steps: one step per commit, carrying the
//! compositor facts (focus, geometry, surfaces created or destroyed) that
//! came before it, in order — exactly what the bridge has seen once the
//! replay has sent everything up to and including that commit.

use std::collections::BTreeMap;
use std::path::Path;

use accesskit::TreeUpdate;
use newton_push_protocol::{Geometry, Hello, RecordedLine, SenderMessage, SurfaceId};

/// One thing that happens to the exposed application, in recording order.
#[derive(Debug, Clone)]
pub enum Event {
    /// A surface appears (its adapter is created at its first commit).
    CreateSurface(SurfaceId),
    /// The compositor says which surface has keyboard focus.
    Focus(Option<SurfaceId>),
    /// The compositor says where a surface is.
    Geometry(SurfaceId, Geometry),
    /// The surface is gone.
    DestroySurface(SurfaceId),
    /// Every update buffered for the surface since its last commit, applied
    /// as one frame.
    Commit {
        surface: SurfaceId,
        serial: u64,
        updates: Vec<TreeUpdate>,
    },
}

/// The events up to and including one commit (the last step also carries
/// whatever follows the last commit).
#[derive(Debug, Clone)]
pub struct Step {
    pub serial: u64,
    pub events: Vec<Event>,
}

/// A recording ready to play.
#[derive(Debug, Clone)]
pub struct Playbook {
    pub hello: Hello,
    pub steps: Vec<Step>,
}

/// Loads `path` and cuts it into steps.
pub fn load(path: &Path) -> Result<Playbook, String> {
    let lines = newton_producer::load_recording(path)
        .map_err(|e| format!("cannot read the recording {}: {e}", path.display()))?;
    playbook(lines).map_err(|e| format!("{}: {e}", path.display()))
}

/// Cuts recorded lines into steps. Fails when the first line is no hello or
/// the recording has no commit at all.
pub fn playbook(lines: Vec<RecordedLine>) -> Result<Playbook, String> {
    let mut lines = lines.into_iter();
    let hello = lines
        .next()
        .and_then(|line| line.hello)
        .ok_or("the first line is not a hello; record the stream with its hello first")?;
    let mut buffered: BTreeMap<SurfaceId, Vec<TreeUpdate>> = BTreeMap::new();
    let mut steps = Vec::new();
    let mut pending = Vec::new();
    for message in lines.filter_map(|line| line.message) {
        match message {
            SenderMessage::CreateSurface { surface, .. } => {
                pending.push(Event::CreateSurface(surface))
            }
            SenderMessage::Update { surface, update } => {
                buffered.entry(surface).or_default().push(update)
            }
            SenderMessage::Commit { surface, serial } => {
                let updates = buffered.remove(&surface).unwrap_or_default();
                pending.push(Event::Commit {
                    surface,
                    serial,
                    updates,
                });
                steps.push(Step {
                    serial,
                    events: std::mem::take(&mut pending),
                });
            }
            SenderMessage::Focus { surface } => pending.push(Event::Focus(surface)),
            SenderMessage::Geometry { surface, geometry } => {
                pending.push(Event::Geometry(surface, geometry))
            }
            SenderMessage::DestroySurface { surface } => {
                pending.push(Event::DestroySurface(surface))
            }
            // Keys go to the registry, not the tree: nothing to play back.
            SenderMessage::Goodbye | SenderMessage::Sync { .. } | SenderMessage::Key { .. } => {}
        }
    }
    let Some(last) = steps.last_mut() else {
        return Err("the recording has no commit, so there is no tree to expose".into());
    };
    last.events.append(&mut pending);
    Ok(Playbook { hello, steps })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(message: SenderMessage) -> RecordedLine {
        RecordedLine {
            at_ms: 0,
            hello: None,
            message: Some(message),
        }
    }

    fn hello() -> RecordedLine {
        RecordedLine {
            at_ms: 0,
            hello: Some(Hello {
                protocol: 1,
                encoding: Default::default(),
                app: Default::default(),
                accesskit_version: None,
            }),
            message: None,
        }
    }

    #[test]
    fn commits_become_steps_with_the_facts_before_them() {
        let s = SurfaceId(1);
        let lines = vec![
            hello(),
            line(SenderMessage::CreateSurface {
                surface: s,
                title: None,
            }),
            line(SenderMessage::Focus { surface: Some(s) }),
            line(SenderMessage::Commit {
                surface: s,
                serial: 1,
            }),
            line(SenderMessage::Commit {
                surface: s,
                serial: 2,
            }),
            line(SenderMessage::Focus { surface: None }),
            line(SenderMessage::Goodbye),
        ];
        let book = playbook(lines).expect("valid");
        let serials: Vec<_> = book.steps.iter().map(|s| s.serial).collect();
        assert_eq!(serials, [1, 2]);
        assert_eq!(book.steps[0].events.len(), 3);
        // The trailing focus fact rides with the last commit.
        assert!(matches!(book.steps[1].events[1], Event::Focus(None)));
    }

    #[test]
    fn a_recording_without_hello_or_commit_is_refused() {
        assert!(playbook(vec![]).unwrap_err().contains("hello"));
        assert!(playbook(vec![hello()]).unwrap_err().contains("no commit"));
    }
}
