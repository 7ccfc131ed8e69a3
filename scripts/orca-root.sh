#!/usr/bin/env bash
# Builds a Debian root holding another Orca and at-spi2-core, a further real screen reader the
# end-to-end tests run (NEWTON_ORCA_ROOT, tests/README.md "Orca 48 and 51"):
#   trixie (Debian 13): Orca 48.1, at-spi2-core 2.56      (default DIR target/orca48-root)
#   sid (Debian unstable): Orca 51.1, at-spi2-core 2.62   (default DIR target/orca51-root)
# Packages come from the Debian registry; nothing is cached outside the directory, so CI builds
# it fresh every run.
#
#   scripts/orca-root.sh [--fresh] SUITE [DIR]   (SUITE: trixie or sid; DIR is printed last)
#
# Idempotent: a finished root carries DIR/.newton-orca-root-ready and is left alone (--fresh:
# removed and built again, as CI does); a half-built one (interrupted run) is removed and built
# again. Needs root (debootstrap, chroot) and debootstrap (scripts/install-deps.sh). While apt
# runs inside, /proc and /dev are mounted in a private mount namespace (unshare), so they vanish
# with it even if the script is killed: nothing stays mounted.
set -euo pipefail
cd "$(dirname "$0")/.."

fresh=0
if [[ "${1:-}" == "--fresh" ]]; then
  fresh=1
  shift
fi
SUITE=${1:-}
case "$SUITE" in
  trixie) DEFAULT_DIR=target/orca48-root ;;
  sid) DEFAULT_DIR=target/orca51-root ;;
  *)
    echo "orca-root: give the suite: trixie (Orca 48.1) or sid (Orca 51.1); see the script's header" >&2
    exit 2
    ;;
esac
DIR=${2:-$DEFAULT_DIR}
MIRROR=${NEWTON_DEBIAN_MIRROR:-http://deb.debian.org/debian}
STAMP=.newton-orca-root-ready
# What the tests need inside: Orca and its libatspi, the AT-SPI bus and registry, pyatspi for the
# Python helpers, Xlib tools Orca calls (xkbcomp via x11-xkb-utils, xmodmap), speech-dispatcher
# (its dummy module: speech unavailable, SPEECH OUTPUT still logged), procps (Orca's pgrep);
# lintian, so that the package is checked by this suite's lintian too (scripts/check-packaging.sh).
PACKAGES=(
  orca at-spi2-core python3-pyatspi gir1.2-atspi-2.0 python3-gi python3-dbus
  xvfb x11-utils x11-xkb-utils x11-xserver-utils dbus-daemon dbus-bin
  speech-dispatcher python3-speechd procps lintian
)
# The registry's unstable Release file can be past its Valid-Until date; apt then refuses it.
APT_OPTIONS=(-o Acquire::Check-Valid-Until=false)

if [[ $(id -u) -ne 0 ]]; then
  echo "orca-root: needs root (debootstrap and chroot)" >&2
  exit 1
fi
command -v debootstrap >/dev/null || {
  echo "orca-root: debootstrap missing: run scripts/install-deps.sh" >&2
  exit 1
}

mkdir -p "$(dirname "$DIR")"
DIR=$(cd "$(dirname "$DIR")" && pwd)/$(basename "$DIR")
if [[ $fresh -eq 0 && -f $DIR/$STAMP ]]; then
  echo "orca-root: ready: $(cat "$DIR/$STAMP")"
  echo "$DIR"
  exit 0
fi

# A leftover (interrupted build, or --fresh): its mounts died with their namespace, so removing
# it cannot reach the host (checked anyway: refuse if anything is still mounted below it).
if [[ -e $DIR ]]; then
  if findmnt -rn -o TARGET | grep -q "^$DIR/"; then
    echo "orca-root: something is mounted below $DIR; unmount it first" >&2
    exit 1
  fi
  rm -rf --one-file-system "$DIR"
fi

start=$SECONDS
echo "orca-root: debootstrap --variant=minbase $SUITE $DIR (Debian registry)"
debootstrap --variant=minbase "$SUITE" "$DIR" "$MIRROR" > "$DIR.debootstrap.log" 2>&1 || {
  tail -n 30 "$DIR.debootstrap.log" >&2
  echo "orca-root: debootstrap failed (log: $DIR.debootstrap.log)" >&2
  exit 1
}
rm -f "$DIR.debootstrap.log"
bootstrap_s=$((SECONDS - start))

# libdbus refuses to work without a machine id.
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$DIR/etc/machine-id"
echo >> "$DIR/etc/machine-id"

echo "orca-root: apt-get install ${PACKAGES[*]}"
unshare --mount --propagation private -- /bin/sh -euc '
  root=$1; shift
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  run() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
  o1=$1 o2=$2; shift 2
  run apt-get "$o1" "$o2" update -q
  run apt-get "$o1" "$o2" install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "$@"
  run apt-get clean
' orca-root "$DIR" "${APT_OPTIONS[@]}" "${PACKAGES[@]}" > "$DIR.apt.log" 2>&1 || {
  tail -n 30 "$DIR.apt.log" >&2
  echo "orca-root: apt-get install failed (log: $DIR.apt.log)" >&2
  exit 1
}
rm -f "$DIR.apt.log"

version() { chroot "$DIR" dpkg-query -W -f='${Version}' "$1"; }
echo "$SUITE: orca $(version orca), at-spi2-core $(version at-spi2-core), lintian $(version lintian) (debootstrap ${bootstrap_s} s, total $((SECONDS - start)) s)" \
  > "$DIR/$STAMP"
echo "orca-root: built: $(cat "$DIR/$STAMP")"
echo "$DIR"
