#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one linux-user test program under -cpu max:
#   run-user.sh QEMU PROGRAM               the program judges itself (exit status)
#   run-user.sh QEMU PROGRAM EXPECTED      its output must equal the file EXPECTED
qemu=$1 prog=$2 expected=${3:-}
if [ -z "$expected" ]; then
    exec "$qemu" -cpu max "$prog"
fi
out=$("$qemu" -cpu max "$prog") || { echo "FAIL: $prog exited with $?"; exit 1; }
printf '%s\n' "$out"
if printf '%s\n' "$out" | diff -u "$expected" -; then
    echo "PASS: output matches $(basename "$expected")"
else
    echo "FAIL: output differs from $(basename "$expected")"
    exit 1
fi
