#!/usr/bin/env bash
# Runs a program built on the host inside a Debian root made by scripts/orca-root.sh, with the
# root's own libraries, at-spi2-core and D-Bus: what a user of that release gets.
#
#   scripts/in-root.sh ROOT PROGRAM [ARGS...]
#
# PROGRAM's directory is bind-mounted at /opt/newton-host inside; /proc and /dev are mounted too.
# Everything is mounted in a private mount namespace (unshare), so it all vanishes when the
# program ends, however it ends. The environment is cleared to PATH, LANG and HOME: no bus of the
# host leaks in. Needs root.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: scripts/in-root.sh ROOT PROGRAM [ARGS...]" >&2
  exit 2
fi
root=$(realpath "$1")
program=$(realpath "$2")
shift 2
[[ -f $root/.newton-orca-root-ready ]] || {
  echo "in-root: $root is not a finished root: build it with scripts/orca-root.sh" >&2
  exit 1
}
mkdir -p "$root/opt/newton-host"
exec unshare --mount --propagation private -- /bin/sh -euc '
  root=$1; program=$2; shift 2
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --bind "$(dirname "$program")" "$root/opt/newton-host"
  exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root \
    "/opt/newton-host/$(basename "$program")" "$@"
' in-root "$root" "$program" "$@"
