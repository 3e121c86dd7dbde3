#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the L1 image of the nested test (tests/kvm/run-nested.py): Debian's
# kernel (the version linux-image-amd64 depends on) and an initramfs holding
# busybox, tests/kvm/l1-init.sh as /init, our qemu-system-x86_64 with its
# shared libraries and firmware, the guest test images and the KVM modules.
#
# KVM modules: Debian's own kvm.ko/kvm-amd.ko, or, when they exist at build
# time, the patched build/kvm-modules/<kernel-version>/{kvm.ko,kvm-amd.ko};
# their dependencies (irqbypass.ko, ccp.ko) always come from Debian.
#
# Usage: scripts/build-nested-image.sh [OUTDIR]     (default build/nested)
# Prints the kernel and initramfs paths on its last two lines.  Incremental:
# nothing is rebuilt unless an input changed (packages, QEMU binary, its
# libraries and firmware, guest images, modules, /init, this script).
# Environment: NESTED_L1_KERNEL=<bzImage> makes L1 run that kernel instead
# of Debian's: the project's own (scripts/build-linux-kernel.sh, the LWP
# core and KVM built in, so no modules are packed), and the L1 programs of
# the linux suite (lwp-linux-threads, from NESTED_LINUX_DIR) go to /l1/;
# NESTED_KSELFTEST_DIR=<dir>: its programs (KVM selftests built from the
# patched tree, tests/kvm/build-kvm-selftests.sh) go to /kselftest/kvm/,
# stripped, for l1-init.sh's l1kst=;
# NESTED_KERNEL_PKG overrides the kernel package name;
# NESTED_KVM_MODULES=stock ignores build/kvm-modules; NESTED_GUEST_DIR is
# where the guest images are (default build/lwp/tests/guest);
# QEMU_LWP_QEMU_BUILDDIR where qemu-system-x86_64 is (default build/qemu).
# The LWP Linux guest of the linux suite (bzImage, initramfs.cpio.gz of
# NESTED_LINUX_DIR, default build/lwp/tests/linux) goes to /linux/ when it is
# built, for L1 to boot it as L2; NESTED_LINUX_DIR set makes it required.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

OUT=${1:-$QEMU_LWP_BUILD/nested}
QEMU_BIN=$QEMU_BUILDDIR/qemu-system-x86_64
GUEST_DIR=${NESTED_GUEST_DIR:-$LWP_BUILDDIR/tests/guest}
INIT_SRC=$QEMU_LWP_ROOT/tests/kvm/l1-init.sh
EXPECT_SRC=$QEMU_LWP_ROOT/tests/user/lwp-msvc-port.expected
LINUX_DIR=${NESTED_LINUX_DIR:-$LWP_BUILDDIR/tests/linux}
LINUX_FILES=("$LINUX_DIR/bzImage" "$LINUX_DIR/initramfs.cpio.gz")
DEB_DIR=$QEMU_LWP_CACHE/nested
LOG=$QEMU_LWP_BUILD/nested-image.log
# Firmware a pc machine with -kernel needs (seen with strace); the option ROMs
# of the NICs are not needed (-nodefaults).
FIRMWARE=(/usr/share/seabios/bios-256k.bin /usr/share/qemu/kvmvapic.bin
          /usr/share/qemu/multiboot_dma.bin /usr/share/qemu/linuxboot_dma.bin
          /usr/share/qemu/pvh.bin)

mkdir -p "$OUT" "$DEB_DIR" "$QEMU_LWP_BUILD"
log() { echo "nested-image: $*" | tee -a "$LOG" >&2; }
: >"$LOG"

