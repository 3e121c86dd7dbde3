#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Check every prefix of patches/linux/series the way a maintainer bisecting
# through it would meet it (issue 22, "safe at every commit"):
#
#   1. every patch passes the kernel tree's scripts/checkpatch.pl --strict;
#   2. patch k applies to the tree of patches 1..k-1 exactly: no fuzz and
#      no offset (the series is generated against this very base);
#   3. every prefix builds, and a compiler warning in a file the series
#      touches is a failure:
#      - a prefix that does not enable LWP: make of the objects of every
#        C file of the series that exists at this prefix (fpu/core.o,
#        signal.o, xstate.o, cpu/lwp.o, idt.o, irq.o, process.o), then a
#        link check: every symbol they need is defined by one of them or
#        by a file the series never touches (the symbol table of the linux
#        suite's kernel, less what its touched objects define);
#      - a prefix that enables LWP: the whole kernel, make bzImage;
#      - a prefix with KVM patches: kvm.ko and kvm-amd.ko too, out of tree
#        against Debian's linux-headers (scripts/build-kvm-modules.sh), as
#        the nested suite uses them;
#   4. every prefix that enables LWP (XCR0[62]: the LWP component is in
#      XFEATURE_MASK_USER_SUPPORTED) boots under our QEMU and passes the ABI
#      tests (lwptests=abi,abi32,kselftest,kselftest32 of tests/linux/init.sh,
#      judged by run_linux.py).  Enabling prefixes whose difference from the
#      last booted one lies only in tools/ (or text) build the same kernel;
#      they are not booted again, except the full series.
#
#   tests/linux/check-series-prefixes.sh --qemu QEMU --initrd INITRAMFS
#
# The configuration is exactly that of the `linux` suite's guest kernel
# (make tinyconfig + tests/linux/kernel.config, with IA32_EMULATION): it
# compiles every file the x86 patches touch (arch/x86/kernel/fpu, cpu/lwp.c,
# the compat signal frames, idt.c, irq.c, process.c), it boots in the suite's
# QEMU, and the objects of the enabling prefixes are the ones
# scripts/build-linux-kernel.sh builds for the full series (they differ
# only in KVM and tools/), so ccache (same compiler command lines, build
# user, host and timestamp) serves them.  The earlier prefixes change widely
# included headers (fpu/types.h, msr-index.h, irq_vectors.h, processor.h),
# so building their whole kernel would be a cold build each, several
# minutes on the project's two cores; their touched objects and the link
# check cost seconds.  That configuration has KVM built in (the nested
# suite's second L1 is this kernel), so every enabling prefix, the KVM ones
# included, builds its whole kernel, KVM in tree beside the x86 core, and
# boots it; a KVM prefix's kernel differs from the last one only in KVM, so
# make rebuilds just that.  The KVM patches are built as modules against
# Debian's headers too, as the nested suite's first L1 uses them.  One object directory is walked
# forward through the prefixes: make rebuilds only what each patch changes.
# A prefix whose inputs (source package, this script, the configuration,
# patches 1..k) already passed on this machine is not checked again, so an
# unchanged series costs only the checkpatch runs.
#
# Trees under build/linux-prefixes/:
#   src/      hard links to build/linux/pristine/ (linux-source-6.1 as
#             Debian ships it), except the files the series touches, which
#             are replaced (never written through) as each prefix is applied
#   src/obj/  make O=obj
#   stage/    the files the series touches, patched up to the current prefix
#   passed    the input hashes of the prefixes that passed
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/lib.sh"

QEMU= INITRD=
while [ $# -gt 0 ]; do
    case $1 in
    --qemu) QEMU=$2; shift 2 ;;
    --initrd) INITRD=$2; shift 2 ;;
    -h|--help) sed -n 3,39p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
    esac
done
[ -n "$QEMU" ] && [ -n "$INITRD" ] || die "usage: $0 --qemu QEMU --initrd INITRAMFS"

