#!/usr/bin/python3
"""Walks one AT-SPI application the way a naive libatspi client reads a whole tree, with
libatspi's cache off (every name, role, state set, child count and child is a D-Bus call; see
`walk` for how).

    atspi_walk.py [--name NAME] [--pid PID] [--timeout SECONDS]

Finds the application among the registry's desktop children by its name, the process that owns
it, or both (a bridge serves many applications from one process; an application that just left
can share a name), then walks depth-first from its root: name, role, states, child count and each
child. Prints one JSON line: {"nodes", "seconds", "errors", "first_error"}. Exits 2 when the
application does not appear in time.
"""
import argparse
import json
import sys
import time

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402


def find_app(name, pid, timeout):
    deadline = time.monotonic() + timeout
    while True:
        desktop = Atspi.get_desktop(0)
        for i in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(i)
            if app is None:
                continue
            try:
                if name is not None and app.get_name() != name:
                    continue
                if pid is not None and app.get_process_id() != pid:
                    continue
                return app
            except Exception:  # an application leaving while we look
                continue
        if time.monotonic() > deadline:
            what = f"named {name!r} of process {pid}"
            print(f"atspi_walk: no application {what} on the desktop after {timeout} s",
                  file=sys.stderr)
            sys.exit(2)
        time.sleep(0.1)


def walk(app):
    nodes, errors, first_error = 0, 0, None

    def failed(exc):
        nonlocal errors, first_error
        errors += 1
        first_error = first_error or str(exc)

    stack = [app]
    while stack:
        acc = stack.pop()
        nodes += 1
        # Cache off: each node's cached properties are dropped before it is read, so every
        # read below is a D-Bus call (a bridge trace shows name, child count, role, states and
        # each child fetched per node). Not `set_cache_mask(Atspi.Cache.NONE)`: with that mask
        # libatspi 2.46 stalls a walk over a peer-to-peer connection (every time against a
        # GTK 3 application, now and then against the bridge), waiting for a reply it was
        # already sent.
        acc.clear_cache()
        for read in (acc.get_name, acc.get_role, acc.get_state_set):
            try:
                read()
            except Exception as exc:  # counted: the walk goes on like an AT would
                failed(exc)
        try:
            count = acc.get_child_count()
        except Exception as exc:
            failed(exc)
            continue
        for i in range(count):
            try:
                child = acc.get_child_at_index(i)
            except Exception as exc:
                failed(exc)
                continue
            if child is not None:
                stack.append(child)
    return nodes, errors, first_error


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name")
    parser.add_argument("--pid", type=int)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    if args.name is None and args.pid is None:
        parser.error("give --name, --pid or both")
    app = find_app(args.name, args.pid, args.timeout)
    start = time.perf_counter()
    nodes, errors, first_error = walk(app)
    seconds = time.perf_counter() - start
    print(json.dumps({"nodes": nodes, "seconds": seconds, "errors": errors,
                      "first_error": first_error}))


if __name__ == "__main__":
    main()
