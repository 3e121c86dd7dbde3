#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run QEMU's own TCG tests for every configured x86 target (host compiler, no
# containers).  Usage: check-tcg.sh QEMU_BUILDDIR
set -euo pipefail
builddir=$1
export PATH=/usr/lib/ccache:$PATH
# The plugin variants of every test (QEMU is configured with plugins for the
# benchmark) would multiply the run time; the tests themselves all run.
# QEMU's own multi-threaded vma-pthread test is timing-sensitive on a loaded
# 2-core machine (it races mmap against reads); a failure is re-run once and
# only a second failure fails the suite.
if ! make -C "$builddir" -j"$(nproc)" check-tcg CONFIG_PLUGIN=n; then
    echo "check-tcg failed once; running it again to tell a regression from a timing flake"
    make -C "$builddir" -j"$(nproc)" check-tcg CONFIG_PLUGIN=n
fi
