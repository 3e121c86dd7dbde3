#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Set-up failures of a new machine stop with one clear line naming what
# failed, never silently: registry unreachable, a package apt does not know,
# a bad entry in scripts/debian-packages.list, the KVM headers package not
# installed yet (it once ended build-kvm-modules.sh without a word), and a
# missing command named with its package.  apt-get, apt-cache and dpkg-query
# are stubs here; nothing is installed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$root/tests/common/checks.sh"

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the set-up scripts install packages only as root"
    exit 77
fi

mkdir -p "$tmp/bin"
cat >"$tmp/bin/apt-get" <<'STUB'
#!/bin/sh
case "$1:$STUB_APT" in
update:update-fails) echo "E: Failed to fetch dists/bookworm/InRelease (stub: registry unreachable)" >&2; exit 100 ;;
update:*) exit 0 ;;
install:*) for a; do last=$a; done
           echo "E: Unable to locate package $last" >&2; exit 100 ;;
esac
exit 0
STUB
# A bare root has no package lists until apt-get update: apt-cache fails.
cat >"$tmp/bin/apt-cache" <<'STUB'
#!/bin/sh
[ "$STUB_APT" = update-fails ] && { echo "E: No packages found" >&2; exit 100; }
case "$1" in
depends) printf 'linux-image-amd64\n  Depends: linux-image-6.1.0-99-amd64\n' ;;
esac
exit 0
STUB
cat >"$tmp/bin/dpkg-query" <<'STUB'
#!/bin/sh
echo "dpkg-query: no packages found matching $3" >&2
exit 1
STUB
chmod +x "$tmp/bin"/*

# expect_error WHAT PATTERN SCRIPT [ARGS]: SCRIPT, with the stubs, fails
# naming what failed in one line.
expect_error() {
    local what=$1 pattern=$2
    shift 2
    expect_one_error "$what" "$pattern" env QEMU_LWP_CACHE="$tmp/cache" QEMU_LWP_BUILD="$tmp/build" \
        QEMU_LWP_PKG_STAMP="$tmp/stamp" PATH="$tmp/bin:$PATH" bash "$@"
}

fresh_tree() {
    rm -rf "$tmp/tree" "$tmp/build" "$tmp/cache"
    mkdir -p "$tmp/tree" "$tmp/cache"
    cp -r "$root/scripts" "$root/patches" "$tmp/tree/"
}

fresh_tree
STUB_APT=update-fails expect_error "no package lists yet, unreachable registry: the registry is named" \
    "apt-get update failed: the Debian registry is not reachable" "$tmp/tree/scripts/setup-host.sh"

fresh_tree
echo "no-such-package-qemu-lwp" >>"$tmp/tree/scripts/debian-packages.list"
STUB_APT= expect_error "a package apt does not know is named" \
    "no package no-such-package-qemu-lwp" "$tmp/tree/scripts/setup-host.sh"

fresh_tree
echo "linux-tools-@KERNEL_VERSION@" >>"$tmp/tree/scripts/debian-packages.list"
STUB_APT= expect_error "an unknown placeholder in the package list is named" \
    "unknown placeholder or suite in: linux-tools-@KERNEL_VERSION@" "$tmp/tree/scripts/setup-host.sh"

fresh_tree
STUB_APT= expect_error "KVM headers not installed yet: their installation is tried and named" \
    "apt-get install .*linux-headers-6.1.0-99-amd64 failed" "$tmp/tree/scripts/build-kvm-modules.sh"

fresh_tree
out=$(bash -c '. "$1/scripts/lib.sh"; need_cmd qemu-lwp-no-such-command some-package' _ "$tmp/tree" 2>&1)
grep -q "^qemu-lwp: error: command 'qemu-lwp-no-such-command' is missing: install the Debian package some-package" <<<"$out"
report $? "a missing command names its Debian package"

fresh_tree
out=$(bash -c 'set -euo pipefail; . "$1/scripts/lib.sh"; false; echo not reached' _ "$tmp/tree" 2>&1)
grep -q "^qemu-lwp: error: .*'false' failed (exit status 1)" <<<"$out" && ! grep -q "not reached" <<<"$out"
report $? "an unexpected failure in a script is named, not silent"

summary_exit
