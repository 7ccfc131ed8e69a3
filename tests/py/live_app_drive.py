#!/usr/bin/python3
"""Drive the live application (newton-live-app) from the AT side through pyatspi, print JSON.

Usage (AT_SPI_BUS_ADDRESS set, as in the test session): live_app_drive.py [--timeout S]

Steps, each waiting until pyatspi observes the application's next tree:
  click-ok      Action "click" on the OK push button (the app prints "activated OK")
  click-check   Action "click" on the check box: its CHECKED state flips
  set-text      EditableText.SetTextContents("hello") on the Name text: its text becomes "hello"
  set-caret     Text.SetCaretOffset(2) on it: its caret offset becomes 2
Each step is {"step": ..., "ok": bool, "observed": ...}. Exit status 0 when every step was
observed, 1 otherwise, 2 when the application was not found.
"""
import argparse
import json
import sys
import time
import warnings

import gi

gi.require_version("Atspi", "2.0")
import pyatspi  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)


def find_app(name, deadline):
    while time.time() < deadline:
        desktop = pyatspi.Registry.getDesktop(0)
        for i in range(desktop.childCount):
            app = desktop.getChildAtIndex(i)
            if app is not None and app.name == name:
                return app
        time.sleep(0.2)
    return None


def find(root, role, name):
    for i in range(root.childCount):
        child = root.getChildAtIndex(i)
        if child is None:
            continue
        if child.getRole() == role and child.name == name:
            return child
        found = find(child, role, name)
        if found is not None:
            return found
    return None


def wait_for(predicate, deadline):
    value = None
    while time.time() < deadline:
        ok, value = predicate()
        if ok:
            return True, value
        time.sleep(0.1)
    return False, value


def do_action(acc, wanted):
    action = acc.queryAction()
    for i in range(action.nActions):
        if action.getName(i) == wanted:
            return action.doAction(i)
    raise RuntimeError("no %r action among %r" % (
        wanted, [action.getName(i) for i in range(action.nActions)]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    deadline = time.time() + args.timeout
    app = find_app("Newton Live", deadline)
    if app is None:
        print(json.dumps({"error": "Newton Live not on the desktop"}))
        return 2
    ok_button = find(app, pyatspi.ROLE_PUSH_BUTTON, "OK")
    check = find(app, pyatspi.ROLE_CHECK_BOX, "Enable feature")
    text = find(app, pyatspi.ROLE_ENTRY, "Name") or find(app, pyatspi.ROLE_TEXT, "Name")
    if None in (ok_button, check, text):
        print(json.dumps({"error": "widgets not found",
                          "found": [x is not None for x in (ok_button, check, text)]}))
        return 2
    steps = []

    def step(name, act, predicate):
        try:
            act()
            ok, observed = wait_for(predicate, time.time() + 10)
        except Exception as exc:  # a failing call is a result, not a crash
            ok, observed = False, "error: %s" % exc
        steps.append({"step": name, "ok": ok, "observed": observed})

    step("click-ok", lambda: do_action(ok_button, "click"), lambda: (True, "sent"))
    was_checked = check.getState().contains(pyatspi.STATE_CHECKED)
    step("click-check", lambda: do_action(check, "click"),
         lambda: (check.getState().contains(pyatspi.STATE_CHECKED) != was_checked,
                  "checked" if check.getState().contains(pyatspi.STATE_CHECKED) else "not checked"))
    step("set-text", lambda: text.queryEditableText().setTextContents("hello"),
         lambda: (text.queryText().getText(0, -1) == "hello", text.queryText().getText(0, -1)))
    step("set-caret", lambda: text.queryText().setCaretOffset(2),
         lambda: (text.queryText().caretOffset == 2, text.queryText().caretOffset))
    print(json.dumps({"steps": steps}))
    return 0 if all(s["ok"] for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
