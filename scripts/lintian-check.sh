#!/bin/sh
# Runs lintian on the .deb and fails on any error or warning that is neither fixed nor overridden
# with a reason in packaging/debian/lintian-overrides.
#
#   scripts/lintian-check.sh DEB          # the host's lintian (Debian 12: 2.116)
#   scripts/lintian-check.sh DEB ROOT     # the lintian of a root built by scripts/orca-root.sh
#                                         # (Debian unstable's: 2.143)
#
# Every lintian the package meets must accept the same overrides: one that names a tag the
# lintian does not know is an error there (alien-tag), one that excuses nothing is reported.
set -eu
deb=$1
root=${2:-}
fail() { echo "lintian-check: $*" >&2; exit 1; }
[ -f "$deb" ] || fail "no such .deb: $deb"

if [ -z "$root" ]; then
    command -v lintian >/dev/null 2>&1 || fail "lintian is missing; run scripts/install-deps.sh"
    run() { lintian "$@"; }
    where="host"
else
    [ -x "$root/usr/bin/lintian" ] || fail "$root has no lintian: build it with scripts/orca-root.sh"
    # The .deb goes into the root's /tmp for the run, in a directory of its own.
    inside=$(mktemp -d "$root/tmp/lintian-XXXXXX")
    trap 'rm -rf "$inside"' EXIT
    cp "$deb" "$inside/"
    deb=/tmp/$(basename "$inside")/$(basename "$deb")
    run() {
        unshare --mount --propagation private -- /bin/sh -euc '
            root=$1; shift
            mount -t proc proc "$root/proc"
            exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root lintian "$@"
        ' lintian-in-root "$root" "$@"
    }
    where="$root"
fi
echo "== lintian $(run --version | sed 's/^Lintian v//') ($where)"
# One run, overrides shown (O:) with their reasons; every error and warning must be
# fixed or overridden. (--fail-on would count shown overrides too.)
report=$(run --display-info --show-overrides "$deb" 2>&1) || true
printf '%s\n' "$report" | sed 's/^/  /'
if printf '%s\n' "$report" | grep -q '^[EW]: '; then
    fail "lintian found errors or warnings that are neither fixed nor overridden"
fi
if printf '%s\n' "$report" | grep -q 'unused-override'; then
    fail "an override excuses nothing for this lintian: remove it or make it match"
fi
echo "  lintian clean"
