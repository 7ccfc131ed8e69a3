#!/bin/sh
# Checks the packaging: `make install` into a scratch DESTDIR, lists and
# validates the installed tree (systemd-analyze verify, desktop-file-validate
# when available), then builds the .deb with cargo-deb and lists its
# contents. CI calls it; it needs only cargo, make and a POSIX shell.
#
#   scripts/check-packaging.sh            # installs cargo-deb when missing
#   NO_DEB=1 scripts/check-packaging.sh   # skip the .deb
set -eu

cd "$(dirname "$0")/.."
NAME=newton-atspi-bridge
PREFIX=/usr/local
DESTDIR=$(mktemp -d)
trap 'rm -rf "$DESTDIR"' EXIT

fail() { echo "check-packaging: $*" >&2; exit 1; }

echo "== make install PREFIX=$PREFIX DESTDIR=$DESTDIR"
make install PREFIX="$PREFIX" DESTDIR="$DESTDIR"

echo "== installed tree"
(cd "$DESTDIR" && find . -type f -o -type l | sort)

expect() {
    [ -f "$DESTDIR$1" ] || fail "missing $1"
}
expect "$PREFIX/bin/$NAME"
expect "$PREFIX/lib/systemd/user/$NAME.service"
expect "$PREFIX/lib/systemd/user/$NAME.socket"
expect "$PREFIX/share/dbus-1/services/org.freedesktop.a11y.NewtonBridge.service"
expect "/etc/xdg/autostart/$NAME.desktop"
expect "$PREFIX/share/man/man1/$NAME.1"
expect "$PREFIX/share/man/man1/$NAME-serve.1"
expect "$PREFIX/share/man/man1/$NAME-record.1"
expect "$PREFIX/share/man/man1/$NAME-diff.1"
expect "$PREFIX/share/man/man1/$NAME-status.1"
expect "$PREFIX/share/bash-completion/completions/$NAME"
expect "$PREFIX/share/zsh/site-functions/_$NAME"
expect "$PREFIX/share/fish/vendor_completions.d/$NAME.fish"
[ -x "$DESTDIR$PREFIX/bin/$NAME" ] || fail "the binary is not executable"
grep -q "^ExecStart=$PREFIX/bin/$NAME serve\$" "$DESTDIR$PREFIX/lib/systemd/user/$NAME.service" \
    || fail "the unit's ExecStart does not point at $PREFIX/bin"
if grep -rq '@bindir@' "$DESTDIR"; then fail "an @bindir@ placeholder was not substituted"; fi

echo "== the installed binary runs"
"$DESTDIR$PREFIX/bin/$NAME" --version
"$DESTDIR$PREFIX/bin/$NAME" status --help >/dev/null

if command -v man >/dev/null 2>&1; then
    echo "== man page renders"
    MANWIDTH=80 man -l "$DESTDIR$PREFIX/share/man/man1/$NAME-diff.1" 2>&1 | head -n 5
fi

if command -v systemd-analyze >/dev/null 2>&1; then
    echo "== systemd-analyze verify"
    # ExecStart must exist for verify: check a copy pointing into DESTDIR.
    unit_dir=$(mktemp -d)
    sed "s|^ExecStart=$PREFIX/bin/|ExecStart=$DESTDIR$PREFIX/bin/|" \
        "$DESTDIR$PREFIX/lib/systemd/user/$NAME.service" > "$unit_dir/$NAME.service"
    cp "$DESTDIR$PREFIX/lib/systemd/user/$NAME.socket" "$unit_dir/$NAME.socket"
    out=$(systemd-analyze verify --man=no "$unit_dir/$NAME.service" "$unit_dir/$NAME.socket" 2>&1) || true
    rm -rf "$unit_dir"
    # Outside a user session verify may only complain about the missing
    # graphical-session targets; anything about our unit's own lines fails.
    printf '%s\n' "$out" | grep -v 'graphical-session' | grep -i "$NAME.s" \
        && fail "systemd-analyze found problems in the unit"
    printf '%s\n' "$out" | sed 's/^/  /'
    echo "  unit ok"
else
    echo "== systemd-analyze not installed; unit not verified"
fi

if command -v desktop-file-validate >/dev/null 2>&1; then
    echo "== desktop-file-validate"
    desktop-file-validate "$DESTDIR/etc/xdg/autostart/$NAME.desktop"
    echo "  autostart entry ok"
else
    echo "== desktop-file-validate not installed (desktop-file-utils); autostart entry not validated"
fi

echo "== make uninstall"
make uninstall PREFIX="$PREFIX" DESTDIR="$DESTDIR"
left=$(cd "$DESTDIR" && find . -type f | sort)
[ -z "$left" ] || fail "make uninstall left files behind: $left"
echo "  nothing left"

if [ "${NO_DEB:-}" = 1 ]; then
    echo "== .deb skipped (NO_DEB=1)"
    exit 0
fi
if ! command -v cargo-deb >/dev/null 2>&1; then
    echo "== installing cargo-deb"
    cargo install cargo-deb --locked
fi
echo "== make deb ($(cargo deb --version 2>/dev/null || echo cargo-deb))"
make deb
deb=$(ls -t "${CARGO_TARGET_DIR:-target}"/debian/${NAME}_*.deb | head -n 1)
echo "== $deb"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
# Listed once into a variable and matched with `case`: `grep -q` on a pipe closes it early and
# dpkg-deb reports the broken pipe as an error.
contents=$(dpkg-deb --contents "$deb")
printf '%s\n' "$contents"
case "$(dpkg-deb --field "$deb" Depends)" in
  *at-spi2-core*) ;;
  *) fail "the .deb does not depend on at-spi2-core" ;;
esac
case "$contents" in
  *"./usr/lib/systemd/user/$NAME.service"*) ;;
  *) fail "the .deb lacks the unit" ;;
esac
case "$contents" in
  *"./usr/lib/systemd/user/$NAME.socket"*) ;;
  *) fail "the .deb lacks the socket unit" ;;
esac
tmp=$(mktemp -d)
dpkg-deb --extract "$deb" "$tmp"
grep -q "^ExecStart=/usr/bin/$NAME serve\$" "$tmp/usr/lib/systemd/user/$NAME.service" \
    || { rm -rf "$tmp"; fail "the .deb's unit does not start /usr/bin/$NAME"; }
rm -rf "$tmp"
echo "check-packaging: all good"