SERIES_DIR=$QEMU_LWP_ROOT/patches/linux
FRAGMENT=$QEMU_LWP_ROOT/tests/linux/kernel.config
PRISTINE=$QEMU_LWP_BUILD/linux/pristine
ROOT=$QEMU_LWP_BUILD/linux-prefixes
SRC=$ROOT/src
OBJ=$SRC/obj
STAGE=$ROOT/stage
PASSED=$ROOT/passed
JOBS=${LINUX_JOBS:-2}
export CCACHE_DIR=${CCACHE_DIR:-$QEMU_LWP_CACHE/ccache}
MAKE=(make -C "$SRC" O="$OBJ" CC="ccache gcc" HOSTCC="ccache gcc"
      KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 2026"
      KBUILD_BUILD_USER=qemu-lwp KBUILD_BUILD_HOST=qemu-lwp)

# scripts/build-linux-kernel.sh (a dependency of this test) extracts it.
[ -f "$PRISTINE/Makefile" ] && [ -f "$QEMU_LWP_BUILD/linux/.pristine" ] ||
    die "$PRISTINE missing: run scripts/build-linux-kernel.sh first"
SRC_ID=$(cat "$QEMU_LWP_BUILD/linux/.pristine")

mapfile -t PATCHES < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$SERIES_DIR/series" | grep -v '^$' || true)
N=${#PATCHES[@]}
[ "$N" -gt 0 ] || die "patches/linux/series lists no patch"

failed=0 passed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
start=$(date +%s)

# --- 1. checkpatch ------------------------------------------------------------
for p in "${PATCHES[@]}"; do
    [ -f "$SERIES_DIR/$p" ] || die "patches/linux/series names $p, which does not exist"
    # scripts/spdxcheck.py runs under the first python3 in PATH and needs
    # Debian's python3-ply.
    # Run from the kernel tree: inside a git work tree (this project's, where
    # meson runs the test), checkpatch.pl reads the patch as a change to
    # the project's files.
    if out=$(cd "$PRISTINE" && PATH=/usr/bin:$PATH perl scripts/checkpatch.pl --strict --quiet \
                  --no-summary "$SERIES_DIR/$p" 2>&1); then
        pass "$p: checkpatch.pl --strict is clean"
    else
        fail "$p: checkpatch.pl --strict"
        printf '%s\n' "$out" | head -n 30
    fi
done

# --- which prefixes are to be checked -------------------------------------------
# key[k]: everything prefix k's result depends on.
key=()
acc=$(printf '%s\n' "$SRC_ID" | cat - "$0" "$FRAGMENT" "$QEMU_LWP_ROOT/scripts/build-kvm-modules.sh" \
      "$SERIES_DIR/Kbuild" | sha256sum | cut -c1-32)
for ((k = 0; k < N; k++)); do
    acc=$( { echo "$acc"; cat "$SERIES_DIR/${PATCHES[k]}"; } | sha256sum | cut -c1-32)
    key[k]=$acc
done
first=$N
for ((k = 0; k < N; k++)); do
    if ! grep -qx "${key[k]}" "$PASSED" 2>/dev/null; then
        first=$k
        break
    fi
done
if [ "$first" = "$N" ]; then
    echo "note: all $N prefixes passed before with these inputs (build/linux-prefixes/passed)"
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ]
    exit
fi
[ "$first" = 0 ] || echo "note: prefixes 1..$first passed before with these inputs; checking $((first + 1))..$N"

# --- trees ------------------------------------------------------------------------
mkdir -p "$ROOT"
if [ ! -d "$SRC" ] || [ "$(cat "$ROOT/.pristine" 2>/dev/null)" != "$SRC_ID" ]; then
    step "linking $PRISTINE into $SRC"
    rm -rf "$SRC" "$SRC.tmp"
    mkdir "$SRC.tmp"
    # The tree's files, never a link to the tree (files are replaced in src/).
    cp -al "$PRISTINE/." "$SRC.tmp/"
    mv "$SRC.tmp" "$SRC"
    echo "$SRC_ID" >"$ROOT/.pristine"
    : >"$ROOT/.touched"
