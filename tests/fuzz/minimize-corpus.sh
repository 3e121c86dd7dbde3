#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Minimize one fuzz target's corpus in the repository with libFuzzer's
# -merge=1: keep the smallest set of inputs that covers what the whole
# corpus covers, named by their SHA-1 as libFuzzer names them.  Inputs with
# hand-written names (not 40 hex digits) are seeds and always kept.
#   minimize-corpus.sh FUZZER CORPUS_DIR
# Artifacts of an input that crashes go to build/fuzz-artifacts/ (ignored).
set -eu
fuzzer=$1 corpus=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
art=$root/build/fuzz-artifacts/$(basename "$fuzzer")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$art" "$work/min"
before=$(find "$corpus" -type f | wc -l)
"$fuzzer" -merge=1 -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -artifact_prefix="$art/" "$work/min" "$corpus" >"$work/log" 2>&1 ||
    { tail -n 30 "$work/log"; echo "minimize-corpus: merge failed" >&2; exit 1; }
for f in "$corpus"/*; do
    name=$(basename "$f")
    if printf '%s\n' "$name" | grep -qE '^[0-9a-f]{40}$'; then
        rm -f "$f"
    fi
done
cp "$work/min"/* "$corpus"/
after=$(find "$corpus" -type f | wc -l)
echo "$(basename "$corpus"): $before -> $after inputs"
