#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The long adversarial campaign, system mode and linux-user (docs/lwp.rst).

Runs the seeded campaign guests (tests/guest/lwp-campaign.c) and programs
(tests/user/lwp-campaign.c) in chunks of CASES cases from consecutive seeds
until TOTAL cases per configuration have run, JOBS at a time, and prints one
line per configuration: cases, failed chunks, and QEMU deaths by message.
A chunk fails when QEMU dies, the guest reports a failure or it does not
finish within its time bound; its seed is printed so it can be replayed
(``run_guest.py ... -append 'seed=S cases=N'``).
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys

SYSTEM_CONFIGS = {
    'plain': [],
    'icount': ['-icount', 'shift=0'],
    '1insn': ['--accel', 'tcg,one-insn-per-tb=on'],
}
FATAL = re.compile(r'(qemu: fatal: [^\n]*|qemu[^:\n]*: [^\n]*(?:Assertion|abort)[^\n]*|'
                   r'Bad icount read|AddressSanitizer|runtime error)')


def run_system(args, config, mode, seed):
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [sys.executable, os.path.join(here, 'run_guest.py'), '--qemu', args.qemu_system,
           '--kernel', os.path.join(args.builddir, 'tests/guest/lwp-campaign-%s.img' % mode),
           '--cpu', args.cpu, '--timeout', str(args.chunk_timeout), '-device', 'VGA',
           '-append', 'seed=%d cases=%d' % (seed, args.cases)] + SYSTEM_CONFIGS[config]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout.decode(errors='replace')


def run_user(args, config, arch, seed):
    qemu = {'x86_64': args.qemu_x86_64, 'i386': args.qemu_i386}[arch]
    prog = os.path.join(args.builddir, 'tests/user/lwp-campaign-%s' % arch)
    try:
        proc = subprocess.run([qemu, '-cpu', args.cpu, prog, str(seed), str(args.cases)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=args.chunk_timeout)
    except subprocess.TimeoutExpired as e:
        return -1, (e.stdout or b'').decode(errors='replace') + '\ntimed out'
    return proc.returncode, proc.stdout.decode(errors='replace')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--builddir', default='build/lwp')
    ap.add_argument('--qemu-system', default='build/qemu/qemu-system-x86_64')
    ap.add_argument('--qemu-x86_64', default='build/qemu/qemu-x86_64')
    ap.add_argument('--qemu-i386', default='build/qemu/qemu-i386')
    ap.add_argument('--cpu', default='max')
    ap.add_argument('--total', type=int, default=20000, help='cases per configuration')
    ap.add_argument('--cases', type=int, default=500, help='cases per QEMU run')
    ap.add_argument('--first-seed', type=int, default=1000)
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--chunk-timeout', type=int, default=1800)
    ap.add_argument('--configs', default='plain,icount,1insn,user',
                    help='any of plain, icount, 1insn (system mode, 32- and 64-bit '
                         'guests) and user (qemu-x86_64 and qemu-i386)')
    args = ap.parse_args()

    jobs = []
    chunks = (args.total + args.cases - 1) // args.cases
    for config in args.configs.split(','):
        # Half of each configuration's cases in each guest width or architecture.
        kinds = ['x86_64', 'i386'] if config == 'user' else ['64', '32']
        for i in range(chunks):
            kind = kinds[i % 2]
            seed = args.first_seed + i
            run = run_user if config == 'user' else run_system
            jobs.append((config, kind, seed, run))

    results = collections.defaultdict(lambda: {'cases': 0, 'failed': [], 'deaths': collections.Counter()})
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run, args, config, kind, seed): (config, kind, seed)
                   for config, kind, seed, run in jobs}
        for fut in concurrent.futures.as_completed(futures):
            config, kind, seed = futures[fut]
            rc, out = fut.result()
            r = results[config]
            r['cases'] += args.cases
            bad = rc != 0 if config == 'user' else (rc != 0 or 'FAIL' in out)
            for msg in FATAL.findall(out):
                r['deaths'][msg.strip()] += 1
            if bad:
                r['failed'].append('%s/seed=%d' % (kind, seed))
                tail = '\n'.join(out.splitlines()[-6:])
                print('# %s %s seed %d failed (rc %d):\n%s' % (config, kind, seed, rc, tail),
                      flush=True)
    total_failed = 0
    for config in args.configs.split(','):
        r = results[config]
        deaths = ', '.join('%d x %s' % (n, m) for m, n in r['deaths'].items()) or 'none'
        print('%-7s %6d cases, %d failed chunks %s, QEMU deaths: %s' %
              (config, r['cases'], len(r['failed']), ' '.join(r['failed']), deaths))
        total_failed += len(r['failed'])
    return 1 if total_failed else 0


if __name__ == '__main__':
    sys.exit(main())
