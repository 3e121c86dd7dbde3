#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Install speedscope (its release bundle holds the importer lwp-prof's
# formats are checked with) from the npm registry into DIR, a directory of
# the build tree; nothing is installed globally.  Pinned; a second run
# with it in place does nothing.
set -eu
dir=$1
version=1.25.0
if [ -f "$dir/node_modules/speedscope/package.json" ] &&
   grep -q "\"version\": \"$version\"" "$dir/node_modules/speedscope/package.json"; then
    exit 0
fi
command -v npm >/dev/null || { echo "npm is missing (scripts/setup-host.sh installs it)" >&2; exit 1; }
mkdir -p "$dir"
# node trusts only its own CA list unless told; the system bundle holds the
# CAs this machine added (update-ca-certificates).
bundle=/etc/ssl/certs/ca-certificates.crt
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$bundle" ]; then
    export NODE_EXTRA_CA_CERTS=$bundle
fi
npm install --prefix "$dir" --no-audit --no-fund --no-save --no-package-lock \
    "speedscope@$version" >"$dir/npm-install.log" 2>&1 ||
    { tail -20 "$dir/npm-install.log" >&2; exit 1; }
