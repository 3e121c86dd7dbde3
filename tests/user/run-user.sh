#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one linux-user test program under -cpu max (or --cpu MODEL):
#   run-user.sh [OPTION...] QEMU PROGRAM           the program judges itself (exit status)
#   run-user.sh [OPTION...] QEMU PROGRAM EXPECTED  its output must equal the file EXPECTED
#   --cpu MODEL: -cpu MODEL instead of max
#   --guest-base ADDR: guest addresses are host addresses - ADDR (-B)
#   --arg ARG: pass ARG to the program
# In MODEL, lwp-seed=random becomes a new latitude seed (docs/lwp-latitude.rst),
# printed; LWP_LATITUDE_SEED=S replays one.
cpu=max
opts=
arg=
while [ $# -gt 0 ]; do
    case $1 in
    --cpu) cpu=$2; shift 2 ;;
    --arg) arg=$2; shift 2 ;;
    --guest-base) opts="$opts -B $2"; shift 2 ;;
    *) break ;;
    esac
done
qemu=$1 prog=$2 expected=${3:-}
case $cpu in
*lwp-seed=random*)
    hi=$(od -An -N4 -tu4 /dev/urandom) lo=$(od -An -N4 -tu4 /dev/urandom)
    seed=${LWP_LATITUDE_SEED:-$(( (hi & 0x7fffffff) * 4294967296 + lo ))}
    echo "# latitude seed $seed (replay: LWP_LATITUDE_SEED=$seed)"
    cpu=$(printf '%s' "$cpu" | sed "s/lwp-seed=random/lwp-seed=$seed/") ;;
esac
case "$opts:${QEMU_ASAN:-}" in
*-B*:?*)
    # ASan's shadow memory holds the address ranges -B would reserve.
    echo "SKIP: -B under the sanitize-qemu suite's ASan build"
    exit 77 ;;
esac
if [ -z "$expected" ]; then
    # shellcheck disable=SC2086
    exec "$qemu" -cpu "$cpu" $opts "$prog" $arg
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
