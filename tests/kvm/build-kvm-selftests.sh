#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Meson custom target: build KVM selftests (tools/testing/selftests/kvm,
# lwp_test of the series among them) from the patched tree that
# scripts/build-linux-kernel.sh keeps in build/linux/src, with their own
# Makefile, as static programs for the nested suite's L1 initramfs.
#   build-kvm-selftests.sh OUT_PROGRAM...
# Each output's file name is the test's name (x86_64/NAME in the tree).
# The objects stay in build/kvm-selftests/, so a build with nothing
# changed only checks their dates.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/lib.sh"
src=$QEMU_LWP_BUILD/linux/src
obj=$src/obj
dir=$src/tools/testing/selftests/kvm
[ -f "$dir/x86_64/lwp_test.c" ] ||
    die "$dir/x86_64/lwp_test.c missing: build the kernel first (scripts/build-linux-kernel.sh)"
[ -f "$obj/.config" ] || die "$obj/.config missing: build the kernel first (scripts/build-linux-kernel.sh)"
export CCACHE_DIR=${CCACHE_DIR:-$QEMU_LWP_CACHE/ccache}
out=$QEMU_LWP_BUILD/kvm-selftests
mkdir -p "$out"
log=$out/build.log
# The selftests include the UAPI headers of the tree (usr/include).
make -s -C "$src" O="$obj" headers >"$log" 2>&1 ||
    die_log "$log" "make headers in $obj failed"
targets=()
for o in "$@"; do targets+=("$out/x86_64/$(basename "$o")"); done
make -s -C "$dir" OUTPUT="$out" INSTALL_HDR_PATH="$obj/usr" \
    KHDR_INCLUDES="-isystem $obj/usr/include" CC="ccache gcc" \
    EXTRA_CFLAGS=-static "${targets[@]}" >>"$log" 2>&1 ||
    die_log "$log" "building the KVM selftests failed"
for o in "$@"; do
    b=$out/x86_64/$(basename "$o")
    cmp -s "$b" "$o" || cp "$b" "$o"
done
