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
# -Wno-*: QEMU's text, compiled outside QEMU, leaves functions unused.
"${ccache[@]}" "$cc" -std=gnu11 -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Wall -Wno-unused-function -Wno-unused-variable -Wno-unused-but-set-variable \
    -I"$gen" -I"$root/tests/fuzz" "$root/tests/fuzz/fuzz_decode.c" -o "$out"
