#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# PAUSE keeps its semantics while LWP counts: QEMU ends the TB at PAUSE and
# leaves the CPU loop there (helper_pause: "let another CPU run").  In
# lwp-xrstor, "nop; nop; pause" (label xr_pause) follows an XRSTOR that
# enables counting, then 16 NOPs: every TB QEMU translates at the first of
# those NOPs must end right after the PAUSE (bytes 90 90 f3 90), and
# execution must go on in a TB of its own after it.  A PAUSE turned into a
# NOP would run on into the NOPs.
#   run-pause-tb.sh QEMU LWP_XRSTOR_PROGRAM
set -eu
qemu=$1 prog=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
pause=$(nm "$prog" | awk '$3 == "xr_pause" { print $1 }')
[ -n "$pause" ] || { echo "FAIL: no symbol xr_pause in $prog"; exit 1; }
"$qemu" -cpu max -d in_asm,nochain -D "$log" "$prog" >/dev/null ||
    { echo "FAIL: $prog failed under -d in_asm"; exit 1; }
python3 - "$log" "$pause" <<'PY'
import re, sys
log, pause = sys.argv[1], int(sys.argv[2], 16)
tbs = []                     # (start, code bytes as hex or None, disassembly)
for block in open(log, errors='replace').read().split('IN:')[1:]:
    m = re.search(r'^0x([0-9a-f]+):', block, re.M)
    if not m:
        continue
    hexd = ''.join(re.findall(r'^OBJD-T: ([0-9a-f]+)', block, re.M))
    tbs.append((int(m.group(1), 16), hexd, block))
at = [t for t in tbs if t[0] == pause - 2]
after = [t for t in tbs if t[0] == pause + 2]
def ends_at_pause(t):
    if t[1]:
        return t[1] == '9090f390'
    lines = [l for l in t[2].splitlines() if re.match(r'^0x[0-9a-f]+:', l)]
    return len(lines) == 3 and 'pause' in lines[-1]
ok = bool(at) and all(ends_at_pause(t) for t in at) and bool(after)
print('%d TB(s) at the NOPs before PAUSE: %s; %d after it' %
      (len(at), ', '.join(t[1] or '(disassembled)' for t in at), len(after)))
print('%s: PAUSE ends its TB while LWP counts' % ('PASS' if ok else 'FAIL'))
sys.exit(0 if ok else 1)
PY
