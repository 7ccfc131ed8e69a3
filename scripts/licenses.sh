#!/bin/sh
# Regenerates packaging/debian/copyright (the .deb's machine-readable copyright
# file: our licence and every crate in Cargo.lock with its licence) with
# cargo-about (about.toml) and scripts/copyright.py.
#
#   scripts/licenses.sh           # rewrite packaging/debian/copyright
#   scripts/licenses.sh --check   # fail when it does not match Cargo.lock (CI)
#
# Needs cargo-about: cargo install --locked cargo-about --features cli
set -eu
cd "$(dirname "$0")/.."
out=packaging/debian/copyright
json=$(mktemp)
new=$(mktemp)
trap 'rm -f "$json" "$new"' EXIT

cargo about generate --workspace --locked --format json -o "$json"
python3 scripts/copyright.py < "$json" > "$new"
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
    echo "licenses: $out lists all $crates locked crates"
else
    cp "$new" "$out"
    echo "licenses: wrote $out ($crates crates)"
fi
