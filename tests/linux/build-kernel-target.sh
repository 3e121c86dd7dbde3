#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Meson custom target: bring the Linux guest kernel up to date
# (scripts/build-linux-kernel.sh), then copy the bzImage and the kernel's
# usr/gen_init_cpio (which packs the initramfs) to OUT_BZIMAGE and OUT_GEN,
# rewriting them only when they changed, so that what depends on them is
# rebuilt only then.
#   build-kernel-target.sh OUT_BZIMAGE OUT_GEN
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kernel=$(bash "$root/scripts/build-linux-kernel.sh" | tail -n 1)
gen=$(dirname "$kernel")/src/obj/usr/gen_init_cpio
[ -x "$gen" ] || { echo "qemu-lwp: error: $gen missing after the kernel build" >&2; exit 1; }
cmp -s "$kernel" "$1" || cp "$kernel" "$1"
cmp -s "$gen" "$2" || cp "$gen" "$2"
