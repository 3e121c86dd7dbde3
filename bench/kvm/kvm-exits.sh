#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What a guest's XCR0[62] costs per VMRUN/#VMEXIT (issue 22, item 1): exits
# per second of a CPUID and of a VMMCALL loop in L2, in the nested setup of
# nested-kvm-lwp-host (our QEMU under TCG as L0, the project's kernel with
# both halves of patches/linux/ as L1), with XCR0[62] clear, set, and set
# with an LWPCB loaded (bench/kvm/kvm-exit-bench.c).  Under TCG only the
# ratios between the three mean anything.
#
#   bash bench/kvm/kvm-exits.sh [ITERATIONS [ROUNDS]]     (default 1000 15)
#
# Needs a build of the nested suite (scripts/run.sh build, then
# meson compile -C build/lwp): the kernel, its KVM selftests' library
# (build/kvm-selftests/) and the L2 images.  The L1 image goes to
# build/bench/kvm-exits/; the lines of the run are in its serial.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$(dirname "$here")")
. "$root/scripts/lib.sh"
iters=${1:-1000}
rounds=${2:-15}
src=$QEMU_LWP_BUILD/linux/src
obj=$src/obj
lib=$QEMU_LWP_BUILD/kvm-selftests
kst=$src/tools/testing/selftests/kvm
out=$QEMU_LWP_BUILD/bench/kvm-exits
linux=$LWP_BUILDDIR/tests/linux
[ -f "$lib/lib/kvm_util.o" ] || die "no $lib/lib/kvm_util.o: build the nested suite first"
[ -f "$linux/bzImage" ] || die "no $linux/bzImage: build the nested suite first"
mkdir -p "$out/prog"
# The selftests' own flags (tools/testing/selftests/kvm/Makefile).
gcc -Wall -O2 -g -std=gnu99 -U_FORTIFY_SOURCE -fno-stack-protector -fno-PIE \
    -I"$src/tools/include" -I"$src/tools/arch/x86/include" -I"$obj/usr/include" \
    -I"$kst/include" -I"$kst/include/x86_64" -I"$kst/.." -isystem "$obj/usr/include" \
    -static -pthread -no-pie "$here/kvm-exit-bench.c" "$lib"/lib/*.o "$lib"/lib/x86_64/*.o \
    -ldl -o "$out/prog/kvm_exit_bench.new" 2>&1 | grep -v "statically linked applications" || true
[ -x "$out/prog/kvm_exit_bench.new" ] || die "building bench/kvm/kvm-exit-bench.c failed"
printf '#!/bin/sh\nexec ./kvm_exit_bench.bin %s %s\n' "$iters" "$rounds" >"$out/prog/kvm_exit_bench"
chmod +x "$out/prog/kvm_exit_bench"
mv "$out/prog/kvm_exit_bench.new" "$out/prog/kvm_exit_bench.bin"
python3 "$root/tests/kvm/run-nested.py" --qemu "$QEMU_BUILDDIR/qemu-system-x86_64" \
    --guest-dir "$LWP_BUILDDIR/tests/guest" --outdir "$out" \
    --l1-kernel "$linux/bzImage" --linux-dir "$linux" --lwp force \
    --tests none --migrate none --linux-tests none \
    --kselftest-dir "$out/prog" --kselftests kvm_exit_bench --timeout 3000 >"$out/run.log" 2>&1 || {
    tail -n 30 "$out/run.log" >&2
    die "the nested run failed (log: $out/run.log)"
}
sed -n 's/^ *[0-9.]* L1 kst kvm_exit_bench| //p' "$out/serial.log" | grep -v '^@@rc'
