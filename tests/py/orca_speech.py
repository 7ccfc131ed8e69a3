#!/usr/bin/python3
"""Orca helpers for the end-to-end tests (the Rust harness has the same logic in newton_e2e::Orca).

  orca_speech.py extract DEBUG_FILE        print every SPEECH OUTPUT utterance, one JSON string a line
  orca_speech.py start DIR                 start Orca headless with its debug file and prefs in DIR,
                                           wait until it registered its event listeners, print its pid
  orca_speech.py stop PID                  SIGTERM, wait up to 10 s, then SIGKILL

Run inside the test session (AT_SPI_BUS_ADDRESS, DISPLAY, XDG_CONFIG_HOME with the dummy
speech-dispatcher config). Utterances are read after Orca has exited: its debug file is
block-buffered.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

import dbus

UTTERANCE = re.compile(r"SPEECH OUTPUT: '(.*?)'\s*[\[{]", re.S)
READY_EVENTS = {"Object:StateChanged:Focused", "Object:TextCaretMoved", "Window:Activate", "Window:Destroy"}


def extract(text):
    return UTTERANCE.findall(text)


def registered_by(pid, address):
    bus = dbus.bus.BusConnection(address)
    registry = bus.get_object("org.a11y.atspi.Registry", "/org/a11y/atspi/registry", introspect=False)
    events = registry.GetRegisteredEvents(dbus_interface="org.a11y.atspi.Registry")
    owned = set()
    for listener, event in events:
        try:
            if bus.get_unix_process_id(listener) == pid:
                owned.add(str(event).rstrip(":"))
        except dbus.DBusException:
            continue
    return owned


def start(directory, timeout=30.0):
    os.makedirs(os.path.join(directory, "orca-prefs"), exist_ok=True)
    log = open(os.path.join(directory, "orca.log"), "wb")
    proc = subprocess.Popen(
        ["orca", "--debug-file=" + os.path.join(directory, "orca-debug.out"),
         "-u", os.path.join(directory, "orca-prefs")],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("orca exited early with %s; see %s/orca.log" % (proc.returncode, directory))
        try:
            if READY_EVENTS <= registered_by(proc.pid, os.environ["AT_SPI_BUS_ADDRESS"]):
                print(proc.pid)
                return 0
        except dbus.DBusException:
            pass
        time.sleep(0.1)
    stop(proc.pid)
    sys.exit("orca did not register its event listeners within %.0f s" % timeout)


def stop(pid, grace=10.0):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return 0
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
            if finished:
                return 0
        except ChildProcessError:  # not our child: poll for existence instead
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return 0
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "extract":
        with open(argv[2], "rb") as f:
            for utterance in extract(f.read().decode("utf-8", "replace")):
                print(json.dumps(utterance, ensure_ascii=False))
        return 0
    if len(argv) == 3 and argv[1] == "start":
        return start(argv[2])
    if len(argv) == 3 and argv[1] == "stop":
        return stop(int(argv[2]))
    print(__doc__, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
