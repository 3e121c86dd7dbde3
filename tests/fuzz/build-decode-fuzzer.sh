#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build fuzz_decode (see fuzz_decode.c) with Debian's clang under ASan and
# UBSan: cut QEMU's decoder out of the patched QEMU source (scripts/lib.sh's
# QEMU_SRC, fetched and patched by the qemu target this one depends on),
# then compile it with the reference into a libFuzzer binary:
#   build-decode-fuzzer.sh SOURCE_ROOT OUTPUT
set -euo pipefail
root=$1 out=$2
# shellcheck source=../../scripts/lib.sh
. "$root/scripts/lib.sh"
cc=${LWP_FUZZ_CC:-clang}
command -v "$cc" >/dev/null || { echo "build-decode-fuzzer: $cc not found (Debian package clang)" >&2; exit 1; }
gen=$(dirname "$out")/fuzz_decode-gen
mkdir -p "$gen"
sh "$root/tests/fuzz/extract-qemu-decoder.sh" "$QEMU_SRC" "$root" "$gen/qemu-decoder.h"
ccache=()
if command -v ccache >/dev/null; then
    ccache=(ccache)
fi
flags=(-std=gnu11 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
       -fno-sanitize-recover=all -Wall -I"$gen" -I"$root/tests/fuzz")
# QEMU's decoder as in the 64-bit targets and as in qemu-i386.  -Wno-*:
# QEMU's text, compiled outside QEMU, leaves functions unused.
for variant in x86_64 i386; do
    extra=()
    [ "$variant" = i386 ] && extra=(-DQEMU_DECODER_I386)
    "${ccache[@]}" "$cc" "${flags[@]}" "${extra[@]}" -fsanitize=fuzzer-no-link \
        -Wno-unused-function -Wno-unused-variable -Wno-unused-but-set-variable \
        -c "$root/tests/fuzz/qemu-decoder-run.c" -o "$gen/qemu-decoder-$variant.o"
done
"${ccache[@]}" "$cc" "${flags[@]}" -fsanitize=fuzzer "$root/tests/fuzz/fuzz_decode.c" \
    "$gen/qemu-decoder-x86_64.o" "$gen/qemu-decoder-i386.o" -o "$out"
