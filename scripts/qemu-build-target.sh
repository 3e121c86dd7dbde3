#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Meson custom target: bring the patched QEMU up to date, then touch the stamp.
set -euo pipefail
here=$(dirname "$0")
bash "$here/fetch-qemu.sh"
bash "$here/build-qemu.sh"
touch "$1"
