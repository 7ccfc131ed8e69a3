#!/bin/sh
# Checks the documented offline build (README, "For packagers"): `make vendor`
# copies every crate in Cargo.lock into vendor/, then the daemon is built —
# release, exactly the README's `make CARGOFLAGS="--offline --config
# vendor/config.toml"` — from vendor/ alone: --offline, --locked, and an
# empty CARGO_HOME so the registry cache cannot help.
#
# The binary lands where `make` always puts it (target/release/), so
# scripts/test.sh runs this before scripts/check-packaging.sh and the .deb
# CI checks is packaged from the offline build (make's `generate` and `deb`
# reuse an existing binary instead of building a second one).
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
make vendor
echo "vendored $(ls vendor | grep -vc '^config.toml$') crates in $(( $(date +%s) - start )) s"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
# `make build` always runs cargo (a binary from an earlier online build is
# rebuilt if its sources differ, and is otherwise proven reproducible offline).
CARGO_HOME=$home make build CARGOFLAGS="--offline --config vendor/config.toml"
bin=${CARGO_TARGET_DIR:-target}/release/newton-atspi-bridge
"$bin" --version
echo "check-vendored: offline release build from vendor/ ok in $(( $(date +%s) - start )) s"
