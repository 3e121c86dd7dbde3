#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Pack the initramfs of the Linux guest of the `linux` suite:
#   make-initramfs.sh OUT GEN_INIT_CPIO INIT PROGRAM...
# OUT (gzip-compressed newc cpio) holds /bin/busybox (Debian's busybox-static),
# INIT as /init, /dev/console, and each PROGRAM in /tests/ under its own name.
# A dynamically linked PROGRAM (lwp-prof, its preload library, the programs
# it profiles) brings the shared libraries ldd names, at the same paths.
# GEN_INIT_CPIO is the kernel's usr/gen_init_cpio, which writes device nodes
# and owners without needing root.
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
    # shared libraries: ldd fails for static programs and scripts
    for p in "$@"; do
        ldd "$p" 2>/dev/null || true
    done | awk '/=> \// { print $3 } /^\t\/[^ ]*ld-linux/ { print $1 }' | sort -u >"$list.libs"
    # ld.so is looked for under /lib64 whatever ldd printed.
    if [ -s "$list.libs" ] && ! grep -qx /lib64/ld-linux-x86-64.so.2 "$list.libs"; then
        echo /lib64/ld-linux-x86-64.so.2 >>"$list.libs"
    fi
    while read -r lib; do
        d=$(dirname "$lib")
        while [ "$d" != / ]; do
            echo "$d"
            d=$(dirname "$d")
        done
    done <"$list.libs" | sort -u | sed 's|.*|dir & 0755 0 0|'
    while read -r lib; do
        echo "file $lib $(readlink -f "$lib") 0755 0 0"
    done <"$list.libs"
} >"$list"
"$gen" "$list" | gzip -n -6 >"$out.tmp"
mv "$out.tmp" "$out"
rm -f "$list" "$list.libs"
