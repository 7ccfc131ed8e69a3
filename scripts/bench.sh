#!/usr/bin/env bash
# The benchmark suite in one command: builds release binaries (bridge, legacy reference when it
# is in the workspace, newton-bench) and runs every benchmark on private buses.
#
#   scripts/bench.sh [--smoke] [--out DIR]
#     --smoke  tiny trees and iteration counts (< 2 minutes); fails only if a benchmark cannot run
#     --out    where results go (default target/bench/)
#   Needs dbus-daemon and at-spi2-core (scripts/install-deps.sh installs them). No X server.
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
  esac
done

packages=(-p newton-atspi-bridge -p newton-bench)
if [[ -f legacy/Cargo.toml ]]; then
  packages+=(-p newton-legacy-reference)
fi

echo "==> building release binaries: ${packages[*]}"
cargo build --release --locked "${packages[@]}"

echo "==> running the suite (progress on stderr)"
NEWTON_BRIDGE_BIN="$PWD/target/release/newton-atspi-bridge" target/release/newton-bench "$@"
