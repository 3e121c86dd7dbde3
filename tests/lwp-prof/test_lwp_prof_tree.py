#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""lwp-prof on process trees, under qemu-lwp's qemu-x86_64 and qemu-i386.

Each profiled run is compared with the same command run without lwp-prof
(output and exit status unchanged), every process it starts must appear
in the report's per-process summary, and each process's profile must agree
with an exact count of the instructions it executed, taken over the same
run by the TCG plugin (lwp-count-plugin.c, one count file per process
image): `make -j2` of a small C project (every cc1, as and ld), a shell
pipeline, a Python program behind a wrapper script and `#!/usr/bin/env`,
system(), a 64-bit shell running a 32-bit program, and programs that are
not followed (set-user-ID, static).  Then `annotate` on a function whose
hot instruction is known by construction, and `script` and `report
--format speedscope` loaded by speedscope's own importer in node."""
import argparse
import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import report, summary_exit  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
IGNORED_OBJECTS = ('liblwp-prof', 'ld-linux')


def run(args, env=None, cwd=None, timeout=600):
    e = dict(os.environ)
    # The build scripts put ccache's masquerade directory first in PATH:
    # there 'cc' may answer from its cache and never start cc1 or as, the
    # processes the make -j2 tree must show.
    e['PATH'] = os.pathsep.join(d for d in e.get('PATH', '').split(os.pathsep)
                                if d.rstrip('/') != '/usr/lib/ccache')
    e.update(env or {})
    return subprocess.run(args, env=e, cwd=cwd, capture_output=True, text=True, timeout=timeout)


class Tree:
    def __init__(self, tool, qemu_dir, plugin, tmp):
        self.tool, self.qemu, self.plugin, self.tmp = tool, os.path.join(qemu_dir, 'qemu-x86_64'), plugin, tmp

    def record(self, name, args, interval=4095, cwd=None, count=True, extra=()):
        """Record ARGS into TMP/NAME.data, with an exact count per image
        in TMP/NAME.counts/; returns (result, data path)."""
        data = os.path.join(self.tmp, name + '.data')
        counts = os.path.join(self.tmp, name + '.counts')
        shutil.rmtree(counts, ignore_errors=True)
        os.makedirs(counts)
        env = {}
        if count:
            env['QEMU_PLUGIN'] = '%s,out=%s/c.%%p,kind=insn' % (self.plugin, counts)
        r = run([self.tool, 'record', '-q', '-i', str(interval), '-o', data, '--qemu', self.qemu] +
                list(extra) + ['--'] + list(args), env=env, cwd=cwd)
        return r, data

    def tasks(self, data):
        r = run([self.tool, 'report', '--tasks', '--csv', data])
        return list(csv.DictReader(io.StringIO(r.stdout))) if r.returncode == 0 else []

    def shares(self, path, weights=None):
        args = [self.tool, 'report', '--single', '--csv', '--limit', '0']
        if weights:
            args += ['--weights', weights]
        r = run(args + [path])
        rows = [x for x in csv.DictReader(io.StringIO(r.stdout))
                if not x['object'].startswith(IGNORED_OBJECTS)]
        total = sum(int(x['samples']) for x in rows) or 1
        return {(x['symbol'], x['object']): 100.0 * int(x['samples']) / total for x in rows}, total

    def count_files(self, name):
        """{pid: [count file of each image, in exec order]}: the plugin
        writes c.PID, c.PID.1, ... as lwp-prof writes FILE.PID, FILE.PID.1"""
        out = {}
        d = os.path.join(self.tmp, name + '.counts')
        for f in os.listdir(d):
            m = re.match(r'c\.(\d+)(?:\.(\d+))?$', f)
            if m:
                out.setdefault(int(m.group(1)), []).append((int(m.group(2) or 0),
                                                            os.path.join(d, f)))
        return {pid: [f for _, f in sorted(v)] for pid, v in out.items()}


