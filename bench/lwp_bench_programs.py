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

PERL_SCRIPT = r'''
my %h; my $s = 0;
for my $i (1..40000) {
    my $k = "k" . ($i * 7919 % 50021);
    $h{$k} .= $i % 10; $s += length $h{$k};
    $h{"x$s"} = $k if $i % 3 == 0;
}
my @k = sort { $h{$a} cmp $h{$b} or $a cmp $b } keys %h;
print scalar(@k), " $s $k[0] $k[-1]\n";
'''

SQLITE_SCRIPT = (
    "CREATE TABLE t(a INTEGER, b TEXT, c INTEGER); "
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<40000) "
    "INSERT INTO t SELECT x, printf('w%d', (x*7919)%10007), (x*31)%977 FROM c; "
    "CREATE INDEX tb ON t(b); "
    "SELECT count(*), sum(c) FROM (SELECT b, c FROM t GROUP BY b, c); "
    "SELECT b, count(*) FROM t GROUP BY b ORDER BY count(*) DESC, b LIMIT 3;")

# The largest interval an EventInterval field holds (26-bit signed): almost
# no records, so the run costs the per-block charge alone.
INTERVAL_NONE = (1 << 25) - 1
# The smallest interval of an event (EventInterval is raised to it).
LWP_MIN_INTERVAL = 255
# The ring-full configuration's ring: 1024 records, never drained.
FULL_RING_BYTES = 1024 * 32

# key, description, which QEMU, event (0: none), interval, plugin
CONFIGS = [
    ('stock', 'Debian QEMU, no LWP', 'stock', 0, 0, False),
    ('unused', 'ours, LWP unused', 'ours', 0, 0, False),
    ('ire2^25', 'ours, instructions retired, interval 2^25 - 1 (almost no records)',
     'ours', 2, INTERVAL_NONE, False),
    ('ire65535', 'ours, instructions retired, interval 65535', 'ours', 2, 65535, False),
    ('ire4095', 'ours, instructions retired, interval 4095', 'ours', 2, 4095, False),
    ('iremin', 'ours, instructions retired, interval 255 (min)', 'ours', 2, 255, False),
    ('iremiss', 'ours, instructions retired, interval 255, a ring of 1024 records '
     'that fills (missed events)', 'ours', 2, 255, False),
    ('bre65535', 'ours, branches retired, interval 65535', 'ours', 3, 65535, False),
    ('bre4095', 'ours, branches retired, interval 4095', 'ours', 3, 4095, False),
    ('bremin', 'ours, branches retired, interval 255 (min)', 'ours', 3, 255, False),
    ('plugin', 'ours, LWP unused, libinsn.so inline=on', 'ours', 0, 0, True),
    # Latitude mode's record stored after its block (docs/lwp-latitude.rst).
    ('ire65535-late', 'ours, instructions retired, interval 65535, lwp-store-delay=511',
     'ours', 2, 65535, False),
    ('iremin-late', 'ours, instructions retired, interval 255, lwp-store-delay=511',
     'ours', 2, 255, False),
    # Each record stored when its instruction retires (docs/lwp-events.rst).
    ('ire65535-sync', 'ours, instructions retired, interval 65535, lwp-sync-store=on',
     'ours', 2, 65535, False),
    ('iremin-sync', 'ours, instructions retired, interval 255, lwp-sync-store=on',
     'ours', 2, 255, False),
    # Another build of ours (--baseline-qemu-dir): the per-event costs of a
    # change against its baseline, in the same interleaved runs.
    ('base-ire2^25', 'baseline, instructions retired, interval 2^25 - 1', 'base', 2,
     INTERVAL_NONE, False),
    ('base-iremin', 'baseline, instructions retired, interval 255 (min)', 'base', 2, 255,
     False),
    ('base-iremiss', 'baseline, instructions retired, interval 255, the ring that fills',
     'base', 2, 255, False),
    ('base-bremin', 'baseline, branches retired, interval 255 (min)', 'base', 3, 255,
     False),
    ('base-bre65535', 'baseline, branches retired, interval 65535', 'base', 3, 65535,
     False),
]
# What --baseline-qemu-dir adds to the configurations.
BASELINE_CONFIGS = ('base-ire2^25', 'base-iremin', 'base-iremiss', 'base-bremin',
                    'base-bre65535')
# The -cpu of the "-sync" configurations.
SYNC_STORE_CPU = 'max,lwp-sync-store=on'

