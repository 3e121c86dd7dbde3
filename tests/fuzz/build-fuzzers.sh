#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the libFuzzer targets of the LWP core with Debian's clang, under
# AddressSanitizer and UndefinedBehaviorSanitizer (any report aborts):
#   build-fuzzers.sh SOURCE_ROOT OUTDIR TARGET...
# Each TARGET is a tests/fuzz/TARGET.cc linked with the core's sources.
set -eu
root=$1 out=$2
shift 2
cxx=${LWP_FUZZ_CXX:-clang++}
command -v "$cxx" >/dev/null || { echo "build-fuzzers: $cxx not found (Debian package clang)" >&2; exit 1; }
if command -v ccache >/dev/null; then
    cxx="ccache $cxx"
fi
flags="-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
       -fno-sanitize-recover=all -I$root/target-i386-lwp/include -I$root/target-i386-lwp/core"
mkdir -p "$out/obj"
objs=
for src in "$root"/target-i386-lwp/core/*.cc; do
    obj=$out/obj/$(basename "$src" .cc).o
    # shellcheck disable=SC2086
    $cxx $flags -fsanitize=fuzzer-no-link -fno-exceptions -fno-rtti -c "$src" -o "$obj"
    objs="$objs $obj"
done
for t in "$@"; do
    # shellcheck disable=SC2086
    $cxx $flags -fsanitize=fuzzer "$root/tests/fuzz/$t.cc" $objs -o "$out/$t"
done
