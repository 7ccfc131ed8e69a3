#!/usr/bin/env bash
# Installs every Debian 12 package the build and the end-to-end tests need — the one place the
# list lives. Runs apt-get only when something is missing (apt-get update first), as root or via
# sudo, non-interactively. Usage: scripts/install-deps.sh [--check]   (--check: list missing, exit 1)
set -euo pipefail

# Test-time packages (the Rust crates themselves need no system libraries to build; winit in
# live-app loads the X11 libraries below at run time):
PACKAGES=(
  dbus-daemon dbus-bin dbus-x11   # private session bus (dbus-daemon), dbus-monitor for debugging
  libglib2.0-bin                  # gdbus, for debugging sessions by hand
  at-spi2-core                    # at-spi-bus-launcher, at-spi2-registryd
  xvfb xdotool libxtst6 x11-utils # headless X server; window focus and real keys (XTEST: bench key injector); xev: the stand-in focused window
  orca speech-dispatcher python3-speechd  # the screen reader under test (speech via the dummy module)
  python3 python3-gi python3-dbus python3-pyatspi gir1.2-atspi-2.0  # tests/py scripts
  gir1.2-gtk-3.0 libatk-adaptor fonts-dejavu-core                   # GTK3 reference app
  systemd                         # systemd-socket-activate: the socket-activation test
  bubblewrap                      # bwrap: the live app sandboxed with no bus (tests/tests/sandbox.rs)
  debootstrap                     # scripts/orca-root.sh: the Debian 13 and unstable roots (Orca 48.1, 51.1)
  libx11-6 libx11-xcb1 libxcb1 libxkbcommon-x11-0 libxcursor1 libxrandr2 libxi6  # live-app (winit loads them at run time)
  libgl1-mesa-dri libglx-mesa0 libegl1 libegl-mesa0 fonts-dejavu-core  # live-egui: software GL (llvmpipe) under Xvfb, DejaVu loaded at run time
  init-system-helpers desktop-file-utils lintian  # scripts/check-packaging.sh (units, preset, .deb)
  gcc libc6-dev pkg-config        # C ABI (capi/): its C example and C-level test are compiled with cc via newton-producer.pc
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
  echo "install-deps: missing: ${missing[*]}"
  exit 1
fi

if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
# Recommends stay on: the tests were verified against a default Orca install.
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
