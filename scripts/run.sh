#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# qemu-lwp's one entry point.
#   scripts/run.sh demo   set up, build, boot the bundled demo guest
#   scripts/run.sh test   set up, build, run every test suite
#   scripts/run.sh build  set up and build only
# Set-up installs Debian packages (root), fetches and patches QEMU 10.0.2 and
# builds everything incrementally; running it again with nothing changed is
# quick.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cmd=${1:-}
case "$cmd" in
demo|test|build) shift ;;
*) echo "usage: $0 demo|test|build [meson test arguments...]" >&2; exit 2 ;;
esac

# The scripts run here name their own failures; '|| exit' passes the status
# on without naming them a second time.
bash "$QEMU_LWP_ROOT/scripts/setup-host.sh" || exit
mkdir -p "$QEMU_LWP_BUILD"

export PATH=/usr/lib/ccache:$PATH
export CCACHE_DIR=${CCACHE_DIR:-$QEMU_LWP_CACHE/ccache}
if [ ! -f "$LWP_BUILDDIR/build.ninja" ]; then
    step "configuring qemu-lwp"
    meson setup "$LWP_BUILDDIR" "$QEMU_LWP_ROOT" -Dqemu_builddir="$QEMU_BUILDDIR" \
        >"$QEMU_LWP_BUILD/lwp-setup.log" 2>&1 ||
        die_log "$QEMU_LWP_BUILD/lwp-setup.log" "meson setup of qemu-lwp failed"
fi
# Fetching and patching also run inside the build; doing it first here gives
# a set-up failure (checksum, patch conflict, registry) its own one-line error.
bash "$QEMU_LWP_ROOT/scripts/fetch-qemu.sh" || exit
step "building qemu-lwp and QEMU"
ninja -C "$LWP_BUILDDIR" >"$QEMU_LWP_BUILD/lwp-build.log" 2>&1 ||
    die_log "$QEMU_LWP_BUILD/lwp-build.log" "build failed"
step "built: $QEMU_BUILDDIR/qemu-system-x86_64, qemu-x86_64, qemu-i386"

# The host side of the KVM path: Debian's KVM modules with patches/linux/,
# which the nested test (tests/kvm) loads into its L1 kernel.
if [ "$cmd" != demo ]; then
    bash "$QEMU_LWP_ROOT/scripts/build-kvm-modules.sh" >"$QEMU_LWP_BUILD/kvm-modules.log" 2>&1 ||
        die_log "$QEMU_LWP_BUILD/kvm-modules.log" "building the patched KVM modules failed"
    step "built: $(tail -n 1 "$QEMU_LWP_BUILD/kvm-modules.log")"
fi

case "$cmd" in
demo)
    for mode in 64 32; do
        python3 "$QEMU_LWP_ROOT/tests/guest/run_guest.py" --show \
            --qemu "$QEMU_BUILDDIR/qemu-system-x86_64" --cpu "${LWP_DEMO_CPU:-max}" \
            --kernel "$LWP_BUILDDIR/tests/guest/demo-lwp-$mode.img" | grep -v '^SUMMARY:'
    done
    # A real OS: the LWP-enabled Linux kernel of patches/linux/ (docs/lwp-linux.rst)
    # boots; the MSVC sample and four threads profile themselves on two vCPUs,
    # and lwp-prof profiles Debian's xz on the guest's LWP (flat profile).
    python3 "$QEMU_LWP_ROOT/tests/linux/run_linux.py" --echo \
        --qemu "$QEMU_BUILDDIR/qemu-system-x86_64" --cpu "${LWP_DEMO_CPU:-max}" --smp 2 \
        --kernel "$LWP_BUILDDIR/tests/linux/bzImage" \
        --initrd "$LWP_BUILDDIR/tests/linux/initramfs.cpio.gz" \
        --msvc-expected "$QEMU_LWP_ROOT/tests/user/lwp-msvc-port.expected" \
        --tests msvc,threads:4:1000,prof | grep -v -E '^(PASS|qemu): |^[0-9]+ passed'
    ;;
test)
    rc=0
    meson test -C "$LWP_BUILDDIR" --no-rebuild --print-errorlogs "$@" || rc=$?
    python3 "$QEMU_LWP_ROOT/scripts/test-summary.py" "$LWP_BUILDDIR/meson-logs/testlog.json" || rc=1
    exit $rc
    ;;
esac
