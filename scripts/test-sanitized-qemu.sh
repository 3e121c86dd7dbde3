#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build QEMU with --enable-asan --enable-ubsan (build/qemu-asan/, through the
# shared ccache) and run the guest and user suites on it, any sanitizer
# report fatal.  The test command runs this as the 'sanitize-qemu' suite
# (tests/sanitize/meson.build); LWP_SANITIZED_QEMU=0 skips it.  Needs
# 'scripts/run.sh build' first.  Prints the time each step took, then one
# PASS:/FAIL: line per test run on the sanitizer build.
#   scripts/test-sanitized-qemu.sh [meson test arguments...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "${LWP_SANITIZED_QEMU:-1}" = 0 ]; then
    echo "SKIP: LWP_SANITIZED_QEMU=0: the guest and user suites on QEMU built with ASan and UBSan"
    exit 77
fi

export PATH=/usr/lib/ccache:$PATH
export CCACHE_DIR=${CCACHE_DIR:-$QEMU_LWP_CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
ASAN_BUILDDIR=$QEMU_LWP_BUILD/qemu-asan
[ -f "$LWP_BUILDDIR/build.ninja" ] || die "run 'scripts/run.sh build' first"

FIRMWARE_DIRS=(/usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu)
# The plain build's configuration (scripts/build-qemu.sh) with the
# sanitizers, less what the guest and user suites do not use: the devices
# are only those of the guest tests' machine (configs/devices/x86_64-softmmu/
# lwp-tests.mak, added by the series), no plugins, no check-tcg cross
# compiler.  -O1 without inlining and line tables only (-g1): under half
# the compile time of -O2 -g, and every frame of a report is real.  Without
# -fno-inline, -O1 leaves some of the calls QEMU's qemu_build_not_reached()
# requires the optimizer to remove (translate.c of linux-user fails to
# compile); with it (__NO_INLINE__) that becomes a run-time assertion, as
# in QEMU's own --enable-debug (-O0) builds.
CONFIGURE_ARGS=(
    --target-list=x86_64-softmmu,x86_64-linux-user,i386-linux-user
    --disable-docs --disable-werror --without-default-features
    --without-default-devices --with-devices-x86_64=lwp-tests
    --enable-tcg --enable-kvm --disable-download --disable-install-blobs
    --python=/usr/bin/python3 --enable-asan --enable-ubsan
    -Doptimization=1 --extra-cflags='-g1 -fno-inline' --extra-cxxflags='-g1 -fno-inline'
    --firmwarepath="$(IFS=:; echo "${FIRMWARE_DIRS[*]}")"
)

t0=$(date +%s)
configure_qemu_once "$ASAN_BUILDDIR" "$QEMU_LWP_BUILD/qemu-asan-configure.log" \
    "QEMU $QEMU_VERSION with ASan and UBSan" "${CONFIGURE_ARGS[@]}"
step "building the sanitizer QEMU (log: $QEMU_LWP_BUILD/qemu-asan-build.log)"
ninja -C "$ASAN_BUILDDIR" -j"$(nproc)" qemu-system-x86_64 qemu-x86_64 qemu-i386 \
    >"$QEMU_LWP_BUILD/qemu-asan-build.log" 2>&1 ||
    die_log "$QEMU_LWP_BUILD/qemu-asan-build.log" "building the sanitizer QEMU failed"
# Firmware for an uninstalled build, as scripts/build-qemu.sh does.
for d in "${FIRMWARE_DIRS[@]}"; do
    mkdir -p "$ASAN_BUILDDIR/qemu-bundle$(dirname "$d")"
    ln -sfn "$d" "$ASAN_BUILDDIR/qemu-bundle$d"
done
t1=$(date +%s)
step "sanitizer QEMU built in $((t1 - t0)) s; running the guest and user suites on it"
rc=0
QEMU_PLAIN=$QEMU_BUILDDIR QEMU_ASAN=$ASAN_BUILDDIR \
    meson test -C "$LWP_BUILDDIR" --no-rebuild --print-errorlogs --logbase sanitized-qemu \
    --wrapper "$QEMU_LWP_ROOT/tests/sanitize/qemu-asan-wrapper.sh" \
    --suite guest --suite user --timeout-multiplier 3 "$@" || rc=$?
t2=$(date +%s)
# One line per test for scripts/test-summary.py, which counts them as checks.
# (meson names the log after the logbase and the wrapper.)
python3 - "$LWP_BUILDDIR/meson-logs/sanitized-qemu-qemu-asan-wrapper.sh.json" <<'EOF' || rc=1
import json, sys
n = 0
for line in open(sys.argv[1]):
    if line.strip():
        r = json.loads(line)
        ok = r['result'] in ('OK', 'EXPECTEDFAIL')
        word = 'SKIP' if r['result'] == 'SKIP' else 'PASS' if ok else 'FAIL'
        print('%s: %s under ASan+UBSan (%s, %.0f s)' % (word, r['name'], r['result'],
                                                       r['duration']))
        n += 1
sys.exit(0 if n else 1)
EOF
step "sanitizer QEMU: build $((t1 - t0)) s, guest+user suites $((t2 - t1)) s"
exit $rc