fi
touched() { sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$1"; }
# Every file any patch touches, and those an earlier run left changed in src/.
for p in "${PATCHES[@]}"; do touched "$SERIES_DIR/$p"; done |
    sort -u - "$ROOT/.touched" >"$ROOT/.touched.new"
mv "$ROOT/.touched.new" "$ROOT/.touched"
rm -rf "$STAGE"
mkdir -p "$STAGE"
while IFS= read -r f; do
    if [ -f "$PRISTINE/$f" ]; then
        mkdir -p "$STAGE/$(dirname "$f")"
        cp "$PRISTINE/$f" "$STAGE/$f"
    fi
done <"$ROOT/.touched"

# Bring src/ to the staged content (pristine where nothing is staged), only
# replacing files whose content differs, so make rebuilds just what changed.
sync_src() {
    sync_kernel_tree "$STAGE" "$PRISTINE" "$SRC" <"$ROOT/.touched"
}

apply_exact() {   # patch file: applies it to stage/, refusing fuzz and offsets
    local p=$1 out
    if ! out=$(patch -d "$STAGE" -p1 -F0 -N --batch --dry-run <"$SERIES_DIR/$p" 2>&1); then
        printf '%s\n' "$out" | head -n 20
        return 1
    fi
    if printf '%s\n' "$out" | grep -E -q 'offset|fuzz'; then
        printf '%s\n' "$out" | grep -E 'offset|fuzz' | head -n 20
        return 1
    fi
    patch -d "$STAGE" -p1 -F0 -N --batch -s --no-backup-if-mismatch <"$SERIES_DIR/$p"
}

# Does the staged tree enable LWP, i.e. put the LWP component into the user
# xfeatures the kernel sets in XCR0?
enables_lwp() {
    local h=$STAGE/arch/x86/include/asm/fpu/xstate.h
    [ -f "$h" ] || return 1
    sed -n '/^#define XFEATURE_MASK_USER_SUPPORTED/,/)[[:space:]]*$/p' "$h" | grep -q 'XFEATURE_MASK_LWP'
}

# Files that this kernel configuration never reads: tools/ is not part of
# the kernel, MAINTAINERS and Documentation/ are text.  (KVM is: the
# configuration has it built in, so a prefix that changes KVM builds, and
# boots, its own kernel.)
NOT_BUILT='^(tools/|Documentation/|MAINTAINERS$)'
# Files that differ between two staged snapshots, other than those.
core_changes() {   # dir-a dir-b
    diff -rq "$1" "$2" 2>/dev/null | sed -n -e 's|^Files \([^ ]*\) and .*|\1|p' \
        -e 's|^Only in \([^:]*\): \(.*\)|\1/\2|p' |
        sed -e "s|^$1/||" -e "s|^$2/||" |
        grep -v -E "$NOT_BUILT" || true
}

# --- configuration ----------------------------------------------------------------
mkdir -p "$OBJ"
want_config=$(sha256sum <"$FRAGMENT" | cut -c1-32)
configure() {
    step "configuring: make tinyconfig + tests/linux/kernel.config"
    "${MAKE[@]}" -s tinyconfig >"$ROOT/config.log" 2>&1 || return 1
    cat "$FRAGMENT" >>"$OBJ/.config"
    "${MAKE[@]}" -s olddefconfig >>"$ROOT/config.log" 2>&1 || return 1
    local missing
    missing=$(kconfig_fragment_missing "$FRAGMENT" "$OBJ/.config")
    [ -z "$missing" ] || { echo "Kconfig did not give:$missing" >&2; return 1; }
    echo "$want_config" >"$OBJ/.qemu-lwp-config"
}

# --- the suite's kernel ----------------------------------------------------------
# The full series, staged apart.  An enabling prefix whose built files equal
# the full series' is the kernel scripts/build-linux-kernel.sh built for the
# suite (same configuration, same tree): that bzImage is booted instead of
# building the same kernel again.  build/linux/src must hold the current
# series for that (the suite's linux_kernel dependency sees to it).
FULL_STAGE=$ROOT/stage-full
rm -rf "$FULL_STAGE"
cp -a "$STAGE" "$FULL_STAGE"
for p in "${PATCHES[@]}"; do
    patch -d "$FULL_STAGE" -p1 -F0 -N --batch -s --no-backup-if-mismatch <"$SERIES_DIR/$p" ||
        die "$p does not apply to the full series' stage"
done
SUITE_KERNEL=
if [ -f "$QEMU_LWP_BUILD/linux/bzImage" ]; then
    SUITE_KERNEL=$QEMU_LWP_BUILD/linux/bzImage
    while IFS= read -r f; do
        if [ -f "$FULL_STAGE/$f" ] && ! cmp -s "$FULL_STAGE/$f" "$QEMU_LWP_BUILD/linux/src/$f"; then
            echo "note: $QEMU_LWP_BUILD/linux/src/$f is not the current series': the suite's kernel is stale"
            SUITE_KERNEL=
            break
        fi
    done <"$ROOT/.touched"
fi

# --- symbols of the files the series never touches ---------------------------------
# From the linux suite's kernel (scripts/build-linux-kernel.sh, the full
# series): every symbol vmlinux defines, less those its touched objects
# define.
FULL_OBJ=$QEMU_LWP_BUILD/linux/src/obj
[ -f "$FULL_OBJ/vmlinux" ] || die "$FULL_OBJ/vmlinux missing: run scripts/build-linux-kernel.sh first"
mapfile -t full_objs < <(sed -n 's|^\([^[:space:]]*\)\.c$|\1.o|p' "$ROOT/.touched" |
    grep -v -E '^tools/' | while read -r o; do [ ! -f "$FULL_OBJ/$o" ] || echo "$o"; done)
comm -23 <(nm --defined-only "$FULL_OBJ/vmlinux" | awk 'NF == 3 { print $3 }' | sort -u) \
         <(cd "$FULL_OBJ" && nm --defined-only "${full_objs[@]}" | awk 'NF == 3 { print $3 }' | sort -u) \
    >"$ROOT/untouched-symbols"

# --- the prefixes -------------------------------------------------------------------
for ((k = 0; k < first; k++)); do
    apply_exact "${PATCHES[k]}" >/dev/null || die "${PATCHES[k]} no longer applies (it passed before?)"
done
# The staged files of the last prefix booted in this run: an enabling
# prefix is booted unless its built files equal these.  Not kept across
# runs, so that the first enabling prefix a run checks always boots.
booted=
rm -rf "$ROOT/booted-ref"
for ((k = first; k < N; k++)); do
    p=${PATCHES[k]}
    n=$((k + 1))
    if ! apply_exact "$p"; then
        fail "prefix $n ($p): applies with no fuzz and no offset"
        break
    fi
    pass "prefix $n ($p): applies with no fuzz and no offset"
    sync_src
    if [ "$(cat "$OBJ/.qemu-lwp-config" 2>/dev/null)" != "$want_config" ] || [ ! -f "$OBJ/.config" ]; then
        configure || { fail "prefix $n: configuration (see $ROOT/config.log)"; break; }
    fi
    # A changed Kconfig (CONFIG_X86_AMD_LWP) takes effect through olddefconfig.
    "${MAKE[@]}" -s olddefconfig >>"$ROOT/config.log" 2>&1 || true
    t0=$(date +%s)
    log=$ROOT/build-$n.log
    if [ "$k" -gt "$first" ] && ! touched "$SERIES_DIR/$p" | grep -q -v -E "$NOT_BUILT"; then
        # Prefix k-1 was built in this run and patch k changes nothing the
        # kernel build reads: make would find nothing to do (~30 s to learn it).
        what="nothing new: patch $n touches only tools/, MAINTAINERS or Documentation/"
        targets=()
        : >"$log"
    elif enables_lwp && [ -n "$SUITE_KERNEL" ] && [ -z "$(core_changes "$FULL_STAGE" "$STAGE")" ]; then
        what="nothing new: its kernel is the suite's (build/linux/bzImage), the full series less tools/"
        targets=()
        : >"$log"
    elif enables_lwp; then
        what=bzImage
        targets=(bzImage)
    else
        what="the objects of the series' C files, and their link check"
        mapfile -t targets < <(grep '\.c$' "$ROOT/.touched" | grep -v -E '^(arch/x86/kvm|virt/kvm|tools)/' |
            while read -r f; do [ ! -f "$SRC/$f" ] || echo "${f%.c}.o"; done)
    fi
    if [ "${#targets[@]}" -gt 0 ] && ! "${MAKE[@]}" -j"$JOBS" "${targets[@]}" >"$log" 2>&1; then
        fail "prefix $n ($p): builds $what (see $log)"
        grep -E 'error|Error' "$log" | head -n 20
        break
    fi
    if [ "${targets[0]:-}" != bzImage ] && [ "${#targets[@]}" -gt 0 ]; then
        # Undefined symbols of the touched objects must be defined by one of
        # them or by an object the series never touches.
        undef=$(cd "$OBJ" && nm -u "${targets[@]}" | awk '$1 == "U" { print $2 }' | sort -u)
        defs=$( { cd "$OBJ" && nm --defined-only "${targets[@]}" | awk 'NF == 3 { print $3 }'
                  cat "$ROOT/untouched-symbols"; } | sort -u)
        missing=$(comm -23 <(printf '%s\n' "$undef") <(printf '%s\n' "$defs") | grep -v '^$' || true)
        if [ -n "$missing" ]; then
            fail "prefix $n ($p): the touched objects link (undefined: $(echo $missing | head -c 300))"
            break
        fi
    fi
    # Warnings in the files the series touches count as failures.
    mine=$(grep 'warning:' "$log" | grep -F -f <(sed 's|$|:|' "$ROOT/.touched") || true)
    if [ -n "$mine" ]; then
        fail "prefix $n ($p): builds without warnings in the files the series touches"
        printf '%s\n' "$mine" | head -n 20
        break
    fi
    pass "prefix $n ($p): builds $what ($(($(date +%s) - t0)) s)"

    if grep -q -E '^\+\+\+ b/(arch/x86/kvm|virt/kvm)/' "$SERIES_DIR/$p"; then
        t0=$(date +%s)
        klog=$ROOT/kvm-$n.log
        if PATH=/usr/lib/ccache:$PATH LWP_SERIES_PREFIX=$n KVM_BUILD_ROOT=$ROOT/kvm \
               bash "$QEMU_LWP_ROOT/scripts/build-kvm-modules.sh" >"$klog" 2>&1; then
            kw=$(grep 'warning:' "$ROOT/kvm/kvm-modules/build-"*.log 2>/dev/null || true)
            if [ -n "$kw" ]; then
                fail "prefix $n ($p): kvm.ko and kvm-amd.ko build without warnings"
                printf '%s\n' "$kw" | head -n 20
                break
            fi
            pass "prefix $n ($p): kvm.ko and kvm-amd.ko build ($(($(date +%s) - t0)) s)"
        else
            fail "prefix $n ($p): kvm.ko and kvm-amd.ko build (see $klog)"
            tail -n 20 "$klog"
            break
        fi
    fi

    if enables_lwp; then
        kernel=$OBJ/arch/x86/boot/bzImage
        [ "${targets[0]:-}" = bzImage ] || [ -z "$SUITE_KERNEL" ] ||
            [ -n "$(core_changes "$FULL_STAGE" "$STAGE")" ] || kernel=$SUITE_KERNEL
        changes=
        [ -z "$booted" ] || changes=$(core_changes "$booted" "$STAGE")
        if [ -n "$booted" ] && [ -z "$changes" ] && [ "$n" != "$N" ]; then
            pass "prefix $n enables LWP; since prefix $booted_n, booted above, it changes only files no kernel build reads"
        else
            t0=$(date +%s)
            blog=$ROOT/boot-$n.log
            if python3 "$QEMU_LWP_ROOT/tests/linux/run_linux.py" --qemu "$QEMU" \
                   --kernel "$kernel" --initrd "$INITRD" \
                   --cpu max --smp 2 --tests abi,abi32,kselftest,kselftest32 >"$blog" 2>&1; then
                pass "prefix $n enables LWP: boots and passes abi,abi32,kselftest,kselftest32 ($(($(date +%s) - t0)) s)"
                rm -rf "$ROOT/booted-ref"
                cp -a "$STAGE" "$ROOT/booted-ref"
                booted=$ROOT/booted-ref
                booted_n=$n
            else
                fail "prefix $n enables LWP: boots and passes abi,abi32,kselftest,kselftest32 (see $blog)"
                grep -E '^FAIL' "$blog" | head -n 20
                break
            fi
        fi
    else
        pass "prefix $n does not enable LWP (XCR0[62] stays clear): no boot needed"
    fi
    echo "${key[k]}" >>"$PASSED"
done
[ "$k" = "$N" ] || fail "prefixes $((k + 2))..$N not checked after the failure"
enables_lwp || [ "$k" != "$N" ] || fail "the full series does not enable LWP"

echo "note: $(($(date +%s) - start)) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
