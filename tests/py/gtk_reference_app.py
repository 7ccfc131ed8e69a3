#!/usr/bin/python3
"""GTK3 reference application for the end-to-end harness.

A window "BridgeTest" with an entry "Name", a push button "OK", a check box "Enable feature" and a
horizontal scale "Volume". Run on Xvfb with GDK_BACKEND=x11; atk-bridge exposes it on the AT-SPI
bus given by AT_SPI_BUS_ADDRESS. It prints "ready" on stdout once the window is mapped.
"""
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402


def build_window():
    window = Gtk.Window(title="BridgeTest")
    window.set_default_size(400, 200)
    window.connect("destroy", Gtk.main_quit)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
    window.add(box)

    label = Gtk.Label.new_with_mnemonic("_Name")
    entry = Gtk.Entry()
    entry.set_text("hello world")
    entry.get_accessible().set_name("Name")
    label.set_mnemonic_widget(entry)
    box.pack_start(label, False, False, 0)
    box.pack_start(entry, False, False, 0)

    button = Gtk.Button.new_with_label("OK")
    button.connect("clicked", lambda _b: print("clicked OK", flush=True))
    box.pack_start(button, False, False, 0)

    check = Gtk.CheckButton.new_with_label("Enable feature")
    box.pack_start(check, False, False, 0)

    scale = Gtk.Scale.new_with_range(Gtk.Orientation.HORIZONTAL, 0, 100, 1)
    scale.set_value(50)
    scale.get_accessible().set_name("Volume")
    box.pack_start(scale, False, False, 0)
    return window, entry


def main():
    GLib.set_prgname("BridgeTest")
    GLib.set_application_name("BridgeTest")
    window, entry = build_window()
    window.connect("map-event", lambda *_: print("ready", flush=True))
    window.show_all()
    entry.grab_focus()
    Gtk.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
