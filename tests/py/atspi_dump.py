#!/usr/bin/python3
"""Dump AT-SPI applications as seen by pyatspi/libatspi, deterministically, for golden files.

Usage (with AT_SPI_BUS_ADDRESS and DISPLAY set as in the test session):
    atspi_dump.py [--app NAME] [--format json|text] [--max-depth N] [--no-extents]
    atspi_dump.py --wait-for NAME [--timeout S] [--app NAME ...]

Each object is reported with its role name, name, description, sorted state nicks, interfaces,
text (full text, caret offset, character count), actions (name, description, key binding),
relations (type -> target paths), extents (screen and window), value (min/max/current/step),
child count, index in parent and attributes. Objects are referred to by a path of
"role:name" segments from the application ("#k" numbers same-looking siblings), never by bus
names or object paths, so the output is stable across runs. Errors while reading one part of an
object are recorded in that object's "errors" instead of aborting the dump.

Exit status: 0 success, 2 application not found / not appearing in time, 1 other failure.
"""
import argparse
import json
import re
import sys
import time
import warnings

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

import pyatspi  # noqa: E402,F401  (initialises libatspi the way Orca does)

# libatspi 2.46 marks get_action_name/description deprecated but has no replacement in gi.
warnings.filterwarnings("ignore", category=DeprecationWarning)

MAX_NODES = 20000
UNIQUE_NAME = re.compile(r":\d+\.\d+")


def clean_error(exc):
    """An error message without per-run bus names."""
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return UNIQUE_NAME.sub(":N.N", text)


def segment(acc):
    """"role:name" of an object; unreadable parts become "<error: ...>" instead of raising."""
    parts = []
    for getter in (acc.get_role_name, acc.get_name):
        try:
            parts.append(getter() or "")
        except Exception as exc:  # noqa: BLE001 - a dump must never crash on one bad object
            parts.append("<error: %s>" % clean_error(exc))
    return "%s:%s" % (parts[0] or "?", parts[1])


def children_of(acc):
    """Children in index order; a child that cannot be fetched is None (reported as "<null>")."""
    out = []
    for i in range(max(acc.get_child_count(), 0)):
        try:
            out.append(acc.get_child_at_index(i))
        except Exception:  # noqa: BLE001
            out.append(None)
    return out


def segments_for(siblings):
    """Path segments for a list of siblings, numbering duplicates with #k (k from 1)."""
    seen = {}
    result = []
    for child in siblings:
        if child is None:
            result.append("<null>")
            continue
        seg = segment(child)
        seen[seg] = seen.get(seg, 0) + 1
        result.append(seg if seen[seg] == 1 else "%s#%d" % (seg, seen[seg]))
    return result


def path_of(acc):
    """Role:name path of an arbitrary object, from its application down."""
    try:
        return _path_of(acc)
    except Exception as exc:  # noqa: BLE001
        return "<error: %s>" % clean_error(exc)


def _path_of(acc):
    parts = []
    node = acc
    for _ in range(200):
        if node is None:
            break
        parent = node.get_parent()
        if parent is None or parent.get_role() == Atspi.Role.DESKTOP_FRAME:
            parts.append(segment(node))
            break
        siblings = children_of(parent)
        segs = segments_for(siblings)
        idx = node.get_index_in_parent()
        parts.append(segs[idx] if 0 <= idx < len(segs) else segment(node) + "#?")
        node = parent
    return "/" + "/".join(reversed(parts))


