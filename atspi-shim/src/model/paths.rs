//! Object paths and `(so)` references.
//!
//! Every replica node is addressed as `/org/a11y/atspi/accessible/<surface>_<node>`
//! (both decimal), and a link node's hyperlink object (what `Hypertext.GetLink`
//! hands out) as `/org/a11y/atspi/accessible/<surface>_<node>_hyperlink`: libatspi
//! caches accessibles and hyperlinks in one table keyed by path, so the two
//! must never share one. Nothing is registered per node: the path is parsed on
//! every call and looked up in the replica, so a removed node simply stops
//! resolving.

use accesskit::NodeId;
use accesskit_consumer::NodeRef;
use newton_push_protocol::SurfaceId;
use zvariant::{ObjectPath, OwnedObjectPath};

/// The application root (Accessible + Application).
pub const ROOT_PATH: &str = "/org/a11y/atspi/accessible/root";
/// The Cache object.
pub const CACHE_PATH: &str = "/org/a11y/atspi/cache";
/// The null object of null references.
pub const NULL_PATH: &str = "/org/a11y/atspi/null";
/// Prefix of every node path.
pub const NODE_PREFIX: &str = "/org/a11y/atspi/accessible/";
/// Suffix that turns a link node's path into its hyperlink object's path.
pub const HYPERLINK_SUFFIX: &str = "_hyperlink";

/// An AT-SPI object reference `(so)`: bus name and object path.
pub type ObjectRef = (String, OwnedObjectPath);

/// What a path names in this application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectAddress {
    Root,
    Cache,
    Node {
        surface: SurfaceId,
        node: NodeId,
    },
    /// The hyperlink object of the link node `node` (not an accessible).
    Hyperlink {
        surface: SurfaceId,
        node: NodeId,
    },
}

/// Parses a path of this application's object space; `None` for anything
/// that is not exactly one of our canonical paths (no leading zeros, no
/// signs), so each object has one path only.
pub fn parse(path: &str) -> Option<ObjectAddress> {
    match path {
        ROOT_PATH => return Some(ObjectAddress::Root),
        CACHE_PATH => return Some(ObjectAddress::Cache),
        _ => {}
    }
    let rest = path.strip_prefix(NODE_PREFIX)?;
    if let Some(link) = rest.strip_suffix(HYPERLINK_SUFFIX) {
        let (surface, node) = surface_and_node(link)?;
        return Some(ObjectAddress::Hyperlink { surface, node });
    }
    let (surface, node) = surface_and_node(rest)?;
    Some(ObjectAddress::Node { surface, node })
}

/// `<surface>_<node>`, both canonical decimals.
fn surface_and_node(text: &str) -> Option<(SurfaceId, NodeId)> {
    let (surface, node) = text.split_once('_')?;
    let surface = canonical_decimal(surface)?;
    let node = canonical_decimal(node)?;
    Some((SurfaceId(u32::try_from(surface).ok()?), NodeId(node)))
}

fn canonical_decimal(text: &str) -> Option<u64> {
    let valid = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if valid {
        text.parse().ok()
    } else {
        None
    }
}

/// The path of one node.
pub fn node_path(surface: SurfaceId, node: NodeId) -> OwnedObjectPath {
    let text = format!("{NODE_PREFIX}{}_{}", surface.0, node.0);
    // Only digits and '_' after a valid prefix: always a valid object path.
    OwnedObjectPath::from(ObjectPath::from_string_unchecked(text))
}

/// The path of the hyperlink object of link node `node`.
pub fn hyperlink_path(surface: SurfaceId, node: NodeId) -> OwnedObjectPath {
    let text = format!("{NODE_PREFIX}{}_{}{HYPERLINK_SUFFIX}", surface.0, node.0);
    // Digits, '_' and letters after a valid prefix: always a valid object path.
    OwnedObjectPath::from(ObjectPath::from_string_unchecked(text))
}

/// A path constant as an owned path.
pub fn static_path(path: &'static str) -> OwnedObjectPath {
    OwnedObjectPath::from(ObjectPath::from_static_str_unchecked(path))
}

/// The null reference `("", "/org/a11y/atspi/null")`.
pub fn null_ref() -> ObjectRef {
    (String::new(), static_path(NULL_PATH))
}

/// A reference to one of this application's objects.
pub fn local_ref(unique_name: &str, path: OwnedObjectPath) -> ObjectRef {
    (unique_name.to_owned(), path)
}

