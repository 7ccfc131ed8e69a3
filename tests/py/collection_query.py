#!/usr/bin/python3
"""Run Collection and Table/TableCell queries through pyatspi against one application, print JSON.

Usage (AT_SPI_BUS_ADDRESS set, as in the test session):
    collection_query.py --app NAME --kind doc|grid [--timeout S]

--kind doc: the application's document (first DOCUMENT_FRAME/DOCUMENT_WEB below its first window)
is the collection; runs Collection.getMatches / getMatchesFrom / getMatchesTo with several match
rules, and Table/TableCell queries on its table. --kind grid: the first TABLE below the first
window; runs the Table/TableCell queries and a few Collection queries on it.

Every query is one JSON entry {"query": ..., "result": ...}; objects are written as their path of
"role:name" segments from the application (index "[k]" among same-looking siblings), so the
output is stable across runs. A query that raises is recorded as {"error": message} instead of
aborting: a golden file then shows exactly which call failed.
Exit status: 0 success, 2 application or collection object not found in time, 1 other failure.
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

import pyatspi  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)
UNIQUE_NAME = re.compile(r":\d+\.\d+")


def clean_error(exc):
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return UNIQUE_NAME.sub(":N.N", text)


def segment(acc):
    return "%s:%s" % (acc.get_role_name(), acc.get_name())


def path_of(acc):
    """'role:name/role:name[k]/…' from the application down to acc (None for a null object)."""
    if acc is None:
        return None
    parts = []
    node = acc
    for _ in range(64):
        parent = node.get_parent()
        if parent is None or node.get_role() == Atspi.Role.APPLICATION:
            parts.append(segment(node))
            break
        here = segment(node)
        same = [c for c in (parent.get_child_at_index(i) for i in range(parent.get_child_count()))
                if c is not None and segment(c) == here]
        if len(same) > 1:
            index = next((k for k, c in enumerate(same) if c == node), -1)
            here = "%s[%d]" % (here, index)
        parts.append(here)
        node = parent
    return "/".join(reversed(parts))


def paths(objects):
    return [path_of(o) for o in objects]


def find_app(name, timeout):
    deadline = time.monotonic() + timeout
    while True:
        desktop = Atspi.get_desktop(0)
        for i in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(i)
            try:
                if app is not None and app.get_name() == name:
                    return app
            except Exception:  # noqa: BLE001 - an app may vanish while we look
                pass
        if time.monotonic() > deadline:
            return None
        time.sleep(0.2)


def first_below(acc, roles, depth=0):
    """First object (pre-order, acc excluded) whose role is in roles."""
    if depth > 32:
        return None
    for i in range(acc.get_child_count()):
        child = acc.get_child_at_index(i)
        if child is None:
            continue
        if child.get_role() in roles:
            return child
        found = first_below(child, roles, depth + 1)
        if found is not None:
            return found
    return None


def wait_below(app, roles, timeout):
    """first_below, retried until timeout: right after the app appears, libatspi may still be
    filling its cache from the bridge's children-changed and Cache signals."""
    start = time.monotonic()
    while True:
        found = first_below(app, roles)
        waited = time.monotonic() - start
        if found is not None or waited > timeout:
            # Goes to the test's log: how long the object took to become reachable.
            print("wait_below: %s after %.1f s" % ("found" if found else "not found", waited),
                  file=sys.stderr)
            return found
        time.sleep(0.2)


def outline(acc, depth=0):
    """'role:name' lines of acc's subtree (for error messages)."""
    lines = ["  " * depth + segment(acc)]
    if depth < 4:
        for i in range(acc.get_child_count()):
            child = acc.get_child_at_index(i)
            lines.extend(outline(child, depth + 1) if child is not None else ["<null>"])
    return lines


def find_by_name(acc, role, name, depth=0):
    if depth > 32:
        return None
    for i in range(acc.get_child_count()):
        child = acc.get_child_at_index(i)
        if child is None:
            continue
        if child.get_role() == role and child.get_name() == name:
            return child
        found = find_by_name(child, role, name, depth + 1)
        if found is not None:
            return found
    return None


