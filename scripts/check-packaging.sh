#!/bin/sh
# Checks the packaging: `make install` into a scratch DESTDIR, lists and
# validates the installed tree (systemd-analyze verify of the user units, the
# preset applied with systemctl --global, desktop-file-validate, the C
# library's example compiled against the installed header, library and
# newton-producer.pc), then builds
# the .deb with cargo-deb, checks its maintainer scripts enable what the
# preset enables, and runs the host's lintian on it (scripts/lintian-check.sh: no error,
# no warning that is not overridden with a reason in packaging/debian/lintian-overrides;
# scripts/test.sh runs Debian unstable's lintian on the same .deb too). CI calls it;
# scripts/install-deps.sh installs systemd, desktop-file-utils and lintian.
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
expect "$PREFIX/lib/systemd/user-preset/80-$NAME.preset"
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
expect "$PREFIX/share/$NAME/compat-rules.json"
expect "$PREFIX/lib/libnewton_producer.so.0"
expect "$PREFIX/lib/libnewton_producer.a"
expect "$PREFIX/include/newton_producer.h"
expect "$PREFIX/lib/pkgconfig/newton-producer.pc"
[ "$(readlink "$DESTDIR$PREFIX/lib/libnewton_producer.so")" = libnewton_producer.so.0 ] \
    || fail "libnewton_producer.so is not a link to libnewton_producer.so.0"
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

need() { command -v "$1" >/dev/null 2>&1 || fail "$1 is missing; run scripts/install-deps.sh"; }

echo "== the C library: capi/examples/hello.c built against the installed tree through pkg-config"
need cc
need pkg-config
pc_dir=$DESTDIR$PREFIX/lib/pkgconfig
grep -q "^libdir=$PREFIX/lib\$" "$pc_dir/newton-producer.pc" || fail "newton-producer.pc's libdir is not $PREFIX/lib"
# The sysroot prefixes DESTDIR to the .pc file's paths, as a staged build would see them.
flags=$(PKG_CONFIG_SYSROOT_DIR=$DESTDIR PKG_CONFIG_LIBDIR=$pc_dir pkg-config --cflags --libs newton-producer) \
    || fail "pkg-config does not read the installed newton-producer.pc"
echo "  pkg-config --cflags --libs newton-producer: $flags"
c_dir=$(mktemp -d)
# shellcheck disable=SC2086 # the flags are words
cc -std=c11 -Wall -Wextra -Werror capi/examples/hello.c $flags -Wl,-rpath,"$DESTDIR$PREFIX/lib" -o "$c_dir/hello" \
    || { rm -rf "$c_dir"; fail "hello.c does not build against the installed C library"; }
readelf -d "$c_dir/hello" | grep -q 'NEEDED.*\[libnewton_producer\.so\.0\]' \
    || { rm -rf "$c_dir"; fail "hello.c is not linked against libnewton_producer.so.0 (the SONAME)"; }
# With no bridge, the program loads the installed library and gets the error back as a value.
out=$(NEWTON_ATSPI_SOCKET="$c_dir/no-bridge.sock" "$c_dir/hello" 2>&1) && status=0 || status=$?
rm -rf "$c_dir"
[ "$status" -eq 1 ] && printf '%s\n' "$out" | grep -q 'NEWTON_STATUS_NO_BRIDGE' \
    || fail "hello.c linked against the installed library did not run as expected (exit $status): $out"
echo "  ok: $out"

need systemd-analyze
need systemctl
need desktop-file-validate

echo "== systemd-analyze --user verify"
# ExecStart must exist for verify: check a copy pointing into DESTDIR.
unit_dir=$(mktemp -d)
sed "s|^ExecStart=$PREFIX/bin/|ExecStart=$DESTDIR$PREFIX/bin/|" \
    "$DESTDIR$PREFIX/lib/systemd/user/$NAME.service" > "$unit_dir/$NAME.service"
cp "$DESTDIR$PREFIX/lib/systemd/user/$NAME.socket" "$unit_dir/$NAME.socket"
# --user needs a runtime directory even when no user manager runs (CI as root).
runtime=${XDG_RUNTIME_DIR:-$unit_dir}
out=$(XDG_RUNTIME_DIR=$runtime systemd-analyze --user verify --man=no "$unit_dir/$NAME.service" "$unit_dir/$NAME.socket" 2>&1) \
    || { rm -rf "$unit_dir"; printf '%s\n' "$out" >&2; fail "systemd-analyze --user verify failed"; }
rm -rf "$unit_dir"
# Anything about our unit's own lines fails, warnings included.
if printf '%s\n' "$out" | grep -i "$NAME"; then fail "systemd-analyze found problems in the unit"; fi
printf '%s\n' "$out" | sed 's/^/  /'
grep -q '^Type=dbus$' "$DESTDIR$PREFIX/lib/systemd/user/$NAME.service" || fail "the unit is not Type=dbus"
grep -q '^BusName=org.freedesktop.a11y.NewtonBridge$' "$DESTDIR$PREFIX/lib/systemd/user/$NAME.service" \
    || fail "the unit lacks BusName="
