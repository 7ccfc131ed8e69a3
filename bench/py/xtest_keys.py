#!/usr/bin/python3
"""Real X key presses for newton-bench --key-latency, from one long-lived process.

Reads one X keysym name per line on stdin and presses and releases that key through the XTEST
extension (the focused window receives it as from a keyboard), flushes, and prints "sent" once the
X server has the events. One process for the whole run, so no process start-up is inside the timed
path, and the same path for every application. Standard library only (ctypes on libX11/libXtst).
"""
import ctypes
import sys

x11 = ctypes.CDLL("libX11.so.6")
xtst = ctypes.CDLL("libXtst.so.6")
x11.XOpenDisplay.restype = ctypes.c_void_p
x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
x11.XStringToKeysym.restype = ctypes.c_ulong
x11.XStringToKeysym.argtypes = [ctypes.c_char_p]
x11.XKeysymToKeycode.restype = ctypes.c_ubyte
x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
x11.XFlush.argtypes = [ctypes.c_void_p]
x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]


def main():
    display = x11.XOpenDisplay(None)
    if not display:
        sys.exit("xtest_keys: cannot open the X display (is DISPLAY set?)")
    print("ready", flush=True)
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        keycode = x11.XKeysymToKeycode(display, x11.XStringToKeysym(name.encode()))
        if keycode == 0:
            sys.exit(f"xtest_keys: no keycode for keysym {name!r}")
        xtst.XTestFakeKeyEvent(display, keycode, 1, 0)
        xtst.XTestFakeKeyEvent(display, keycode, 0, 0)
        x11.XSync(display, 0)
        print("sent", flush=True)


if __name__ == "__main__":
    main()
