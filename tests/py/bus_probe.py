#!/usr/bin/python3
"""Try to reach D-Bus buses from where this runs; print one line: "bus-probe " + JSON.

Usage: bus_probe.py ADDRESS...

Each ADDRESS is a D-Bus address as a bus daemon prints it (unix:path=... or unix:abstract=...).
The probe also tries the accessibility bus address that at-spi-bus-launcher publishes on the X
display's root window (property AT_SPI_BUS), which any X client can read: a sandboxed application
that can draw can learn that address, so it must be unreachable, not just unnamed.

For each address it opens a real D-Bus connection (authentication and Hello, through Gio), so a
success means "could talk on that bus", not merely "a socket file exists". The sandboxed test runs
it inside bubblewrap (every bus must be unreachable) and outside with the same addresses (every
bus must be reachable: the probe itself works).

Printed: {"pid": its pid, "env": the bus variables it sees, "interfaces": network interfaces
(/proc/net/dev), "x11AtSpiBus": the root window's AT_SPI_BUS or null,
"buses": [{"address", "reachable", "error"}]}. Exit status 0 whatever it found.
"""
import json
import os
import subprocess
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio  # noqa: E402


def reach(address):
    flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
             | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
    try:
        connection = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
    except Exception as error:  # GLib.Error for every connect or auth failure
        return {"address": address, "reachable": False, "error": str(error)}
    unique = connection.get_unique_name()
    connection.close_sync(None)
    return {"address": address, "reachable": True, "error": None, "uniqueName": unique}


def x11_at_spi_bus():
    """The AT_SPI_BUS property of the X root window, as xprop prints it, or None."""
    if not os.environ.get("DISPLAY"):
        return None
    try:
        out = subprocess.run(["xprop", "-root", "AT_SPI_BUS"], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # AT_SPI_BUS(STRING) = "unix:path=...,guid=..."
    if "=" not in out or '"' not in out:
        return None
    return out.split('"', 2)[1]


def interfaces():
    try:
        with open("/proc/net/dev") as dev:
            return [line.split(":", 1)[0].strip() for line in dev.readlines()[2:]]
    except OSError as error:
        return ["(unreadable: %s)" % error]


def main():
    addresses = list(sys.argv[1:])
    published = x11_at_spi_bus()
    if published and published not in addresses:
        addresses.append(published)
    report = {
        "pid": os.getpid(),
        "env": {k: os.environ[k] for k in ("DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS")
                if k in os.environ},
        "interfaces": interfaces(),
        "x11AtSpiBus": published,
        "buses": [reach(a) for a in addresses],
    }
    print("bus-probe " + json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
