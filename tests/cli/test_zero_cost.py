#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""LWP costs no TCG op unless a hardware event is counted (issue: zero cost).

Runs tests/cli/lwp-ops under qemu-x86_64 -d op and compares the ops of the
translation block of its loop: with LWP absent (-cpu max,-lwp), present but
unused (-cpu max), and counting instructions retired.  What counting costs
is the ops left after TCG's optimizer (-d op_opt): those are what runs.
Also: LWPVAL calls a helper only for a record, and a branch record cuts
no TB to length (lwp_tb_split traced).
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'common'))
from checks import report, summary_exit  # noqa: E402


LOG_HEADERS = {'op': 'OP:\n', 'op_opt': 'OP after optimization and liveness analysis:\n'}


def loop_tbs(qemu, prog, cpu, mode, log_item='op'):
    """The op lists of the TBs starting at the loop, and the loop address."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, 'op.log')
        out = subprocess.run([qemu, '-cpu', cpu, '-d', log_item, '-D', log, prog, mode],
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f'{prog} {mode} under -cpu {cpu}: {out.stderr.strip()}')
        loop = int(re.search(r'ops_loop (0x[0-9a-f]+)', out.stdout).group(1), 16)
        tbs = []
        for block in open(log).read().split(LOG_HEADERS[log_item])[1:]:
            # exit_tb's operand is the TB's host address: it differs per run.
            lines = [re.sub(r'^exit_tb .*', 'exit_tb', l.strip())
                     for l in block.splitlines() if l.strip()]
            starts = [l for l in lines if l.startswith('----')]
            if starts and int(starts[0].split()[1], 16) == loop:
                tbs.append([l for l in lines if not l.startswith('----')])
        return loop, tbs


def main():
    qemu, prog = sys.argv[1:3]
    _, absent = loop_tbs(qemu, prog, 'max,-lwp', 'off')
    _, unused = loop_tbs(qemu, prog, 'max', 'off')
    _, counting = loop_tbs(qemu, prog, 'max', 'ire')
    report(len(absent) == 1 and len(unused) == 1 and len(counting) >= 1,
            f'one translation of the loop each ({len(absent)}, {len(unused)}, {len(counting)})')
    if absent and unused and counting:
        report(absent[0] == unused[0],
                f'LWP present but unused: the loop TB has the same {len(unused[0])} ops '
                f'as with LWP absent')
        plain = ' '.join(unused[0])
        report('lwp' not in plain and 'helper_lwp' not in plain,
                'no LWP helper or field in the unused translation')
    # Dead ops carry liveness notes: compare the ops themselves.
    _, unused_opt = loop_tbs(qemu, prog, 'max', 'off', 'op_opt')
    _, counting_opt = loop_tbs(qemu, prog, 'max', 'ire', 'op_opt')
    if unused_opt and counting_opt:
        extra = len(counting_opt[0]) - len(unused_opt[0])
        report(0 < extra <= 12,
                f'counting instructions retired adds {extra} ops to the loop TB after '
                f'optimization ({len(unused_opt[0])} -> {len(counting_opt[0])}), no helper '
                f'call on its fast path')
    if absent and unused and counting:
        calls = [l for l in counting[0] if l.startswith('call ')]
        report(len(calls) == 1 and 'lwp_tb_slow' in calls[0],
                'the only call is the slow path of the TB start (helper_lwp_tb_slow)')
    # LWPVAL that does not store a record is counted inline: no helper call.
    for interval, stores in ((65535, 0), (3, 250)):
        out = subprocess.run([qemu, '-cpu', 'max', '-trace', 'lwp_lwpval_helper', prog, 'val',
                              str(interval)], capture_output=True, text=True, timeout=60)
        calls = out.stderr.count('lwp_lwpval_helper')
        report(out.returncode == 0 and calls == stores,
               f'1000 LWPVALs at EventInterval1 {interval}: {calls} helper calls '
               f'(one per stored record: {stores})')
    # A branch record is counted at its TB's exit: no TB is cut for it.
    interval = 255
    out = subprocess.run([qemu, '-cpu', 'max', '-trace', 'lwp_tb_split', prog, 'bre',
                          str(interval)], capture_output=True, text=True, timeout=60)
    m = re.search(r'head (\d+)', out.stdout)
    records = int(m.group(1)) // 32 if m else 0
    cuts = out.stderr.count('lwp_tb_split')
    # The loop alone retires 100000 JNZs (section 2.3: taken or not): a
    # record for each interval + 1 of them at least, in a ring of 1024 slots.
    want = 100000 // (interval + 1)
    report(out.returncode == 0 and records >= want and cuts == 0,
           f'branches retired at EventInterval3 {interval}: {records} records '
           f'(at least {want}), {cuts} TBs cut to length')
    summary_exit()


if __name__ == '__main__':
    main()
