#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The portability suite: build the patched QEMU, with qemu-lwp's LWP core
# (C++) and glue (C) linked in, with another compiler than the plain build's
# and --enable-werror, for one system and one user target.  QEMU 10.0
# supports GCC from 7.4 and clang from 10; Debian offers GCC 11 and clang 14
# next to its GCC 12.  Incremental: build/port-COMPILER/ is kept and every
# object goes through the shared ccache, so a run with nothing changed costs
# seconds and a change costs what it touches.
#   scripts/test-portability.sh gcc-11|clang
set -euo pipefail
. "$(dirname "$0")/lib.sh"

compiler=${1:?usage: test-portability.sh gcc-11|clang}
case $compiler in
gcc-11) cxx=g++-11 pkg=g++-11 ;;
clang) cxx=clang++ pkg=clang ;;
*) die "test-portability.sh: unknown compiler $compiler (gcc-11 or clang)" ;;
esac
need_cmd "$compiler" "$pkg"
need_cmd "$cxx" "$pkg"

# ccache through Debian's masquerade directory, as scripts/build-qemu.sh.
export PATH=/usr/lib/ccache:$PATH
export CCACHE_DIR=${CCACHE_DIR:-$QEMU_LWP_CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
builddir=$QEMU_LWP_BUILD/port-$compiler
[ -f "$QEMU_SRC/.qemu-lwp-series" ] || die "run 'scripts/run.sh build' first"

# Lean: the guest tests' devices only (configs/devices/x86_64-softmmu/
# lwp-tests.mak, added by the series), no debug information, TCG and KVM
# (the glue has code for both), the LWP core and glue as QEMU builds them.
CONFIGURE_ARGS=(
    --cc="$compiler" --cxx="$cxx" --host-cc="$compiler"
    --target-list=x86_64-softmmu,x86_64-linux-user
    --enable-werror --disable-docs --without-default-features
    --without-default-devices --with-devices-x86_64=lwp-tests
    --enable-tcg --enable-kvm --disable-download --disable-install-blobs
    --python=/usr/bin/python3 -Ddebug=false
)
t0=$(date +%s)
configure_qemu_once "$builddir" "$builddir-configure.log" \
    "QEMU $QEMU_VERSION with $compiler, --enable-werror" "${CONFIGURE_ARGS[@]}"
step "building QEMU with $compiler (log: $builddir-build.log)"
if ! ninja -C "$builddir" -j"$(nproc)" qemu-system-x86_64 qemu-x86_64 \
        >"$builddir-build.log" 2>&1; then
    grep -E -B2 -A6 'error:|warning:' "$builddir-build.log" | head -n 80
    echo "FAIL: QEMU with the series does not build with $compiler --enable-werror"
    exit 1
fi
t1=$(date +%s)
# The binaries must start and know LWP: a link error or a broken
# constructor would not show in the build.
for bin in qemu-system-x86_64 qemu-x86_64; do
    # linux-user's -cpu help exits with status 1 after listing.
    flags=$("$builddir/$bin" -cpu help || true)
    grep -qw lwpval <<<"$flags" ||
        { echo "FAIL: $compiler's $bin does not list lwpval"; exit 1; }
done
echo "PASS: QEMU with the series builds with $compiler --enable-werror" \
     "(x86_64-softmmu, x86_64-linux-user) in $((t1 - t0)) s, and its binaries list LWP"
