#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""lwp-prof end to end, under qemu-lwp's qemu-x86_64 and qemu-i386 -cpu max.

Accuracy: a program that retires instructions and branches 60/30/10 across
three functions is reported within 2 points (IRE at intervals 65535 and
4095, BRE; serial, threaded, forked, 32-bit); Debian's xz on a fixed input
is reported within 3 points of an exact count, per function, taken over
the same run by a TCG plugin (instructions executed for IRE, branches
executed for BRE).  Then the program's signals, fork and exec, the
report's views, --help and the errors lwp-prof must name."""
import argparse
import csv
import io
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import report, summary_exit  # noqa: E402
from latitude import resolve_cpu  # noqa: E402

TOOL_FAILURE = 125


def run(args, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(args, env=e, capture_output=True, text=True, timeout=300, **kw)


class Prof:
    def __init__(self, lwp_prof, qemu_dir, tmp, cpu=None):
        self.tool = lwp_prof
        self.qemu_dir = qemu_dir
        self.tmp = tmp
        self.cpu = ['--cpu', cpu] if cpu else []

    def record(self, prog_args, out, event='ire', interval=65535, bits=64, extra=(),
               env=None, stdout=None):
        qemu = os.path.join(self.qemu_dir, 'qemu-x86_64' if bits == 64 else 'qemu-i386')
        args = [self.tool, 'record', '-q', '-e', event, '-i', str(interval), '-o', out,
                '--qemu', qemu] + self.cpu + list(extra) + ['--'] + list(prog_args)
        if stdout:
            with open(stdout, 'wb') as f:
                e = dict(os.environ)
                e.update(env or {})
                return subprocess.run(args, env=e, stdout=f, stderr=subprocess.PIPE,
                                      text=True, timeout=300)
        return run(args, env)

    def shares(self, data, weights=None):
        """{(symbol, object): percent} of the flat profile, the profiler's
        own library left out (its drain code runs in signal handlers, where
        LWP is off, so only the exact count sees it)."""
        args = [self.tool, 'report', '--single', '--csv', '--limit', '0']
        if weights:
            args += ['--weights', weights]
        r = run(args + [data])
        if r.returncode:
            print(r.stderr)
            return {}
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        rows = [x for x in rows if not x['object'].startswith('liblwp-prof')]
        total = sum(int(x['samples']) for x in rows) or 1
        return {(x['symbol'], x['object']): 100.0 * int(x['samples']) / total for x in rows}

    def header(self, data):
        r = run([self.tool, 'report', '--single', '--limit', '1', data])
        return r.stdout


def check_proportions(p, what, shares, obj, tol=2.0):
    want = {'work60': 60.0, 'work30': 30.0, 'work10': 10.0}
    got = {s: shares.get((s, obj), 0.0) for s in want}
    ok = all(abs(got[s] - want[s]) <= tol for s in want)
    report(ok, '%s: work60/30/10 reported as %.2f/%.2f/%.2f (within %g points)' %
           (what, got['work60'], got['work30'], got['work10'], tol))


def missed_zero(p, what, data):
    h = p.header(data)
    ok = ' 0 missed' in h and 'not closed' not in h and ' 0 ring drains' not in h
    report(ok, '%s: MissedEvents 0, profile closed' % what)
    # linux-user has no threshold interrupt: the timer drained
    report('# drained by a CPU-time timer (--drain-ms)' in h,
           '%s: the report says a timer drained it' % what)


def make_xz_input(path):
    """About 800 kB of text, the same every run."""
    r = random.Random(12)
    words = [''.join(r.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(r.randint(2, 9)))
             for _ in range(3000)]
    out, n = [], 0
    while n < 800000:
        w = r.choice(words) if r.random() < 0.9 else str(r.randint(0, 99999))
        out.append(w)
        n += len(w) + 1
    with open(path, 'w') as f:
        f.write(' '.join(out))


def compare_with_count(p, what, data, counts, top=5, tol=3.0):
    sampled = p.shares(data)
    exact = p.shares(data, counts)
    best = sorted(exact, key=exact.get, reverse=True)[:top]
    worst = max(abs(sampled.get(k, 0.0) - exact[k]) for k in best) if best else 99
    detail = ', '.join('%s %.2f/%.2f' % (k[0], sampled.get(k, 0.0), exact[k]) for k in best)
    report(len(best) == top and worst <= tol,
           '%s: top %d functions within %g points of the exact count (worst %.2f; '
           'sampled/exact: %s)' % (what, top, tol, worst, detail))
    top_sampled = max(sampled, key=sampled.get) if sampled else None
    report(top_sampled == best[0] if best else False,
           '%s: the same hottest function (%s)' % (what, best[0][0] if best else '-'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('lwp_prof')
    ap.add_argument('qemu_dir')
    ap.add_argument('proportions')
    ap.add_argument('proportions_i386')
    ap.add_argument('proportions_static')
    ap.add_argument('count_plugin')
    ap.add_argument('cxx_workload')
    ap.add_argument('--latitude', metavar='CPU',
                    help='only the recordings, with -cpu CPU (latitude mode, '
                         'docs/lwp-latitude.rst; lwp-seed=random: a new seed, printed)')
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix='lwp-prof-test-')
    p = Prof(a.lwp_prof, a.qemu_dir, tmp, resolve_cpu(a.latitude) if a.latitude else None)
    prog = os.path.basename(a.proportions)
    prog32 = os.path.basename(a.proportions_i386)
    out = os.path.join(tmp, 'p.data')

    # --- the known proportions
    for ev in ('ire', 'bre'):
        for interval in (65535, 4095):
            what = '%s interval %d' % (ev, interval)
            r = p.record([a.proportions, 'serial'], out, ev, interval)
            report(r.returncode == 0, '%s: record exits 0 (%s)' % (what, r.stderr.strip()[-200:]))
            check_proportions(p, what, p.shares(out), prog)
            missed_zero(p, what, out)

    # A period of 4095 = 5 x 819 instructions always samples the same one of
    # the loop's five instructions; LWPCB.Random breaks that phase.
    def work60_ips(extra):
        p.record([a.proportions, 'serial'], out, 'ire', 4094, extra=extra)
        raw = run([a.lwp_prof, 'report', '--raw=csv', out]).stdout.splitlines()[1:]
        return set(x.split(',')[3] for x in raw if ',work60,' in x.replace('"', ''))
    fixed, jittered = len(work60_ips([])), len(work60_ips(['--random', '8']))
    report(fixed == 1 and jittered == 5, 'LWPCB.Random (--random 8): samples of a 5-instruction '
           'loop at period 4095 land on %d instruction(s), on %d without it' % (jittered, fixed))
    check_proportions(p, 'ire 4094 with 8 random bits', p.shares(out), prog)

    r = p.record([a.proportions, 'threads'], out, 'ire', 4095)
    h = p.header(out)
    report(r.returncode == 0 and '3 thread(s)' in h, 'threads: three threads, each with its own ring')
    check_proportions(p, 'threads, ire 4095', p.shares(out), prog)
    missed_zero(p, 'threads', out)

    r = p.record([a.proportions_i386, 'serial'], out, 'ire', 4095, bits=32)
    report(r.returncode == 0, 'i386 under qemu-i386: record exits 0 (%s)' % r.stderr.strip()[-200:])
    check_proportions(p, 'i386, ire 4095', p.shares(out), prog32)
    r = p.record([a.proportions_i386, 'threads'], out, 'bre', 4095, bits=32)
    check_proportions(p, 'i386 threads, bre 4095', p.shares(out), prog32)

    # --- draining: a ring (8192 records) smaller than what a run stores
    # (about 12,200 samples), drained by a timer every 2 ms of thread CPU
    # time (a drain reads the head from the signal frame's XSAVE image).
    # How many drains fall inside a run depends on the machine's speed, so
    # the checks do not: every record LWP produced is either a sample or
    # counted in MissedEvents, as many as the same run stores into a ring
    # large enough to need no drain.
    import re
    small_ring = ['--ring', '8192', '--drain-ms', '2']

    def counts(data):
        m = re.search(r'# (\d+) samples, (\d+) missed \(MissedEvents\), (\d+) ring drains',
                      p.header(data))
        return tuple(int(x) for x in m.groups()) if m else (0, -1, 0)

    def drained_run(prg, mode, bits, nthreads, what):
        p.record([prg, mode], out, 'ire', 4095, bits=bits)
        whole, whole_missed, _ = counts(out)
        r = p.record([prg, mode], out, 'ire', 4095, bits=bits, extra=small_ring)
        n, missed, drains = counts(out)
        report(r.returncode == 0 and whole_missed == 0 and missed >= 0 and
               drains >= nthreads and abs(n + missed - whole) <= 3 * nthreads,
               '%s, 8192-record rings drained by a timer: %d samples + %d MissedEvents = the '
               '%d of a large ring (%d drains)' % (what, n, missed, whole, drains))

    drained_run(a.proportions, 'serial', 64, 1, '64-bit serial')
    drained_run(a.proportions_i386, 'threads', 32, 3, '32-bit threads')
    drained_run(a.proportions, 'masked', 64, 3, 'threads that block every signal')
    r = p.record([a.proportions, 'masked'], out, 'ire', 4095, extra=small_ring)
    check_proportions(p, 'blocked signals, ire 4095', p.shares(out), prog)
    if a.latitude:
        # What the spec guarantees in latitude mode is checked above: the
        # proportions, and every record a sample or a MissedEvent.
        shutil.rmtree(tmp, ignore_errors=True)
        summary_exit()
    r = p.record([a.proportions], out, 'ire', 4095, extra=['--ring', '1024', '--drain-ms', '10000'])
    n, missed, drains = counts(out)
    report(n == 1023 and abs(n + missed - 12207) <= 3,
           'a ring that is not drained in time: %d samples + %d MissedEvents = the %d '
           'expected' % (n, missed, n + missed))

    # --- fork, signals, exec
    for f in os.listdir(tmp):
        if f.startswith('p.data.'):
            os.unlink(os.path.join(tmp, f))
    r = p.record([a.proportions, 'fork'], out, 'ire', 4095)
    child = [f for f in os.listdir(tmp) if f.startswith('p.data.')]
    report(r.returncode == 0 and len(child) == 1 and r.stdout.strip() == 'child ' + child[0][7:]
           if child else False, 'fork: the child is profiled into FILE.<its pid> (%s)' % child)
    parent = p.shares(out)
    report(abs(parent.get(('work60', prog), 0) - 85.71) <= 2 and
           abs(parent.get(('work10', prog), 0) - 14.29) <= 2 and ('work30', prog) not in parent,
           'fork: the parent\'s profile has its own work (60:10), not the child\'s')
    if child:
        kid = p.shares(os.path.join(tmp, child[0]))
        report(kid.get(('work30', prog), 0) >= 98, 'fork: the child\'s profile is work30')
        missed_zero(p, 'fork child', os.path.join(tmp, child[0]))

    r = p.record([a.proportions, 'signals'], out, 'ire', 4095)
    report(r.returncode == 0 and '100 signals handled' in r.stdout,
           'signals: the program\'s own SIGUSR1 handler saw all 100 signals')
    check_proportions(p, 'signals, ire 4095', p.shares(out), prog)

    r = p.record([a.proportions, 'rtsig'], out, 'ire', 4095, extra=small_ring)
    n, missed, drains = counts(out)
    report(r.returncode == 0 and '100 signals handled' in r.stdout,
           'signals: the program\'s own use of the drain signal (SIGRTMAX-8) reaches its '
           'handlers, installed by signal() and sigaction() (%s)' % r.stderr.strip()[-200:])
    report(missed == 0 and drains > 1, 'signals: lwp-prof\'s drains go on meanwhile '
           '(%d drains, %d missed)' % (drains, missed))
    check_proportions(p, 'drain signal shared, ire 4095', p.shares(out), prog)

    r = p.record([a.proportions, 'exec'], out, 'ire', 4095, extra=['--no-inherit'])
    report(r.returncode == 0 and r.stdout.strip() == 'LD_PRELOAD=[]',
           'exec, --no-inherit: the exec\'d image runs unprofiled, lwp-prof gone from '
           'LD_PRELOAD (%s)' % r.stdout.strip())
    check_proportions(p, 'exec: profile up to the exec', p.shares(out), prog)

    # --- Debian's xz against an exact count over the same run
    xz = shutil.which('xz')
    xz_in = os.path.join(tmp, 'input.txt')
    make_xz_input(xz_in)
    for ev, kind, interval, threads in (('ire', 'insn', 65535, 1), ('ire', 'insn', 4095, 1),
                                        ('bre', 'branch', 4095, 1), ('ire', 'insn', 4095, 2)):
        counts = os.path.join(tmp, 'counts-%s-%d-%d.txt' % (ev, interval, threads))
        data = os.path.join(tmp, 'xz-%s-%d-%d.data' % (ev, interval, threads))
        plugin = '%s,out=%s,kind=%s' % (a.count_plugin, counts, kind)
        # -T2 with 256 KiB blocks: two worker threads compress
        opts = ['-T1'] if threads == 1 else ['-T2', '--block-size=256KiB']
        r = p.record([xz] + opts + ['-3', '-c', xz_in], data, ev, interval,
                     env={'QEMU_PLUGIN': plugin}, stdout=os.path.join(tmp, 'out.xz'))
        ok = r.returncode == 0 and run(['xz', '-t', os.path.join(tmp, 'out.xz')]).returncode == 0
        what = 'xz %s -3, %s interval %d' % (' '.join(opts), ev, interval)
        if threads > 1:
            report('%d thread(s)' % (threads + 1) in p.header(data),
                   '%s: main and %d worker threads, each profiled' % (what, threads))
        report(ok, '%s: compresses correctly while profiled (%s)' % (what, r.stderr.strip()[-200:]))
        compare_with_count(p, what, data, counts)
        missed_zero(p, what, data)

    # xzcat is xz under another name: argv[0] must reach it as given
    back = os.path.join(tmp, 'back.txt')
    r = p.record(['xzcat', os.path.join(tmp, 'out.xz')], out, 'ire', 65535, stdout=back)
    same = r.returncode == 0 and open(back, 'rb').read() == open(xz_in, 'rb').read()
    report(same, 'argv[0] as given: xzcat (found in PATH) decompresses (%s)' %
           r.stderr.strip()[-160:])

    # --- the report's other views
    r = run([a.lwp_prof, 'report', '--lines', os.path.join(tmp, 'xz-ire-4095-1.data')])
    r2 = run([a.lwp_prof, 'record', '-q', '-i', '4095', '-o', out, '--qemu',
              os.path.join(a.qemu_dir, 'qemu-x86_64'), '--', a.proportions])
    lines = run([a.lwp_prof, 'report', '--lines', '--csv', out]).stdout
    report(r.returncode == 0 and r2.returncode == 0 and 'proportions.c:' in lines and
           ',work60,' in lines.replace('"', ''), 'report --lines: source lines from DWARF')
    raw = run([a.lwp_prof, 'report', '--raw=csv', out]).stdout.splitlines()
    report(raw[0] == 'tid,event,core,ip,target,taken,object,offset,symbol,source' and
           len(raw) > 12000 and ',ire,' in raw[1], 'report --raw=csv: one row per sample')
    folded = run([a.lwp_prof, 'report', '--raw=folded', out]).stdout.splitlines()
    report(any(l.startswith(prog + ';' + prog + ';work60 ') for l in folded),
           'report --raw=folded: program;object;symbol count')
    raw_b = run([a.lwp_prof, 'report', '--raw=csv',
                 os.path.join(tmp, 'xz-bre-4095-1.data')]).stdout.splitlines()[1:]
    report(raw_b and all(x.split(',')[1] == 'bre' and x.split(',')[4].startswith('0x')
                         for x in raw_b), 'report --raw=csv: BRE rows carry the branch target')

    r = p.record([a.cxx_workload], out, 'ire', 4095)
    sh = p.shares(out)
    top = max(sh, key=sh.get) if sh else ('-', '-')
    report(r.returncode == 0 and top[0] == 'work::Loop::run(unsigned long)' and sh[top] > 95,
           'report: C++ names demangled (%s, %.1f%%)' % (top[0], sh.get(top, 0)))

    # --- help and errors
    r = run([a.lwp_prof, '--help'])
    report(r.returncode == 0 and 'lwp-prof record' in r.stdout and '--interval' in r.stdout,
           '--help')
    r = run([a.lwp_prof, 'report', '--help'])
    report(r.returncode == 0 and '--raw=folded' in r.stdout, 'report --help')
    qemu64 = os.path.join(a.qemu_dir, 'qemu-x86_64')

    def err(what, args, needle, code=TOOL_FAILURE):
        r = run([a.lwp_prof, 'record', '-o', out, '--qemu', qemu64] + args)
        report(r.returncode == code and needle in r.stderr,
               'error: %s (exit %d: %s)' % (what, r.returncode, r.stderr.strip()[-160:]))

    err('no LWP', ['--cpu', 'qemu64', '--', a.proportions], 'has no LWP')
    err('event not available', ['--cpu', 'max,-lwpbre', '-e', 'bre', '--', a.proportions],
        'not available')
    err('interval below the minimum', ['-i', '100', '--', a.proportions],
        'below the minimum 255')
    err('interval out of range', ['-i', '0', '--', a.proportions], 'from 1 to')
    err('unknown event', ['-e', 'dme', '--', a.proportions], 'unknown event')
    err('no threshold interrupt under linux-user',
        ['--threshold-signal', 'USR2', '--', a.proportions], 'threshold interrupt is not available')
    err('bad signal name', ['--signal', 'NOPE', '--', a.proportions], 'not a signal')
    err('statically linked', ['--', a.proportions_static], 'statically linked')
    text = os.path.join(tmp, 'text-program')
    with open(text, 'w') as f:
        f.write('echo this is no ELF and has no #! line\n')
    os.chmod(text, 0o755)
    err('not an ELF program nor a script', ['--', text], 'not an x86 ELF')
    err('program not found', ['--', 'no-such-program-here'], 'not found')
    r = run([a.lwp_prof, 'record', '-o', '/nonexistent-dir/p.data', '--qemu', qemu64, '--',
             a.proportions])
    report(r.returncode == TOOL_FAILURE and 'cannot write the output' in r.stderr,
           'error: output not writable (%s)' % r.stderr.strip())
    r = run([a.lwp_prof, 'report', os.path.abspath(__file__)])
    report(r.returncode == 1 and 'not an lwp-prof data file' in r.stderr,
           'error: report of a file that is no profile')

    shutil.rmtree(tmp, ignore_errors=True)
    summary_exit()


if __name__ == '__main__':
    main()
