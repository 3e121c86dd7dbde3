#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one libFuzzer target for a fixed time over its corpus in the repository
# (read-only; new inputs go to a scratch directory):
#   run-fuzzer.sh FUZZER CORPUS_DIR SECONDS
# Passes when the target ran the whole time without a crash, a sanitizer
# report, a leak or a timeout; a failure prints the input that caused it,
# which also stays in build/fuzz-artifacts/FUZZER/ (ignored by git).
# A longer campaign: LWP_FUZZ_SECONDS=3600 meson test --suite fuzz ...
# Keep the corpus small: tests/fuzz/minimize-corpus.sh FUZZER CORPUS_DIR.
set -eu
fuzzer=$1 corpus=$2 seconds=${LWP_FUZZ_SECONDS:-$3}
root=$(cd "$(dirname "$0")/../.." && pwd)
art=$root/build/fuzz-artifacts/$(basename "$fuzzer")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/new"
mkdir -p "$art"
rc=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$art/" "$work/new" "$corpus" \
    >"$work/log" 2>&1 || rc=$?
grep -aE '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+ *DONE)' "$work/log" || true
if [ "$rc" != 0 ]; then
    tail -n 60 "$work/log"
    for a in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
        [ -e "$a" ] || continue
        echo "FAIL: $(basename "$a"), input in base64 (save it under $corpus to replay):"
        base64 "$a"
    done
    exit 1
fi
echo "PASS: $(basename "$fuzzer"): ${seconds} s, no finding"
