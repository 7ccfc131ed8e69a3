#!/usr/bin/env bash
# Runs the stable fuzz runner and keeps its output as evidence: every execution count quoted in
# docs/ comes from a log written by this script and committed in fuzz/logs/.
#
#   fuzz/log-run.sh NAME [fuzz-replay arguments...]
#
# Builds fuzz-replay (release, in fuzz/), runs it from fuzz/ with the arguments, and writes
# fuzz/logs/NAME.log: the date, the commit, the exact command, its output and exit status.
set -euo pipefail
cd "$(dirname "$0")"
name=${1:?usage: fuzz/log-run.sh NAME [fuzz-replay arguments...]}
shift
cargo build --locked --release --bin fuzz-replay
log="logs/$name.log"
mkdir -p logs
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src fuzz_targets Cargo.toml ../cache/src ../protocol/src ../atspi-shim/src || echo ' (with uncommitted changes)')"
  echo "# (in fuzz/) ../target/release/fuzz-replay $*"
} > "$log"
status=0
../target/release/fuzz-replay "$@" 2>&1 | grep -v '^atspi_calls: replica ' >> "$log" || status=$?
echo "# exit status $status" >> "$log"
cat "$log"
exit "$status"
