#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot the Linux guest of the `linux` suite (docs/lwp-linux.rst) under our
QEMU and judge what its serial console says.

The guest's /init (tests/linux/init.sh) runs the programs named by
--tests; this harness checks:
  - the kernel found and enabled LWP (dmesg: the XSAVE feature line of
    component 62 and the x86/lwp line);
  - every program ran to the end with status 0 and printed no FAIL line
    (each PASS/FAIL line is passed through);
  - the output of the MSVC sample equals tests/user/lwp-msvc-port.expected;
  - the console shows no kernel oops, BUG, WARNING or panic, and the guest
    powered off by itself within the time limit.
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
import checks  # noqa: E402

# Kernel-mode trouble only: user programs' own faults (intended here) are
# logged as 'traps: prog[pid] general protection fault ip:...' at KERN_INFO.
KERNEL_TROUBLE = re.compile(r'Kernel panic|BUG:|Oops|WARNING:|Call Trace:'
                            r'|general protection fault[,:] |cut here')
LWP_XFEATURE = ("x86/fpu: Supporting XSAVE feature 0x4000000000000000: "
                "'AMD Lightweight Profiling'")


def judge(lines, tests, msvc_expected, echo, finished_what, finished, label=''):
    """Check a console transcript (a list of lines) of the guest's /init
    running the programs of `tests`; one PASS/FAIL line per check, each
    named with `label` first (tests/kvm/run-nested.py: which guest)."""
    def report(ok, what):
        checks.report(ok, label + what)

    report(finished, finished_what)
    trouble = [ln for ln in lines if KERNEL_TROUBLE.search(ln)]
    report(not trouble, 'no kernel oops, BUG, WARNING or panic on the console'
           + ('' if not trouble else ': ' + trouble[0].strip()))
    up = [ln for ln in lines if ln.startswith('@@UP ')]
    done = [ln for ln in lines if ln.startswith('@@DONE')]
    if up:
        print('note: /init started %s s after boot' % up[0].split()[1])
    report(bool(done), 'the guest ran its /init to the end')

    dmesg = []
    if '@@DMESG-LWP' in lines:
        i = lines.index('@@DMESG-LWP')
        dmesg = lines[i + 1:]
    report(any(LWP_XFEATURE in ln for ln in dmesg),
           "dmesg: %s" % LWP_XFEATURE)
    report(any('x86/lwp: AMD Lightweight Profiling available' in ln for ln in dmesg),
           'dmesg: x86/lwp: AMD Lightweight Profiling available, with the '
           'threshold vector')
    for ln in dmesg:
        if 'LWP' in ln or 'lwp' in ln:
            print('note: ' + ln.strip())

    wanted = [t.split(':')[0] for t in tests.split(',') if t]
    for name in wanted:
        try:
            i = lines.index('@@RUN ' + name)
        except ValueError:
            report(False, '%s: started in the guest' % name)
            continue
        end = None
        for j in range(i + 1, len(lines)):
            if lines[j].startswith('@@END %s ' % name):
                end = j
                break
        body = lines[i + 1:end if end is not None else len(lines)]
        for ln in body:
            if echo or ln.startswith(('PASS: ', 'FAIL: ', 'note: ', 'SUMMARY: ',
                                           'THREAD-ISOLATION:')):
                print('  %s| %s' % (name, ln), flush=True)
        rc = lines[end].split('rc=')[1] if end is not None else None
        fails = [ln for ln in body if ln.startswith('FAIL: ')]
        if name == 'msvc':
            if msvc_expected:
                with open(msvc_expected) as f:
                    expected = f.read().splitlines()
                got = [ln for ln in body]
                report(got == expected, 'msvc: the MSVC sample prints exactly %s'
                       % os.path.basename(msvc_expected))
                if got != expected:
                    for ln in got:
                        print('  msvc| ' + ln)
            report(rc == '0', 'msvc: exit status 0 (%s)' % rc)
            continue
        passes = sum(1 for ln in body if ln.startswith('PASS: '))
        report(rc == '0' and not fails and passes > 0,
               '%s: ran to the end, status %s, %d checks passed, %d failed'
               % (name, rc, passes, len(fails)))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--qemu', required=True)
    ap.add_argument('--kernel', required=True)
    ap.add_argument('--initrd', required=True)
    ap.add_argument('--cpu', default='max')
    ap.add_argument('--smp', type=int, default=1)
    ap.add_argument('--memory', default='256')
    ap.add_argument('--accel', default='tcg')
    ap.add_argument('--tests', default='abi,msvc,threads,fuzz',
                    help="lwptests= of the guest's /init (see tests/linux/init.sh)")
    ap.add_argument('--msvc-expected', help='expected output of the MSVC sample')
    ap.add_argument('--timeout', type=float, default=600)
    ap.add_argument('--show', action='store_true', help='echo the whole console')
    ap.add_argument('--echo', action='store_true',
                    help="echo everything the guest's programs print")
    args = ap.parse_args()

    cmd = [args.qemu, '-accel', args.accel, '-cpu', args.cpu, '-smp', str(args.smp),
           '-m', args.memory, '-nodefaults', '-nographic', '-no-reboot',
           '-serial', 'stdio', '-kernel', args.kernel, '-initrd', args.initrd,
           '-append', 'console=ttyS0 panic=-1 oops=panic loglevel=5 lwptests=' + args.tests]
    print('qemu: ' + ' '.join(cmd), flush=True)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=args.timeout)
        out = proc.stdout.decode('utf-8', 'replace')
        timed_out = False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b'').decode('utf-8', 'replace')
        timed_out = True
    wall = time.monotonic() - start
    lines = out.splitlines()

    judge(lines, args.tests, args.msvc_expected, args.echo,
          'the guest powered off within %.0f s (%.1f s)' % (args.timeout, wall), not timed_out)
    if args.show or checks.failed:
        print('---- console ----')
        print(out)
    checks.summary_exit()


if __name__ == '__main__':
    main()
