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
here=$(cd "$(dirname "$0")" && pwd)
# QEMU's own exit-time leaks are not ours to judge (leak checking is off, as
# in QEMU's own sanitizer builds); memory errors are.  linux-user takes the
# guest's faults as host SIGSEGV and SIGBUS in its own handlers: ASan must
# not claim them.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:handle_segv=0:handle_sigbus=0:allow_user_segv_handler=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:suppressions=$here/ubsan.supp
exec "$@"
