#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lwp-baseline over the three kinds of host description, and a refused pool.
# Usage: test-lwp-baseline.sh LWP_BASELINE QEMU_SYSTEM
set -uo pipefail
tool=$1 qemu=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../common/checks.sh"

# Host 1: what our QEMU's -cpu max expands to (QMP).
printf '%s\n' '{"execute":"qmp_capabilities"}' \
    '{"execute":"query-cpu-model-expansion","arguments":{"type":"full","model":{"name":"max"}}}' \
    '{"execute":"quit"}' |
    "$qemu" -machine none -accel tcg -nodefaults -display none -qmp stdio >"$tmp/max.json" 2>&1
# Host 2: a real FX-81xx's raw CPUID (InstLatX64 dump format).
echo 'CPUID 8000001C: 00000000-80032013-00010200-8000000F' >"$tmp/zambezi.txt"
# Host 3: cpuid -r format, a hypothetical part with a larger minimum buffer.
echo '   0x8000001c 0x00: eax=0x00000000 ebx=0x80032013 ecx=0x00030200 edx=0x8000000b' >"$tmp/h3.txt"

out=$("$tool" "$tmp/max.json" "$tmp/zambezi.txt" "$tmp/h3.txt" --cpu 'max,+lwp,+lwpval,+lwpint')
rc=$?
report $rc "a compatible pool of 4 hosts has a baseline"
grep -q -- '-cpu ...,lwp=on,lwpval=on,lwpire=off,lwpbre=off' <<<"$out"
report $? "feature bits are ANDed (IRE only on Zambezi, BRE not on host 3)"
grep -q 'lwpint=on' <<<"$out" && grep -q 'lwp-min-buffer-size=3' <<<"$out"
report $? "LwpMinBufferSize takes the maximum (3)"
grep -q "<feature policy='require' name='lwpval'/>" <<<"$out" &&
    grep -q "<feature policy='disable' name='lwpire'/>" <<<"$out"
report $? "libvirt <cpu> fragment with require/disable features"

echo 'CPUID 8000001C: 00000000-88032014-00010200-8000000F' >"$tmp/wide.txt"
err=$("$tool" "$tmp/zambezi.txt" "$tmp/h3.txt" "$tmp/wide.txt" 2>&1 >/dev/null)
rc=$?
[ $rc = 1 ] && grep -q "zambezi.txt and .*wide.txt disagree on lwp-event-offset" <<<"$err"
report $? "a host with another LwpEventOffset makes the pool incompatible, naming both hosts"

out=$("$tool" "$tmp/zambezi.txt" --cpu 'qemu64')
grep -q 'lwp=off' <<<"$out"
report $? "a host without LWP leaves the pool without LWP"

"$tool" "$tmp/nonexistent" >/dev/null 2>&1
[ $? = 2 ]
report $? "an unreadable host description is an error"

# The baseline's -cpu properties are accepted by QEMU: it starts (paused)
# and answers its monitor's 'quit' with status 0.  No time limit decides:
# a QEMU that refuses them exits non-zero however long it takes.
opts=$("$tool" "$tmp/max.json" "$tmp/zambezi.txt" | sed -n 's/^-cpu \.\.\.,//p')
echo quit | "$qemu" -M pc -accel tcg -cpu "qemu64,xsave=on,$opts" -nodefaults -display none \
    -monitor stdio -S >"$tmp/qemu.out" 2>&1
[ $? = 0 ] && ! grep -q -i "error\|invalid" "$tmp/qemu.out"
report $? "QEMU starts with the baseline's -cpu properties"

# Malformed descriptions are errors naming the host and the problem.
bad() {   # bad WHAT EXPECTED-MESSAGE -- ARGS...
    local what=$1 msg=$2 err rc
    shift 3
    err=$("$tool" "$@" 2>&1 >/dev/null); rc=$?
    [ $rc = 2 ] && grep -q -- "$msg" <<<"$err"
    report $? "$what: $err"
}
printf '{"return":{"model":{"props":{"lwp":true,' >"$tmp/trunc.json"
bad "truncated QMP reply" "trunc.json:1:41: malformed JSON: .*unexpected end of input" -- "$tmp/trunc.json"
printf '{\n  "return": {\n    "model": {"props": {"lwp": tru}}}\n}\n' >"$tmp/typo.json"
bad "malformed JSON, by line and column" "typo.json:3:35: malformed JSON: .*invalid literal" -- "$tmp/typo.json"
printf '{"QMP": {}}\n{"return": {}}\n' >"$tmp/noreply.json"
bad "a QMP transcript without the reply" "without a query-cpu-model-expansion reply" -- "$tmp/noreply.json"
printf '{"return":{"model":{"props":{"lwp":true,"lwpval":"yes"}}}}' >"$tmp/type.json"
bad "a flag that is not a boolean" '"lwpval" is string, not a boolean' -- "$tmp/type.json"
printf '{"return":{"model":{"props":{"lwp":true,"lwp-version":300}}}}' >"$tmp/big.json"
bad "a number out of range" '"lwp-version" is 300, not a number from 0 to 255' -- "$tmp/big.json"
# Found by tests/fuzz (fuzz_lwp_baseline): nlohmann throws out_of_range, not
# parse_error, for a float too large for a double; it once ended in abort().
printf '{"return":{"model":{"props":{"lwp":1e999999}}}}' >"$tmp/huge.json"
bad "a number too large for JSON's doubles" 'huge.json: unusable JSON in the document at 1:1: .*number overflow' -- "$tmp/huge.json"
echo 'nothing here' >"$tmp/junk.txt"
bad "neither QMP nor CPUID dump" "neither a query-cpu-model-expansion" -- "$tmp/junk.txt"
bad "unknown LWP property" "unknown LWP property 'lwp-max-event'" -- --cpu 'max,lwp=on,lwp-max-event=5'
bad "non-boolean flag" "not a boolean for lwpval" -- --cpu 'max,lwp=on,lwpval=1'
bad "empty number" "bad value '' for lwp-cb-size" -- --cpu 'max,lwp=on,lwp-cb-size='

summary_exit
