#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run a command in a minimal Debian bookworm root made fresh for this run, as
# a new user's machine would be: nothing but Debian's required packages, so
# everything else must come from the project's own scripts.
#
#   scripts/bare-root.sh [--keep] COMMAND [ARGS...]
#
# COMMAND runs as root in this tree (bind-mounted at its own path, with its
# parent directory, so ../shared is beside it) with /proc, /sys, /dev (and
# /dev/kvm where it exists) and a fresh /run.  Kept across runs and shared
# with the host: the download cache and ccache (~/.cache/qemu-lwp) and apt's
# archive of .deb files.  The root is made by mmdebstrap --variant=minbase
# from this machine's own Debian source entries; it lives in its own mount and
# PID namespace, so every process it starts (libvirtd, QEMU) ends with it, and
# it is deleted afterwards unless --keep is given.  Exit status: COMMAND's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

APT_ARCHIVES=/var/cache/apt/archives

usage() { sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; }

# Files of this machine's apt configuration that a root needs to reach the
# same registry the same way: Debian source entries and Acquire:: settings
# (proxy, validity of snapshot Release files).  Never a clean-up hook that
# would empty the shared archive.
host_sources() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        case $f in */qemu-lwp.sources) continue ;; esac
        grep -Eq '^[^#]*\bbookworm\b' "$f" && echo "$f"
    done
    return 0
}
host_apt_options() {
    local f
    for f in /etc/apt/apt.conf.d/*; do
        [ -f "$f" ] || continue
        grep -q '^[[:space:]]*Acquire::' "$f" && ! grep -q 'Post-Invoke' "$f" && echo "$f"
    done
    return 0
}

# The CAs this machine added to its trust (a TLS-inspecting egress, a
# site CA): a root reaches the npm registry only if it trusts them too.
# ca-certificates, installed by setup-host.sh, puts them in the bundle.
host_local_cas() {
    local dst=$1/usr/local/share/ca-certificates
    [ -d /usr/local/share/ca-certificates ] || return 0
    mkdir -p "$dst"
    cp -rL /usr/local/share/ca-certificates/. "$dst/"
}

make_root() {
    local root=$1 log=$2 args=() f
    mapfile -t sources < <(host_sources)
    [ "${#sources[@]}" -gt 0 ] || die "no Debian bookworm entry in this machine's apt sources"
    while read -r f; do args+=(--aptopt="$f"); done < <(host_apt_options)
    step "making a minimal Debian bookworm root in $root (mmdebstrap, log: $log)"
    # The archive is bind-mounted while mmdebstrap downloads, and kept.
    # The root is thrown away: dpkg need not fsync every file it unpacks.
    mmdebstrap --variant=minbase --mode=root --skip=download/empty --skip=essential/unlink \
        --dpkgopt=force-unsafe-io \
        "${args[@]}" \
        --setup-hook="mkdir -p \"\$1$APT_ARCHIVES\" && mount --bind $APT_ARCHIVES \"\$1$APT_ARCHIVES\"" \
        --customize-hook="umount \"\$1$APT_ARCHIVES\"" \
        bookworm "$root" "${sources[@]}" >"$log" 2>&1 ||
        die_log "$log" "mmdebstrap could not make the bare root"
}

bind() {   # bind SRC DST-INSIDE-ROOT
    mkdir -p "$2"
    mount --rbind "$1" "$2"
}

# Runs as PID 1 of a new PID namespace with a private mount namespace.
inside_namespace() {
    local root=$1 tree=$2 home_cache=$3
    shift 3
    make_root "$root" "$root.mmdebstrap.log"
    mount -t proc proc "$root/proc"
    bind /sys "$root/sys"
    bind /dev "$root/dev"
    mount -t tmpfs -o mode=755 tmpfs "$root/run"
    bind "$APT_ARCHIVES" "$root$APT_ARCHIVES"
    bind "$(dirname "$tree")" "$root$(dirname "$tree")"
    mkdir -p "$home_cache"
    bind "$home_cache" "$root/root/.cache/qemu-lwp"
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    host_local_cas "$root"
    cp -L /etc/hosts "$root/etc/hosts"
    step "in the bare root: $*"
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash -c 'cd "$1" && shift && exec "$@"' bare-root "$tree" "$@"
}

if [ "${1:-}" = --in-namespace ]; then
    shift
    rc=0
    inside_namespace "$@" || rc=$?
    exit $rc
fi

keep=0
case "${1:-}" in
--keep) keep=1; shift ;;
-h | --help | "") usage; exit 0 ;;
esac
[ "$(id -u)" = 0 ] || die "the bare root needs root (mmdebstrap --mode=root, chroot, mounts)"
need_cmd unshare util-linux
if ! command -v mmdebstrap >/dev/null; then
    step "installing mmdebstrap on this machine"
    { apt-get install -y -qq --no-install-recommends mmdebstrap ||
      { apt-get update -qq && apt-get install -y -qq --no-install-recommends mmdebstrap; }; } \
        >"$QEMU_LWP_CACHE/mmdebstrap-install.log" 2>&1 ||
        die_log "$QEMU_LWP_CACHE/mmdebstrap-install.log" "apt-get install mmdebstrap failed"
fi

mkdir -p /var/tmp "$QEMU_LWP_CACHE"
ROOT=$(mktemp -d /var/tmp/qemu-lwp-bare.XXXXXX)
cleanup() {
    [ "$keep" = 1 ] && { step "bare root kept in $ROOT"; return; }
    # Never delete through a mount that is still there: the tree and the
    # caches are bind-mounted inside.
    if grep -q " $ROOT[/ ]" /proc/self/mountinfo; then
        step "not deleting $ROOT: something is still mounted under it"
        return
    fi
    rm -rf "$ROOT" "$ROOT.mmdebstrap.log"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

start=$(date +%s)
rc=0
unshare --mount --propagation private --pid --fork --kill-child \
    bash "$0" --in-namespace "$ROOT" "$QEMU_LWP_ROOT" "$QEMU_LWP_CACHE" "$@" || rc=$?
step "bare root: $* ended with status $rc after $(($(date +%s) - start)) s"
exit $rc
