#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the Linux guest kernel of the `linux` test suite: Debian's
# linux-source-6.1 with the whole series of patches/linux/ (the x86 LWP
# support, then the KVM patches, which this configuration does not build),
# configured as `make tinyconfig` plus tests/linux/kernel.config.
#
#   scripts/build-linux-kernel.sh [--force]
#
# Trees under build/linux/:
#   pristine/   linux-source-6.1 as Debian ships it (extracted once per
#               package version)
#   src/        the patched tree: hard links to pristine/, except the files
#               the series touches, which are replaced (never written
#               through) when their patched content changes
#   src/obj/    make O=obj: objects, .config, arch/x86/boot/bzImage
# Result: build/linux/bzImage, printed on stdout.  Incremental: a changed
# patch rewrites only the files whose content changes, and make (through
# ccache, CC="ccache gcc", fixed build user/host/timestamp so that other
# trees hit the same cache entries) rebuilds only what depends on them.
# Missing packages (linux-source-6.1, the kernel's build tools) are
# installed with apt-get when run as root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

parse_force_or_help 3,22 "$@"

SERIES_DIR_LINUX=$QEMU_LWP_ROOT/patches/linux
FRAGMENT=$QEMU_LWP_ROOT/tests/linux/kernel.config
SRC_PKG=linux-source-6.1
SRC_TARBALL=/usr/src/$SRC_PKG.tar.xz
ROOT=$QEMU_LWP_BUILD/linux
PRISTINE=$ROOT/pristine
SRC=$ROOT/src
# Inside the source tree, so that kbuild uses relative paths (srctree=..)
# and ccache hits across clones and worktrees.
OBJ=$SRC/obj
LOG=$ROOT/build.log
CONFIG_LOG=$ROOT/config.log
JOBS=${LINUX_JOBS:-2}   # the machines have two cores
export CCACHE_DIR=${CCACHE_DIR:-$QEMU_LWP_CACHE/ccache}
MAKE=(make -C "$SRC" O="$OBJ" CC="ccache gcc" HOSTCC="ccache gcc"
      KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 2026"
      KBUILD_BUILD_USER=qemu-lwp KBUILD_BUILD_HOST=qemu-lwp)

# --- packages -----------------------------------------------------------------
need=()
[ -n "$(installed_version "$SRC_PKG")" ] || need+=("$SRC_PKG")
for t in make:make gcc:gcc ccache:ccache flex:flex bison:bison bc:bc \
         xz:xz-utils cpio:cpio perl:perl; do
    command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
