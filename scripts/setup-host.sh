#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install everything qemu-lwp needs on a Debian bookworm machine.
# Extra apt sources (deb-src, bookworm-backports) are derived from the machine's
# own Debian source entries so that no mirror host is ever written by us.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

STAMP_DIR=${QEMU_LWP_CACHE}
mkdir -p "$STAMP_DIR"
PKG_STAMP=$STAMP_DIR/host-packages.stamp

# Packages: build of QEMU and the core, firmware for system guests, test tools.
BUILD_PKGS="build-essential g++ gcc-multilib ninja-build pkg-config python3 python3-venv
  libglib2.0-dev libpixman-1-dev libfdt-dev zlib1g-dev flex bison ccache xz-utils
  libgtest-dev dpkg-dev"
# Also from backports: Debian's own QEMU 10.0.2 (the same version without LWP,
# for interoperability tests and benchmarks), qemu-img, and libvirt.
BPO_PKGS="meson python3-pycotap seabios qemu-system-data ipxe-qemu
  qemu-system-x86 qemu-utils qemu-user
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients"

want_hash=$(echo "$BUILD_PKGS $BPO_PKGS v4" | sha256sum | cut -c1-16)
if [ -f "$PKG_STAMP" ] && [ "$(cat "$PKG_STAMP")" = "$want_hash" ]; then
    exit 0
fi

[ "$(id -u)" = 0 ] || die "setup needs root to install packages (run as root or with sudo)"

derive_sources() {
    local out=/etc/apt/sources.list.d/qemu-lwp.sources
    local uris="" signed=""
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        # Take the stanza that carries the plain 'bookworm' suite.
        read -r uris signed < <(awk '
            BEGIN { RS=""; FS="\n" }
            {
                u=""; s=""; suites=""
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^URIs:/)      { u=$i; sub(/^URIs:[ \t]*/, "", u) }
                    if ($i ~ /^Signed-By:/) { s=$i; sub(/^Signed-By:[ \t]*/, "", s) }
                    if ($i ~ /^Suites:/)    { suites=" " $i " " }
                }
                if (suites ~ / bookworm / && u != "") { print u, s; exit }
            }' /etc/apt/sources.list.d/debian.sources)
    fi
    if [ -z "$uris" ] && [ -f /etc/apt/sources.list ]; then
        # One-line format, with or without [options]: deb [opts] URI bookworm ...
        uris=$(sed -e 's/\[[^]]*\]//' /etc/apt/sources.list |
               awk '$1=="deb" && $3=="bookworm" { print $2; exit }')
    fi
    [ -n "$uris" ] || die "cannot find a Debian bookworm entry in the apt sources to derive deb-src and backports from"
    [ -n "$signed" ] || signed=/usr/share/keyrings/debian-archive-keyring.gpg
    cat > "$out.tmp" <<EOS
# Written by qemu-lwp scripts/setup-host.sh, derived from this machine's Debian entries.
Types: deb-src
URIs: $uris
Suites: bookworm
Components: main
Signed-By: $signed

Types: deb deb-src
URIs: $uris
Suites: bookworm-backports
Components: main
Signed-By: $signed
EOS
    if ! cmp -s "$out.tmp" "$out" 2>/dev/null; then
        mv "$out.tmp" "$out"
        return 0
    fi
    rm -f "$out.tmp"
    return 1
}

# ": no package X, Y" from apt's "Unable to locate package X" lines, if any.
missing_packages() {
    local names
    names=$(sed -n 's/.*Unable to locate package \([^ ]*\).*/\1/p' "$STAMP_DIR/apt-install.log" |
            sort -u | paste -sd, -)
    [ -n "$names" ] && echo ": no package $names"
}

step "apt sources (deb-src, bookworm-backports)"
derive_sources || true
step "apt-get update"
apt-get update -qq >"$STAMP_DIR/apt-update.log" 2>&1 ||
    die "apt-get update failed: the Debian registry is not reachable (see $STAMP_DIR/apt-update.log)"
step "installing build and firmware packages"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $BUILD_PKGS >"$STAMP_DIR/apt-install.log" 2>&1 ||
    die "apt-get install of build packages failed$(missing_packages) (see $STAMP_DIR/apt-install.log)"
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends -t bookworm-backports $BPO_PKGS \
    >>"$STAMP_DIR/apt-install.log" 2>&1 ||
    die "apt-get install of backports packages failed$(missing_packages) (see $STAMP_DIR/apt-install.log)"
echo "$want_hash" > "$PKG_STAMP"
