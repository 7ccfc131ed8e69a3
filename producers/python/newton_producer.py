#!/usr/bin/python3
"""A Newton push-protocol producer in Python, standard library only.

It speaks protocol version 1 (docs/protocol.md) to newton-atspi-bridge over its Unix socket, in
the JSON encoding, with tree payloads in accesskit 0.25's JSON shape (docs/schema/ is the
normative schema, docs/schema/vocabulary.md lists roles, property keys and the bits of `actions`
and `flags`). Copy this one file into a project, or import it:

    from newton_producer import Connection, node, tree_update

    with Connection.connect(app_id="org.example.App", name="Example") as bridge:
        bridge.create_surface(1, title="Main")
        bridge.update(1, tree_update({
            0: node("window", label="Main", children=[1]),
            1: node("button", label="OK", actions=["click", "focus"]),
        }, focus=1, root=0))
        bridge.commit(1)
        bridge.sync()
        for message in bridge.messages():       # action requests, wanted state, rejections
            ...

Command line:

    newton_producer.py demo [--socket PATH] [--app-name NAME]
        A window with a button; each click (an AT's DoAction) is printed as a JSON line
        {"event": "action", ...} and answered with an update of a status label.
    newton_producer.py check-vocabulary docs/schema/vocabulary.json
        Checks that this file's action and flag bits are the schema's.

Rules this producer follows, as every sender should: the hello announces the accesskit version of
the payloads; bridge messages it does not know are skipped (a newer bridge may send more); it
pushes a full tree again when the bridge sends `updatesWanted` or asks for a resync.
"""

import argparse
import json
import os
import select
import signal
import socket
import struct
import sys
import time

PROTOCOL_VERSION = 1
ACCESSKIT_VERSION = "0.25.2"
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
ROOT_TREE_ID = "00000000-0000-0000-0000-000000000000"

# Bits of a node's `actions`/`childActions` and `flags` (docs/schema/vocabulary.md).
ACTION_BITS = {
    name: 1 << index
    for index, name in enumerate([
        "click", "focus", "blur", "collapse", "expand", "customAction", "decrement", "increment",
        "hideTooltip", "showTooltip", "replaceSelectedText", "scrollDown", "scrollLeft",
        "scrollRight", "scrollUp", "scrollIntoView", "scrollToPoint", "setScrollOffset",
        "setTextSelection", "setSequentialFocusNavigationStartingPoint", "setValue",
        "showContextMenu",
    ])
}
FLAG_BITS = {
    name: 1 << index
    for index, name in enumerate([
        "hidden", "multiselectable", "required", "visited", "busy", "liveAtomic", "modal",
        "touchTransparent", "readOnly", "disabled", "italic", "clipsChildren",
        "isLineBreakingObject", "isPageBreakingObject", "isSpellingError", "isGrammarError",
        "isSearchMatch", "isSuggestion",
    ])
}

# Bridge messages of protocol version 1; anything else comes from a newer bridge and is skipped.
KNOWN_BRIDGE_MESSAGES = {
    "welcome", "updatesWanted", "updatesUnwanted", "action", "rejected", "error", "syncDone",
}


class BridgeError(Exception):
    """The bridge refused the connection or a message, or the stream broke."""


def default_socket_path():
    """$NEWTON_ATSPI_SOCKET, else $XDG_RUNTIME_DIR/newton-atspi/bridge.sock (docs/protocol.md 2.1)."""
    override = os.environ.get("NEWTON_ATSPI_SOCKET")
    if override:
        return override
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if not runtime or not os.path.isabs(runtime):
        raise BridgeError("XDG_RUNTIME_DIR is unset or not absolute: set it, or pass the socket path")
    return os.path.join(runtime, "newton-atspi", "bridge.sock")


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _bits(names, table, what):
    value = 0
    for name in names:
        if name not in table:
            raise ValueError("unknown %s %r; known: %s" % (what, name, ", ".join(sorted(table))))
        value |= table[name]
    return value


