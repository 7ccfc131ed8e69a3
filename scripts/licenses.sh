#!/bin/sh
# Regenerates packaging/debian/copyright (the .deb's machine-readable copyright
# file: our licence and every crate in Cargo.lock with its licence) with
# cargo-about (about.toml) and scripts/copyright.py.
#
#   scripts/licenses.sh           # rewrite packaging/debian/copyright
#   scripts/licenses.sh --check   # fail when it does not match Cargo.lock (CI)
#
# Needs cargo-about: cargo install --locked cargo-about --version 0.9.3 --features cli
set -eu
cd "$(dirname "$0")/.."
out=packaging/debian/copyright
json=$(mktemp)
new=$(mktemp)
trap 'rm -f "$json" "$new"' EXIT

start=$(date +%s)
# Every locked crate (all platforms) into cargo's registry cache, so
# cargo-about can read each one's licence files and copyright.py the
# manifests of crates outside the build graph; then no network at all
# (--frozen: cargo offline, and no web service for licence data).
cargo fetch --locked --quiet
cargo about generate --workspace --frozen --format json -o "$json"
python3 scripts/copyright.py Cargo.lock < "$json" > "$new"
crates=$(grep -c '^Files: vendor/' "$new")
locked=$(grep -c '^source = "registry+' Cargo.lock)
[ "$crates" -eq "$locked" ] || {
    echo "licenses: $crates crates inventoried, but Cargo.lock has $locked from the registry" >&2
    exit 1
}
if [ "${1:-}" = --check ]; then
    if ! cmp -s "$new" "$out"; then
        diff -u "$out" "$new" | head -n 40 >&2 || true
        echo "licenses: $out is stale; run scripts/licenses.sh and commit it" >&2
        exit 1
    fi
    echo "licenses: $out lists all $crates locked crates ($(( $(date +%s) - start )) s)"
else
    cp "$new" "$out"
    echo "licenses: wrote $out ($crates crates)"
fi
