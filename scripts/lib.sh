# SPDX-License-Identifier: GPL-2.0-or-later
# Shared shell helpers for qemu-lwp scripts (sourced, not run).
QEMU_LWP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QEMU_LWP_BUILD=${QEMU_LWP_BUILD:-$QEMU_LWP_ROOT/build}
# Downloads and stamps live outside the work tree so a fresh clone reuses them.
QEMU_LWP_CACHE=${QEMU_LWP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qemu-lwp}
QEMU_VERSION=10.0.2
QEMU_DEB_VERSION='1:10.0.2+ds-2+deb13u1~bpo12+1'
QEMU_TARBALL=qemu_10.0.2+ds.orig.tar.xz
QEMU_TARBALL_SHA256=0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1
# Not build/qemu-*: meson would take a source path that starts with the build
# directory's path (build/qemu) for a generated file.
QEMU_SRC=$QEMU_LWP_BUILD/src/qemu-$QEMU_VERSION
QEMU_BUILDDIR=${QEMU_LWP_QEMU_BUILDDIR:-$QEMU_LWP_BUILD/qemu}
LWP_BUILDDIR=$QEMU_LWP_BUILD/lwp

die()  { echo "qemu-lwp: error: $*" >&2; exit 1; }
step() { echo "qemu-lwp: $*" >&2; }

# die_log LOG MESSAGE: show the end of LOG, then stop with MESSAGE.
die_log() {
    local log=$1
    shift
    if [ -s "$log" ]; then
        echo "--- last lines of $log:" >&2
        tail -n 20 "$log" >&2
        echo "---" >&2
    fi
    die "$* (see $log)"
}

# need_cmd COMMAND PACKAGE: stop unless COMMAND exists, naming its package.
need_cmd() {
    command -v "$1" >/dev/null 2>&1 ||
        die "command '$1' is missing: install the Debian package $2 (scripts/setup-host.sh does)"
}

# A command that fails outside any check must not end a script silently
# (set -e would): name it, where it was, and its exit status.  A failing
# command substitution is named by the subshell that ran it (or by its die),
# so the assignment that receives it is not named a second time.
set -o errtrace
on_unexpected_error() {
    local rc=$1 cmd=$2 where=$3
    case $cmd in
    *'$('*) exit "$rc" ;;
    esac
    echo "qemu-lwp: error: $where: '$cmd' failed (exit status $rc)" >&2
    exit "$rc"
}
trap 'on_unexpected_error $? "$BASH_COMMAND" "${BASH_SOURCE[0]:-$0}:$LINENO"' ERR

# parse_force_or_help HELP_LINES ARGS...: the arguments of a build script
# that takes only --force (sets FORCE=1) and --help (prints HELP_LINES,
# e.g. '3,22', of the script's leading comment).
parse_force_or_help() {
    local lines=$1 arg
    shift
    FORCE=0
    for arg in "$@"; do
        case $arg in
        --force) FORCE=1 ;;
        -h | --help) sed -n "${lines}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$arg' (try --help)" ;;
        esac
    done
}

# installed_version PACKAGE: its installed version, or nothing (dpkg-query
# fails for a package it has never seen: that is "not installed" too).
installed_version() {
    { dpkg-query -W -f='${db:Status-Abbrev} ${Version}\n' "$1" 2>/dev/null || true; } |
        awk '$1 == "ii" { print $2 }'
}

# The release (6.1.0-NN-amd64) of the kernel Debian's linux-image-amd64
# depends on; empty when apt knows no such package yet.
debian_kernel_release() {
    { apt-cache depends linux-image-amd64 2>/dev/null || true; } |
        sed -n 's/^ *Depends: linux-image-\(6\.1\.0-[0-9][0-9]*-amd64\)$/\1/p' | head -n 1
}
SERIES_DIR=$QEMU_LWP_ROOT/patches/qemu-$QEMU_VERSION
APPLIED_DIR=$QEMU_SRC/.qemu-lwp-applied

series_patches() {
    # Lines of 'series': one patch file name each; '#' starts a comment.
    sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$SERIES_DIR/series" | grep -v '^$' || true
}

series_hash() {
    (cat "$SERIES_DIR/series"; series_patches | while read -r p; do cat "$SERIES_DIR/$p" 2>/dev/null || echo "missing $p"; done) |
        sha256sum | cut -c1-32
}

# ccache keys on paths relative to the tree, so another clone or worktree of
# qemu-lwp reuses what this one compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$QEMU_LWP_ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# The compiler of a fresh root (scripts/bare-root.sh) is the same Debian
# binary with a new mtime: identify it by its content.
export CCACHE_COMPILERCHECK=${CCACHE_COMPILERCHECK:-content}

# configure_qemu_once BUILDDIR LOG WHAT CONFIGURE-ARGS...
# Runs QEMU's configure in BUILDDIR (from scratch) unless it was already
# configured there with the same source and arguments.
configure_qemu_once() {
    local builddir=$1 log=$2 what=$3 want have
    shift 3
    want=$(printf '%s\n' "$QEMU_SRC" "$@" | sha256sum | cut -c1-16)
    have=$(cat "$builddir/.qemu-lwp-configure" 2>/dev/null || true)
    if [ -f "$builddir/build.ninja" ] && [ "$want" = "$have" ]; then
        return 0
    fi
    step "configuring $what"
    rm -rf "$builddir"
    mkdir -p "$builddir"
    (cd "$builddir" && "$QEMU_SRC/configure" "$@") >"$log" 2>&1 ||
        die_log "$log" "configuring $what failed"
    echo "$want" >"$builddir/.qemu-lwp-configure"
}

# Bring the files named on standard input (paths in a kernel tree) in
# $3 to what they are in the patched stage $1, else in the pristine tree
# $2, else absent, replacing only files whose content differs, so that
# make rebuilds just what changed.  Never writes through a hard link into
# the pristine tree.
sync_kernel_tree() {
    local stage=$1 pristine=$2 src=$3 f want
    while IFS= read -r f; do
        if [ -f "$stage/$f" ]; then want=$stage/$f
        elif [ -f "$pristine/$f" ]; then want=$pristine/$f
        else want=; fi
        if [ -z "$want" ]; then
            [ ! -e "$src/$f" ] || rm -f "$src/$f"
        elif ! cmp -s "$want" "$src/$f"; then
            mkdir -p "$(dirname "$src/$f")"
            cp --remove-destination "$want" "$src/$f"
        fi
    done
}

# The options of the Kconfig fragment $1 that the .config $2 does not have
# as asked (olddefconfig drops what it cannot satisfy), space-separated.
kconfig_fragment_missing() {
    local opt missing=
    while IFS= read -r opt; do
        case $opt in
        CONFIG_*=n) grep -qx "# ${opt%=n} is not set" "$2" || missing+=" $opt" ;;
        CONFIG_*) grep -qx "$opt" "$2" || missing+=" $opt" ;;
        esac
    done < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$1" | grep -v '^$')
    echo "$missing"
}