[ -f /usr/include/libelf.h ] || need+=(libelf-dev)       # objtool
[ -f /usr/include/openssl/ssl.h ] || need+=(libssl-dev)  # sign-file, extract-cert
if [ "${#need[@]}" -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing packages, install them as root: apt-get install ${need[*]}"
    step "apt-get install ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
        --no-install-recommends "${need[@]}" >&2 || die "apt-get install ${need[*]} failed"
fi
SRC_VER=$(installed_version "$SRC_PKG")
[ -f "$SRC_TARBALL" ] || die "$SRC_TARBALL missing (package $SRC_PKG $SRC_VER)"

# --- the series -----------------------------------------------------------------
[ -f "$SERIES_DIR_LINUX/series" ] || die "$SERIES_DIR_LINUX/series missing"
[ -f "$FRAGMENT" ] || die "$FRAGMENT missing"
mapfile -t PATCHES < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$SERIES_DIR_LINUX/series" | grep -v '^$' || true)
for p in "${PATCHES[@]}"; do
    [ -f "$SERIES_DIR_LINUX/$p" ] || die "patches/linux/series names $p, which does not exist"
done

OUT=$ROOT/bzImage
STAMP=$ROOT/.stamp
want_stamp=$(
    {
        echo "source $SRC_VER jobs $JOBS"
        cat "$0" "$FRAGMENT" "$SERIES_DIR_LINUX/series"
        for p in "${PATCHES[@]}"; do cat "$SERIES_DIR_LINUX/$p"; done
    } | sha256sum | cut -c1-32
)
if [ "$FORCE" = 0 ] && [ -f "$OUT" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want_stamp" ]; then
    step "Linux guest kernel is up to date"
    echo "$OUT"
    exit 0
fi
start=$(date +%s)
mkdir -p "$ROOT"

# --- sources ----------------------------------------------------------------------
if [ ! -d "$PRISTINE" ] || [ "$(cat "$ROOT/.pristine" 2>/dev/null)" != "$SRC_PKG $SRC_VER" ]; then
    step "extracting $SRC_PKG $SRC_VER"
    rm -rf "$PRISTINE" "$PRISTINE.tmp" "$SRC" "$ROOT/.applied"
    mkdir -p "$PRISTINE.tmp"
    tar -xJf "$SRC_TARBALL" -C "$PRISTINE.tmp" --strip-components=1 ||
        die "could not extract $SRC_TARBALL"
    mv "$PRISTINE.tmp" "$PRISTINE"
    echo "$SRC_PKG $SRC_VER" >"$ROOT/.pristine"
fi
if [ ! -d "$SRC" ]; then
    cp -al "$PRISTINE" "$SRC.tmp"
    mv "$SRC.tmp" "$SRC"
    : >"$ROOT/.applied"
fi

# The series is applied to a staging copy of the files it touches; those
# files, and the ones an earlier series touched, are then brought to their
# new content in src/, each only if it changed.
touched() {   # the paths a patch creates or changes (its "+++ b/" lines)
    sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$1"
}
STAGE=$ROOT/stage
rm -rf "$STAGE"
mkdir -p "$STAGE"
: >"$ROOT/.applying"
for p in "${PATCHES[@]}"; do touched "$SERIES_DIR_LINUX/$p"; done | sort -u >"$ROOT/.applying"
while IFS= read -r f; do
    if [ -f "$PRISTINE/$f" ]; then
        mkdir -p "$STAGE/$(dirname "$f")"
        cp "$PRISTINE/$f" "$STAGE/$f"
    fi
done <"$ROOT/.applying"
step "applying patches/linux/series (${#PATCHES[@]} patches, no fuzz)"
for p in "${PATCHES[@]}"; do
    if ! out=$(patch -d "$STAGE" -p1 -F0 -N --batch --dry-run <"$SERIES_DIR_LINUX/$p" 2>&1); then
        printf '%s\n' "$out" >&2
        die "patch $p does not apply to $SRC_PKG $SRC_VER without fuzz"
    fi
    patch -d "$STAGE" -p1 -F0 -N --batch -s --no-backup-if-mismatch \
        <"$SERIES_DIR_LINUX/$p" >&2 || die "patch $p failed to apply"
done
sort -u "$ROOT/.applied" "$ROOT/.applying" | sync_kernel_tree "$STAGE" "$PRISTINE" "$SRC"
mv "$ROOT/.applying" "$ROOT/.applied"
rm -rf "$STAGE"

# --- configuration ------------------------------------------------------------------
mkdir -p "$OBJ"
CONFIG_STAMP=$OBJ/.qemu-lwp-config
want_config=$(cat "$FRAGMENT" "$SERIES_DIR_LINUX/series" "${PATCHES[@]/#/$SERIES_DIR_LINUX/}" | sha256sum | cut -c1-32)
if [ ! -f "$OBJ/.config" ] || [ "$(cat "$CONFIG_STAMP" 2>/dev/null)" != "$want_config" ]; then
    step "configuring: make tinyconfig + tests/linux/kernel.config"
    # (olddefconfig warns about each option the fragment overrides: expected.)
    "${MAKE[@]}" -s tinyconfig >"$CONFIG_LOG" 2>&1 ||
        { tail -n 20 "$CONFIG_LOG" >&2; die "make tinyconfig failed (see $CONFIG_LOG)"; }
    cat "$FRAGMENT" >>"$OBJ/.config"
    "${MAKE[@]}" -s olddefconfig >>"$CONFIG_LOG" 2>&1 ||
        { tail -n 20 "$CONFIG_LOG" >&2; die "make olddefconfig failed (see $CONFIG_LOG)"; }
    # Every option of the fragment must have survived olddefconfig.
    missing=$(kconfig_fragment_missing "$FRAGMENT" "$OBJ/.config")
    [ -z "$missing" ] || die "tests/linux/kernel.config asks for what Kconfig did not give:$missing"
    echo "$want_config" >"$CONFIG_STAMP"
fi

# --- build ----------------------------------------------------------------------------
step "building bzImage (make -j$JOBS, CC=\"ccache gcc\", log: $LOG)"
if ! "${MAKE[@]}" -j"$JOBS" bzImage >"$LOG" 2>&1; then
    grep -E 'error|Error' "$LOG" | head -n 40 >&2 || true
    tail -n 20 "$LOG" >&2
    die "kernel build failed (see $LOG)"
fi
nwarn=$(grep -c 'warning:' "$LOG" || true)
if [ "$nwarn" -gt 0 ]; then
    step "$nwarn compiler warning(s):"
    grep 'warning:' "$LOG" | head -n 20 >&2
fi
cp "$OBJ/arch/x86/boot/bzImage" "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$want_stamp" >"$STAMP"
step "built $OUT ($(stat -c %s "$OUT") bytes) in $(($(date +%s) - start)) s"
echo "$OUT"
