#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Latitude mode's late threshold interrupt (docs/lwp-latitude.rst), from
inside guests: lwp-latitude.c in exact mode and with lwp-irq-delay, on -cpu
max and on Opteron_G5-v2, 64- and 32-bit, under -icount shift=0.

The seed changes from run to run and is printed; LWP_LATITUDE_SEED=N
replays one.  Under -icount a seed gives the same run every time: the
same seed twice must print the same lateness of every trial, and the next
seed another.  linux-user, which has no threshold interrupt, refuses the
property by name.

  test_latitude.py QEMU_SYSTEM QEMU_X86_64 RUN_GUEST IMAGE64 IMAGE32
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from latitude import run_seed  # noqa: E402

DELAY = 5000
failures = 0


def report(ok, what):
    global failures
    print('%s: %s' % ('PASS' if ok else 'FAIL', what), flush=True)
    failures += not ok


def run_guest(run_guest_py, qemu, image, cpu, delay):
    cmd = [sys.executable, run_guest_py, '--qemu', qemu, '--kernel', image, '--cpu', cpu,
           '-icount', 'shift=0', '-append', 'delay=%d' % delay]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    lateness = [l for l in p.stdout.splitlines() if l.startswith('LATENESS')]
    bad = [l for l in p.stdout.splitlines() if l.startswith('FAIL')]
    return p.returncode == 0, lateness, bad


def main():
    qemu, qemu_user, run_guest_py, image64, image32 = sys.argv[1:6]
    seed = run_seed()

    for bits, image in (('64', image64), ('32', image32)):
        ok, _, bad = run_guest(run_guest_py, qemu, image, 'max', 0)
        report(ok, '%s-bit, exact mode: every interrupt right after its record %s'
               % (bits, ' '.join(bad)))
        runs = []
        for s in (seed, seed, seed + 1):
            cpu = 'max,lwp-irq-delay=%d,lwp-seed=%d' % (DELAY, s)
            ok, lateness, bad = run_guest(run_guest_py, qemu, image, cpu, DELAY)
            report(ok, '%s-bit, -cpu %s: every interrupt once, late within %d instructions %s'
                   % (bits, cpu, DELAY, ' '.join(bad)))
            runs.append(lateness)
        report(runs[0] == runs[1] and len(runs[0]) > 0,
               '%s-bit: seed %d twice, the same lateness in all %d trials'
               % (bits, seed, len(runs[0])))
        report(runs[0] != runs[2],
               '%s-bit: seed %d and seed %d, other lateness' % (bits, seed, seed + 1))

    cpu = 'Opteron_G5-v2,lwp-irq-delay=%d,lwp-seed=%d' % (DELAY, seed)
    ok, _, bad = run_guest(run_guest_py, qemu, image64, cpu, DELAY)
    report(ok, '64-bit, -cpu %s: late within %d instructions %s' % (cpu, DELAY, ' '.join(bad)))

    p = subprocess.run([qemu_user, '-cpu', 'max,lwp-irq-delay=10', '/bin/true'],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    report(p.returncode != 0 and 'lwp-irq-delay: linux-user has no LWP threshold interrupt'
           in p.stdout, 'linux-user refuses lwp-irq-delay by name (%s)' % p.stdout.strip())
    print('SUMMARY: %d failed' % failures)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
