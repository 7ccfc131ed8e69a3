#!/usr/bin/env bash
# Runs the bridge demo on a fresh Debian 12 machine with only Rust:
# installs what the demo needs (dbus-daemon, at-spi2-core), builds the
# bridge, then starts private buses, replays the bundled egui recording and
# prints what a screen reader sees. Extra arguments go to `demo`.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v dbus-daemon >/dev/null || need+=(dbus-daemon)
[ -x /usr/libexec/at-spi-bus-launcher ] || need+=(at-spi2-core)
if [ ${#need[@]} -gt 0 ]; then
    echo "demo: installing ${need[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

cargo build --release --locked -q -p newton-atspi-bridge
exec target/release/newton-atspi-bridge demo "$@"