def node(role, actions=(), child_actions=(), flags=(), **properties):
    """One accesskit node: `role` is a role name ("button"), `actions` and `flags` names from
    ACTION_BITS/FLAG_BITS, and every other keyword a property (snake_case or camelCase key,
    e.g. label="OK", children=[2, 3], bounds={"x0": 0, "y0": 0, "x1": 80, "y1": 30})."""
    return {
        "role": role,
        "actions": _bits(actions, ACTION_BITS, "action"),
        "childActions": _bits(child_actions, ACTION_BITS, "action"),
        "flags": _bits(flags, FLAG_BITS, "flag"),
        "properties": {_camel(key): value for key, value in properties.items() if value is not None},
    }


def tree_update(nodes, focus, root=None, toolkit_name=None, toolkit_version=None):
    """A TreeUpdate of `nodes` ({id: node}). With `root` it is a full tree (first update, resync)."""
    tree = None
    if root is not None:
        tree = {"root": root, "toolkitName": toolkit_name, "toolkitVersion": toolkit_version}
    return {
        "nodes": [[node_id, value] for node_id, value in sorted(nodes.items())],
        "tree": tree,
        "treeId": ROOT_TREE_ID,
        "focus": focus,
    }


class Connection:
    """One application's connection to the bridge (blocking socket IO, one thread)."""

    def __init__(self, sock, app_id, name, pid=None, toolkit_name=None, toolkit_version=None,
                 log=None):
        self._sock = sock
        self._buffer = b""
        self._serial = 0
        self._inbox = []
        self._log = log or (lambda text: None)
        self.max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self.capabilities = []
        self.wanted = set()
        self.skipped = []
        hello = {
            "protocol": PROTOCOL_VERSION,
            "encoding": "json",
            "accesskitVersion": ACCESSKIT_VERSION,
            "app": {"appId": app_id, "name": name, "pid": pid,
                    "toolkitName": toolkit_name, "toolkitVersion": toolkit_version},
        }
        self._send(hello)
        self._await_welcome()

    @classmethod
    def connect(cls, app_id, name, socket_path=None, timeout=10.0, **app):
        """Connects to the bridge's socket and completes the hello/welcome handshake."""
        path = socket_path or default_socket_path()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError as error:
            sock.close()
            raise BridgeError("cannot connect to the bridge at %s: %s; is newton-atspi-bridge "
                              "running?" % (path, error)) from error
        sock.settimeout(None)
        try:
            return cls(sock, app_id, name, pid=app.get("pid", os.getpid()),
                       toolkit_name=app.get("toolkit_name"),
                       toolkit_version=app.get("toolkit_version"), log=app.get("log"))
        except BaseException:
            sock.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- framing -----------------------------------------------------------------------------

    def _send(self, message):
        payload = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if len(payload) > self.max_frame_bytes:
            raise BridgeError("message of %d bytes exceeds the bridge's frame limit of %d bytes"
                              % (len(payload), self.max_frame_bytes))
        self._sock.sendall(struct.pack("<I", len(payload)) + payload)

    def _read_frame(self, timeout):
        """One payload, or None if none arrived within `timeout` seconds (None: wait forever)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if len(self._buffer) >= 4:
                (length,) = struct.unpack("<I", self._buffer[:4])
                if length > DEFAULT_MAX_FRAME_BYTES:
                    raise BridgeError("the bridge sent a frame of %d bytes" % length)
                if len(self._buffer) >= 4 + length:
                    payload = self._buffer[4:4 + length]
                    self._buffer = self._buffer[4 + length:]
                    return payload
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._sock], [], [], remaining)
            if not readable:
                return None
            chunk = self._sock.recv(65536)
            if not chunk:
                raise BridgeError("the bridge closed the connection")
            self._buffer += chunk

    def _decode(self, payload):
        """(name, body) of a bridge message; name is None for one this producer does not know."""
        try:
            message = json.loads(payload)
        except ValueError as error:
            raise BridgeError("the bridge sent a frame that is not JSON: %s" % error) from error
        if isinstance(message, str):
            name, body = message, None
        elif isinstance(message, dict) and len(message) == 1:
            ((name, body),) = message.items()
        else:
            raise BridgeError("the bridge sent an unexpected message shape: %r" % (message,))
        if name not in KNOWN_BRIDGE_MESSAGES:
            self.skipped.append(name)
            self._log("skipping unknown bridge message %r (from a newer bridge)" % name)
            return None, None
        return name, body

    def _await_welcome(self, timeout=10.0):
        payload = self._read_frame(timeout)
        if payload is None:
            raise BridgeError("no welcome from the bridge within %.0f s" % timeout)
        name, body = self._decode(payload)
        if name == "error":
            raise BridgeError("the bridge refused the hello: %s" % body.get("reason"))
        if name != "welcome":
            raise BridgeError("the bridge's first message must be welcome, got %r" % name)
        if body.get("protocol") != PROTOCOL_VERSION:
            raise BridgeError("the bridge speaks protocol %r, this producer speaks %d"
                              % (body.get("protocol"), PROTOCOL_VERSION))
        self.max_frame_bytes = body.get("maxFrameBytes", DEFAULT_MAX_FRAME_BYTES)
        self.capabilities = body.get("capabilities", [])

    # -- sender messages ---------------------------------------------------------------------

    def create_surface(self, surface, title=None):
        self._send({"createSurface": {"surface": surface, "title": title}})

    def update(self, surface, update):
        self._send({"update": {"surface": surface, "update": update}})

    def commit(self, surface, serial=None):
        """Applies the surface's buffered updates as one frame; returns the commit's serial."""
        if serial is None:
            self._serial += 1
            serial = self._serial
        self._send({"commit": {"surface": surface, "serial": serial}})
        return serial

    def focus(self, surface):
        self._send({"focus": {"surface": surface}})

    def geometry(self, surface, x, y, width, height, scale=1.0):
        self._send({"geometry": {"surface": surface, "geometry": {
            "x": x, "y": y, "width": width, "height": height, "scale": float(scale)}}})

    def destroy_surface(self, surface):
        self._send({"destroySurface": {"surface": surface}})
        self.wanted.discard(surface)

    def sync(self, timeout=30.0):
        """Waits until the bridge processed everything sent so far. Messages read meanwhile are
        kept for `messages()`; a `rejected` among them is returned in the list."""
        self._serial += 1
        serial = self._serial
        self._send({"sync": {"serial": serial}})
        deadline = time.monotonic() + timeout
        rejected = []
        while True:
            message = self.next_message(max(0.0, deadline - time.monotonic()), keep=False)
            if message is None:
                raise BridgeError("no syncDone from the bridge within %.0f s" % timeout)
            name, body = message
            if name == "syncDone" and body.get("serial") == serial:
                return rejected
            if name == "rejected":
                rejected.append(body)
            self._inbox.append(message)

    def close(self):
        """Says goodbye (the bridge removes the application) and closes the socket."""
        try:
            self._send("goodbye")
        except OSError:
            pass
        self._sock.close()

    # -- bridge messages ---------------------------------------------------------------------

    def next_message(self, timeout=None, keep=True):
        """The next bridge message as (name, body), or None after `timeout` seconds. Unknown
        messages are skipped; `error` raises BridgeError (the bridge closes after it)."""
        if keep and self._inbox:
            return self._inbox.pop(0)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            payload = self._read_frame(remaining)
            if payload is None:
                return None
            name, body = self._decode(payload)
            if name is None:
                continue
            if name == "error":
                raise BridgeError("the bridge closed the connection: %s" % body.get("reason"))
            if name == "updatesWanted":
                self.wanted.add(body["surface"])
            elif name == "updatesUnwanted":
                self.wanted.discard(body["surface"])
            return name, body

    def messages(self, timeout=None):
        """Yields bridge messages until none arrives within `timeout` (forever when None)."""
        while True:
            message = self.next_message(timeout)
            if message is None:
                return
            yield message


# -- the demo -----------------------------------------------------------------------------------

SURFACE = 1
WINDOW, BUTTON, STATUS = 1, 2, 3


def demo_nodes(app_name, presses):
    status = "Not pressed yet" if presses == 0 else "Pressed %d time%s" % (
        presses, "" if presses == 1 else "s")
    return {
        WINDOW: node("window", label=app_name, children=[BUTTON, STATUS],
                     bounds={"x0": 0.0, "y0": 0.0, "x1": 400.0, "y1": 300.0}),
        BUTTON: node("button", actions=["click", "focus"], label="Press me",
                     bounds={"x0": 20.0, "y0": 20.0, "x1": 140.0, "y1": 60.0}),
        STATUS: node("label", value=status,
                     bounds={"x0": 20.0, "y0": 80.0, "x1": 380.0, "y1": 110.0}),
    }


def emit(event, **fields):
    print(json.dumps(dict(event=event, **fields), sort_keys=True), flush=True)


def run_demo(args):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    log = (lambda text: print("newton_producer: " + text, file=sys.stderr, flush=True))
    bridge = Connection.connect(app_id="org.newton.PythonProducerDemo", name=args.app_name,
                                socket_path=args.socket, toolkit_name="newton_producer.py",
                                toolkit_version="1", log=log)
    presses = 0

    def push_full_tree():
        bridge.update(SURFACE, tree_update(demo_nodes(args.app_name, presses), focus=BUTTON,
                                           root=WINDOW, toolkit_name="newton_producer.py"))
        return bridge.commit(SURFACE)

    with bridge:
        bridge.create_surface(SURFACE, title=args.app_name)
        bridge.geometry(SURFACE, 100, 50, 400, 300)
        push_full_tree()
        bridge.focus(SURFACE)
        rejected = bridge.sync()
        if rejected:
            raise BridgeError("the bridge rejected the demo tree: %r" % rejected)
        emit("ready", capabilities=bridge.capabilities)
        while not stop:
            try:
                message = bridge.next_message(timeout=0.2)
            except InterruptedError:
                continue
            if message is None:
                continue
            name, body = message
            if name == "action":
                request = body["request"]
                emit("action", surface=body["surface"], action=request["action"],
                     target=request["targetNode"], data=request.get("data"))
                if request["action"] == "click" and request["targetNode"] == BUTTON:
                    presses += 1
                    # An update lists each changed node whole, and the focus.
                    status = demo_nodes(args.app_name, presses)[STATUS]
                    bridge.update(SURFACE, tree_update({STATUS: status}, focus=BUTTON))
                    serial = bridge.commit(SURFACE)
                    rejected = bridge.sync()
                    emit("updated", serial=serial, presses=presses, rejected=rejected)
            elif name == "updatesWanted":
                push_full_tree()
                emit("full-tree", reason="updatesWanted")
            elif name == "rejected":
                emit("rejected", **body)
                if body.get("resync"):
                    push_full_tree()
    emit("goodbye")
    return 0


def check_vocabulary(path):
    """Exit status 0 when this file's action and flag bits are the schema's vocabulary's."""
    with open(path, encoding="utf-8") as file:
        vocabulary = json.load(file)
    problems = []
    if vocabulary.get("accesskitVersion") != ACCESSKIT_VERSION:
        problems.append("accesskit %r, this file %r" % (vocabulary.get("accesskitVersion"),
                                                        ACCESSKIT_VERSION))
    for key, table in (("actions", ACTION_BITS), ("flags", FLAG_BITS)):
        theirs = {entry["name"]: entry["bit"] for entry in vocabulary[key]}
        if theirs != table:
            problems.append("%s differ: schema %r, this file %r" % (key, theirs, table))
    for problem in problems:
        print("newton_producer: vocabulary: " + problem, file=sys.stderr)
    return 1 if problems else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="push a demo window and answer its button's clicks")
    demo.add_argument("--socket", help="bridge socket (default: $NEWTON_ATSPI_SOCKET or "
                                       "$XDG_RUNTIME_DIR/newton-atspi/bridge.sock)")
    demo.add_argument("--app-name", default="Python producer demo")
    check = commands.add_parser("check-vocabulary", help="compare the bits with vocabulary.json")
    check.add_argument("vocabulary")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            return run_demo(args)
        return check_vocabulary(args.vocabulary)
    except BridgeError as error:
        print("newton_producer: %s" % error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