def guarded(errors, section, fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a dump must never crash on one bad object
        errors[section] = clean_error(exc)
        return None


def text_info(acc):
    count = Atspi.Text.get_character_count(acc)
    return {
        "text": Atspi.Text.get_text(acc, 0, -1),
        "caret_offset": Atspi.Text.get_caret_offset(acc),
        "character_count": count,
    }


def action_info(acc):
    return [
        {
            "name": Atspi.Action.get_action_name(acc, i),
            "description": Atspi.Action.get_action_description(acc, i),
            "key_binding": Atspi.Action.get_key_binding(acc, i),
        }
        for i in range(Atspi.Action.get_n_actions(acc))
    ]


def relation_info(acc):
    relations = {}
    for rel in acc.get_relation_set() or []:
        kind = rel.get_relation_type().value_nick
        targets = [path_of(rel.get_target(i)) for i in range(rel.get_n_targets())]
        relations.setdefault(kind, []).extend(targets)
    return {k: sorted(v) for k, v in sorted(relations.items())}


def rect(r):
    return [r.x, r.y, r.width, r.height]


def extents_info(acc):
    return {
        "screen": rect(Atspi.Component.get_extents(acc, Atspi.CoordType.SCREEN)),
        "window": rect(Atspi.Component.get_extents(acc, Atspi.CoordType.WINDOW)),
    }


def value_info(acc):
    return {
        "minimum": Atspi.Value.get_minimum_value(acc),
        "maximum": Atspi.Value.get_maximum_value(acc),
        "current": Atspi.Value.get_current_value(acc),
        "increment": Atspi.Value.get_minimum_increment(acc),
    }


def describe(acc, path, opts, errors):
    node = {"path": path}
    node["role"] = guarded(errors, "role", acc.get_role_name)
    node["name"] = guarded(errors, "name", acc.get_name)
    node["description"] = guarded(errors, "description", acc.get_description)
    node["states"] = guarded(
        errors, "states", lambda: sorted(s.value_nick for s in acc.get_state_set().get_states())
    )
    ifaces = guarded(errors, "interfaces", lambda: sorted(acc.get_interfaces())) or []
    node["interfaces"] = ifaces
    node["child_count"] = guarded(errors, "child_count", acc.get_child_count)
    node["index_in_parent"] = guarded(errors, "index_in_parent", acc.get_index_in_parent)
    node["attributes"] = guarded(errors, "attributes", lambda: dict(sorted((acc.get_attributes() or {}).items())))
    node["relations"] = guarded(errors, "relations", lambda: relation_info(acc))
    if "Text" in ifaces:
        node["text"] = guarded(errors, "text", lambda: text_info(acc))
    if "Action" in ifaces:
        node["actions"] = guarded(errors, "actions", lambda: action_info(acc))
    if "Component" in ifaces and not opts.no_extents:
        node["extents"] = guarded(errors, "extents", lambda: extents_info(acc))
    if "Value" in ifaces:
        node["value"] = guarded(errors, "value", lambda: value_info(acc))
    return node


class Walker:
    def __init__(self, opts):
        self.opts = opts
        self.nodes = 0
        self.visited = set()
        self.alive = []

    def identity(self, acc):
        # libatspi hands out one AtspiAccessible per (bus name, path), so one
        # Python wrapper while it lives; id() names it only while it lives,
        # hence the reference kept here (a freed wrapper's id is reused, which
        # looked like a cycle).
        self.alive.append(acc)
        return id(acc)

    def walk(self, acc, path, depth):
        errors = {}
        self.nodes += 1
        key = self.identity(acc)
        if key in self.visited:
            return {"path": path, "errors": {"cycle": "object already visited (cycle in the tree)"}}
        self.visited.add(key)
        node = describe(acc, path, self.opts, errors)
        children = guarded(errors, "children", lambda: children_of(acc)) or []
        if depth >= self.opts.max_depth and children:
            node["children_truncated"] = True
            children = []
        segs = segments_for(children)
        node["children"] = []
        for child, seg in zip(children, segs):
            if self.nodes >= MAX_NODES:
                errors["children"] = "stopped after %d objects" % MAX_NODES
                break
            if child is None:
                node["children"].append({"path": path + "/<null>", "errors": {"child": "null child"}})
                continue
            node["children"].append(self.walk(child, path + "/" + seg, depth + 1))
        if errors:
            node["errors"] = dict(sorted(errors.items()))
        return node


def applications():
    desktop = Atspi.get_desktop(0)
    apps = []
    for i in range(desktop.get_child_count()):
        try:
            app = desktop.get_child_at_index(i)
            if app is not None:
                apps.append(app)
        except Exception:  # noqa: BLE001
            continue
    return apps


def app_name(app):
    try:
        return app.get_name()
    except Exception:  # noqa: BLE001
        return None


def wait_for(name, timeout):
    deadline = time.monotonic() + timeout
    while True:
        names = [app_name(a) for a in applications()]
        if name in names:
            return True
        if time.monotonic() >= deadline:
            print("atspi_dump: application %r did not appear within %.1f s; apps: %r" % (name, timeout, names),
                  file=sys.stderr)
            return False
        time.sleep(0.1)


def format_text(node, indent=0, out=None):
    out = [] if out is None else out
    pad = "  " * indent
    out.append('%s[%s] "%s" states=%s ifaces=%s' % (
        pad, node.get("role"), node.get("name"), ",".join(node.get("states") or []),
        ",".join(node.get("interfaces") or [])))
    for key in ("description", "attributes", "relations", "text", "actions", "extents", "value", "errors"):
        if node.get(key):
            out.append("%s    %s: %s" % (pad, key, json.dumps(node[key], sort_keys=True)))
    for child in node.get("children", []):
        format_text(child, indent + 1, out)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--app", help="application name (default: all applications)")
    parser.add_argument("--format", choices=("json", "text"), default="json")
    parser.add_argument("--max-depth", type=int, default=64)
    parser.add_argument("--no-extents", action="store_true", help="omit Component extents")
    parser.add_argument("--wait-for", metavar="NAME", help="poll until an application NAME appears")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for --wait-for")
    opts = parser.parse_args()

    if opts.wait_for and not wait_for(opts.wait_for, opts.timeout):
        return 2
    if opts.wait_for and not opts.app:
        return 0

    apps = [a for a in applications() if opts.app is None or app_name(a) == opts.app]
    if opts.app is not None and not apps:
        names = [app_name(a) for a in applications()]
        print("atspi_dump: no application named %r; apps: %r" % (opts.app, names), file=sys.stderr)
        return 2
    walker = Walker(opts)
    dumps = [walker.walk(app, "/" + seg, 0) for app, seg in zip(apps, segments_for(apps))]
    dumps.sort(key=lambda d: (d.get("name") or "", d.get("path")))
    if opts.format == "json":
        json.dump(dumps, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for dump in dumps:
            sys.stdout.write("\n".join(format_text(dump)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