echo "  unit ok"

echo "== the preset enables the unit (systemctl --global preset in a scratch root)"
root=$(mktemp -d)
mkdir -p "$root/usr/lib/systemd/user" "$root/usr/lib/systemd/user-preset" "$root/etc/systemd/user"
cp "$DESTDIR$PREFIX/lib/systemd/user/"* "$root/usr/lib/systemd/user/"
cp "$DESTDIR$PREFIX/lib/systemd/user-preset/80-$NAME.preset" "$root/usr/lib/systemd/user-preset/"
enabled=$(sed -n 's/^enable[[:space:]]\{1,\}//p' "$root/usr/lib/systemd/user-preset/80-$NAME.preset")
[ -n "$enabled" ] || fail "the preset enables nothing"
# Socket activation is the default (issue 18): systemd holds the socket from
# the start of the session and starts the bridge for the first sender.
case " $enabled " in
  *" $NAME.socket "*) ;;
  *) fail "the preset does not enable $NAME.socket" ;;
esac
for unit in $enabled; do
    systemctl --root="$root" --global preset "$unit"
    [ "$(systemctl --root="$root" --global is-enabled "$unit")" = enabled ] \
        || { rm -rf "$root"; fail "the preset did not enable $unit"; }
done
(cd "$root/etc/systemd/user" && find . -type l | sed 's/^/  /')
rm -rf "$root"
echo "  enabled: $enabled"

echo "== desktop-file-validate"
desktop-file-validate "$DESTDIR/etc/xdg/autostart/$NAME.desktop"
# systemd's xdg-autostart-generator must leave the entry to non-systemd sessions.
grep -q '^X-systemd-skip=true$' "$DESTDIR/etc/xdg/autostart/$NAME.desktop" \
    || fail "the autostart entry lacks X-systemd-skip=true"
echo "  autostart entry ok"

echo "== make uninstall"
make uninstall PREFIX="$PREFIX" DESTDIR="$DESTDIR"
left=$(cd "$DESTDIR" && find . -type f -o -type l | sort)
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
case "$contents" in
  *"./usr/lib/systemd/user-preset/80-$NAME.preset"*) ;;
  *) fail "the .deb lacks the preset" ;;
esac
case "$contents" in
  *"./usr/share/$NAME/compat-rules.json"*) ;;
  *) fail "the .deb lacks the default diff allow rules" ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$DESTDIR" "$tmp"' EXIT
dpkg-deb --extract "$deb" "$tmp"
dpkg-deb --control "$deb" "$tmp/DEBIAN"
grep -q "^ExecStart=/usr/bin/$NAME serve\$" "$tmp/usr/lib/systemd/user/$NAME.service" \
    || fail "the .deb's unit does not start /usr/bin/$NAME"

echo "== maintainer scripts enable what the preset enables"
enabled=$(sed -n 's/^enable[[:space:]]\{1,\}//p' "$tmp/usr/lib/systemd/user-preset/80-$NAME.preset")
# A stand-in deb-systemd-helper records what postinst and postrm ask for.
mkdir "$tmp/stub"
printf '#!/bin/sh\necho "$*" >> "%s/calls"\n' "$tmp" > "$tmp/stub/deb-systemd-helper"
chmod +x "$tmp/stub/deb-systemd-helper"
PATH="$tmp/stub:$PATH" sh -e "$tmp/DEBIAN/postinst" configure
for unit in $enabled; do
    grep -qx -- "--user enable $unit" "$tmp/calls" || fail "postinst does not enable $unit"
done
# And the real deb-systemd-helper enables it into a scratch root (DPKG_ROOT).
for unit in $enabled; do
    DPKG_ROOT=$tmp DPKG_MAINTSCRIPT_PACKAGE=$NAME DPKG_MAINTSCRIPT_NAME=postinst \
        deb-systemd-helper --user enable "$unit"
done
find "$tmp/etc/systemd/user" -type l | sed "s|^$tmp|  |"
[ -n "$(find "$tmp/etc/systemd/user" -type l)" ] || fail "deb-systemd-helper enabled nothing"
sed -n '/^Files: \*/,/^$/p' "$tmp/usr/share/doc/$NAME/copyright" | sed 's/^/  /'
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
    "$tmp/usr/share/doc/$NAME/copyright" || fail "the copyright file is not machine-readable"
echo "  $(grep -c '^Files: vendor/' "$tmp/usr/share/doc/$NAME/copyright") third-party crates in the copyright file"

scripts/lintian-check.sh "$deb"
echo "check-packaging: all good"