/// A reference to the app root.
pub fn root_ref(unique_name: &str) -> ObjectRef {
    local_ref(unique_name, static_path(ROOT_PATH))
}

/// A reference to a node.
pub fn node_ref(unique_name: &str, surface: SurfaceId, node: NodeId) -> ObjectRef {
    local_ref(unique_name, node_path(surface, node))
}

/// A reference to the hyperlink object of a link node.
pub fn hyperlink_ref(unique_name: &str, surface: SurfaceId, node: NodeId) -> ObjectRef {
    local_ref(unique_name, hyperlink_path(surface, node))
}

/// The desktop reference from `Socket.Embed`, or null before registration
/// (or if the registry sent an unusable path).
pub fn desktop_ref(desktop: Option<(&str, &str)>) -> ObjectRef {
    desktop
        .and_then(|(name, path)| {
            ObjectPath::try_from(path)
                .ok()
                .map(|p| (name.to_owned(), OwnedObjectPath::from(p.into_owned())))
        })
        .unwrap_or_else(null_ref)
}

/// The producer's id of a node. The replica holds only the root tree (the
/// validator rejects grafted subtrees), so the local id is unique per surface.
pub fn local_id(node: &NodeRef) -> NodeId {
    node.locate().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_paths_round_trip() {
        let path = node_path(SurfaceId(3), NodeId(42));
        assert_eq!(path.as_str(), "/org/a11y/atspi/accessible/3_42");
        assert_eq!(
            parse(path.as_str()),
            Some(ObjectAddress::Node {
                surface: SurfaceId(3),
                node: NodeId(42)
            })
        );
        let max = node_path(SurfaceId(u32::MAX), NodeId(u64::MAX));
        assert_eq!(
            parse(max.as_str()),
            Some(ObjectAddress::Node {
                surface: SurfaceId(u32::MAX),
                node: NodeId(u64::MAX)
            })
        );
    }

    #[test]
    fn hyperlink_paths_round_trip_apart_from_node_paths() {
        let path = hyperlink_path(SurfaceId(3), NodeId(42));
        assert_eq!(path.as_str(), "/org/a11y/atspi/accessible/3_42_hyperlink");
        assert_eq!(
            parse(path.as_str()),
            Some(ObjectAddress::Hyperlink {
                surface: SurfaceId(3),
                node: NodeId(42)
            })
        );
        assert_ne!(path, node_path(SurfaceId(3), NodeId(42)));
        let max = hyperlink_path(SurfaceId(u32::MAX), NodeId(u64::MAX));
        assert_eq!(
            parse(max.as_str()),
            Some(ObjectAddress::Hyperlink {
                surface: SurfaceId(u32::MAX),
                node: NodeId(u64::MAX)
            })
        );
    }

    #[test]
    fn fixed_paths_parse() {
        assert_eq!(parse(ROOT_PATH), Some(ObjectAddress::Root));
        assert_eq!(parse(CACHE_PATH), Some(ObjectAddress::Cache));
    }

    #[test]
    fn non_canonical_paths_are_rejected() {
        for bad in [
            "/",
            "/org/a11y/atspi/accessible/",
            "/org/a11y/atspi/accessible/1",
            "/org/a11y/atspi/accessible/1_",
            "/org/a11y/atspi/accessible/_1",
            "/org/a11y/atspi/accessible/01_1",
            "/org/a11y/atspi/accessible/1_+1",
            "/org/a11y/atspi/accessible/1_2_3",
            "/org/a11y/atspi/accessible/4294967296_1",
            "/org/a11y/atspi/accessible/1_18446744073709551616",
            "/org/a11y/atspi/accessible/1/2",
            "/org/a11y/atspi/accessible/_hyperlink",
            "/org/a11y/atspi/accessible/1_hyperlink",
            "/org/a11y/atspi/accessible/1__hyperlink",
            "/org/a11y/atspi/accessible/01_1_hyperlink",
            "/org/a11y/atspi/accessible/1_01_hyperlink",
            "/org/a11y/atspi/accessible/1_2_hyperlink_hyperlink",
            "/org/a11y/atspi/accessible/1_2_Hyperlink",
            "/org/a11y/atspi/accessible/1_2_hyperlinks",
            NULL_PATH,
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn desktop_ref_falls_back_to_null() {
        assert_eq!(desktop_ref(None), null_ref());
        assert_eq!(desktop_ref(Some((":1.0", "not a path"))), null_ref());
        assert_eq!(desktop_ref(Some((":1.0", ROOT_PATH))).1.as_str(), ROOT_PATH);
    }
}
