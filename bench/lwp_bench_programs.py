# SPDX-License-Identifier: GPL-2.0-or-later
"""Real programs under linux-user: what LWP's hardware events cost there.

Part of bench/run-bench.sh (imported by lwp-bench.py).  Debian's xz, bzip2
and python3 run unmodified on inputs made here from a fixed seed, and the
benchmark loop of bench/workload-user.c runs beside them.  LWP is switched
on in the unmodified program by bench/lwp-preload.c (LD_PRELOAD, passed to
the guest with -E).  Every configuration runs N times, interleaved, and the
CPU time (user + system) of QEMU is compared, min and median.
"""
import hashlib
import os
import random
import re
import statistics
import subprocess
import tempfile

from lwp_bench_common import children_cpu, judge_ratio

PRELOAD_RE = re.compile(r'lwp-preload: event (\d+) interval (\d+) records (\d+) '
                        r'missed (\d+) bad (\d+)')
PLUGIN_RE = re.compile(r'total insns: (\d+)')

PYTHON_SCRIPT = '''
d = {}
s = 0
for i in range(80000):
    k = 'k%d' % (i % 4099)
    v = d.get(k, '')
    d[k] = (v + str(i))[-24:]
    s += len(d[k]) + v.count('7')
print(len(d), s)
'''

# key, description, which QEMU, event (0: none), interval, plugin
CONFIGS = [
    ('stock', 'Debian QEMU, no LWP', 'stock', 0, 0, False),
    ('unused', 'ours, LWP unused', 'ours', 0, 0, False),
    ('ire65535', 'ours, instructions retired, interval 65535', 'ours', 2, 65535, False),
    ('ire4095', 'ours, instructions retired, interval 4095', 'ours', 2, 4095, False),
    ('iremin', 'ours, instructions retired, interval 255 (min)', 'ours', 2, 255, False),
    ('bre65535', 'ours, branches retired, interval 65535', 'ours', 3, 65535, False),
    ('bre4095', 'ours, branches retired, interval 4095', 'ours', 3, 4095, False),
    ('bremin', 'ours, branches retired, interval 255 (min)', 'ours', 3, 255, False),
    ('plugin', 'ours, LWP unused, libinsn.so inline=on', 'ours', 0, 0, True),
]

# name, numerator, denominator, target for real programs, target for the loop
RATIOS = [
    ('unused/stock', 'unused', 'stock', 1.02, 1.02),
    ('ire65535/unused', 'ire65535', 'unused', 1.08, 1.03),
    ('ire4095/unused', 'ire4095', 'unused', None, None),
    ('iremin/unused', 'iremin', 'unused', None, None),
    ('iremin/plugin', 'iremin', 'plugin', 1.00, 1.00),
    ('bre65535/unused', 'bre65535', 'unused', 1.08, 1.03),
    ('bre4095/unused', 'bre4095', 'unused', None, None),
    ('bremin/plugin', 'bremin', 'plugin', 1.00, 1.00),
    ('plugin/unused', 'plugin', 'unused', None, None),
]


