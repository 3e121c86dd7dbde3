#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Pack the initramfs of the Linux guest of the `linux` suite:
#   make-initramfs.sh OUT GEN_INIT_CPIO INIT PROGRAM...
# OUT (gzip-compressed newc cpio) holds /bin/busybox (Debian's busybox-static),
# INIT as /init, /dev/console, and each PROGRAM (static) in /tests/ under its
# own name.  GEN_INIT_CPIO is the kernel's usr/gen_init_cpio, which writes
# device nodes and owners without needing root.
set -eu
out=$1 gen=$2 init=$3
shift 3
busybox=/bin/busybox
if ! [ -x "$busybox" ] || ! "$busybox" --list >/dev/null 2>&1; then
    echo "make-initramfs: $busybox missing (package busybox-static)" >&2
    exit 1
fi
if ldd "$busybox" >/dev/null 2>&1; then
    echo "make-initramfs: $busybox is not static (install busybox-static)" >&2
    exit 1
fi
[ -x "$gen" ] || { echo "make-initramfs: $gen missing (build the kernel first)" >&2; exit 1; }
list=$out.list
{
    echo "dir /bin 0755 0 0"
    echo "dir /dev 0755 0 0"
    echo "dir /proc 0755 0 0"
    echo "dir /sys 0755 0 0"
    echo "dir /tmp 1777 0 0"
    echo "dir /tests 0755 0 0"
    echo "nod /dev/console 0600 0 0 c 5 1"
    echo "file /bin/busybox $busybox 0755 0 0"
    echo "file /init $init 0755 0 0"
    for p in "$@"; do
        echo "file /tests/$(basename "$p") $p 0755 0 0"
    done
} >"$list"
"$gen" "$list" | gzip -n -6 >"$out.tmp"
mv "$out.tmp" "$out"
rm -f "$list"