class Recorder:
    """Runs queries, keeping each answer (or its error) in order."""

    def __init__(self):
        self.entries = []

    def run(self, query, fn):
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - record the failure, keep going
            result = {"error": clean_error(exc)}
        self.entries.append({"query": query, "result": result})


C = pyatspi.Collection


def rule(col, states=(), state_match=C.MATCH_ALL, attributes=(), attribute_match=C.MATCH_ALL,
         roles=(), role_match=C.MATCH_ANY, interfaces=(), interface_match=C.MATCH_ALL,
         invert=False):
    """A match rule built the way Orca builds them (pyatspi createMatchRule)."""
    state_set = pyatspi.StateSet()
    for state in states:
        state_set.add(state)
    return col.createMatchRule(state_set.raw(), state_match, list(attributes), attribute_match,
                               list(roles), role_match, list(interfaces), interface_match, invert)


def collection_queries(rec, app, root):
    """Collection queries with root (the document) as the collection."""
    col = root.queryCollection()
    canonical, reverse = C.SORT_ORDER_CANONICAL, C.SORT_ORDER_REVERSE_CANONICAL
    headings = rule(col, roles=[pyatspi.ROLE_HEADING])
    links = rule(col, roles=[pyatspi.ROLE_LINK])

    def matches(r, sort=canonical, count=0, traverse=True):
        return lambda: paths(col.getMatches(r, sort, count, traverse))

    rec.run("getMatches role HEADING", matches(headings))
    rec.run("getMatches role LINK", matches(links))
    rec.run("getMatches attribute level:2", matches(rule(col, attributes=["level:2"])))
    rec.run("getMatches attribute level:1 or level:3 (alternatives)",
            matches(rule(col, attributes=["level:1", "level:3"])))
    rec.run("getMatches states FOCUSABLE, ALL",
            matches(rule(col, states=[pyatspi.STATE_FOCUSABLE], state_match=C.MATCH_ALL)))
    rec.run("getMatches states FOCUSABLE+CHECKABLE, ALL",
            matches(rule(col, states=[pyatspi.STATE_FOCUSABLE, pyatspi.STATE_CHECKABLE],
                         state_match=C.MATCH_ALL)))
    rec.run("getMatches roles NONE of PARAGRAPH, LIST_ITEM, TABLE_ROW, TABLE_CELL, "
            "COLUMN_HEADER, HEADING",
            matches(rule(col, roles=[pyatspi.ROLE_PARAGRAPH, pyatspi.ROLE_LIST_ITEM,
                                     pyatspi.ROLE_TABLE_ROW, pyatspi.ROLE_TABLE_CELL,
                                     pyatspi.ROLE_COLUMN_HEADER, pyatspi.ROLE_HEADING],
                         role_match=C.MATCH_NONE)))
    rec.run("getMatches interface Text", matches(rule(col, interfaces=["Text"])))
    rec.run("getMatches interface action(click), role NONE of LINK",
            matches(rule(col, interfaces=["action(click)"], roles=[pyatspi.ROLE_LINK],
                         role_match=C.MATCH_NONE)))
    rec.run("getMatches role HEADING, invert (everything but headings), count 4",
            matches(rule(col, roles=[pyatspi.ROLE_HEADING], invert=True), count=4))
    rec.run("getMatches role HEADING, count 2", matches(headings, count=2))
    rec.run("getMatches role HEADING, count 1", matches(headings, count=1))
    rec.run("getMatches role HEADING, REVERSE_CANONICAL", matches(headings, sort=reverse))
    rec.run("getMatches role HEADING, REVERSE_CANONICAL, count 2",
            matches(headings, sort=reverse, count=2))
    rec.run("getMatches role LINK, traverse false (children only)",
            matches(links, traverse=False))
    rec.run("getMatches role HEADING, traverse false (children only)",
            matches(headings, traverse=False))

    lists_heading = find_by_name(root, pyatspi.ROLE_HEADING, "Lists")
    sign_up_heading = find_by_name(root, pyatspi.ROLE_HEADING, "Sign up")
    first_link = find_by_name(root, pyatspi.ROLE_LINK, "AccessKit")
    form = find_by_name(root, pyatspi.ROLE_FORM, "Sign up")
    tree_types = (("RESTRICT_CHILDREN", C.TREE_RESTRICT_CHILDREN),
                  ("RESTRICT_SIBLING", C.TREE_RESTRICT_SIBLING),
                  ("INORDER", C.TREE_INORDER))
    for label, current in (("heading Lists", lists_heading), ("link AccessKit", first_link)):
        for tree_name, tree in tree_types:
            rec.run("getMatchesFrom %s, role HEADING, %s" % (label, tree_name),
                    lambda c=current, t=tree: paths(col.getMatchesFrom(c, headings, canonical,
                                                                       t, 0, True)))
    rec.run("getMatchesFrom link AccessKit, role LINK, INORDER",
            lambda: paths(col.getMatchesFrom(first_link, links, canonical, C.TREE_INORDER, 0, True)))
    rec.run("getMatchesFrom heading Lists, role HEADING, INORDER, count 1",
            lambda: paths(col.getMatchesFrom(lists_heading, headings, canonical,
                                             C.TREE_INORDER, 1, True)))
    focusable = rule(col, states=[pyatspi.STATE_FOCUSABLE])
    rec.run("getMatchesFrom form Sign up, states FOCUSABLE, RESTRICT_CHILDREN",
            lambda: paths(col.getMatchesFrom(form, focusable, canonical,
                                             C.TREE_RESTRICT_CHILDREN, 0, True)))
    for tree_name, tree in tree_types:
        for limit_scope in (False, True):
            rec.run("getMatchesTo heading Sign up, role HEADING, %s, limit_scope %s"
                    % (tree_name, limit_scope),
                    lambda t=tree, s=limit_scope: paths(col.getMatchesTo(
                        sign_up_heading, headings, canonical, t, s, 0, True)))
    rec.run("getMatchesTo heading Sign up, role HEADING, INORDER, count 1",
            lambda: paths(col.getMatchesTo(sign_up_heading, headings, canonical,
                                           C.TREE_INORDER, False, 1, True)))
    rec.run("getMatchesTo heading Sign up, role HEADING, INORDER, REVERSE_CANONICAL",
            lambda: paths(col.getMatchesTo(sign_up_heading, headings, reverse,
                                           C.TREE_INORDER, False, 0, True)))
    second_link = find_by_name(root, pyatspi.ROLE_LINK, "protocol notes")
    for tree_name, tree in tree_types:
        for limit_scope in (False, True):
            rec.run("getMatchesTo link protocol notes, role LINK, %s, limit_scope %s"
                    % (tree_name, limit_scope),
                    lambda t=tree, s=limit_scope: paths(col.getMatchesTo(
                        second_link, links, canonical, t, s, 0, True)))
    rec.run("getMatchesTo link AccessKit, role HEADING, INORDER",
            lambda: paths(col.getMatchesTo(first_link, headings, canonical,
                                           C.TREE_INORDER, False, 0, True)))


