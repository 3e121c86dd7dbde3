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
  - lwptests=prof (tests/linux/lwp-prof-guest.sh): lwp-prof record ran
    in the guest, drained at the threshold interrupt (the report says so, the
    guest's LWP interrupt count rose by at least the drains made before
    exit: no timer), with MissedEvents 0; the 60/30/10 program's shares are
    within 2 points, xz's hottest code is in liblzma;
  - the console shows no kernel oops, BUG, WARNING or panic, and the guest
    powered off by itself within the time limit;
  - with --wake-on-suspend (lwptests=suspend): the guest entered S3 (QMP
    event SUSPEND) and the harness woke it (system_wakeup) as many times
    as its /init asked, so no timer decides when it wakes.
"""
import argparse
import csv
import io
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
import checks  # noqa: E402
import latitude  # noqa: E402

# Kernel-mode trouble only: user programs' own faults (intended here) are
# logged as 'traps: prog[pid] general protection fault ip:...' at KERN_INFO.
KERNEL_TROUBLE = re.compile(r'Kernel panic|BUG:|Oops|WARNING:|Call Trace:'
                            r'|general protection fault[,:] |cut here')
LWP_XFEATURE = ("x86/fpu: Supporting XSAVE feature 0x4000000000000000: "
                "'AMD Lightweight Profiling'")


PROF_HEADER = re.compile(r'^# (\d+) samples, (\d+) missed \(MissedEvents\), (\d+) ring drains')
PROF_THREADS = re.compile(r'(\d+) thread\(s\)')
PROF_SHARES = {'work60': 60.0, 'work30': 30.0, 'work10': 10.0}


def judge_prof(body):
    """Check the profiles lwp-prof-guest.sh printed: one per '@@PROF name'."""
    profiles = {}
    name = None
    for ln in body:
        if ln.startswith('@@PROF '):
            name = ln.split()[1]
            profiles[name] = {'irq': [], 'report': [], 'csv': [], 'rc': None}
            part = None
        elif name is None:
            continue
        elif ln.startswith('@@LWP-IRQ '):
            profiles[name]['irq'].append(int(ln.split()[1]))
        elif ln.startswith('@@RECORD '):
            w = ln.split()
            profiles[name]['rc'] = w[1].split('=')[1]
            profiles[name]['seconds'] = float(w[3]) - float(w[2])
        elif ln in ('@@REPORT', '@@CSV'):
            part = ln[2:].lower()
        elif ln == '@@ENDPROF':
            part = None
        elif part:
            profiles[name][part].append(ln)
        elif ln.startswith('lwp-prof'):
            print('  prof| ' + ln)      # record's summary, or its error
    for name in ('proportions', 'xz'):
        p = profiles.get(name)
        checks.report(p is not None and p['rc'] == '0',
                      'prof %s: lwp-prof record ran in the guest, status %s'
                      % (name, p and p['rc']))
        if p is None:
            continue
        for ln in p['report']:
            print('  prof| ' + ln)
        print('note: prof %s: record took %.1f s of guest time' % (name, p['seconds']))
        hdr = [PROF_HEADER.match(ln) for ln in p['report']]
        hdr = [m for m in hdr if m]
        threads = [PROF_THREADS.search(ln) for ln in p['report']]
        threads = [int(m.group(1)) for m in threads if m]
        if not hdr or not threads or len(p['irq']) != 2:
            checks.report(False, 'prof %s: the report has its header' % name)
            continue
        samples, missed, drains = (int(x) for x in hdr[0].groups())
        irqs = p['irq'][1] - p['irq'][0]
        checks.report(any(ln == '# drained at the threshold interrupt (--threshold-signal)'
                          for ln in p['report']),
                      'prof %s: the report says it was drained at the threshold interrupt'
                      % name)
        checks.report(missed == 0, 'prof %s: MissedEvents 0 (%d) in %d samples'
                      % (name, missed, samples))
        # Only the exit of each thread drains without a signal (no timer in
        # this mode), so every other drain followed a threshold interrupt.
        checks.report(drains > threads[0] and irqs >= drains - threads[0],
                      'prof %s: %d ring drains in %d thread(s), %d LWP threshold '
                      'interrupts (%d samples / 512-record threshold = %d)'
                      % (name, drains, threads[0], irqs, samples, samples // 512))
        rows = list(csv.DictReader(io.StringIO('\n'.join(p['csv']))))
        # A kernel message on the shared console (a loaded host makes the
        # guest's clocksource watchdog speak) can land between CSV rows.
        noise = [r for r in rows if r.get('object') is None or
                 not (r.get('samples') or '').isdigit()]
        if noise:
            print('note: prof %s: %d console line(s) inside the CSV, not rows: %s'
                  % (name, len(noise), noise[:2]))
        rows = [r for r in rows if r not in noise and not r['object'].startswith('liblwp-prof')]
        total = sum(int(r['samples']) for r in rows) or 1
        if name == 'proportions':
            got = {s: 100.0 * sum(int(r['samples']) for r in rows
                                  if r['symbol'] == s and r['object'] == 'proportions') / total
                   for s in PROF_SHARES}
            checks.report(all(abs(got[s] - PROF_SHARES[s]) <= 2.0 for s in PROF_SHARES),
                          'prof proportions: shares within 2 points of 60/30/10: '
                          + ', '.join('%s %.2f' % (s, got[s]) for s in PROF_SHARES))
        else:
            top = max(rows, key=lambda r: int(r['samples']), default=None)
            checks.report(top is not None and top['object'].startswith('liblzma'),
                          "prof xz: its hottest code is liblzma's (%s in %s)"
                          % (top and top['symbol'], top and top['object']))


def kernel_cmdline(tests):
    """The guest's -append: /init (tests/linux/init.sh) runs `tests`.

    no_timer_check: the boot's check that the timer ticks during a delay
    timed by the TSC fails at random when the host is busy (a panic).
    """
    return ('console=ttyS0 panic=-1 oops=panic loglevel=5 no_timer_check lwptests='
            + tests)


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
        if name == 'prof':
            judge_prof(body)
            rc = lines[end].split('rc=')[1] if end is not None else None
            checks.report(rc == '0', 'prof: lwp-prof-guest.sh exit status 0 (%s)' % rc)
            continue
        # (A kernel message can land inside the marker line: no rc then.)
        rc = lines[end].split('rc=')[1] if end is not None and 'rc=' in lines[end] else None
        if name.startswith('kselftest'):
            # The kernel's selftest speaks TAP: 'ok N ...', 'not ok N ...'.
            for ln in body:
                print('  %s| %s' % (name, ln), flush=True)
            oks = sum(1 for ln in body if re.match(r'ok \d+ ', ln))
            bad = [ln for ln in body if ln.startswith('not ok ')]
            report(rc == '0' and not bad and oks > 0,
                   '%s: tools/testing/selftests/x86/lwp.c ran to the end, status %s, '
                   '%d ok, %d not ok' % (name, rc, oks, len(bad)))
            continue
        for ln in body:
            if echo or ln.startswith(('PASS: ', 'FAIL: ', 'note: ', 'SUMMARY: ',
                                           'THREAD-ISOLATION:')):
                print('  %s| %s' % (name, ln), flush=True)
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


class SuspendWaker(threading.Thread):
    """Wakes the guest with QMP system_wakeup each time it enters S3 (event
    SUSPEND).  QEMU connects to the socket this listens on (-qmp unix:)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        import qemu_python  # noqa: F401 (QEMU's python/ on sys.path)
        from qemu.qmp.legacy import QEMUMonitorProtocol
        self.mon = QEMUMonitorProtocol(path, server=True)
        self.suspends = 0
        self.wakeups = 0

    def run(self):
        try:
            self.mon.accept(timeout=60)
            while True:
                ev = self.mon.pull_event(wait=True)
                if ev and ev.get('event') == 'SUSPEND':
                    self.suspends += 1
                    if 'error' not in self.mon.cmd_raw('system_wakeup'):
                        self.wakeups += 1
        except Exception:       # QEMU quit: the connection is gone
            pass


