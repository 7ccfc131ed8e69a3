#!/usr/bin/python3
"""Find a huge application through pyatspi (libatspi) and reach its deepest, last objects.

Usage (AT_SPI_BUS_ADDRESS set, as in the test session):
    huge_app_probe.py --app NAME --groups G --items N [--timeout S]

The application's tree is window -> G groups -> N items each, item k of group g named
"Item g.k". Prints one JSON object: whether the desktop lists the application, the window's
child count, the last group's child count, the last item's name, its index in its parent and
whether its parent is the last group, plus seconds taken. ATSPI_DISABLE_P2P=1 in the
environment keeps libatspi on the bus; otherwise it talks to the application peer to peer.
Exit status: 0 when everything matched, 1 otherwise, 2 when the application was not found.
"""
import argparse
import json
import sys
import time

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402


def find_app(name, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        desktop = Atspi.get_desktop(0)
        for i in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(i)
            try:
                if app is not None and app.get_name() == name:
                    return app
            except Exception:  # an application that just left
                pass
        time.sleep(0.2)
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--app", required=True)
    parser.add_argument("--groups", type=int, required=True)
    parser.add_argument("--items", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    # The first calls may wait while the bridge answers GetItems for the whole tree.
    Atspi.set_timeout(20000, 60000)
    started = time.monotonic()
    app = find_app(args.app, args.timeout)
    out = {"found": app is not None}
    if app is None:
        print(json.dumps(out))
        return 2
    window = app.get_child_at_index(0)
    out["windowChildren"] = window.get_child_count()
    group = window.get_child_at_index(args.groups - 1)
    out["lastGroup"] = group.get_name()
    out["lastGroupChildren"] = group.get_child_count()
    item = group.get_child_at_index(args.items - 1)
    out["lastItem"] = item.get_name()
    out["lastItemIndex"] = item.get_index_in_parent()
    out["lastItemParentIsGroup"] = item.get_parent() == group
    out["lastItemRole"] = item.get_role_name()
    first = window.get_child_at_index(0).get_child_at_index(0)
    out["firstItem"] = first.get_name()
    out["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(out))
    ok = (
        out["windowChildren"] == args.groups
        and out["lastGroupChildren"] == args.items
        and out["lastItem"] == "Item %d.%d" % (args.groups - 1, args.items - 1)
        and out["lastItemIndex"] == args.items - 1
        and out["lastItemParentIsGroup"]
        and out["firstItem"] == "Item 0.0"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
