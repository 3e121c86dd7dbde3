#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configure (only when needed) and build the patched QEMU incrementally.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# ccache through Debian's masquerade directory: meson then records plain 'cc'.
export PATH=/usr/lib/ccache:$PATH
export CCACHE_DIR=${CCACHE_DIR:-$QEMU_LWP_CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}

FIRMWARE_DIRS=(/usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu)
CONFIGURE_ARGS=(
    --target-list=x86_64-softmmu,x86_64-linux-user,i386-linux-user
    --disable-docs --disable-werror --without-default-features
    --enable-tcg --enable-kvm --enable-plugins --disable-download --disable-install-blobs
    --python=/usr/bin/python3
    # check-tcg's i386 guest tests with the host compiler in 32-bit mode.
    --cross-cc-i386=gcc --cross-cc-cflags-i386=-m32
    # Firmware of Debian's seabios, qemu-system-data and ipxe-qemu packages.
    --firmwarepath="$(IFS=:; echo "${FIRMWARE_DIRS[*]}")"
)

configure_qemu_once "$QEMU_BUILDDIR" "$QEMU_LWP_BUILD/qemu-configure.log" \
    "QEMU $QEMU_VERSION" "${CONFIGURE_ARGS[@]}"
step "building QEMU (ninja, incremental)"
ninja -C "$QEMU_BUILDDIR" -j"$(nproc)" qemu-system-x86_64 qemu-x86_64 qemu-i386 tests/tcg/plugins/libinsn.so \
    >"$QEMU_LWP_BUILD/qemu-build.log" 2>&1 ||
    die_log "$QEMU_LWP_BUILD/qemu-build.log" "QEMU build failed"

# Binaries run from the build tree look for the firmware path relocated under
# qemu-bundle/; point those places at Debian's firmware so no -L is needed.
for d in "${FIRMWARE_DIRS[@]}"; do
    [ -d "$d" ] || die "firmware directory $d is missing (packages seabios, qemu-system-data, ipxe-qemu)"
    mkdir -p "$QEMU_BUILDDIR/qemu-bundle$(dirname "$d")"
    ln -sfn "$d" "$QEMU_BUILDDIR/qemu-bundle$d"
done
