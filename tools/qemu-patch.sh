#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Developer helper for writing patches/qemu-10.0.2/*.patch:
#   tools/qemu-patch.sh start FILE...   remember FILEs (paths in the QEMU tree) as they are now
#   tools/qemu-patch.sh diff            print a -p1 patch of the remembered files' changes
#   tools/qemu-patch.sh reset           forget the remembered files
#   tools/qemu-patch.sh adopt           declare that the tree now has exactly the
#                                       current series applied (after editing it
#                                       in place and writing the patches)
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
WORK=$QEMU_LWP_BUILD/patchwork
case "${1:-}" in
start)
    shift
    for f in "$@"; do
        mkdir -p "$WORK/a/$(dirname "$f")"
        [ -e "$WORK/a/$f" ] || cp "$QEMU_SRC/$f" "$WORK/a/$f"
    done ;;
diff)
    cd "$WORK/a"
    find . -type f | sed 's|^\./||' | sort | while read -r f; do
        diff -u --label "a/$f" --label "b/$f" "$f" "$QEMU_SRC/$f" || true
    done ;;
reset) rm -rf "$WORK" ;;
adopt)
    rm -rf "$APPLIED_DIR"
    mkdir -p "$APPLIED_DIR"
    series_patches | while read -r p; do
        cp "$SERIES_DIR/$p" "$APPLIED_DIR/$p"
        echo "$p" >>"$APPLIED_DIR/series"
    done
    series_hash >"$QEMU_SRC/.qemu-lwp-series" ;;
*) echo "usage: $0 start FILE... | diff | reset | adopt" >&2; exit 2 ;;
esac
