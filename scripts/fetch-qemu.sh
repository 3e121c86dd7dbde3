#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Obtain Debian's repack of upstream QEMU 10.0.2, verify it, unpack it into the
# ignored build directory and apply patches/qemu-10.0.2/series strictly.
set -euo pipefail
. "$(dirname "$0")/lib.sh"


fetch_tarball() {
    local tarball=$QEMU_LWP_CACHE/$QEMU_TARBALL
    if [ ! -f "$tarball" ]; then
        step "downloading QEMU $QEMU_VERSION source ($QEMU_DEB_VERSION)"
        local tmp
        tmp=$(mktemp -d "$QEMU_LWP_CACHE/dl.XXXXXX")
        (cd "$tmp" && apt-get source --tar-only --download-only "qemu=$QEMU_DEB_VERSION" \
            >"$QEMU_LWP_CACHE/apt-source.log" 2>&1) ||
            { rm -rf "$tmp"; die_log "$QEMU_LWP_CACHE/apt-source.log" "apt-get source qemu=$QEMU_DEB_VERSION failed: registry unreachable or version gone"; }
        [ -f "$tmp/$QEMU_TARBALL" ] || { rm -rf "$tmp"; die "apt-get source did not produce $QEMU_TARBALL"; }
        mv "$tmp/$QEMU_TARBALL" "$tarball"
        rm -rf "$tmp"
    fi
    local sum
    sum=$(sha256sum "$tarball" | cut -d' ' -f1)
    if [ "$sum" != "$QEMU_TARBALL_SHA256" ]; then
        mv -f "$tarball" "$tarball.bad"
        die "checksum mismatch for $QEMU_TARBALL: got $sum, want $QEMU_TARBALL_SHA256 (moved aside to $tarball.bad)"
    fi
    echo "$tarball"
}

apply_series() {
    local p
    mkdir -p "$APPLIED_DIR"
    while read -r p; do
        [ -f "$SERIES_DIR/$p" ] || die "patch listed in series is missing: $p"
        # Strict: no fuzz, no reversed or already-applied hunks; dry run first so
        # a failing patch leaves the tree as the previous patch left it.
        if ! patch -d "$QEMU_SRC" -p1 -F0 -N --dry-run --quiet <"$SERIES_DIR/$p" >"$QEMU_LWP_BUILD/patch.log" 2>&1; then
            die_log "$QEMU_LWP_BUILD/patch.log" "patch does not apply cleanly: patches/qemu-$QEMU_VERSION/$p"
        fi
        patch -d "$QEMU_SRC" -p1 -F0 -N --quiet --no-backup-if-mismatch <"$SERIES_DIR/$p" >/dev/null
        cp "$SERIES_DIR/$p" "$APPLIED_DIR/$p"
        echo "$p" >>"$APPLIED_DIR/series"
    done < <(series_patches)
}

# Undo what an earlier run applied, newest first. Reverse application (rather
# than a fresh unpack) gives every touched file a new mtime, so ninja rebuilds
# exactly the files whose patched state changed.
unapply_series() {
    [ -f "$APPLIED_DIR/series" ] || return 0
    local p
    while read -r p; do
        patch -d "$QEMU_SRC" -p1 -R -F0 --quiet --no-backup-if-mismatch \
            <"$APPLIED_DIR/$p" >/dev/null 2>&1 || return 1
    done < <(tac "$APPLIED_DIR/series")
    rm -rf "$APPLIED_DIR"
}

unpack() {
    local tarball=$1
    step "unpacking $QEMU_TARBALL"
    rm -rf "$QEMU_SRC" "$QEMU_SRC.tmp"
    mkdir -p "$QEMU_SRC.tmp"
    # roms/ holds firmware sources we never build (firmware comes from Debian packages).
    tar -C "$QEMU_SRC.tmp" --strip-components=1 --exclude='qemu-*/roms/*' -xJf "$tarball" ||
        die "unpacking $QEMU_TARBALL failed"
    mv "$QEMU_SRC.tmp" "$QEMU_SRC"
    touch "$QEMU_SRC/.qemu-lwp-pristine"
}

link_repo_sources() {
    # QEMU's build reaches this repository's sources through qemu-lwp/, a
    # directory of links that the series' meson hook looks for; nothing of
    # QEMU's is overwritten.  Only source directories are linked, never the
    # repository root (which holds this very tree under build/).
    local d
    [ -L "$QEMU_SRC/qemu-lwp" ] && rm -f "$QEMU_SRC/qemu-lwp"
    mkdir -p "$QEMU_SRC/qemu-lwp"
    for d in target-i386-lwp hw; do
        ln -sfn "$QEMU_LWP_ROOT/$d" "$QEMU_SRC/qemu-lwp/$d"
    done
}

main() {
    mkdir -p "$QEMU_LWP_BUILD" "$QEMU_LWP_CACHE"
    local want have=""
    want=$(series_hash)
    [ -f "$QEMU_SRC/.qemu-lwp-series" ] && have=$(cat "$QEMU_SRC/.qemu-lwp-series")
    if [ -f "$QEMU_SRC/.qemu-lwp-pristine" ] && [ "$want" = "$have" ]; then
        link_repo_sources
        return 0
    fi
    local tarball
    tarball=$(fetch_tarball)
    if [ ! -f "$QEMU_SRC/.qemu-lwp-pristine" ]; then
        unpack "$tarball"
    else
        step "patch series changed: re-applying"
        rm -f "$QEMU_SRC/.qemu-lwp-series"
        if ! unapply_series; then
            step "could not reverse the old series cleanly: unpacking afresh"
            local touched
            touched=$(cat "$APPLIED_DIR"/*.patch 2>/dev/null | sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' | sort -u)
            unpack "$tarball"
            # Unpacked files carry the tarball's old mtimes; files the old
            # series had changed must still look newer than their objects.
            for f in $touched; do [ -f "$QEMU_SRC/$f" ] && touch "$QEMU_SRC/$f"; done
        fi
    fi
    step "applying patches/qemu-$QEMU_VERSION/series"
    apply_series
    echo "$want" >"$QEMU_SRC/.qemu-lwp-series"
    link_repo_sources
}
main "$@"