# The -cpu of the latitude configurations: a fixed seed, the same draws in
# every run.
LATE_STORE_CPU = 'max,lwp-store-delay=511,lwp-seed=1'
# What runs unless --program-configs says otherwise.
DEFAULT_CONFIGS = ('stock', 'unused', 'ire2^25', 'ire65535', 'iremin', 'iremiss',
                   'bremin', 'plugin')

# name, numerator, denominator, target for real programs, target for the loop
RATIOS = [
    ('unused/stock', 'unused', 'stock', 1.02, 1.02),
    ('ire65535/unused', 'ire65535', 'unused', 1.08, 1.03),
    ('ire4095/unused', 'ire4095', 'unused', None, None),
    ('iremin/unused', 'iremin', 'unused', None, None),
    ('iremin/plugin', 'iremin', 'plugin', 1.00, 1.00),
    ('bre65535/unused', 'bre65535', 'unused', 1.08, 1.03),
    ('base-bre65535/unused', 'base-bre65535', 'unused', None, None),
    ('bre4095/unused', 'bre4095', 'unused', None, None),
    ('bremin/plugin', 'bremin', 'plugin', 1.00, 1.00),
    ('plugin/unused', 'plugin', 'unused', None, None),
    ('ire2^25/unused', 'ire2^25', 'unused', None, None),
    ('iremiss/plugin', 'iremiss', 'plugin', None, None),
    ('ire65535-late/ire65535', 'ire65535-late', 'ire65535', None, None),
    ('iremin-late/iremin', 'iremin-late', 'iremin', None, None),
    ('ire65535/ire65535-sync', 'ire65535', 'ire65535-sync', None, None),
    ('iremin/iremin-sync', 'iremin', 'iremin-sync', None, None),
]


def make_c_source(path, functions, seed):
    """A C file of many small functions (loops, switches, calls) for cc1."""
    r = random.Random(seed)
    out = ['#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>', '',
           'struct item { int key; long val; char name[16]; struct item *next; };']
    for i in range(functions):
        call = 'f%d(it, n - 1, s)' % (i - 1) if i and r.random() < 0.5 else '0'
        out.append('''static long f%d(struct item *it, int n, const char *s)
{
    long acc = %d;
    for (int i = 0; i < n; i++) {
        switch ((i * %d + it->key) %% 5) {
        case 0: acc += it->val * %d + strlen(s); break;
        case 1: acc ^= (acc << %d) | it->name[i %% 16]; break;
        case 2: if (it->next) { acc -= it->next->val; it = it->next; } break;
        case 3: acc = acc * %d %% %d; break;
        default: snprintf(it->name, sizeof(it->name), "%%ld", acc); break;
        }
    }
    return acc + %s;
}''' % (i, r.randint(1, 1000), r.randint(2, 9), r.randint(2, 50), r.randint(1, 7),
       r.randint(3, 99), r.randint(1000, 99999), call))
    out.append('int main(int argc, char **argv)\n{\n    struct item a = {0};\n    long s = 0;')
    out += ['    s += f%d(&a, argc, argv[0]);' % i for i in range(functions)]
    out.append('    printf("%ld\\n", s);\n    return 0;\n}')
    data = '\n'.join(out) + '\n'
    if os.path.exists(path) and open(path).read() == data:
        return
    with open(path + '.tmp', 'w') as f:
        f.write(data)
    os.replace(path + '.tmp', path)


def cc1_path():
    """Debian gcc's cc1, as the driver finds it."""
    try:
        p = subprocess.run(['gcc', '-print-prog-name=cc1'], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, check=True)
        return p.stdout.decode().strip()
    except (OSError, subprocess.CalledProcessError):
        return 'cc1'


def per_event_ns(a, b, events):
    """(min, median) of (CPU a - CPU b) / events in ns: what one event adds."""
    if not a or not b or not events:
        return None
    return ((min(a) - min(b)) / events * 1e9,
            (statistics.median(a) - statistics.median(b)) / events * 1e9)


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
        self.missed = {}          # config key -> MissedEvents of the last run
        self.errors = {}          # config key -> first failure


