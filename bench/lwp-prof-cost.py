#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What profiling with lwp-prof costs: the CPU time (user + sys of the
emulator and everything it runs) of Debian's xz compressing a fixed text
under qemu-lwp's qemu-x86_64 -cpu max, unprofiled and under
`lwp-prof record -i N` for each interval, in interleaved rounds; prints
min and median of each and their ratios to the unprofiled run.

    python3 bench/lwp-prof-cost.py [--rounds 5] [--size 1200000] [-i 65535 -i 4095]
"""
import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_input(path, size):
    r = random.Random(12)
    words = [''.join(r.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(r.randint(2, 9)))
             for _ in range(3000)]
    out, n = [], 0
    while n < size:
        w = r.choice(words) if r.random() < 0.9 else str(r.randint(0, 99999))
        out.append(w)
        n += len(w) + 1
    with open(path, 'w') as f:
        f.write(' '.join(out))


def cpu_time(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--size', type=int, default=1200000, help='bytes of text to compress')
    ap.add_argument('-i', '--interval', type=int, action='append')
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    a = ap.parse_args()
    intervals = a.interval or [65535, 4095]
    qemu = os.path.join(a.build, 'qemu', 'qemu-x86_64')
    tool = os.path.join(a.build, 'lwp', 'tools', 'lwp-prof', 'lwp-prof')
    xz = shutil.which('xz')
    tmp = tempfile.mkdtemp(prefix='lwp-prof-cost-')
    text = os.path.join(tmp, 'input.txt')
    make_input(text, a.size)
    work = [xz, '-T1', '-3', '-c', text]
    configs = [('unprofiled', [qemu, '-cpu', 'max'] + work)]
    for i in intervals:
        configs.append(('interval %d' % i, [tool, 'record', '-q', '-i', str(i), '-o',
                                            os.path.join(tmp, 'p.data'), '--qemu', qemu,
                                            '--'] + work))
    times = {name: [] for name, _ in configs}
    for _ in range(a.rounds):
        for name, args in configs:
            times[name].append(cpu_time(args))
    base = times['unprofiled']
    print('xz -3 of %d bytes under qemu-x86_64 -cpu max, %d interleaved rounds, '
          'CPU time (user+sys), load average %.2f' % (a.size, a.rounds, os.getloadavg()[0]))
    print('%-12s %8s %8s %10s %10s' % ('', 'min s', 'median s', 'min/base', 'median/base'))
    for name, _ in configs:
        t = times[name]
        print('%-12s %8.3f %8.3f %10.3f %10.3f' % (
            name, min(t), statistics.median(t), min(t) / min(base),
            statistics.median(t) / statistics.median(base)))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
