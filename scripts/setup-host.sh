#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install every Debian package qemu-lwp needs (scripts/debian-packages.list)
# on a Debian bookworm machine.  Extra apt sources (deb-src,
# bookworm-backports) are derived from the machine's own Debian source
# entries so that no mirror host is ever written by us.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

STAMP_DIR=${QEMU_LWP_CACHE}
mkdir -p "$STAMP_DIR"
# What was installed is a fact of this machine, not of the download cache
# (which a bare root shares with its host).
PKG_STAMP=${QEMU_LWP_PKG_STAMP:-/var/lib/qemu-lwp/packages.stamp}
PKG_LIST=$QEMU_LWP_ROOT/scripts/debian-packages.list
[ -f "$PKG_LIST" ] || die "$PKG_LIST is missing"

# list_packages SUITE: the packages of the list for SUITE ("" for the default
# suite), with @KERNEL_RELEASE@ replaced by $KREL.  A line with any other
# '@' is printed whole for the default suite, where it is refused.
list_packages() {
    sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' \
        -e "s/@KERNEL_RELEASE@/$KREL/" "$PKG_LIST" |
        awk -v suite="$1" -F@ '
            NF == 1 && suite == "" { print $1 }
            NF == 2 && $2 == suite { print $1 }
            NF == 2 && $2 != "bookworm-backports" && suite == "" { print }
            NF > 2 && suite == "" { print }'
}

# The stamp covers the list and the kernel release apt offers, so a new
# Debian kernel (new headers) is installed on the next run.
package_hash() {
    { cat "$PKG_LIST"; echo "kernel $KREL v5"; } | sha256sum | cut -c1-16
}

# all_installed PACKAGE...: dpkg has every one of them installed.
all_installed() {
    local n
    n=$({ dpkg-query -W -f='${db:Status-Abbrev}\n' "$@" 2>/dev/null || true; } | grep -c '^ii' || true)
    [ "$n" = "$#" ]
}

# Nothing to do when every package is installed and this machine's stamp
# says the list (backports versions included) was installed as it is now.
KREL=$(debian_kernel_release)
if [ -n "$KREL" ]; then
    mapfile -t wanted < <(list_packages ""; list_packages bookworm-backports)
    if all_installed "${wanted[@]}" && command -v npm >/dev/null &&
       { [ "$(cat "$PKG_STAMP" 2>/dev/null)" = "$(package_hash)" ] || [ "$(id -u)" != 0 ]; }; then
        exit 0
    fi
fi

[ "$(id -u)" = 0 ] || die "setup needs root to install packages (run as root or with sudo)"

# URI and Signed-By of the first deb822 stanza with the plain 'bookworm'
# suite, else the URI of a one-line 'deb URI bookworm' entry.
bookworm_entry() {
    local files
    files=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v '/qemu-lwp\.sources$' || true)
    if [ -n "$files" ]; then
        # shellcheck disable=SC2086
        awk '
            BEGIN { RS=""; FS="\n" }
            {
                u=""; s=""; suites=""
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^URIs:/)      { u=$i; sub(/^URIs:[ \t]*/, "", u) }
                    if ($i ~ /^Signed-By:/) { s=$i; sub(/^Signed-By:[ \t]*/, "", s) }
                    if ($i ~ /^Suites:/)    { suites=" " $i " " }
                }
                if (suites ~ / bookworm / && u != "") { print u, s; exit }
            }' $files
    fi
    { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } |
        sed -e 's/\[[^]]*\]//' | awk '$1=="deb" && $3=="bookworm" { print $2; exit }'
}

derive_sources() {
    local out=/etc/apt/sources.list.d/qemu-lwp.sources
    local uris="" signed=""
    read -r uris signed < <(bookworm_entry; echo) || true
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
    if cmp -s "$out.tmp" "$out"; then
        rm -f "$out.tmp"
    else
        mv "$out.tmp" "$out"
    fi
}

# ": no package X, Y" from apt's "Unable to locate package X" lines, if any.
missing_packages() {
    local names
    names=$(sed -n 's/.*Unable to locate package \([^ ]*\).*/\1/p' "$STAMP_DIR/apt-install.log" |
            sort -u | paste -sd, -)
    if [ -n "$names" ]; then
        echo ": no package $names"
    fi
}

step "apt sources (deb-src, bookworm-backports)"
derive_sources
# Another set-up (a second build tree, a bare root sharing this machine's
# dpkg) may hold apt's locks for a while: wait for them, not fail.
apt_get() { apt-get "$1" -o DPkg::Lock::Timeout=900 "${@:2}"; }

step "apt-get update"
apt_get update -qq >"$STAMP_DIR/apt-update.log" 2>&1 ||
    die_log "$STAMP_DIR/apt-update.log" "apt-get update failed: the Debian registry is not reachable"
KREL=$(debian_kernel_release)
[ -n "$KREL" ] ||
    die "apt offers no linux-image-amd64 that depends on a 6.1.0-NN-amd64 kernel: cannot name the kernel headers"

mapfile -t main_pkgs < <(list_packages "")
mapfile -t bpo_pkgs < <(list_packages bookworm-backports)
bad=$(printf '%s\n' "${main_pkgs[@]}" | grep @ | paste -sd' ' - || true)
[ -z "$bad" ] || die "scripts/debian-packages.list: unknown placeholder or suite in: $bad"

step "installing scripts/debian-packages.list (${#main_pkgs[@]} + ${#bpo_pkgs[@]} from backports, kernel $KREL)"
export DEBIAN_FRONTEND=noninteractive
apt_get install -y -qq --no-install-recommends "${main_pkgs[@]}" >"$STAMP_DIR/apt-install.log" 2>&1 ||
    die_log "$STAMP_DIR/apt-install.log" "apt-get install of the packages failed$(missing_packages)"
apt_get install -y -qq --no-install-recommends -t bookworm-backports "${bpo_pkgs[@]}" \
    >>"$STAMP_DIR/apt-install.log" 2>&1 ||
    die_log "$STAMP_DIR/apt-install.log" "apt-get install of the bookworm-backports packages failed$(missing_packages)"
# npm (lwp-prof's test installs speedscope with it): Debian's package,
# unless the nodejs installed carries its own npm and conflicts with it.
if ! command -v npm >/dev/null; then
    step "installing npm"
    apt_get install -y -qq --no-install-recommends npm >>"$STAMP_DIR/apt-install.log" 2>&1 ||
        die_log "$STAMP_DIR/apt-install.log" "apt-get install of npm failed$(missing_packages)"
fi
mkdir -p "$(dirname "$PKG_STAMP")"
package_hash >"$PKG_STAMP"