class ProgramBench:
    def __init__(self, args):
        self.args = args
        out = args.bin_dir
        self.preload = os.path.join(out, 'lwp-preload.so')
        self.stock = args.stock_user
        self.ours = os.path.join(args.qemu_dir, 'qemu-x86_64')
        self.base = (os.path.join(args.baseline_qemu_dir, 'qemu-x86_64')
                     if args.baseline_qemu_dir else None)
        self.plugin = args.plugin or os.path.join(args.qemu_dir, 'tests', 'tcg', 'plugins',
                                                  'libinsn.so')
        xz_in = os.path.join(out, 'text-512k')
        bz_in = os.path.join(out, 'text-2m')
        make_text(xz_in, 512 * 1024, 13)
        make_text(bz_in, 2 * 1024 * 1024, 17)
        sort_in = os.path.join(out, 'text-8m')
        make_text(sort_in, 8 * 1024 * 1024, 19)
        python = os.path.realpath('/usr/bin/python3')
        c_in = os.path.join(out, 'cc1-input.c')
        make_c_source(c_in, 25, 5)
        self.programs = [
            Program('xz', 'xz -6, 512 KiB of text', ['/usr/bin/xz', '-6', '-T1', '-c', xz_in]),
            Program('bzip2', 'bzip2 -9, 2 MiB of text',
                    ['/usr/bin/bzip2', '-9', '-c', bz_in]),
            # A fixed hash seed: the same dict work in every run.
            Program('python3', 'python3 dict/str loop',
                    [python, '-S', '-c', PYTHON_SCRIPT], ['PYTHONHASHSEED=0']),
            Program('gzip', 'gzip -9, 2 MiB of text', ['/usr/bin/gzip', '-9', '-c', bz_in]),
            # -T1 still compresses in a worker thread, which LWP does not
            # follow (a new thread starts with LWP disabled, spec 8.4).
            Program('zstd', 'zstd -9 --single-thread, 2 MiB of text',
                    ['/usr/bin/zstd', '-q', '-9', '--single-thread', '-c', bz_in]),
            Program('cc1', 'cc1 -O1 of a C file of 25 functions',
                    [cc1_path(), '-quiet', '-O1', c_in, '-o', '/dev/stdout']),
            # Fixed hash seeds: the same hash work in every run.
            Program('perl', 'perl hash/sort script', ['/usr/bin/perl', '-e', PERL_SCRIPT],
                    ['PERL_HASH_SEED=0', 'PERL_PERTURB_KEYS=0']),
            Program('sqlite3', 'sqlite3 in-memory: insert, index, group by',
                    ['/usr/bin/sqlite3', ':memory:', SQLITE_SCRIPT]),
            Program('sort', 'sort, 8 MiB of text (C locale, one thread)',
                    ['/usr/bin/sort', '--parallel=1', '-S', '64M', sort_in], ['LC_ALL=C']),
            Program('loop', 'bench/workload-user.c (dynamic), 6000 rounds',
                    [os.path.join(out, 'workload-user-dyn'), 'none', '0', '6000']),
        ]
        if args.programs:
            want = args.programs.split(',')
            self.programs = [p for p in self.programs if p.key in want]
        want = list(args.program_configs.split(',') if args.program_configs
                    else DEFAULT_CONFIGS)
        if self.base:
            want += BASELINE_CONFIGS
        self.configs = [c for c in CONFIGS if c[0] in want]
        self.na = {}

    def ring_bytes(self, prog, key, interval):
        """BufferSize and the memory mapped for it, 'RING[:MAP]'."""
        if key.endswith('iremiss'):
            return '%d:%d' % (FULL_RING_BYTES, self.map_bytes(prog))
        return '%d' % self.map_bytes(prog)

    def map_bytes(self, prog):
        # Every configuration maps and touches the same memory, the ring the
        # minimum interval needs: the first write to a page is dear in a VM
        # with shadow paging, and a per-event cost is a difference of two
        # configurations, so that cost cancels out of it.
        insns = prog.insns or 4 * 10 ** 9
        need = insns // (LWP_MIN_INTERVAL + 1) * 32 * 5 // 4 + (1 << 20)
        # BufferSize has 28 bits (spec 7.1, figure 7-1): at most 256 MiB - 4 KiB.
        return min(need, 0x0ffff000) & ~4095

    def command(self, prog, cfg, log):
        key, _, which, event, interval, plugin = cfg
        # Every configuration maps and touches the same ring (event 0: and
        # leaves LWP off), so that ratios compare like with like.
        preload = ['-E', 'LD_PRELOAD=' + self.preload,
                   '-E', 'QEMU_LWP_BENCH=%d:%d:%s' % (event, interval,
                                                      self.ring_bytes(prog, key, interval))]
        if which == 'stock':
            return [self.stock, '-cpu', 'max'] + prog.qemu_env + preload + prog.argv
        cpu = (LATE_STORE_CPU if key.endswith('-late') else
               SYNC_STORE_CPU if key.endswith('-sync') else 'max')
        cmd = [self.base if which == 'base' else self.ours, '-cpu', cpu] + prog.qemu_env
        if plugin:
            # The plugin's count goes to a log file: xz closes stderr.
            cmd += ['-plugin', self.plugin + ',inline=on', '-d', 'plugin', '-D', log]
        return cmd + preload + prog.argv

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
            # The ring-full configuration must miss, every other none.
            if (ev != event or bad or not rec or
                    bool(missed) != key.endswith('iremiss')):
                return 'event %d records %d missed %d bad %d' % (ev, rec, missed, bad), cpu
            prog.records[key] = (n, rec)
            prog.missed[key] = missed
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
            elif which == 'base' and not os.access(self.base, os.X_OK):
                self.na[key] = '%s not found' % self.base
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
        for key, *_ in self.configs:
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
        self.report_per_record(progs)
        lines = []
        for p in progs:
            for key in ('ire65535', 'ire4095', 'iremin', 'iremiss', 'bre65535', 'bremin',
                        'ire65535-late', 'iremin-late', 'ire65535-sync', 'iremin-sync'):
                if key not in p.records:
                    continue
                n, rec = p.records[key]
                what = '%-8s %-9s %10d records' % (p.key, key, rec)
                if p.missed.get(key):
                    what += ', %d missed events' % p.missed[key]
                    lines.append(what)
                    continue
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
            print('Records stored by the last run (checked: MissedEvents only in iremiss, sampled EventIds):')
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

    def report_per_record(self, progs):
        """What one record, one missed event and the per-block charge cost."""
        print()
        print('Per event, in ns of CPU time, min / median (the difference of the minima,')
        print('and of the medians, of the two configurations, over the events of the')
        print('last run):')
        print('  record   (iremin - ire2^25) / records stored by iremin')
        print('  missed   (iremiss - ire2^25) / missed events of iremiss')
        print('  bre      (bremin - ire2^25) / records stored by bremin')
        print('  sync     (iremin-sync - ire2^25) / records stored by iremin-sync')
        print('  block    ire2^25 - unused, seconds: the per-block charge of counting')
        print('  spread   (max - min of ire2^25) / records stored by iremin: how far')
        print('           the run-to-run spread of this host moves the record column')
        if self.base:
            print('  base record, base missed, base bre: the same for the baseline build'
                  ' (%s)' % self.base)
        print()
        head = '  %-9s %15s %15s %15s %15s %15s %9s' % ('program', 'record ns', 'missed ns',
                                                         'bre ns', 'sync ns', 'block s',
                                                         'spread')
        if self.base:
            head += ' %15s %15s %15s' % ('base record', 'base missed', 'base bre')
        print(head)
        for p in progs:
            base = p.cpu.get('ire2^25')
            cols = []
            for key, events in (('iremin', p.records.get('iremin', (0, 0))[1]),
                                ('iremiss', p.missed.get('iremiss', 0)),
                                ('bremin', p.records.get('bremin', (0, 0))[1]),
                                ('iremin-sync', p.records.get('iremin-sync', (0, 0))[1])):
                v = per_event_ns(p.cpu.get(key), base, events)
                cols.append('%6.1f / %6.1f' % v if v else 'n/a')
            extra = ''
            for key, events in (('base-iremin', p.records.get('base-iremin', (0, 0))[1]),
                                ('base-iremiss', p.missed.get('base-iremiss', 0)),
                                ('base-bremin', p.records.get('base-bremin', (0, 0))[1])):
                if not self.base:
                    break
                v = per_event_ns(p.cpu.get(key), p.cpu.get('base-ire2^25'), events)
                extra += ' %15s' % ('%6.1f / %6.1f' % v if v else 'n/a')
            a, b = base, p.cpu.get('unused')
            cols.append('%.3f / %.3f' % (min(a) - min(b),
                                         statistics.median(a) - statistics.median(b))
                        if a and b else 'n/a')
            stored = p.records.get('iremin', (0, 0))[1]
            cols.append('%6.1f' % ((max(a) - min(a)) / stored * 1e9)
                        if a and stored else 'n/a')
            print('  %-9s %15s %15s %15s %15s %15s %9s' % (p.key, *cols) + extra)


def run(args):
    bench = ProgramBench(args)
    bench.probe()
    bench.measure()
    return bench.report()
