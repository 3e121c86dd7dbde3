#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Teach an installed libvirt the LWP capability features (as root):
#   tools/libvirt/install-cpu-map.sh [CPU_MAP_DIR]    (default /usr/share/libvirt/cpu_map)
# Copies x86_lwp_features.xml next to libvirt's x86_features.xml and includes
# it from index.xml right after that file.  Idempotent; restart libvirtd (or
# virtqemud) afterwards.
set -euo pipefail
dir=${1:-/usr/share/libvirt/cpu_map}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$dir/index.xml" ] || { echo "install-cpu-map: no libvirt cpu_map in $dir" >&2; exit 1; }
cp "$here/x86_lwp_features.xml" "$dir/x86_lwp_features.xml"
if ! grep -q "x86_lwp_features.xml" "$dir/index.xml"; then
    sed -i "s|\(.*\)<include filename='x86_features.xml'/>|&\n\1<include filename='x86_lwp_features.xml'/>|" "$dir/index.xml"
fi
grep -q "x86_lwp_features.xml" "$dir/index.xml" ||
    { echo "install-cpu-map: could not add the include to $dir/index.xml" >&2; exit 1; }
