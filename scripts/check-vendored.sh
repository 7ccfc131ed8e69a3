#!/bin/sh
# Checks the documented offline build (README, "For packagers"): `make vendor`
# copies every crate in Cargo.lock into vendor/, then the daemon is checked
# from vendor/ alone — --offline, --locked, and an empty CARGO_HOME so the
# registry cache cannot help. `cargo check` (not build) keeps the CI cost
# bounded: it resolves, unpacks, verifies the vendored checksums and
# type-checks every crate the daemon needs, without code generation.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
make vendor
echo "vendored $(ls vendor | grep -vc '^config.toml$') crates in $(( $(date +%s) - start )) s"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
CARGO_HOME=$home cargo check --offline --locked --config vendor/config.toml \
    -p newton-atspi-bridge --target-dir "${CARGO_TARGET_DIR:-target}/vendored"
echo "check-vendored: offline build from vendor/ ok in $(( $(date +%s) - start )) s"