def table_queries(rec, table):
    """Table and TableCell answers for every cell of table."""
    t = table.queryTable()
    rec.run("table", lambda: path_of(table))
    rec.run("nRows", lambda: t.nRows)
    rec.run("nColumns", lambda: t.nColumns)
    rec.run("caption", lambda: path_of(t.caption))
    rows, columns = t.nRows, t.nColumns
    rec.run("getAccessibleAt names (row by row)",
            lambda: [[t.getAccessibleAt(r, c).get_name() for c in range(columns)]
                     for r in range(rows)])
    rec.run("getRowHeader names", lambda: [name_or_none(t.getRowHeader(r)) for r in range(rows)])
    rec.run("getColumnHeader names",
            lambda: [name_or_none(t.getColumnHeader(c)) for c in range(columns)])
    rec.run("getRowExtentAt (row by row)",
            lambda: [[t.getRowExtentAt(r, c) for c in range(columns)] for r in range(rows)])
    rec.run("getColumnExtentAt (row by row)",
            lambda: [[t.getColumnExtentAt(r, c) for c in range(columns)] for r in range(rows)])
    rec.run("getIndexAt (row by row)",
            lambda: [[t.getIndexAt(r, c) for c in range(columns)] for r in range(rows)])
    rec.run("getRowAtIndex/getColumnAtIndex of index 7",
            lambda: [t.getRowAtIndex(7), t.getColumnAtIndex(7)])
    rec.run("getAccessibleAt(-1, 0)", lambda: path_of(t.getAccessibleAt(-1, 0)))
    rec.run("getAccessibleAt(nRows, 0)", lambda: path_of(t.getAccessibleAt(rows, 0)))
    cells = [table_cell_answers(r, c, t.getAccessibleAt(r, c))
             for r in range(rows) for c in range(columns)]
    rec.run("TableCell answers of every getAccessibleAt cell", lambda: cells)
    # Kept apart: libatspi reads this reply as (iiii) (atspi-table-cell.c, as atk-bridge sends
    # it) although xml/TableCell.xml declares (biiii); see the test's ROW_COLUMN_SPAN note.
    rec.run("TableCell getRowColumnSpan of every getAccessibleAt cell",
            lambda: [row_column_span(t.getAccessibleAt(r, c))
                     for r in range(rows) for c in range(columns)])


