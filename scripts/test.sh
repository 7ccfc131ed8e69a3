#!/usr/bin/env bash
# THE test command (see README): installs the Debian packages the tests need, checks formatting
# and lints, builds everything and runs every test, end-to-end tests with a real Orca included.
#
#   scripts/test.sh [--no-lint] [--no-deps]
#     --no-lint  skip `cargo fmt --check` and `cargo clippy`
#     --no-deps  skip scripts/install-deps.sh
#   NEWTON_E2E_SKIP_ORCA=1  skip (loudly) the Orca tests; NEWTON_E2E_KEEP=1 keeps session dirs.
set -euo pipefail
cd "$(dirname "$0")/.."

lint=1
deps=1
for arg in "$@"; do
  case "$arg" in
    --no-lint) lint=0 ;;
    --no-deps) deps=0 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

step() { printf '\n==> %s\n' "$*"; }
start=$SECONDS

if [[ $deps -eq 1 ]]; then
  step "Debian packages"
  scripts/install-deps.sh
fi

if [[ $lint -eq 1 ]]; then
  if command -v rustup >/dev/null 2>&1; then
    rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
    rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
  fi
  step "cargo fmt --check"
  cargo fmt --all --check
  step "cargo clippy"
  cargo clippy --locked --workspace --all-targets -- -D warnings
fi

step "cargo build --locked --workspace --all-targets"
# Builds newton-atspi-bridge too: the e2e tests run target/<profile>/newton-atspi-bridge.
cargo build --locked --workspace --all-targets

step "cargo test --locked --workspace"
# The parity test rewrites this table; an old one must not be shown as this run's.
rm -f target/tmp/parity-latency.txt
# --no-fail-fast: report every failing test binary, not just the first.
cargo test --locked --workspace --no-fail-fast

# Reported, not asserted: written by legacy/tests/parity.rs (latency_of_the_same_queries_on_both_paths_is_reported).
if [[ -f target/tmp/parity-latency.txt ]]; then
  step "legacy (accesskit_unix) versus bridged latency"
  cat target/tmp/parity-latency.txt
fi

step "benchmark suite, smoke mode (tiny trees; fails only if a benchmark cannot run, never on speed)"
# Debug binaries from the build above; the full suite is scripts/bench.sh (docs/benchmarks.md).
target/debug/newton-bench --smoke --out target/bench-smoke

step "packaging: make install into a scratch DESTDIR, then the .deb and lintian"
scripts/check-packaging.sh

step "licences: packaging/debian/copyright matches Cargo.lock (cargo-about)"
if ! command -v cargo-about >/dev/null 2>&1; then
  about_start=$SECONDS
  cargo install --locked cargo-about --version 0.9.3 --features cli
  echo "cargo-about installed in $((SECONDS - about_start)) s"
fi
scripts/licenses.sh --check

step "vendored offline build (make vendor, cargo check --offline against vendor/)"
scripts/check-vendored.sh

step "all checks passed in $((SECONDS - start)) s"
