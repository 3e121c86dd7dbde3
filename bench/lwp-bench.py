#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Time the LWP hardware-events configurations and print their ratios.

Run through bench/run-bench.sh, which builds the programs first.  Every
configuration runs the same CPU-bound workload (tests/common/
lwp-bench-workload.h) as a linux-user program and as a system guest:

  a      Debian's stock QEMU 10.0.2, no LWP
  b      ours, LWP unused
  c65535 ours, instructions retired (EventId 2), interval 65535
  cmin   ours, instructions retired, interval 255 (the minimum)
  d      ours, branches retired (EventId 3), interval 65535
  dmin   ours, branches retired, interval 255 (the minimum)
  e      ours, LWP unused, QEMU's insn plugin counting inline (inline=on)
  f      ours, LWPVAL in the hot loop, interval 65535

The runs are interleaved (one run of every configuration, then again, the
order rotated each time) and the CPU time (user + system) of each is
compared, median and min.  Then real programs (lwp_bench_programs.py).
"""
import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time

from lwp_bench_common import children_cpu, judge_ratio
import lwp_bench_programs

BENCH_RE = re.compile(r'bench: mode (\S+) interval (\d+) rounds (\d+) checksum ([0-9a-f]+) '
                      r'records (\d+) bad (\d+) missed (\d+)')
UNAVAILABLE_RE = re.compile(r'bench: mode \S+ unavailable')
PLUGIN_RE = re.compile(r'total insns: (\d+)')

# The command line of tests/guest/run_guest.py.
SYSTEM_ARGS = ['-M', 'pc', '-accel', 'tcg', '-cpu', 'max', '-m', '256', '-nodefaults',
               '-display', 'none', '-no-reboot', '-serial', 'none',
               '-chardev', 'stdio,id=dbg,signal=off', '-device', 'isa-debugcon,chardev=dbg',
               '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04']

INNER = 4096            # BENCH_INNER: LWPVALs per round in mode val

# key, description, which QEMU, mode, interval, with the plugin
CONFIGS = [
    ('a', 'stock Debian QEMU, no LWP', 'stock', 'none', 0, False),
    ('b', 'ours, LWP unused', 'ours', 'none', 0, False),
    ('c65535', 'ours, instructions retired, interval 65535', 'ours', 'ire', 65535, False),
    ('cmin', 'ours, instructions retired, interval 255 (min)', 'ours', 'ire', 255, False),
    ('d', 'ours, branches retired, interval 65535', 'ours', 'bre', 65535, False),
    ('dmin', 'ours, branches retired, interval 255 (min)', 'ours', 'bre', 255, False),
    ('e', 'ours, LWP unused, insn plugin inline=on', 'ours', 'none', 0, True),
    ('f', 'ours, LWPVAL in the hot loop, interval 65535', 'ours', 'val', 65535, False),
]

# name, numerator, denominator, comparison, target
RATIOS = [
    ('b/a', 'b', 'a', '<=', 1.02),
    ('c65535/b', 'c65535', 'b', '<=', 1.03),
    ('cmin/b', 'cmin', 'b', None, None),
    ('d/b', 'd', 'b', '<=', 1.03),
    ('e/b', 'e', 'b', None, None),
    ('c65535/e', 'c65535', 'e', None, None),
    # Counting at the minimum interval, a record every 256 instructions,
    # costs no more than the plugin's inline count of every instruction.
    ('cmin/e', 'cmin', 'e', '<=', 1.0),
    ('dmin/e', 'dmin', 'e', '<=', 1.0),
    ('f/b', 'f', 'b', None, None),
]


class Config:
    def __init__(self, target, key, desc, which, mode, interval, plugin):
        self.target, self.key, self.desc = target, key, desc
        self.which, self.mode, self.interval, self.plugin = which, mode, interval, plugin
        self.times = []           # wall seconds
        self.cpu = []             # user + system CPU seconds of QEMU
        self.na = None            # reason the configuration cannot run
        self.error = None         # first failure while timing
        self.last = None          # last parsed bench line (dict)
        self.plugin_insns = None

    @property
    def name(self):
        return '%s/%s' % (self.target, self.key)


def run_cmd(cmd, timeout):
    """Run one command: (exit status or None, output, wall seconds, CPU seconds)."""
    cpu0 = children_cpu()
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, '', time.perf_counter() - start, 0.0
    elapsed = time.perf_counter() - start
    return proc.returncode, proc.stdout.decode(errors='replace'), elapsed, children_cpu() - cpu0


class Bench:
    def __init__(self, args):
        self.args = args
        self.user_prog = os.path.join(args.bin_dir, 'workload-user')
        self.guest_img = os.path.join(args.bin_dir, 'bench-guest.img')
        self.qemu = {
            ('user', 'stock'): args.stock_user,
            ('user', 'ours'): os.path.join(args.qemu_dir, 'qemu-x86_64'),
            ('system', 'stock'): args.stock_system,
            ('system', 'ours'): os.path.join(args.qemu_dir, 'qemu-system-x86_64'),
        }
        self.plugin = args.plugin or os.path.join(args.qemu_dir, 'tests', 'tcg', 'plugins',
                                                  'libinsn.so')
        self.configs = []
        for target in args.targets:
            for c in CONFIGS:
                self.configs.append(Config(target, *c))

    def command(self, cfg, rounds):
        qemu = self.qemu[(cfg.target, cfg.which)]
        # -d plugin: the plugin's "total insns" line goes to QEMU's log (stderr).
        extra = ['-plugin', self.plugin + ',inline=on', '-d', 'plugin'] if cfg.plugin else []
        if cfg.target == 'user':
            return [qemu, '-cpu', 'max'] + extra + [self.user_prog, cfg.mode,
                                                   str(cfg.interval), str(rounds)]
        return ([qemu] + SYSTEM_ARGS + extra +
                ['-kernel', self.guest_img,
                 '-append', 'mode=%s interval=%d rounds=%d' % (cfg.mode, cfg.interval, rounds)])

    @staticmethod
    def exit_ok(cfg, rc):
        return rc == (0 if cfg.target == 'user' else 1)

    @staticmethod
    def exit_unavailable(cfg, rc):
        # The program exits 2; the guest's code 2 is QEMU status (2 << 1) | 1.
        return rc == (2 if cfg.target == 'user' else 5)

    def rounds(self, target):
        return self.args.user_rounds if target == 'user' else self.args.system_rounds

    def judge(self, cfg, rc, out, rounds, reference):
        """Parse one run; return an error string or None."""
        if rc is None:
            return 'timed out after %d s' % self.args.timeout
        m = BENCH_RE.search(out)
        if not self.exit_ok(cfg, rc) or not m:
            tail = ' | '.join(out.strip().splitlines()[-3:])
            return 'exit status %s: %s' % (rc, tail or 'no output')
        r = dict(mode=m.group(1), interval=int(m.group(2)), rounds=int(m.group(3)),
                 checksum=m.group(4), records=int(m.group(5)), bad=int(m.group(6)),
                 missed=int(m.group(7)))
        if r['rounds'] != rounds or r['mode'] != cfg.mode:
            return 'ran mode %s rounds %d' % (r['mode'], r['rounds'])
        if reference is not None and r['checksum'] != reference:
            return 'checksum %s differs from %s' % (r['checksum'], reference)
        if r['bad'] or r['missed']:
            return '%d records of another event, %d missed' % (r['bad'], r['missed'])
        if cfg.mode == 'none' and r['records']:
            return 'records stored without LWP'
        if cfg.mode in ('ire', 'bre', 'val') and rounds >= 100 and not r['records']:
            return 'no record stored: the event is not counted'
        cfg.last = r
        if cfg.plugin:
            p = PLUGIN_RE.search(out)
            if not p:
                return 'no "total insns" line from the plugin'
            cfg.plugin_insns = int(p.group(1))
        return None

    def probe(self):
        """One short run of each configuration: availability, warm caches."""
        refs = {}
        for cfg in self.configs:
            qemu = self.qemu[(cfg.target, cfg.which)]
            if not os.access(qemu, os.X_OK):
                cfg.na = '%s not found' % qemu
                continue
            if cfg.plugin and not os.path.exists(self.plugin):
                cfg.na = 'plugin %s not built (QEMU needs --enable-plugins)' % self.plugin
                continue
            rounds = self.args.probe_rounds
            rc, out, _, _ = run_cmd(self.command(cfg, rounds), self.args.timeout)
            if rc is not None and self.exit_unavailable(cfg, rc) and UNAVAILABLE_RE.search(out):
                cfg.na = '%s does not offer the event (8000_001C.EAX / LLWPCB)' % (
                    'stock QEMU' if cfg.which == 'stock' else 'our QEMU')
                continue
            err = self.judge(cfg, rc, out, rounds, refs.get(cfg.target))
            if err:
                cfg.na = 'probe failed: ' + err
                continue
            refs.setdefault(cfg.target, cfg.last['checksum'])
        self.refs = {}

    def measure(self):
        live = [c for c in self.configs if not c.na]
        n = len(live)
        total = self.args.runs * n
        done = 0
        for rep in range(self.args.runs):
            order = live[rep % n:] + live[:rep % n] if n else []
            for cfg in order:
                rounds = self.rounds(cfg.target)
                rc, out, elapsed, cpu = run_cmd(self.command(cfg, rounds), self.args.timeout)
                done += 1
                err = self.judge(cfg, rc, out, rounds, self.refs.get(cfg.target))
                if err:
                    if not cfg.error:
                        cfg.error = err
                    status = 'ERROR ' + err
                else:
                    cfg.times.append(elapsed)
                    cfg.cpu.append(cpu)
                    self.refs.setdefault(cfg.target, cfg.last['checksum'])
                    status = '%.3f s (CPU %.3f s)' % (elapsed, cpu)
                if self.args.verbose:
                    print('  [%3d/%d] %-16s %s' % (done, total, cfg.name, status), flush=True)
                    if self.args.verbose > 1:
                        print('          ' + ' '.join(self.command(cfg, rounds)), flush=True)
                elif sys.stderr.isatty():
                    sys.stderr.write('\r  run %d/%d ' % (done, total))
                    sys.stderr.flush()
        if not self.args.verbose and sys.stderr.isatty():
            sys.stderr.write('\r' + ' ' * 20 + '\r')

    def cfg(self, target, key):
        for c in self.configs:
            if c.target == target and c.key == key:
                return c
        return None

    def median(self, target, key, what='times'):
        c = self.cfg(target, key)
        v = getattr(c, what) if c else None
        return statistics.median(v) if v else None

    def minimum(self, target, key, what='cpu'):
        c = self.cfg(target, key)
        v = getattr(c, what) if c else None
        return min(v) if v else None

    def report(self):
        targets = self.args.targets
        print()
        print('Median wall time of %d runs in seconds (spread = (max - min) / median;'
              ' CPU = median\nCPU time, user + system, of all QEMU threads):' % self.args.runs)
        print()
        head = '  %-7s %-47s' % ('config', 'what')
        for t in targets:
            head += ' %9s %6s %6s' % (t, 'spread', 'CPU')
        print(head)
        for key, desc, *_ in CONFIGS:
            line = '  %-7s %-47s' % (key, desc)
            for t in targets:
                c = self.cfg(t, key)
                if c.times:
                    spread = (max(c.times) - min(c.times)) / statistics.median(c.times)
                    line += ' %9.3f %5.1f%% %6.3f' % (statistics.median(c.times), 100 * spread,
                                                      statistics.median(c.cpu))
                else:
                    line += ' %9s %6s %6s' % ('n/a', '', '')
            print(line)
        misses = self.ratio_table('Ratios of the CPU times (user + system, all QEMU threads),'
                                  ' median (min);\nthe targets are judged on the median, a miss'
                                  ' counts only when the minima miss too:', 'cpu', True)
        self.ratio_table('The same ratios of the median wall times, for comparison:',
                         'times', False)
        self.report_counts()
        problems = [c for c in self.configs if c.na or c.error]
        if problems:
            print()
            print('Not measured or failed:')
            for c in problems:
                print('  %-16s %s' % (c.name, c.na or c.error))
        return misses, any(c.error for c in self.configs)

    def ratio_table(self, title, what, judge):
        targets = self.args.targets
        print()
        print(title)
        print()
        head = '  %-9s %-8s' % ('ratio', 'target')
        for t in targets:
            head += ' %16s %-5s' % (t, '')
        print(head)
        misses = []
        for name, num, den, op, target in RATIOS:
            tgt = '%s %.2f' % (op, target) if op else '-'
            line = '  %-9s %-8s' % (name, tgt)
            for t in targets:
                a, b = self.median(t, num, what), self.median(t, den, what)
                if a is None or b is None:
                    line += ' %16s %-5s' % ('n/a', '')
                    continue
                r = a / b
                rmin = self.minimum(t, num, what) / self.minimum(t, den, what)
                verdict = judge_ratio(r, rmin, target)
                if verdict == 'MISS':
                    misses.append('%s %s = %.3f (min %.3f, target %s)' % (t, name, r, rmin, tgt))
                line += ' %8.3f (%5.3f) %-5s' % (r, rmin, verdict if judge else '')
            print(line)
        return misses

    def report_counts(self):
        """Records stored, and what they imply, against independent counts."""
        lines = []
        for t in self.args.targets:
            e = self.cfg(t, 'e')
            insns = e.plugin_insns if e and e.times else None
            for key in ('c65535', 'cmin', 'd', 'dmin', 'f'):
                c = self.cfg(t, key)
                if not c.times or not c.last:
                    continue
                rec, n = c.last['records'], c.last['interval']
                # LLWPCB raises a hardware event's interval to the minimum.
                period = (max(n, 255) if c.mode != 'val' else n) + 1
                what = '%-6s %-7s %9d records' % (t, key, rec)
                if c.mode == 'ire' and insns:
                    what += ', records x %d / plugin insns = %.4f' % (period,
                                                                      rec * period / insns)
                elif c.mode == 'bre' and insns:
                    what += ', ~%.1f%% of plugin insns are branches' % (
                        100.0 * rec * period / insns)
                elif c.mode == 'val':
                    want = c.last['rounds'] * INNER // period
                    what += ', expected %d (%s)' % (want, 'exact' if rec == want else 'DIFFERS')
                lines.append(what)
            if insns:
                lines.append('%-6s e       %9d instructions counted by the plugin%s' % (
                    t, insns, ' (BIOS and kernel included)' if t == 'system' else ''))
        if lines:
            print()
            print('Records stored by the last run of each LWP configuration:')
            print()
            for l in lines:
                print('  ' + l)


def describe(args, bench):
    def first_line(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  timeout=30).stdout.decode().splitlines()[0]
        except Exception:
            return 'unknown'
    cpu = 'unknown'
    try:
        for l in open('/proc/cpuinfo'):
            if l.startswith('model name'):
                cpu = l.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    stock = first_line(['dpkg-query', '-W', '-f', '${Package} ${Version}, ',
                        'qemu-user', 'qemu-system-x86']).rstrip(', ')
    print('qemu-lwp benchmark, %s' % datetime.datetime.now().strftime('%Y-%m-%d %H:%M'))
    print('  host: %s, %d CPUs, load average %s' % (cpu, os.cpu_count(),
                                                    ' '.join('%.2f' % x for x in os.getloadavg())))
    print('  stock: %s (%s, %s)' % (stock, args.stock_user, args.stock_system))
    print('  ours: %s (%s)' % (first_line([bench.qemu[('user', 'ours')], '--version']),
                               args.qemu_dir))
    rev = first_line(['git', '-C', args.root, 'rev-parse', '--short', 'HEAD'])
    if args.baseline_qemu_dir:
        print('  baseline: %s' % args.baseline_qemu_dir)
    print('  tree: %s; kernel %s' % (rev, platform.release()))
    load = os.getloadavg()[0]
    if load > 0.5:
        print('  WARNING: the machine is busy (load %.2f): times are noisy; run it idle' % load)
    print('  workload: %d rounds linux-user, %d rounds system guest; %d runs each' %
          (args.user_rounds, args.system_rounds, args.runs))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--quick', action='store_true', help='2 runs per configuration')
    ap.add_argument('--runs', type=int, help='runs per configuration (default 5)')
    ap.add_argument('--only', choices=['user', 'system', 'programs'],
                    help='the loop in linux-user or the system guest, or the real programs')
    ap.add_argument('--program-runs', type=int,
                    help='runs per configuration of the real programs (default --runs)')
    ap.add_argument('--programs', help='comma-separated subset of xz,bzip2,python3,gzip,'
                    'zstd,cc1,perl,sqlite3,sort,loop')
    ap.add_argument('--program-configs',
                    help='comma-separated configurations of the real programs (default '
                    + ','.join(lwp_bench_programs.DEFAULT_CONFIGS) + '; all: '
                    + ','.join(c[0] for c in lwp_bench_programs.CONFIGS) + ')')
    ap.add_argument('--user-rounds', type=int, default=25000)
    ap.add_argument('--system-rounds', type=int, default=20000)
    ap.add_argument('--probe-rounds', type=int, default=200)
    ap.add_argument('--qemu-dir', help='our QEMU build (default ROOT/build/qemu)')
    ap.add_argument('--baseline-qemu-dir',
                    help='another build of ours: its qemu-x86_64 runs ire2^25, iremin '
                    'and iremiss among the real programs\' runs, for the per-event '
                    'costs of a change against its baseline')
    ap.add_argument('--stock-user', default='/usr/bin/qemu-x86_64')
    ap.add_argument('--stock-system', default='/usr/bin/qemu-system-x86_64')
    ap.add_argument('--plugin', help='libinsn.so (default QEMU_DIR/tests/tcg/plugins)')
    ap.add_argument('--timeout', type=int, default=300, help='seconds per run')
    ap.add_argument('--bin-dir', required=True)
    ap.add_argument('--root', required=True)
    ap.add_argument('-v', '--verbose', action='count', default=0,
                    help='print every run (twice: with its command)')
    args = ap.parse_args()
    if args.runs is None:
        args.runs = 2 if args.quick else 5
    if args.runs < 1:
        ap.error('--runs must be at least 1')
    args.qemu_dir = args.qemu_dir or os.path.join(args.root, 'build', 'qemu')
    args.program_runs = args.program_runs or args.runs
    args.targets = {'user': ['user'], 'system': ['system'], 'programs': []}.get(
        args.only, ['user', 'system'])

    bench = Bench(args)
    describe(args, bench)
    misses, noisy, failed = [], [], False
    if args.targets:
        bench.probe()
        bench.measure()
        misses, failed = bench.report()
    if args.only in (None, 'programs'):
        pm, noisy, pf = lwp_bench_programs.run(args)
        misses += pm
        failed = failed or pf
    print('  load average after: %s' % ' '.join('%.2f' % x for x in os.getloadavg()))
    print()
    if noisy:
        print('Over the target on the median only (noisy, not counted): ' + '; '.join(noisy))
    if misses:
        print('Targets missed: ' + '; '.join(misses))
    else:
        print('All measured targets met.')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
