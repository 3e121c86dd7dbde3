#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# meson test --wrapper: run a test with the sanitizer build of QEMU instead
# of the plain one (every argument naming a binary under QEMU_PLAIN is
# rewritten to QEMU_ASAN).  Any ASan report, and any UBSan report, makes
# QEMU exit non-zero, which fails the test.
: "${QEMU_PLAIN:?}" "${QEMU_ASAN:?}"
for a in "$@"; do
    case $a in
    "$QEMU_PLAIN"/*) a="$QEMU_ASAN/${a#"$QEMU_PLAIN"/}" ;;
    esac
    set -- "$@" "$a"
    shift
done
# QEMU's own exit-time leaks are not ours to judge; memory errors are.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
exec "$@"
