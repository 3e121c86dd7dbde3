#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build kvm.ko and kvm-amd.ko with the LWP passthrough patches of
# patches/linux/series (the KVM part: the patches that touch only
# arch/x86/kvm and virt/kvm, and MAINTAINERS or Documentation/, which are
# left out) for Debian bookworm's kernel, out of tree: only
# arch/x86/kvm and virt/kvm are taken from linux-source-6.1, and the rest
# (headers, .config, Module.symvers, kbuild) from the linux-headers package of
# the kernel the modules are for.  No kernel build is needed.  Such a
# kernel lacks the series' x86 LWP core, whose guest interface KVM uses:
# patches/linux/compat/ supplies it, on a borrowed vector (see the Kbuild
# file).
#
#   scripts/build-kvm-modules.sh [--force]
#
# The kernel release is that of the linux-image-6.1.0-NN-amd64 package that
# linux-image-amd64 depends on; KERNEL_RELEASE=6.1.0-NN-amd64 overrides it.
# Missing packages are installed with apt-get (root needed then):
# linux-headers-<release>; the KVM sources come from linux-source-6.1 of the
# same version (from its .deb, into the cache, when another is installed).
#
# Trees under build/kvm-src/:
#   pristine/        arch/x86/kvm and virt/kvm as Debian ships them
#   patched/         the same with the series applied (diff -ruN against
#                    pristine/ shows the series)
#   build-<release>/ a copy of patched/ plus the Kbuild file, where make
#                    writes its objects; files are only replaced when their
#                    content changed, so rebuilds are incremental
# Result: build/kvm-modules/<release>/{kvm.ko,kvm-amd.ko} (debug info
# stripped; the unstripped modules stay in the build tree).  The directory
# is printed on stdout.  Nothing is rebuilt when the source package, the
# headers, the series, the patches and the Kbuild file are unchanged.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

parse_force_or_help 3,28 "$@"

LINUX_SERIES_DIR=$QEMU_LWP_ROOT/patches/linux
KBUILD_FILE=$LINUX_SERIES_DIR/Kbuild
# The guest interface of the series' x86 LWP core, on a borrowed vector, for
# a kernel without the core (Debian's): see the Kbuild file.
COMPAT_DIR=$LINUX_SERIES_DIR/compat
SRC_PKG=linux-source-6.1
SRC_TARBALL=/usr/src/$SRC_PKG.tar.xz
SRC_TOPDIR=$SRC_PKG
KVM_SRC_ROOT=$QEMU_LWP_BUILD/kvm-src
# tests/linux/check-series-prefixes.sh builds the KVM part of each prefix of
# the series: LWP_SERIES_PREFIX=N takes only the first N patches of the
# series, and KVM_BUILD_ROOT puts the trees and modules elsewhere.
SERIES_PREFIX=${LWP_SERIES_PREFIX:-}
BUILD_ROOT=${KVM_BUILD_ROOT:-$QEMU_LWP_BUILD}
KVM_SRC_ROOT=$BUILD_ROOT/kvm-src
JOBS=2   # the machines have two cores

# --- packages -----------------------------------------------------------------

APT_UPDATED=0
apt_update() {
    [ "$APT_UPDATED" = 1 ] && return 0
    [ "$(id -u)" = 0 ] || die "package lists needed: run 'apt-get update' as root"
    step "apt-get update"
    apt-get update -qq >&2 || die "apt-get update failed: the Debian registry is not reachable"
    APT_UPDATED=1
}

apt_install() {
    [ "$(id -u)" = 0 ] || die "missing packages, install them as root: apt-get install $*"
    step "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 ||
        die "apt-get install $* failed"
}

REL=${KERNEL_RELEASE:-}
if [ -z "$REL" ]; then
    REL=$(debian_kernel_release)
    if [ -z "$REL" ]; then
        apt_update
        REL=$(debian_kernel_release)
    fi
    [ -n "$REL" ] || die "linux-image-amd64 depends on no linux-image-6.1.0-NN-amd64 (set KERNEL_RELEASE)"
fi
[[ $REL =~ ^6\.1\.0-[0-9]+-amd64$ ]] || die "KERNEL_RELEASE '$REL' is not a Debian 6.1 amd64 release (6.1.0-NN-amd64)"
HDR_PKG=linux-headers-$REL
HDR_DIR=/usr/src/$HDR_PKG