def agreement(sampled, exact, n, top=5):
    """The top functions of the exact count against the sampled shares:
    within 3 points, or 4 standard deviations of a share estimated from N
    samples where that is more (a short process has few samples)."""
    best = sorted(exact, key=exact.get, reverse=True)[:top]
    worst, detail = 0.0, []
    ok = bool(best)
    for k in best:
        p = exact[k] / 100.0
        tol = max(3.0, 400.0 * math.sqrt(p * (1 - p) / max(n, 1)))
        d = abs(sampled.get(k, 0.0) - exact[k])
        worst = max(worst, d - tol)
        ok &= d <= tol
        detail.append('%s %.1f/%.1f' % (k[0], sampled.get(k, 0.0), exact[k]))
    return ok, worst, ', '.join(detail)


def check_images(t, name, data, what, min_samples=100):
    """Every image of the tree against its exact count; returns the tasks."""
    tasks = t.tasks(data)
    counts = t.count_files(name)
    checked, seen = 0, {}
    for row in tasks:                   # root first, then by pid, in exec order
        n = int(row['samples'])
        pid = int(row['pid'])
        k = seen[pid] = seen.get(pid, -1) + 1
        files = counts.get(pid, [])
        cf = files[k] if k < len(files) and len(files) == sum(
            1 for x in tasks if x['pid'] == row['pid']) else None
        if n < min_samples or not cf:
            continue
        sampled, ns = t.shares(row['file'])
        exact, _ = t.shares(row['file'], cf)
        ok, worst, detail = agreement(sampled, exact, ns)
        checked += 1
        report(ok, '%s: %s (pid %s, %d samples) agrees with its exact count (%s)' %
               (what, row['comm'], row['pid'], ns, detail))
    return tasks, checked


def same_run(what, prof, plain, sort_lines=False):
    a, b = prof.stdout, plain.stdout
    if sort_lines:
        a, b = sorted(a.splitlines()), sorted(b.splitlines())
    report(prof.returncode == plain.returncode and a == b and prof.stderr == plain.stderr,
           '%s: output and exit status (%d) as without lwp-prof%s' %
           (what, plain.returncode, '' if a == b else ' (stdout differs: %r vs %r)' %
            (prof.stdout[-300:], plain.stdout[-300:])) +
           ('' if prof.stderr == plain.stderr else ' (stderr: %r vs %r)' %
            (prof.stderr[-300:], plain.stderr[-300:])))


def closed(tasks):
    return all(x['end'] in ('exit', 'exec') for x in tasks) and \
        sum(int(x['missed']) for x in tasks) == 0


