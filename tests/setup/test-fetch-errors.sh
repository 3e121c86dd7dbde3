#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Set-up failures must stop with one clear line naming what failed:
# registry unreachable, checksum mismatch, missing and conflicting patches.
# Runs scripts/fetch-qemu.sh from a scratch copy of scripts/ and patches/.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
real_cache=${QEMU_LWP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qemu-lwp}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$root/tests/common/checks.sh"

# expect NAME PATTERN -- run fetch-qemu.sh in a scratch tree, expect failure
# and exactly one 'qemu-lwp: error:' line matching PATTERN.
expect_error() {
    expect_one_error "$1" "$2" env QEMU_LWP_CACHE="$tmp/cache" QEMU_LWP_BUILD="$tmp/build" \
        PATH="$tmp/bin:$PATH" bash "$tmp/tree/scripts/fetch-qemu.sh"
}

fresh_tree() {
    rm -rf "$tmp/tree" "$tmp/build" "$tmp/cache" "$tmp/bin"
    mkdir -p "$tmp/tree" "$tmp/cache" "$tmp/bin"
    cp -r "$root/scripts" "$root/patches" "$tmp/tree/"
    mkdir -p "$tmp/tree/target-i386-lwp" "$tmp/tree/hw"
}

# 1. The registry cannot be reached: apt-get fails.
fresh_tree
printf '#!/bin/sh\necho "E: Failed to fetch" >&2\nexit 100\n' >"$tmp/bin/apt-get"
chmod +x "$tmp/bin/apt-get"
expect_error "unreachable registry is named" "apt-get source qemu=.* failed"

# 2. A tarball whose checksum differs is refused and moved aside.
fresh_tree
head -c 4096 /dev/urandom >"$tmp/cache/qemu_10.0.2+ds.orig.tar.xz"
expect_error "checksum mismatch is refused" "checksum mismatch for qemu_10.0.2+ds.orig.tar.xz"
[ -f "$tmp/cache/qemu_10.0.2+ds.orig.tar.xz.bad" ] && [ ! -d "$tmp/build/src/qemu-10.0.2" ]
report $? "bad tarball moved aside and nothing unpacked"

if [ -f "$real_cache/qemu_10.0.2+ds.orig.tar.xz" ]; then
    # 3. A series entry without its file.
    fresh_tree
    ln -s "$real_cache/qemu_10.0.2+ds.orig.tar.xz" "$tmp/cache/"
    echo "9999-not-there.patch" >>"$tmp/tree/patches/qemu-10.0.2/series"
    expect_error "missing patch file is named" "patch listed in series is missing: 9999-not-there.patch"

    # 4. A patch that does not apply cleanly is named, the tree stays as the
    #    previous patches left it.
    fresh_tree
    ln -s "$real_cache/qemu_10.0.2+ds.orig.tar.xz" "$tmp/cache/"
    cat >"$tmp/tree/patches/qemu-10.0.2/9999-conflict.patch" <<'PATCH'
--- a/VERSION
+++ b/VERSION
@@ -1 +1 @@
-9.9.9
+10.0.3
PATCH
    echo "9999-conflict.patch" >>"$tmp/tree/patches/qemu-10.0.2/series"
    expect_error "conflicting patch is named" "patch does not apply cleanly: patches/qemu-10.0.2/9999-conflict.patch"
    [ "$(cat "$tmp/build/src/qemu-10.0.2/VERSION")" = 10.0.2 ]
    report $? "conflicting patch left VERSION untouched"
else
    echo "SKIP: patch checks need the verified tarball in $real_cache"
fi

summary_exit