tools=()
command -v make >/dev/null || tools+=(make)
command -v patch >/dev/null || tools+=(patch)
command -v xz >/dev/null || tools+=(xz-utils)
command -v modinfo >/dev/null || tools+=(kmod)
command -v strip >/dev/null || tools+=(binutils)
hdr_ver=$(installed_version "$HDR_PKG")
if [ -z "$hdr_ver" ] || [ "${#tools[@]}" -gt 0 ]; then
    [ -n "$hdr_ver" ] || apt-cache show "$HDR_PKG" >/dev/null 2>&1 || apt_update
    want=("${tools[@]}")
    [ -n "$hdr_ver" ] || want+=("$HDR_PKG")
    apt_install "${want[@]}"
    hdr_ver=$(installed_version "$HDR_PKG")
fi
[ -n "$hdr_ver" ] && [ -f "$HDR_DIR/Module.symvers" ] ||
    die "$HDR_PKG is not installed properly ($HDR_DIR/Module.symvers missing)"

# The KVM sources must be those of the kernel the headers describe.  The
# installed linux-source-6.1 (the linux suite's kernel source too) may be a
# newer Debian revision than the headers of the kernel linux-image-amd64
# names, and apt refuses to downgrade it: the matching revision's tarball is
# then taken from its .deb, fetched into the cache, and the installed package
# is left alone.
src_ver=$(installed_version "$SRC_PKG")
if [ "$src_ver" != "$hdr_ver" ]; then
    SRC_TARBALL=$QEMU_LWP_CACHE/$SRC_PKG-$hdr_ver.tar.xz
    if [ ! -f "$SRC_TARBALL" ]; then
        apt-cache show "$SRC_PKG=$hdr_ver" >/dev/null 2>&1 || apt_update
        apt-cache show "$SRC_PKG=$hdr_ver" >/dev/null 2>&1 ||
            die "$SRC_PKG $hdr_ver (the version of $HDR_PKG) is not available${src_ver:+; $src_ver is installed}"
        step "fetching $SRC_PKG $hdr_ver, the version of $HDR_PKG${src_ver:+ ($src_ver is installed)}"
        deb_dir=$(mktemp -d)
        (cd "$deb_dir" && apt-get download -qq "$SRC_PKG=$hdr_ver" 2>/dev/null) ||
            die "apt-get download $SRC_PKG=$hdr_ver failed"
        mkdir -p "$QEMU_LWP_CACHE"
        dpkg-deb --fsys-tarfile "$deb_dir"/*.deb | tar -xO "./usr/src/$SRC_PKG.tar.xz" >"$SRC_TARBALL.tmp" ||
            die "$SRC_PKG $hdr_ver: no /usr/src/$SRC_PKG.tar.xz in its package"
        rm -rf "$deb_dir"
        mv "$SRC_TARBALL.tmp" "$SRC_TARBALL"
    fi
    src_ver=$hdr_ver
fi
[ -f "$SRC_TARBALL" ] || die "$SRC_TARBALL missing (package $SRC_PKG $src_ver)"

# --- up to date? ----------------------------------------------------------------

series_patches() {
    # Lines of 'series': one patch file name each; '#' starts a comment.
    sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$LINUX_SERIES_DIR/series" | grep -v '^$' || true
}

[ -f "$LINUX_SERIES_DIR/series" ] || die "$LINUX_SERIES_DIR/series missing"
[ -f "$KBUILD_FILE" ] || die "$KBUILD_FILE missing"
mapfile -t ALL_PATCHES < <(series_patches)
if [ -n "$SERIES_PREFIX" ]; then
    [[ $SERIES_PREFIX =~ ^[0-9]+$ ]] && [ "$SERIES_PREFIX" -le "${#ALL_PATCHES[@]}" ] ||
        die "LWP_SERIES_PREFIX=$SERIES_PREFIX: the series has ${#ALL_PATCHES[@]} patches"
    ALL_PATCHES=("${ALL_PATCHES[@]:0:$SERIES_PREFIX}")
fi
# The series holds the x86 core patches (the kernel's own LWP support) before
# the KVM ones; the modules take only the KVM patches: those that touch
# arch/x86/kvm or virt/kvm and, besides, at most files no build reads
# (MAINTAINERS, Documentation/), which are left out when they are applied.
# A patch touching both KVM and other code would be a layout error.
KVM_FILES='^(arch/x86/kvm|virt/kvm)/'
INERT_FILES='^(MAINTAINERS$|Documentation/)'
PATCHES=()
for p in "${ALL_PATCHES[@]}"; do
    [ -f "$LINUX_SERIES_DIR/$p" ] || die "patches/linux/series names $p, which does not exist"
    files=$(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$LINUX_SERIES_DIR/$p")
    kvm=$(printf '%s\n' "$files" | grep -c -E "$KVM_FILES" || true)
    code=$(printf '%s\n' "$files" | grep -v -E "$KVM_FILES" | grep -v -E "$INERT_FILES" || true)
    if [ "$kvm" -gt 0 ] && [ -z "$code" ]; then
        PATCHES+=("$p")
    elif [ "$kvm" -gt 0 ]; then
        die "patch $p touches both KVM (arch/x86/kvm, virt/kvm) and other code"
    fi
done
# A KVM patch without the parts for files outside arch/x86/kvm and virt/kvm.
kvm_part() {
    awk '/^diff --git / { keep = ($3 ~ /^a\/(arch\/x86\/kvm|virt\/kvm)\//) } keep' "$1"
}
[ "${#PATCHES[@]}" -gt 0 ] || die "patches/linux/series has no KVM patches"

OUT=$BUILD_ROOT/kvm-modules/$REL
STAMP=$OUT/.qemu-lwp-stamp
LOG=$BUILD_ROOT/kvm-modules/build-$REL.log
want_stamp=$(
    {
        echo "release $REL headers $hdr_ver source $src_ver jobs $JOBS"
        printf '%s\n' "${PATCHES[@]}"; cat "$KBUILD_FILE"
        (cd "$COMPAT_DIR" && find . -type f | LC_ALL=C sort | xargs cat)
        for p in "${PATCHES[@]}"; do cat "$LINUX_SERIES_DIR/$p"; done
    } | sha256sum | cut -c1-32
)
if [ "$FORCE" = 0 ] && [ -f "$OUT/kvm.ko" ] && [ -f "$OUT/kvm-amd.ko" ] &&
   [ "$(cat "$STAMP" 2>/dev/null)" = "$want_stamp" ]; then
    step "kvm.ko and kvm-amd.ko for $REL are up to date"
    echo "$OUT"
    exit 0
fi

start=$(date +%s)

# --- sources ----------------------------------------------------------------------

PRISTINE=$KVM_SRC_ROOT/pristine
PATCHED=$KVM_SRC_ROOT/patched
OBJ=$KVM_SRC_ROOT/build-$REL
mkdir -p "$KVM_SRC_ROOT"

PRISTINE_STAMP=$KVM_SRC_ROOT/.pristine-source
if [ ! -d "$PRISTINE" ] || [ "$(cat "$PRISTINE_STAMP" 2>/dev/null)" != "$SRC_PKG $src_ver" ]; then
    step "extracting arch/x86/kvm and virt/kvm from $SRC_PKG $src_ver"
    rm -rf "$PRISTINE" "$PRISTINE.tmp"
    mkdir -p "$PRISTINE.tmp"
    tar -xJf "$SRC_TARBALL" -C "$PRISTINE.tmp" --strip-components=1 \
        "$SRC_TOPDIR/arch/x86/kvm" "$SRC_TOPDIR/virt/kvm" ||
        die "could not extract arch/x86/kvm and virt/kvm from $SRC_TARBALL"
    mv "$PRISTINE.tmp" "$PRISTINE"
    echo "$SRC_PKG $src_ver" >"$PRISTINE_STAMP"
fi

step "applying the KVM patches of patches/linux/series (${#PATCHES[@]} of ${#ALL_PATCHES[@]}, no fuzz)"
rm -rf "$PATCHED.tmp"
cp -a "$PRISTINE" "$PATCHED.tmp"
for p in "${PATCHES[@]}"; do
    if ! out=$(kvm_part "$LINUX_SERIES_DIR/$p" | patch -d "$PATCHED.tmp" -p1 -F0 -N --batch --dry-run 2>&1); then
        printf '%s\n' "$out" >&2
        die "patch $p does not apply to $SRC_PKG $src_ver without fuzz"
    fi
    kvm_part "$LINUX_SERIES_DIR/$p" | patch -d "$PATCHED.tmp" -p1 -F0 -N --batch -s --no-backup-if-mismatch \
        >&2 || die "patch $p failed to apply"
done
# A kernel without the series' x86 LWP core (no asm/lwp.h: Debian's) does not
# enable LWP's XSAVE component, so the guest's LWP state cannot live in the
# vCPU's fpstate as the series has it; compat/*.patch (not part of the
# series) makes KVM keep it itself there.  Prefixes of the series build
# without it: they must build, and offer no LWP on such a kernel.
if [ -z "$SERIES_PREFIX" ] && [ ! -f "$HDR_DIR/arch/x86/include/asm/lwp.h" ]; then
    for p in "$COMPAT_DIR"/*.patch; do
        [ -f "$p" ] || continue
        kvm_part "$p" | patch -d "$PATCHED.tmp" -p1 -F0 -N --batch -s --no-backup-if-mismatch \
            >&2 || die "compat patch $(basename "$p") does not apply without fuzz"
    done
fi
rm -rf "$PATCHED"
mv "$PATCHED.tmp" "$PATCHED"

# The Kbuild file must build the same objects as the patched Makefiles.
makefile_objects() {
    # kvm-y / kvm-amd-y (and their CONFIG_ forms) assignments, continuation
    # lines joined; prints one object per line.
    sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' "$@" |
        grep -E '^[[:space:]]*kvm(-amd)?-(y|\$\(CONFIG_[A-Z0-9_]+\))[[:space:]]*[:+]?=' |
        sed -e 's/^[^=]*=//' | tr -s ' \t' '\n\n' | grep '\.o$' | sort -u || true
}
diff_objs=$(diff <(makefile_objects "$PATCHED/arch/x86/kvm/Makefile" "$PATCHED/virt/kvm/Makefile.kvm") \
                 <(makefile_objects "$KBUILD_FILE") || true)
[ -z "$diff_objs" ] || {
    printf '%s\n' "$diff_objs" >&2
    die "patches/linux/Kbuild and the patched Makefiles list different objects ('<' only in the Makefiles, '>' only in Kbuild)"
}

# Copy into the build tree only what changed, so make rebuilds only that.
sync_tree() {
    local src=$1 dst=$2 f
    (cd "$src" && find . -type f) | while IFS= read -r f; do
        if ! cmp -s "$src/$f" "$dst/$f"; then
            mkdir -p "$(dirname "$dst/$f")"
            cp "$src/$f" "$dst/$f"
        fi
    done
}
mkdir -p "$OBJ/include/trace"   # see the Kbuild file: trace.h's include path
sync_tree "$PATCHED" "$OBJ"
cmp -s "$KBUILD_FILE" "$OBJ/arch/x86/kvm/Kbuild" || cp "$KBUILD_FILE" "$OBJ/arch/x86/kvm/Kbuild"
mkdir -p "$OBJ/arch/x86/kvm/compat"
sync_tree "$COMPAT_DIR" "$OBJ/arch/x86/kvm/compat"

# --- build ------------------------------------------------------------------------

mkdir -p "$(dirname "$LOG")"
step "building kvm.ko and kvm-amd.ko for $REL (make -j$JOBS, log: $LOG)"
if ! make -C "$HDR_DIR" M="$OBJ/arch/x86/kvm" -j"$JOBS" modules >"$LOG" 2>&1; then
    grep -E 'error|Error' "$LOG" | head -n 40 >&2 || true
    tail -n 20 "$LOG" >&2
    die "module build failed (see $LOG)"
fi
nwarn=$(grep -c 'warning:' "$LOG" || true)
if [ "$nwarn" -gt 0 ]; then
    step "$nwarn compiler warning(s):"
    grep 'warning:' "$LOG" | head -n 20 >&2
fi

for m in kvm kvm-amd; do
    ko=$OBJ/arch/x86/kvm/$m.ko
    [ -f "$ko" ] || die "$ko was not built"
    magic=$(modinfo -F vermagic "$ko")
    [ "${magic%% *}" = "$REL" ] || die "$m.ko has vermagic '$magic', not for $REL"
    # Against the distribution's own module, when the image is installed.
    stock=/lib/modules/$REL/kernel/arch/x86/kvm/$m.ko
    if [ -f "$stock" ] && [ "$(modinfo -F vermagic "$stock")" != "$magic" ]; then
        die "$m.ko has vermagic '$magic', the kernel's own has '$(modinfo -F vermagic "$stock")'"
    fi
done
case ",$(modinfo -F depends "$OBJ/arch/x86/kvm/kvm-amd.ko")," in
*,kvm,*) ;;
*) die "kvm-amd.ko does not depend on kvm" ;;
esac

rm -rf "$OUT"
mkdir -p "$OUT"
for m in kvm kvm-amd; do
    strip --strip-debug -o "$OUT/$m.ko" "$OBJ/arch/x86/kvm/$m.ko"
done
echo "$want_stamp" >"$STAMP"
step "vermagic $(modinfo -F vermagic "$OUT/kvm.ko")"
step "built in $(($(date +%s) - start)) s: $OUT/kvm.ko $OUT/kvm-amd.ko"
echo "$OUT"