def main():
    if os.environ.get('QEMU_ASAN') and os.environ.get('QEMU_PLAIN'):
        # the sanitize-qemu suite's wrapper rewrites binaries under QEMU_PLAIN,
        # not the directory this test gets: it would only run again, a minute
        # of CI for nothing
        print('SKIP: the process-tree test under the sanitize-qemu wrapper (it runs the '
              'emulators of its own tree, not the wrapper\'s)')
        sys.exit(77)
    ap = argparse.ArgumentParser()
    ap.add_argument('lwp_prof')
    ap.add_argument('qemu_dir')
    ap.add_argument('proportions')
    ap.add_argument('proportions_i386')
    ap.add_argument('proportions_static')
    ap.add_argument('count_plugin')
    ap.add_argument('annotate_workload')
    ap.add_argument('speedscope_dir')
    a = ap.parse_args()
    for k, v in vars(a).items():        # meson gives paths relative to the build directory
        setattr(a, k, os.path.abspath(v))
    tmp = tempfile.mkdtemp(prefix='lwp-prof-tree-')
    t = Tree(a.lwp_prof, a.qemu_dir, a.count_plugin, tmp)

    # --- make -j2 of a small C project
    for d in ('plain', 'prof'):
        shutil.copytree(os.path.join(HERE, 'tree-project'), os.path.join(tmp, d))
    plain = run(['make', '-j2'], cwd=os.path.join(tmp, 'plain'))
    prof, data = t.record('make', ['make', '-j2'], cwd=os.path.join(tmp, 'prof'))
    same_run('make -j2', prof, plain, sort_lines=True)
    outs = [run(['./wordstat'], cwd=os.path.join(tmp, d)).stdout for d in ('plain', 'prof')]
    report(outs[0] == outs[1] and 'primes' in outs[0],
           'make -j2: the program it built works the same (%s)' % outs[1].strip())
    tasks, checked = check_images(t, 'make', data, 'make -j2')
    comms = [x['comm'] for x in tasks]
    report(comms.count('cc1') == 3 and comms.count('as') == 3 and comms.count('ld') == 1 and
           all(int(x['samples']) > 0 for x in tasks if x['comm'] in ('cc1', 'as', 'ld')),
           'make -j2: every cc1 (3), as (3) and ld (1) is profiled (%s)' % ' '.join(comms))
    report({'make', 'cc', 'collect2', 'sh', 'tr'} <= set(comms),
           'make -j2: make, the driver, collect2 and the recipe\'s shell pipeline too')
    report(closed(tasks), 'make -j2: %d profiles, all closed, MissedEvents 0' % len(tasks))
    report(checked >= 8, 'make -j2: %d process images checked against their exact count' % checked)
    r = run([a.lwp_prof, 'report', '--sort', 'comm,dso,sym', '--csv', '--limit', '0', data])
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    report(r.returncode == 0 and rows and list(rows[0].keys())[2:] == ['comm', 'object', 'symbol'] and
           {'cc1', 'as', 'ld'} <= {x['comm'] for x in rows} and
           abs(sum(int(x['samples']) for x in rows) - sum(int(x['samples']) for x in tasks)) == 0,
           'report --sort comm,dso,sym: one profile of the whole tree, every sample in it')
    r = run([a.lwp_prof, 'report', '--sort', 'comm', '--csv', data])
    by_comm = {x['comm']: int(x['samples']) for x in csv.DictReader(io.StringIO(r.stdout))}
    want = {}
    for x in tasks:
        want[x['comm']] = want.get(x['comm'], 0) + int(x['samples'])
    report(by_comm == want, 'report --sort comm: the per-command totals of the summary')
    text = run([a.lwp_prof, 'report', data]).stdout
    report(re.search(r'^# +\d+ +\d+ +\d+ +0 +1 +exit +.*cc1 ', text, re.M) is not None and
           '# processes:' in text, 'report: the header lists every process (pid, parent, '
           'samples, MissedEvents, command line)')
    make_data = data

    # --- a shell pipeline, and an exit status
    words = os.path.join(tmp, 'words')
    with open(words, 'w') as f:
        f.write('\n'.join('w%d' % ((i * 7919) % 5000) for i in range(5000)) + '\n')
    script = ('ls %s; sort %s | md5sum; seq 1 3000 | tr 0-9 a-j | sort | uniq -c | wc -l; '
              'exit 3' % (os.path.join(HERE, 'tree-project'), words))
    plain = run(['bash', '-c', script])
    prof, data = t.record('pipe', ['bash', '-c', script])
    same_run('bash pipeline', prof, plain)
    tasks, checked = check_images(t, 'pipe', data, 'pipeline')
    progs = {'ls', 'sort', 'md5sum', 'seq', 'tr', 'uniq', 'wc'}
    seen = {x['comm'] for x in tasks if int(x['samples']) > 0 and x['end'] == 'exit'}
    report(progs <= seen and closed(tasks), 'pipeline: every program profiled to its exit '
           '(%s)' % ' '.join(sorted(x['comm'] for x in tasks)))

    # --- Python behind a wrapper script and #!/usr/bin/env
    plain = run([os.path.join(HERE, 'py-wrapper'), '2500'])
    prof, data = t.record('py', [os.path.join(HERE, 'py-wrapper'), '2500'])
    same_run('python through a wrapper script', prof, plain)
    tasks, checked = check_images(t, 'py', data, 'python')
    chain = [(x['comm'], x['end']) for x in tasks]
    # the kernel names a #! script's process after the script: env runs as
    # py-workload.py, then execs the interpreter
    report(chain[:3] == [('py-wrapper', 'exec'), ('py-workload.py', 'exec'), ('python3', 'exit')]
           and checked >= 1, 'python: the wrapper script, env (for py-workload.py\'s '
           '#!/usr/bin/env) and the interpreter, one pid, exec after exec (%s)' % chain)

    # --- system(), a 32-bit program from a 64-bit shell, and what is not followed
    p32 = a.proportions_i386
    prof, data = t.record('sys', [a.proportions, 'system', 'exec %s serial' % p32], count=False)
    tasks = t.tasks(data)
    imgs = [x for x in tasks if x['comm'] == os.path.basename(p32)]
    ok = prof.returncode == 0 and len(imgs) == 1
    if ok:
        sh, _ = t.shares(imgs[0]['file'])
        prog32 = os.path.basename(p32)
        got = [sh.get((w, prog32), 0) for w in ('work60', 'work30', 'work10')]
        ok = all(abs(g - w) <= 2 for g, w in zip(got, (60, 30, 10)))
    report(ok and any(x['comm'] == 'sh' for x in tasks),
           'system(): the shell glibc spawns and the 32-bit program it execs (under '
           'qemu-i386) are profiled, 60/30/10 (%s)' % [(x['comm'], x['samples']) for x in tasks])

    mount = shutil.which('mount')
    setuid = mount and os.stat(mount).st_mode & 0o4000
    # a script whose interpreter is a script with an argument: two levels of #!
    inner, outer = os.path.join(tmp, 'inner'), os.path.join(tmp, 'outer')
    with open(inner, 'w') as f:
        f.write('#!/bin/sh -e\necho "inner $0 $*"; false; echo never\n')
    with open(outer, 'w') as f:
        f.write('#!%s\n' % inner)
    os.chmod(inner, 0o755)
    os.chmod(outer, 0o755)
    cmd = 'echo start; %s; %s --version | head -1; %s q; echo "end $?"' % (
        a.proportions_static, mount or 'true', outer)
    plain = run(['sh', '-c', cmd])
    prof, data = t.record('nf', ['sh', '-c', cmd], count=False)
    same_run('static and set-user-ID programs, a script run by a script', prof, plain)
    comms = {x['comm'] for x in t.tasks(data)}
    report('outer' in comms and 'inner q' not in plain.stdout and
           ('inner %s %s q' % (inner, outer)) in plain.stdout,
           'two levels of #!: the interpreter runs with the arguments the kernel gives it, '
           'profiled (%s)' % plain.stdout.strip().replace('\n', ' | '))
    report(bool(setuid) and 'mount' not in comms and os.path.basename(a.proportions_static) not in comms
           and 'head' in comms, 'not followed: the set-user-ID mount and a static program run '
           'as they would, unprofiled (%s)' % ' '.join(sorted(comms)))

    prof, data = t.record('ni', [a.proportions, 'exec'], count=False, extra=['--no-inherit'])
    report(prof.returncode == 0 and prof.stdout.strip() == 'LD_PRELOAD=[]' and
           len(t.tasks(data)) == 1, '--no-inherit: the exec\'d shell runs unprofiled, '
           'lwp-prof gone from its LD_PRELOAD (%s)' % prof.stdout.strip())

    # --- annotate: the hot instruction is known by construction
    prof, data = t.record('ann', [a.annotate_workload], count=False)
    m = re.match(r'hot (\d+) warm (\d+)', prof.stdout)
    r = run([a.lwp_prof, 'annotate', '-i', data, 'annotate_me'])
    rows = re.findall(r'^\s+([\d.]+) :\s+(\d+) :\s+([0-9a-f]+):\t(.*)$', r.stdout, re.M)
    start = re.search(r'^\s+:\s+: ([0-9a-f]{16}) <annotate_me>:', r.stdout, re.M)
    ok = bool(m and rows and start)
    if ok:
        base = int(start.group(1), 16)
        rows.sort(key=lambda x: -float(x[0]))
        hot, warm = rows[0], rows[1]
        ok = (int(hot[2], 16) - base == int(m.group(1)) and hot[3].startswith('loop') and
              abs(float(hot[0]) - 75) <= 1 and int(warm[2], 16) - base == int(m.group(2)) and
              abs(float(warm[0]) - 25) <= 1)
    report(ok, 'annotate: the hot LOOP on top at its offset with 75%%, the warm one 25%% (%s)' %
           (rows[:2] if rows else r.stderr.strip()[-200:]))
    hot_line = next(i + 1 for i, l in enumerate(open(os.path.join(HERE, 'annotate-workload.c')))
                    if '/* HOT */' in l)
    report(re.search(r'annotate-workload\.c:%d  asm volatile' % hot_line, r.stdout) is not None,
           'annotate: source lines from DWARF, the hot LOOP under line %d' % hot_line)
    r2 = run([a.lwp_prof, 'annotate', '-i', data])
    report(r2.returncode == 0 and '<annotate_me>:' in r2.stdout,
           'annotate without a symbol: the hottest function')

    # --- script and speedscope, read by speedscope's own importer
    setup = run(['sh', os.path.join(HERE, 'setup-speedscope.sh'), a.speedscope_dir], timeout=900)
    report(setup.returncode == 0, 'speedscope installed from the npm registry into the build '
           'directory (%s)' % setup.stderr.strip()[-200:])
    sfile, jfile = os.path.join(tmp, 'tree.perf'), os.path.join(tmp, 'tree.speedscope.json')
    with open(sfile, 'w') as f:
        r = subprocess.run([a.lwp_prof, 'script', make_data], stdout=f, text=True)
    r2 = run([a.lwp_prof, 'report', '--format', 'speedscope', '-o', jfile, make_data])
    rep = run([a.lwp_prof, 'report', '--sort', 'sym', '--csv', '--limit', '0', make_data])
    want = {x['symbol']: int(x['samples']) for x in csv.DictReader(io.StringIO(rep.stdout))}
    total = sum(want.values())
    top = sorted(want, key=want.get, reverse=True)[:5]
    node = run(['node', os.path.join(HERE, 'speedscope-check.mjs'),
                os.path.join(a.speedscope_dir, 'node_modules', 'speedscope', 'dist', 'release'),
                sfile, jfile])
    got = [json.loads(x) for x in node.stdout.splitlines() if x.startswith('{')]
    report(r.returncode == 0 and r2.returncode == 0 and node.returncode == 0 and len(got) == 2,
           'speedscope\'s importer loads lwp-prof script\'s and report --format speedscope\'s '
           'files (%s)' % node.stderr.strip()[-300:])
    for g in got:
        w = g['self']
        gtotal = sum(w.values()) or 1
        gtop = sorted(w, key=w.get, reverse=True)[:5]
        diff = max(abs(100.0 * w.get(s, 0) / gtotal - 100.0 * want[s] / total) for s in top)
        report(gtop[:3] == top[:3] and set(gtop) == set(top) and diff <= 0.5,
               'speedscope (%s, %d profiles): the same top functions as report (%s; '
               'shares within %.2f points)' % (os.path.basename(g['file']), g['profiles'],
                                               ', '.join(gtop), diff))

    shutil.rmtree(tmp, ignore_errors=True)
    summary_exit()


if __name__ == '__main__':
    main()
