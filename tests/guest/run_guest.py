#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot one guest test image under qemu-system-x86_64 and judge it.

The guest prints PASS:/FAIL:/SKIP: lines and a SUMMARY: line on the debug
console (port 0xe9) and leaves through isa-debug-exit, which makes QEMU exit
with (code << 1) | 1.  A test passes when QEMU exits with 1, at least one
PASS line and no FAIL line appear, and the SUMMARY line is present (so a guest
that dies or triple-faults never passes).
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from latitude import resolve_cpu  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--qemu', required=True)
    ap.add_argument('--kernel', required=True)
    ap.add_argument('--cpu', default='max')
    ap.add_argument('--accel', default='tcg', help='the -accel option (e.g. tcg,one-insn-per-tb=on)')
    ap.add_argument('--timeout', type=int, default=90)
    ap.add_argument('--expect', metavar='FILE',
                    help='the guest output must contain the lines of FILE, in a block')
    ap.add_argument('--show', action='store_true',
                    help='only print the guest output (for the demo), do not judge PASS lines')
    args, extra = ap.parse_known_args()

    cmd = [args.qemu, '-M', 'pc', '-accel', args.accel, '-cpu', resolve_cpu(args.cpu), '-m', '256',
           '-nodefaults', '-display', 'none', '-no-reboot', '-serial', 'none',
           '-chardev', 'stdio,id=dbg,signal=off', '-device', 'isa-debugcon,chardev=dbg',
           '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04',
           '-kernel', args.kernel] + extra
    print('# ' + ' '.join(cmd), flush=True)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=args.timeout)
    except subprocess.TimeoutExpired as e:
        sys.stdout.write((e.stdout or b'').decode(errors='replace'))
        print('FAIL: guest timed out after %d s' % args.timeout)
        return 1
    out = proc.stdout.decode(errors='replace')
    sys.stdout.write(out)
    lines = out.splitlines()
    passed = sum(1 for l in lines if l.startswith('PASS:'))
    failed = sum(1 for l in lines if l.startswith('FAIL:'))
    summary = any(l.startswith('SUMMARY:') for l in lines)
    if args.show:
        return 0 if proc.returncode == 1 else 1
    if args.expect:
        want = open(args.expect).read().splitlines()
        found = any(lines[i:i + len(want)] == want for i in range(len(lines)))
        print('%s: output contains %s' % ('PASS' if found else 'FAIL', args.expect))
        passed += found
        failed += not found
    if proc.returncode != 1:
        print('FAIL: qemu exit status %d (guest exit code %d)' %
              (proc.returncode, proc.returncode >> 1))
        return 1
    if not summary or failed or not passed:
        print('FAIL: %d passed, %d failed, summary %s' % (passed, failed, summary))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