def guest_argument_parser(description, smp):
    """The arguments every driver of the Linux guest takes."""
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--qemu', required=True)
    ap.add_argument('--kernel', required=True)
    ap.add_argument('--initrd', required=True)
    ap.add_argument('--cpu', default='max')
    ap.add_argument('--smp', type=int, default=smp)
    return ap


def main():
    ap = guest_argument_parser(__doc__, smp=1)
    ap.add_argument('--memory', default='256')
    ap.add_argument('--accel', default='tcg')
    ap.add_argument('--icount', metavar='SHIFT',
                    help='-icount shift=SHIFT: latitude mode counts its delays in '
                    'instructions, so that a seed replays the run')
    ap.add_argument('--tests', default='abi,msvc,threads,fuzz',
                    help="lwptests= of the guest's /init (see tests/linux/init.sh)")
    ap.add_argument('--msvc-expected', help='expected output of the MSVC sample')
    ap.add_argument('--timeout', type=float, default=600)
    ap.add_argument('--show', action='store_true', help='echo the whole console')
    ap.add_argument('--echo', action='store_true',
                    help="echo everything the guest's programs print")
    ap.add_argument('--wake-on-suspend', type=int, metavar='N',
                    help='wake the guest (QMP system_wakeup) whenever it suspends to RAM, '
                    'and check that it did so N times')
    args = ap.parse_args()

    cmd = [args.qemu, '-accel', args.accel, '-cpu', latitude.resolve_cpu(args.cpu), '-smp', str(args.smp),
           '-m', args.memory, '-nodefaults', '-nographic', '-no-reboot',
           '-serial', 'stdio', '-kernel', args.kernel, '-initrd', args.initrd,
           '-append', kernel_cmdline(args.tests)]
    if args.icount is not None:
        cmd += ['-icount', 'shift=' + args.icount]
    waker = None
    if args.wake_on_suspend is not None:
        sock = os.path.join(tempfile.mkdtemp(prefix='lwp-suspend-'), 'qmp.sock')
        waker = SuspendWaker(sock)
        waker.start()
        cmd += ['-qmp', 'unix:' + sock]
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
    if waker:
        waker.join(timeout=10)
        checks.report(waker.suspends == args.wake_on_suspend and
                      waker.wakeups == args.wake_on_suspend,
                      'the guest entered S3 %d times (QMP SUSPEND events; %d asked) and '
                      'system_wakeup woke it each time (%d)'
                      % (waker.suspends, args.wake_on_suspend, waker.wakeups))
    if args.show or checks.failed:
        print('---- console ----')
        print(out)
    checks.summary_exit()


if __name__ == '__main__':
    main()
