#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The cost of LWP's hardware events under TCG, in one invocation:
#
#   bash bench/run-bench.sh [--quick] [--runs N] [more options: --help]
#
# Builds the linux-user workload (gcc -mlwp, static) and the 64-bit system
# guest into build/bench/, then times every configuration - Debian's stock
# QEMU, ours with LWP unused, instructions retired at intervals 65535 and
# 255, branches retired, QEMU's inline instruction-counting plugin, LWPVAL in
# the hot loop - interleaved, N times each (default 5, --quick 2), and prints
# the CPU times and the ratios with their targets; then it times Debian's
# xz, bzip2 and python3 (real programs) under linux-user, LWP switched on by
# a preload library (bench/lwp-preload.c).  It does not build
# QEMU: build/qemu/ must hold a build (scripts/run.sh does that).
# See docs/lwp-bench.rst.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${QEMU_LWP_BENCH_DIR:-$root/build/bench}
lib=$root/tests/guest/lib
mkdir -p "$out"

die() {
    echo "qemu-lwp: error: $*" >&2
    exit 1
}

command -v gcc >/dev/null || die "gcc is missing (apt-get install gcc)"
command -v objcopy >/dev/null || die "objcopy is missing (apt-get install binutils)"
command -v python3 >/dev/null || die "python3 is missing"

# The linux-user program: static, so stock and our qemu-x86_64 run the very
# same binary.  -mgeneral-regs-only mirrors the guest's flags, so both
# builds of the workload compile to the same code.
gcc -O2 -mlwp -mgeneral-regs-only -fno-pie -no-pie -static -Wall -Wextra \
    -o "$out/workload-user" "$here/workload-user.c" ||
    die "building bench/workload-user.c failed"

# The same loop, dynamically linked, for the real-programs part: LWP is
# switched on in it by the preload library, like in the other programs.
gcc -O2 -mlwp -mgeneral-regs-only -Wall -Wextra \
    -o "$out/workload-user-dyn" "$here/workload-user.c" ||
    die "building bench/workload-user.c (dynamic) failed"

# The preload library that switches LWP on in an unmodified program.
gcc -O2 -mlwp -shared -fPIC -Wall -Wextra -o "$out/lwp-preload.so" \
    "$here/lwp-preload.c" ||
    die "building bench/lwp-preload.c failed"
for prog in /usr/bin/xz /usr/bin/bzip2 /usr/bin/python3; do
    [ -x "$prog" ] || die "$prog is missing (apt-get install xz-utils bzip2 python3)"
done

# The system guest, with the flags of tests/guest/meson.build (64-bit mode),
# converted to ELF32 for QEMU's multiboot loader.
gcc -ffreestanding -fno-pic -fno-pie -fno-stack-protector \
    -fno-asynchronous-unwind-tables -fcf-protection=none -mgeneral-regs-only \
    -O2 -g -Wall -Wno-unused-parameter -U_FILE_OFFSET_BITS \
    -m64 -mno-red-zone -mcmodel=small -I"$lib" \
    -o "$out/bench-guest.elf" \
    "$lib/boot.S" "$lib/entry.S" "$lib/desc.c" "$lib/print.c" "$lib/report.c" \
    "$lib/vm.c" "$here/bench-guest.c" \
    -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-T,"$lib/guest.ld" \
    -Wl,-z,noexecstack -Wl,--no-warn-rwx-segments -lgcc ||
    die "building bench/bench-guest.c failed"
objcopy -O elf32-i386 "$out/bench-guest.elf" "$out/bench-guest.img" ||
    die "objcopy of the bench guest failed"

exec python3 "$here/lwp-bench.py" --bin-dir "$out" --root "$root" "$@"
