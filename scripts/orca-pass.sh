#!/usr/bin/env bash
# One Orca pass from a Debian root: the Orca tests again under the root's Orca and at-spi2-core
# (launcher, registry, libatspi) with the release bridge the package ships.
#
#   scripts/orca-pass.sh NAME ROOT [READY_FILE RELEASE_PID]
#
# NAME labels the pass in the test summary (orca48, orca51). With READY_FILE, it first waits until that
# file exists: scripts/release-checks.sh writes it once target/release/newton-atspi-bridge is
# built from vendor/, so the pass can start while the workspace's tests still run (each Orca
# lives in a PID namespace of its own and takes its own version's lock: tests/src/orca.rs). It
# gives up if RELEASE_PID ends first. Which tests run and why: tests/README.md "Orca 48 and 51".
set -euo pipefail
cd "$(dirname "$0")/.."

name=$1 root=$2 ready=${3:-} release_pid=${4:-}
start=$SECONDS
if [[ -n "$ready" ]]; then
  while [[ ! -e "$ready" ]]; do
    if [[ -n "$release_pid" ]] && ! kill -0 "$release_pid" 2>/dev/null; then
      echo "orca-pass.sh: the release checks ended before the release binary was built (their log: target/release-checks.log)" >&2
      exit 1
    fi
    sleep 2
  done
  echo "[$name] the release binary was ready after $((SECONDS - start)) s"
fi

# The root's launcher and registry too (NEWTON_ATSPI_ROOT): its whole at-spi2-core.
export NEWTON_ORCA_ROOT="$PWD/$root" NEWTON_ATSPI_ROOT="$PWD/$root"
export NEWTON_BRIDGE_BIN="$PWD/target/release/newton-atspi-bridge"
# Tags this pass's lines in the test summary, which the pass under the host's Orca writes too.
export NEWTON_SUMMARY_PASS="$name"
status=0
cargo test --locked -p newton-e2e --no-fail-fast \
  --test orca_bridge --test bridge_orca --test live_app --test live_egui --test live_eframe \
  --test orca_listener --test reconnect --test orca_gtk --test c_producer || status=$?
# Structural navigation and speech parity (every fixture).
cargo test --locked -p newton-e2e --no-fail-fast \
  --test orca_structural --test speech_parity || status=$?
echo "[$name] tests ran in $((SECONDS - start)) s (exit status $status)"
exit "$status"