def make_text(path, size, seed):
    """Text-like data: Zipf-distributed made-up words, some numbers."""
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    r = random.Random(seed)
    syl = ['ka', 'to', 'ri', 'mu', 'sen', 'lo', 'pha', 'ber', 'qui', 'da', 'no', 'xel',
           'tra', 'vi', 'gon', 'e', 'a', 'in']
    vocab = [''.join(r.choice(syl) for _ in range(r.randint(1, 4))) for _ in range(5000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    out, n = [], 0
    while n < size:
        line = ' '.join(r.choices(vocab, weights=weights, k=r.randint(4, 14)))
        if r.random() < 0.2:
            line += ' %d' % r.randint(0, 10 ** 6)
        out.append(line)
        n += len(line) + 1
    data = ('\n'.join(out) + '\n').encode()[:size]
    with open(path + '.tmp', 'wb') as f:
        f.write(data)
    os.replace(path + '.tmp', path)


class Program:
    def __init__(self, key, desc, argv, env=()):
        self.key, self.desc, self.argv = key, desc, argv
        self.qemu_env = [a for e in env for a in ('-E', e)]   # the guest's environment
        self.cpu = {}             # config key -> [CPU seconds]
        self.ref = None           # sha256 of the output of the first good run
        self.insns = None         # instructions counted by the plugin
        self.records = {}         # config key -> (interval, records) of the last run
        self.errors = {}          # config key -> first failure


class ProgramBench:
    def __init__(self, args):
        self.args = args
        out = args.bin_dir
        self.preload = os.path.join(out, 'lwp-preload.so')
        self.stock = args.stock_user
        self.ours = os.path.join(args.qemu_dir, 'qemu-x86_64')
        self.plugin = args.plugin or os.path.join(args.qemu_dir, 'tests', 'tcg', 'plugins',
                                                  'libinsn.so')
        xz_in = os.path.join(out, 'text-512k')
        bz_in = os.path.join(out, 'text-2m')
        make_text(xz_in, 512 * 1024, 13)
        make_text(bz_in, 2 * 1024 * 1024, 17)
        python = os.path.realpath('/usr/bin/python3')
        self.programs = [
            Program('xz', 'xz -6, 512 KiB of text', ['/usr/bin/xz', '-6', '-T1', '-c', xz_in]),
            Program('bzip2', 'bzip2 -9, 2 MiB of text',
                    ['/usr/bin/bzip2', '-9', '-c', bz_in]),
            # A fixed hash seed: the same dict work in every run.
            Program('python3', 'python3 dict/str loop',
                    [python, '-S', '-c', PYTHON_SCRIPT], ['PYTHONHASHSEED=0']),
            Program('loop', 'bench/workload-user.c (dynamic), 6000 rounds',
                    [os.path.join(out, 'workload-user-dyn'), 'none', '0', '6000']),
        ]
        if args.programs:
            want = args.programs.split(',')
            self.programs = [p for p in self.programs if p.key in want]
        self.configs = [c for c in CONFIGS]
        self.na = {}

    def ring_bytes(self, prog, interval):
        insns = prog.insns or 4 * 10 ** 9
        need = insns // (interval + 1) * 32 * 5 // 4 + (1 << 20)
        # BufferSize has 28 bits (spec 7.1, figure 7-1): at most 256 MiB - 4 KiB.
        return min(need, 0x0ffff000) & ~4095

    def command(self, prog, cfg, log):
        key, _, which, event, interval, plugin = cfg
        if which == 'stock':
            return [self.stock, '-cpu', 'max'] + prog.qemu_env + prog.argv
        cmd = [self.ours, '-cpu', 'max'] + prog.qemu_env
        if plugin:
            # The plugin's count goes to a log file: xz closes stderr.
            cmd += ['-plugin', self.plugin + ',inline=on', '-d', 'plugin', '-D', log]
        if event:
            cmd += ['-E', 'LD_PRELOAD=' + self.preload,
                    '-E', 'QEMU_LWP_BENCH=%d:%d:%d' % (event, interval,
                                                       self.ring_bytes(prog, interval))]
        return cmd + prog.argv

    def run_one(self, prog, cfg):
        """One run: (error or None, CPU seconds)."""
        key, _, _, event, interval, plugin = cfg
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, 'qemu.log')
            cpu0 = children_cpu()
            try:
                p = subprocess.run(self.command(prog, cfg, log), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   timeout=self.args.timeout)
            except subprocess.TimeoutExpired:
                return 'timed out after %d s' % self.args.timeout, 0.0
            cpu = children_cpu() - cpu0
            err = p.stderr.decode(errors='replace')
            if os.path.exists(log):
                err += open(log, errors='replace').read()
        if p.returncode != 0:
            return 'exit status %d: %s' % (p.returncode, ' | '.join(err.strip().splitlines()[-2:])), cpu
        digest = hashlib.sha256(p.stdout).hexdigest()
        if prog.ref is None:
            prog.ref = digest
        elif digest != prog.ref:
            return 'output differs from the first run', cpu
        if plugin:
            m = PLUGIN_RE.search(err)
            if not m:
                return 'no "total insns" line from the plugin', cpu
            prog.insns = int(m.group(1))
        if event:
            m = PRELOAD_RE.search(err)
            if not m:
                return 'no line from lwp-preload: %s' % err.strip()[-200:], cpu
            ev, n, rec, missed, bad = (int(x) for x in m.groups())
            if ev != event or missed or bad or not rec:
                return 'event %d records %d missed %d bad %d' % (ev, rec, missed, bad), cpu
            prog.records[key] = (n, rec)
        return None, cpu

    def probe(self):
        # The plugin first: its instruction count sizes the rings.
        order = sorted(self.configs, key=lambda c: not c[5])
        for cfg in order:
            key, _, which, event, _, plugin = cfg
            if which == 'stock' and not os.access(self.stock, os.X_OK):
                self.na[key] = '%s not found' % self.stock
            elif which == 'ours' and not os.access(self.ours, os.X_OK):
                self.na[key] = '%s not found' % self.ours
            elif plugin and not os.path.exists(self.plugin):
                self.na[key] = 'plugin %s not built' % self.plugin
            elif event and not os.path.exists(self.preload):
                self.na[key] = '%s not built' % self.preload
            if key in self.na:
                continue
            for prog in self.programs:
                err, _ = self.run_one(prog, cfg)
                if err:
                    prog.errors.setdefault(key, 'probe: ' + err)

    def measure(self):
        live = [c for c in self.configs if c[0] not in self.na]
        n = len(live)
        for rep in range(self.args.program_runs):
            order = live[rep % n:] + live[:rep % n] if n else []
            for prog in self.programs:
                for cfg in order:
                    if cfg[0] in prog.errors:
                        continue
                    err, cpu = self.run_one(prog, cfg)
                    if err:
                        prog.errors.setdefault(cfg[0], err)
                        continue
                    prog.cpu.setdefault(cfg[0], []).append(cpu)
                    if self.args.verbose:
                        print('  [%d/%d] %-8s %-9s CPU %.3f s' % (
                            rep + 1, self.args.program_runs, prog.key, cfg[0], cpu),
                            flush=True)

    def report(self):
        progs = self.programs
        print()
        print('Real programs under linux-user: CPU time (user + system) of QEMU in seconds,')
        print('min / median of %d interleaved runs:' % self.args.program_runs)
        print()
        head = '  %-9s' % 'config'
        for p in progs:
            head += ' %15s' % p.key
        print(head)
        for key, *_ in CONFIGS:
            line = '  %-9s' % key
            for p in progs:
                v = p.cpu.get(key)
                line += ' %15s' % ('%.3f / %.3f' % (min(v), statistics.median(v)) if v else 'n/a')
            print(line)
        print()
        print('Ratios, median (min); the targets are judged on the median, and a miss')
        print('counts only when the ratio of the minima misses too (else "noisy"):')
        print()
        head = '  %-16s %-12s' % ('ratio', 'target')
        for p in progs:
            head += ' %19s' % p.key
        print(head)
        misses, noisy = [], []
        for name, num, den, t_real, t_loop in RATIOS:
            tgt = '<= %.2f' % t_real if t_real else '-'
            if t_loop and t_loop != t_real:
                tgt += ' (%.2f)' % t_loop
            line = '  %-16s %-12s' % (name, tgt)
            for p in progs:
                a, b = p.cpu.get(num), p.cpu.get(den)
                if not a or not b:
                    line += ' %19s' % 'n/a'
                    continue
                rmed = statistics.median(a) / statistics.median(b)
                rmin = min(a) / min(b)
                target = t_loop if p.key == 'loop' else t_real
                verdict = judge_ratio(rmed, rmin, target)
                if verdict == 'MISS':
                    misses.append('%s %s = %.3f (min %.3f, target %.2f)' % (
                        p.key, name, rmed, rmin, target))
                elif verdict == 'noisy':
                    noisy.append('%s %s = %.3f (min %.3f)' % (p.key, name, rmed, rmin))
                line += ' %6.3f (%5.3f) %-4s' % (rmed, rmin, verdict)
            print(line)
        lines = []
        for p in progs:
            for key in ('ire65535', 'ire4095', 'iremin', 'bre65535', 'bremin'):
                if key not in p.records:
                    continue
                n, rec = p.records[key]
                what = '%-8s %-9s %10d records' % (p.key, key, rec)
                if key.startswith('ire') and p.insns:
                    what += ', x %d / plugin insns = %.4f' % (n + 1, rec * (n + 1) / p.insns)
                elif p.insns:
                    what += ', ~%.1f%% of plugin insns are branches' % (
                        100.0 * rec * (n + 1) / p.insns)
                lines.append(what)
            if p.insns:
                lines.append('%-8s plugin    %10d instructions' % (p.key, p.insns))
        if lines:
            print()
            print('Records stored by the last run (checked: no MissedEvents, sampled EventIds):')
            print()
            for l in lines:
                print('  ' + l)
        failed = [(p.key, k, e) for p in progs for k, e in p.errors.items()]
        if failed or self.na:
            print()
            print('Not measured or failed:')
            for k, e in self.na.items():
                print('  %-18s %s' % (k, e))
            for pk, k, e in failed:
                print('  %-18s %s' % (pk + '/' + k, e))
        return misses, noisy, bool(failed)


def run(args):
    bench = ProgramBench(args)
    bench.probe()
    bench.measure()
    return bench.report()
