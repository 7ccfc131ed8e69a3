#!/usr/bin/python3
"""Send key press+release events to AT-SPI key listeners (Orca) through the registry.

Usage (AT_SPI_BUS_ADDRESS set):  inject_key.py [--delay S] [--modifiers MASK] KEY [KEY ...]

Calls org.a11y.atspi.DeviceEventController.NotifyListenersSync on the registry with a (uinnisb)
struct (type, keysym, keycode, modifiers, timestamp, string, is_text) — gdbus cannot do this
because the registry's introspection advertises a different signature. Keycodes are those of
Xvfb's default keymap (checked with Gdk.Keymap on Xvfb). Prints one line per event:
"KEY press|release consumed=True|False". No real X input happens: only AT-SPI listeners see it.
"""
import argparse
import os
import sys
import time

import dbus

# name: (keysym, keycode in Xvfb's default keymap)
KEYS = {
    "Tab": (0xFF09, 23),
    "Left": (0xFF51, 113),
    "Right": (0xFF53, 114),
    "Up": (0xFF52, 111),
    "Down": (0xFF54, 116),
    "Home": (0xFF50, 110),
    "End": (0xFF57, 115),
    "BackSpace": (0xFF08, 22),
    "Delete": (0xFFFF, 119),
    "Return": (0xFF0D, 36),
    "Escape": (0xFF1B, 9),
    "KP_Enter": (0xFF8D, 104),
    "KP_Up": (0xFF97, 80),
    "KP_Down": (0xFF99, 88),
    "KP_Left": (0xFF96, 83),
    "KP_Right": (0xFF98, 85),
    "KP_Begin": (0xFF9D, 84),
    "KP_Insert": (0xFF9E, 90),
    "KP_Subtract": (0xFFAD, 82),
    "KP_Add": (0xFFAB, 86),
    "space": (0x20, 65),
    "Control_L": (0xFFE3, 37),
}
LETTER_KEYCODES = dict(zip("abcdefghijklmnopqrstuvwxyz", [
    38, 56, 54, 40, 26, 41, 42, 43, 31, 44, 45, 46, 58, 57, 32, 33, 24, 27, 39, 28, 30, 55, 25, 53, 29, 52]))
KEYS.update({ch: (ord(ch), code) for ch, code in LETTER_KEYCODES.items()})

PRESS, RELEASE = 0, 1


def key_event(kind, name, modifiers):
    keysym, keycode = KEYS[name]
    is_text = len(name) == 1 or name == "space"
    string = " " if name == "space" else name
    timestamp = int(time.monotonic() * 1000) & 0x7FFFFFFF
    return dbus.Struct(
        (dbus.UInt32(kind), dbus.Int32(keysym), dbus.Int16(keycode), dbus.Int16(modifiers),
         dbus.Int32(timestamp), dbus.String(string), dbus.Boolean(is_text)),
        signature="uinnisb")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("keys", nargs="+", metavar="KEY", help="key names: " + " ".join(sorted(KEYS)))
    parser.add_argument("--delay", type=float, default=0.3, help="seconds between keys (default 0.3)")
    parser.add_argument("--modifiers", type=int, default=0, help="X modifier mask (1 Shift, 4 Control, 8 Alt)")
    opts = parser.parse_args()
    unknown = [k for k in opts.keys if k not in KEYS]
    if unknown:
        parser.error("unknown key(s) %s; known: %s" % (", ".join(unknown), " ".join(sorted(KEYS))))
    address = os.environ.get("AT_SPI_BUS_ADDRESS")
    if not address:
        parser.error("AT_SPI_BUS_ADDRESS is not set; run inside the test session")
    dec = dbus.bus.BusConnection(address).get_object(
        "org.a11y.atspi.Registry", "/org/a11y/atspi/registry/deviceeventcontroller", introspect=False)
    for i, name in enumerate(opts.keys):
        if i:
            time.sleep(opts.delay)
        for kind, label in ((PRESS, "press"), (RELEASE, "release")):
            consumed = dec.NotifyListenersSync(
                key_event(kind, name, opts.modifiers), dbus_interface="org.a11y.atspi.DeviceEventController")
            print("%s %s consumed=%s" % (name, label, bool(consumed)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