def name_or_none(acc):
    return None if acc is None else acc.get_name()


def answer(fn):
    """fn()'s value, or {"error": message}: one failing getter must not hide the others."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return {"error": clean_error(exc)}


def table_cell_answers(r, c, cell):
    tc = cell.queryTableCell()
    return {
        "at": [r, c],
        "cell": segment(cell),
        "position": answer(lambda: list(tc.position)),
        "rowSpan": answer(lambda: tc.rowSpan),
        "columnSpan": answer(lambda: tc.columnSpan),
        "rowHeaderCells": answer(lambda: [h.get_name() for h in tc.rowHeaderCells]),
        "columnHeaderCells": answer(lambda: [h.get_name() for h in tc.columnHeaderCells]),
        "table": answer(lambda: segment(tc.table)),
    }


def row_column_span(cell):
    return {"cell": segment(cell),
            "rowColumnSpan": answer(lambda: list(cell.queryTableCell().getRowColumnSpan()))}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--app", required=True)
    parser.add_argument("--kind", choices=["doc", "grid"], required=True)
    parser.add_argument("--timeout", type=float, default=30.0)
    opts = parser.parse_args()
    app = find_app(opts.app, opts.timeout)
    if app is None:
        print("application %r did not appear within %.0f s" % (opts.app, opts.timeout),
              file=sys.stderr)
        return 2
    rec = Recorder()
    if opts.kind == "doc":
        root = wait_below(app, [Atspi.Role.DOCUMENT_FRAME, Atspi.Role.DOCUMENT_WEB], opts.timeout)
        if root is None:
            print("no document below %r within %.0f s; it holds:\n%s"
                  % (opts.app, opts.timeout, "\n".join(outline(app))), file=sys.stderr)
            return 2
        rec.run("collection", lambda: path_of(root))
        collection_queries(rec, app, root)
        table = first_below(root, [Atspi.Role.TABLE])
        if table is not None:
            table_queries(rec, table)
    else:
        table = wait_below(app, [Atspi.Role.TABLE], opts.timeout)
        if table is None:
            print("no table below %r within %.0f s; it holds:\n%s"
                  % (opts.app, opts.timeout, "\n".join(outline(app))), file=sys.stderr)
            return 2
        col = table.queryCollection()
        for label, role in (("ROW_HEADER", pyatspi.ROLE_ROW_HEADER),
                            ("COLUMN_HEADER", pyatspi.ROLE_COLUMN_HEADER)):
            rec.run("table getMatches role %s" % label,
                    lambda r=role: paths(col.getMatches(rule(col, roles=[r]),
                                                        C.SORT_ORDER_CANONICAL, 0, True)))
        rec.run("table getMatches attribute colindex:4 (TABLE_CELL)",
                lambda: paths(col.getMatches(rule(col, attributes=["colindex:4"],
                                                  roles=[pyatspi.ROLE_TABLE_CELL]),
                                             C.SORT_ORDER_CANONICAL, 0, True)))
        table_queries(rec, table)
    json.dump(rec.entries, sys.stdout, indent=1, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