need_cmd cpio cpio
need_cmd dpkg-deb dpkg
need_cmd modinfo kmod
need_cmd strip binutils
[ -x "$QEMU_BIN" ] || die "no $QEMU_BIN: build QEMU first (scripts/run.sh)"
ls "$GUEST_DIR"/*.img >/dev/null 2>&1 || die "no guest images in $GUEST_DIR: build the tests first"
L1_KERNEL=${NESTED_L1_KERNEL:-}
L1_PROGS=("$LINUX_DIR/lwp-linux-threads")
KST_DIR=${NESTED_KSELFTEST_DIR:-}
KST_PROGS=()
if [ -n "$KST_DIR" ]; then
    [ -d "$KST_DIR" ] || die "NESTED_KSELFTEST_DIR=$KST_DIR does not exist"
    mapfile -t KST_PROGS < <(find "$KST_DIR" -maxdepth 1 -type f -perm -u+x | sort)
    [ "${#KST_PROGS[@]}" -gt 0 ] || die "no programs in NESTED_KSELFTEST_DIR=$KST_DIR"
fi
LINUX=no
if [ -f "${LINUX_FILES[0]}" ] && [ -f "${LINUX_FILES[1]}" ]; then
    LINUX=yes
elif [ -n "${NESTED_LINUX_DIR:-}" ]; then
    die "no ${LINUX_FILES[*]}: build the Linux guest first (tests/linux)"
fi

# --- the packages ----------------------------------------------------------
if [ -n "$L1_KERNEL" ]; then
    [ -f "$L1_KERNEL" ] || die "NESTED_L1_KERNEL=$L1_KERNEL does not exist"
    for f in "${L1_PROGS[@]}"; do
        [ -f "$f" ] || die "no $f: build the linux suite's programs first"
    done
fi
KREL=$(debian_kernel_release)
if [ -z "${NESTED_KERNEL_PKG:-}" ] && [ -z "$KREL" ]; then
    log "apt-cache knows no linux-image-amd64: apt-get update"
    apt-get update >>"$LOG" 2>&1 || die_log "$LOG" "apt-get update failed"
    KREL=$(debian_kernel_release)
    [ -n "$KREL" ] || die "linux-image-amd64 depends on no linux-image-6.1.0-NN-amd64 package"
fi
KPKG=${NESTED_KERNEL_PKG:-linux-image-$KREL}
KVER=${KPKG#linux-image-}

fetch_deb() {   # package -> path of its .deb in DEB_DIR
    local pkg=$1 ver file
    ver=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
        # Keep working offline with what was downloaded before.
        file=$(ls -t "$DEB_DIR/${pkg}_"*_amd64.deb 2>/dev/null | head -n1 || true)
        [ -n "$file" ] || die "package $pkg unknown to apt and not downloaded before"
        echo "$file"; return
    fi
    file=
    for f in "$DEB_DIR/${pkg}_"*_amd64.deb; do
        [ -f "$f" ] && [ "$(dpkg-deb -f "$f" Version)" = "$ver" ] && file=$f
    done
    if [ -z "$file" ]; then
        log "downloading $pkg $ver"
        (cd "$DEB_DIR" && apt-get download "$pkg=$ver") >>"$LOG" 2>&1 ||
            die_log "$LOG" "apt-get download $pkg failed"
        file=$(ls -t "$DEB_DIR/${pkg}_"*_amd64.deb | head -n1)
    fi
    echo "$file"
}
KDEB=
[ -n "$L1_KERNEL" ] || KDEB=$(fetch_deb "$KPKG")
BBDEB=$(fetch_deb busybox-static)

# --- which KVM modules -------------------------------------------------------
PATCHED_DIR=$QEMU_LWP_BUILD/kvm-modules/$KVER
MODSRC=stock
if [ -n "$L1_KERNEL" ]; then
    MODSRC=builtin
    KPKG=project
    KVER=project
elif [ "${NESTED_KVM_MODULES:-auto}" != stock ] &&
   [ -f "$PATCHED_DIR/kvm.ko" ] && [ -f "$PATCHED_DIR/kvm-amd.ko" ]; then
    MODSRC=patched
fi

# --- inputs and the stamp ------------------------------------------------------
qemu_libs() {
    ldd "$QEMU_BIN" | awk '/=> \// { print $3 } /^\t\/[^ ]*ld-linux/ { print $1 }'
}
inputs() {
    echo "$KPKG $MODSRC"
    if [ -n "$L1_KERNEL" ]; then sha256sum "$L1_KERNEL" "${L1_PROGS[@]}"; fi
    sha256sum "$0" "$INIT_SRC" "$EXPECT_SRC" $KDEB "$BBDEB" "$QEMU_BIN" \
        $(qemu_libs | xargs readlink -f) $(readlink -f "${FIRMWARE[@]}") "$GUEST_DIR"/*.img
    if [ $MODSRC = patched ]; then sha256sum "$PATCHED_DIR"/*.ko; fi
    if [ $LINUX = yes ]; then sha256sum "${LINUX_FILES[@]}"; fi
    if [ -n "$KST_DIR" ]; then sha256sum "${KST_PROGS[@]}"; fi
}
WANT=$(inputs | sha256sum | cut -c1-32)
if [ -f "$OUT/initramfs.cpio.gz" ] && [ -f "$OUT/vmlinuz" ] &&
   [ "$(cat "$OUT/.stamp" 2>/dev/null)" = "$WANT" ]; then
    log "up to date ($KVER, $MODSRC KVM modules)"
    echo "$OUT/vmlinuz"; echo "$OUT/initramfs.cpio.gz"
    exit 0
fi

# --- extract --------------------------------------------------------------------
WORK=$OUT/work
rm -rf "$WORK"
mkdir -p "$WORK/kernel" "$WORK/busybox" "$WORK/root"
dpkg-deb -x "$BBDEB" "$WORK/busybox"
if [ -n "$L1_KERNEL" ]; then
    log "L1 kernel: $L1_KERNEL (KVM built in)"
    cp "$L1_KERNEL" "$OUT/vmlinuz.new"
else
    log "extracting $(basename "$KDEB")"
    dpkg-deb -x "$KDEB" "$WORK/kernel"
    MODTREE=$WORK/kernel/lib/modules/$KVER
    [ -d "$MODTREE" ] || die "$KDEB holds no lib/modules/$KVER"
    cp "$WORK/kernel/boot/vmlinuz-$KVER" "$OUT/vmlinuz.new"
fi

R=$WORK/root
mkdir -p "$R"/{bin,sbin,dev,proc,sys,tmp,run,etc,tests,usr/local/bin,usr/share/qemu,usr/share/seabios,lib/modules/$KVER}
cp "$WORK/busybox/bin/busybox" "$R/bin/busybox"
cp "$INIT_SRC" "$R/init"
chmod 755 "$R/init"

# --- QEMU, its libraries and firmware -------------------------------------------
strip -o "$R/usr/local/bin/qemu-system-x86_64" "$QEMU_BIN"
for lib in $(qemu_libs); do
    mkdir -p "$R$(dirname "$lib")"
    cp -L "$lib" "$R$lib"
done
# ld.so is looked for under /lib64 whatever ldd printed.
if [ ! -e "$R/lib64/ld-linux-x86-64.so.2" ]; then
    mkdir -p "$R/lib64"
    cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"
fi
for fw in "${FIRMWARE[@]}"; do
    [ -e "$fw" ] || die "firmware $fw is missing (packages seabios, qemu-system-data)"
    cp -L "$fw" "$R$fw"
done
# Both firmware directories hold everything: the binary in /usr/local/bin
# looks in /usr/share/qemu (its relocated firmware path), -L works too.
cp -L "$R"/usr/share/seabios/* "$R"/usr/share/qemu/
cp -L "$R"/usr/share/qemu/* "$R"/usr/share/seabios/ 2>/dev/null || true

# --- guest images ---------------------------------------------------------------
cp "$GUEST_DIR"/*.img "$R/tests/"
cp "$EXPECT_SRC" "$R/tests/"
if [ -n "$L1_KERNEL" ]; then
    mkdir -p "$R/l1"
    cp "${L1_PROGS[@]}" "$R/l1/"
fi
if [ -n "$KST_DIR" ]; then
    mkdir -p "$R/kselftest/kvm"
    for p in "${KST_PROGS[@]}"; do
        # (a wrapper script is not an object to strip)
        strip -o "$R/kselftest/kvm/$(basename "$p")" "$p" 2>/dev/null ||
            cp "$p" "$R/kselftest/kvm/"
    done
fi
if [ $LINUX = yes ]; then
    mkdir -p "$R/linux"
    cp "${LINUX_FILES[@]}" "$R/linux/"
    log "Linux guest: ${LINUX_FILES[*]}"
fi

# --- KVM modules ------------------------------------------------------------------
mod_path() {     # module name (kvm_amd or kvm-amd) -> path of its .ko
    local n=${1//_/-} m
    if [ $MODSRC = patched ] && [ -f "$PATCHED_DIR/$n.ko" ]; then
        echo "$PATCHED_DIR/$n.ko"; return
    fi
    m=$(find "$MODTREE" -name "$n.ko" -o -name "${n//-/_}.ko" | head -n1)
    [ -n "$m" ] || die "module $1 not found in $KDEB"
    echo "$m"
}
ORDER=()
add_module() {   # add dependencies first
    local name=${1//_/-} dep
    for m in "${ORDER[@]}"; do [ "$m" = "$name" ] && return; done
    for dep in $(modinfo -F depends "$(mod_path "$name")" | tr , ' '); do
        add_module "$dep"
    done
    ORDER+=("$name")
}
[ -n "$L1_KERNEL" ] || add_module kvm
[ -n "$L1_KERNEL" ] || add_module kvm-amd
: >"$R/lib/modules/load-order"
for m in "${ORDER[@]}"; do
    p=$(mod_path "$m")
    cp "$p" "$R/lib/modules/$KVER/$m.ko"
    vm=$(modinfo -F vermagic "$p" | awk '{print $1}')
    [ "$vm" = "$KVER" ] || log "warning: $p is built for $vm, not $KVER"
    src=debian; case $p in "$PATCHED_DIR"/*) src=patched;; esac
    echo "$m $src $(sha256sum "$p" | cut -c1-12)" >>"$R/lib/modules/load-order"
    log "module $m: $src ($p)"
done
cat >"$R/etc/nested-image" <<EOF
kernel=$KPKG $(basename "${KDEB:-$L1_KERNEL}")
kvm_modules=$MODSRC
linux_guest=$LINUX
qemu_sha256=$(sha256sum "$QEMU_BIN" | cut -c1-16)
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EOF

# --- pack --------------------------------------------------------------------------
log "packing the initramfs ($(du -sh "$R" | cut -f1) unpacked)"
(cd "$R" && find . -print0 | LC_ALL=C sort -z |
    cpio --null -o -H newc --owner=0:0 --quiet | gzip -6 -n) >"$OUT/initramfs.cpio.gz.new"
mv "$OUT/initramfs.cpio.gz.new" "$OUT/initramfs.cpio.gz"
mv "$OUT/vmlinuz.new" "$OUT/vmlinuz"
cp "$R/etc/nested-image" "$OUT/image.info"
cp "$R/lib/modules/load-order" "$OUT/modules.txt"
rm -rf "$WORK"
echo "$WANT" >"$OUT/.stamp"
log "built $OUT/initramfs.cpio.gz ($(du -h "$OUT/initramfs.cpio.gz" | cut -f1)), kernel $KVER, $MODSRC KVM modules"
echo "$OUT/vmlinuz"; echo "$OUT/initramfs.cpio.gz"
