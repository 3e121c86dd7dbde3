#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Meson custom target: build the kernel's own LWP selftest
# (tools/testing/selftests/x86/lwp.c, added by the series of patches/linux)
# from the patched tree that scripts/build-linux-kernel.sh keeps in
# build/linux/src, with the selftest's own Makefile, as static 64-bit and
# 32-bit programs for the guest's initramfs.
#   build-kselftest.sh OUT_LWP_64 OUT_LWP_32
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/lib.sh"
dir=$QEMU_LWP_BUILD/linux/src/tools/testing/selftests/x86
[ -f "$dir/lwp.c" ] || die "$dir/lwp.c missing: build the kernel first (scripts/build-linux-kernel.sh)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The Makefile's own rules (-m64/-m32, its CFLAGS); static for the initramfs.
make -s -C "$dir" OUTPUT="$out" CC="gcc -static" "$out/lwp_64" "$out/lwp_32" >&2 ||
    die "building the LWP selftest failed (gcc-multilib is needed for lwp_32)"
cmp -s "$out/lwp_64" "$1" || cp "$out/lwp_64" "$1"
cmp -s "$out/lwp_32" "$2" || cp "$out/lwp_32" "$2"
