#!/usr/bin/python3
"""Call Action.DoAction on one object of an AT-SPI application, as an AT would.

Usage (with AT_SPI_BUS_ADDRESS set as in the test session):
    do_action.py --app NAME --role ROLE --name NAME [--action NAME]

Finds the first object (depth first) with that role name and accessible name, calls DoAction
with the index of the named action (default "click") and prints {"done": bool, "index": i}.
Exit status: 0 done, 2 application/object/action not found, 1 DoAction failed or returned false.
"""
import argparse
import json
import sys

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

import pyatspi  # noqa: E402,F401  (initialises libatspi the way Orca does)


def find(acc, role, name, depth=0):
    if acc is None or depth > 64:
        return None
    if acc.get_role_name() == role and acc.get_name() == name:
        return acc
    for i in range(max(acc.get_child_count(), 0)):
        found = find(acc.get_child_at_index(i), role, name, depth + 1)
        if found is not None:
            return found
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--app", required=True)
    parser.add_argument("--role", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--action", default="click")
    opts = parser.parse_args()
    desktop = Atspi.get_desktop(0)
    apps = [desktop.get_child_at_index(i) for i in range(desktop.get_child_count())]
    app = next((a for a in apps if a is not None and a.get_name() == opts.app), None)
    if app is None:
        print("do_action: no application %r" % opts.app, file=sys.stderr)
        return 2
    target = find(app, opts.role, opts.name)
    if target is None:
        print("do_action: no %s named %r in %r" % (opts.role, opts.name, opts.app), file=sys.stderr)
        return 2
    action = target.get_action_iface()
    names = [action.get_action_name(i) for i in range(action.get_n_actions())]
    if opts.action not in names:
        print("do_action: no action %r; actions: %r" % (opts.action, names), file=sys.stderr)
        return 2
    index = names.index(opts.action)
    done = action.do_action(index)
    print(json.dumps({"done": bool(done), "index": index}))
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
