#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build QEMU with --enable-asan --enable-ubsan (build/qemu-asan/, through the
# shared ccache) and run the guest and user suites on it.  Run after
# 'scripts/run.sh build'.  Prints the time each step took.
#   scripts/test-sanitized-qemu.sh [meson test arguments...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

export PATH=/usr/lib/ccache:$PATH
export CCACHE_DIR=${CCACHE_DIR:-$QEMU_LWP_CACHE/ccache}
ASAN_BUILDDIR=$QEMU_LWP_BUILD/qemu-asan
[ -f "$LWP_BUILDDIR/build.ninja" ] || die "run 'scripts/run.sh build' first"

t0=$(date +%s)
if [ ! -f "$ASAN_BUILDDIR/build.ninja" ]; then
    step "configuring QEMU $QEMU_VERSION with ASan and UBSan"
    mkdir -p "$ASAN_BUILDDIR"
    (cd "$ASAN_BUILDDIR" && "$QEMU_SRC/configure" \
        --target-list=x86_64-softmmu,x86_64-linux-user,i386-linux-user \
        --disable-docs --disable-werror --without-default-features \
        --enable-tcg --enable-kvm --disable-download --disable-install-blobs \
        --python=/usr/bin/python3 --enable-asan --enable-ubsan \
        --firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu) \
        >"$QEMU_LWP_BUILD/qemu-asan-configure.log" 2>&1 ||
        die "configuring the sanitizer QEMU failed (see $QEMU_LWP_BUILD/qemu-asan-configure.log)"
fi
step "building the sanitizer QEMU"
ninja -C "$ASAN_BUILDDIR" -j"$(nproc)" qemu-system-x86_64 qemu-x86_64 qemu-i386 \
    >"$QEMU_LWP_BUILD/qemu-asan-build.log" 2>&1 ||
    die "building the sanitizer QEMU failed (see $QEMU_LWP_BUILD/qemu-asan-build.log)"
# Firmware for an uninstalled build, as scripts/build-qemu.sh does.
for d in /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu; do
    mkdir -p "$ASAN_BUILDDIR/qemu-bundle$(dirname "$d")"
    ln -sfn "$d" "$ASAN_BUILDDIR/qemu-bundle$d"
done
t1=$(date +%s)
step "running the guest and user suites on it"
rc=0
QEMU_PLAIN=$QEMU_BUILDDIR QEMU_ASAN=$ASAN_BUILDDIR \
    meson test -C "$LWP_BUILDDIR" --no-rebuild --print-errorlogs --logbase sanitized-qemu \
    --wrapper "$QEMU_LWP_ROOT/tests/sanitize/qemu-asan-wrapper.sh" \
    --suite guest --suite user --timeout-multiplier 3 "$@" || rc=$?
t2=$(date +%s)
step "sanitizer QEMU: build $((t1 - t0)) s, guest+user suites $((t2 - t1)) s"
exit $rc
