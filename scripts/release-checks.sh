#!/usr/bin/env bash
# The release-profile checks that need no test session: the daemon's offline build from vendor/
# (scripts/check-vendored.sh; the Orca 48.1 pass runs that binary), the fuzz harness's stable
# runner (built here, run by scripts/test.sh), the C header against cbindgen's output (a debug
# build in target/capi-header), the .deb with lintian (scripts/check-packaging.sh, packaging the
# offline-built binary), and the licence check (cargo-about, scripts/licenses.sh). Everything goes
# to target/release
# and cargo's own directories; nothing here reads the test session or the display.
#
#   scripts/release-checks.sh
#
# scripts/test.sh runs it in the background at the lowest CPU and I/O priority while the tests
# run (they spend most of their time waiting on Orca), then prints its output and its
# "[timing] release checks: ..." lines.
set -euo pipefail
cd "$(dirname "$0")/.."

part_start=$SECONDS
part() {
  echo "[timing] release checks: $1: $((SECONDS - part_start)) s"
  part_start=$SECONDS
}

# First, since the Orca 48.1 pass waits for its binary.
echo "==> vendored offline build (make vendor, then the daemon's release build from vendor/ alone)"
# Before packaging: the .deb below is packaged from this offline-built binary.
scripts/check-vendored.sh
part "vendored offline build"
# The Orca pass waits for this binary, not for the rest (scripts/orca-pass.sh).
if [[ -n "${NEWTON_RELEASE_BINARY_READY:-}" ]]; then
  touch "$NEWTON_RELEASE_BINARY_READY"
fi

echo "==> fuzz harness, stable runner (its own workspace, fuzz/Cargo.toml, sharing target/)"
(cd fuzz && cargo build --locked --release --bin fuzz-replay)
part "fuzz-replay release build"

echo "==> the C header: cbindgen regenerates capi/include/newton_producer.h from capi/src (capi/header, its own workspace)"
# Here and not in the workspace's tests: cbindgen's dependencies would change the features the
# workspace's crates are built with (capi/header/Cargo.toml says why that costs).
# From its directory, so that its .cargo/config.toml (target/capi-header) applies.
(cd capi/header && cargo test --locked)
part "C header check"

echo "==> packaging: make install into a scratch DESTDIR, then the .deb and lintian"
scripts/check-packaging.sh
part "packaging"

echo "==> cargo-about (for the licence check)"
if ! command -v cargo-about >/dev/null 2>&1; then
  cargo install --locked cargo-about --version 0.9.3 --features cli
fi
part "cargo-about installed"

# Here rather than after the tests: it mostly waits on the registry (cargo fetch) and costs the
# tests nothing, while at the end of scripts/test.sh it added its whole time to the run.
echo "==> licences: packaging/debian/copyright matches Cargo.lock (cargo-about)"
scripts/licenses.sh --check
part "licence check"
