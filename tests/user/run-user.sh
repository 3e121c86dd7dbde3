#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one linux-user test program under -cpu max (or --cpu MODEL):
#   run-user.sh [OPTION...] QEMU PROGRAM           the program judges itself (exit status)
#   run-user.sh [OPTION...] QEMU PROGRAM EXPECTED  its output must equal the file EXPECTED
#   --cpu MODEL: -cpu MODEL instead of max
#   --guest-base ADDR: guest addresses are host addresses - ADDR (-B)
cpu=max
opts=
while [ $# -gt 0 ]; do
    case $1 in
    --cpu) cpu=$2; shift 2 ;;
    --guest-base) opts="$opts -B $2"; shift 2 ;;
    *) break ;;
    esac
done
qemu=$1 prog=$2 expected=${3:-}
case "$opts:${QEMU_ASAN:-}" in
*-B*:?*)
    # ASan's shadow memory holds the address ranges -B would reserve.
    echo "SKIP: -B under the sanitize-qemu suite's ASan build"
    exit 77 ;;
esac
if [ -z "$expected" ]; then
    # shellcheck disable=SC2086
    exec "$qemu" -cpu "$cpu" $opts "$prog"
fi
# shellcheck disable=SC2086
out=$("$qemu" -cpu "$cpu" $opts "$prog") || { echo "FAIL: $prog exited with $?"; exit 1; }
printf '%s\n' "$out"
if printf '%s\n' "$out" | diff -u "$expected" -; then
    echo "PASS: output matches $(basename "$expected")"
else
    echo "FAIL: output differs from $(basename "$expected")"
    exit 1
fi
