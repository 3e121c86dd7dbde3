#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Latitude mode (docs/lwp-latitude.rst), from inside guests: lwp-latitude.c
in exact mode and with lwp-irq-delay, lwp-tail-reread and
lwp-interval-reread, on -cpu max and on Opteron_G5-v2, 64- and 32-bit,
under -icount shift=0.  Besides the late interrupt's bounds, the guest
checks what the spec still guarantees under every freedom: each record
read once, in order, exact, or counted in MissedEvents; no LWP write
outside the ring and the LWPCB fields LWP owns; a rewritten EventInterval
used from the next overflow or never.

The seed changes from run to run and is printed; LWP_LATITUDE_SEED=N
replays one.  Under -icount a seed gives the same run every time: the
same seed twice must print the same lateness of every trial (and the same
ring and interval outcome), and the next seed another.  The n of
lwp-tail-reread comes from the seed too.  linux-user, which has no
threshold interrupt, refuses lwp-irq-delay and lwp-tail-reread by name and
takes lwp-interval-reread (system mode's refusals of bad values are the
cli suite's).

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


def tail_n(seed):
    """lwp-tail-reread's n for @seed: 2..16, the relaxed cadences."""
    return 2 + seed % 15


def latitude_cpu(model, seed, delay):
    """-cpu and -append of a run with every freedom taken."""
    n = tail_n(seed)
    cpu = '%s,lwp-irq-delay=%d,lwp-seed=%d,lwp-tail-reread=%d,lwp-interval-reread=on' % (
        model, delay, seed, n)
    return cpu, 'tailn=%d intervals=1' % n


def run_guest(run_guest_py, qemu, image, cpu, delay, extra=''):
    cmd = [sys.executable, run_guest_py, '--qemu', qemu, '--kernel', image, '--cpu', cpu,
           '-icount', 'shift=0', '-append', ('delay=%d %s' % (delay, extra)).strip()]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    lines = p.stdout.splitlines()
    lateness = [l for l in lines if l.startswith(('LATENESS', 'RING', 'INTERVALS'))]
    for l in lines:
        if l.startswith(('RING', 'INTERVALS')):
            print('  %s' % l)
    bad = [l for l in lines if l.startswith('FAIL')]
    return p.returncode == 0, lateness, bad


def refused(cmd, words):
    """Run @cmd, which must fail printing @words."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    return p.returncode != 0 and words in p.stdout, p.stdout.strip()


def main():
    qemu, qemu_user, run_guest_py, image64, image32 = sys.argv[1:6]
    seed = run_seed()

    for bits, image in (('64', image64), ('32', image32)):
        ok, _, bad = run_guest(run_guest_py, qemu, image, 'max', 0)
        report(ok, '%s-bit, exact mode: every interrupt right after its record %s'
               % (bits, ' '.join(bad)))
        runs = []
        for s in (seed, seed, seed + 1):
            cpu, extra = latitude_cpu('max', s, DELAY)
            ok, lateness, bad = run_guest(run_guest_py, qemu, image, cpu, DELAY, extra)
            report(ok, '%s-bit, -cpu %s: every interrupt once, late within %d instructions; '
                   'every record once or counted, nothing written outside, intervals '
                   'cached or live %s' % (bits, cpu, DELAY, ' '.join(bad)))
            runs.append(lateness)
        report(runs[0] == runs[1] and len(runs[0]) > 0,
               '%s-bit: seed %d twice, the same lateness in all %d trials'
               % (bits, seed, len(runs[0])))
        report(runs[0] != runs[2],
               '%s-bit: seed %d and seed %d, other lateness' % (bits, seed, seed + 1))

    cpu, extra = latitude_cpu('Opteron_G5-v2', seed, DELAY)
    ok, _, bad = run_guest(run_guest_py, qemu, image64, cpu, DELAY, extra)
    report(ok, '64-bit, -cpu %s: late within %d instructions, ring and intervals %s'
           % (cpu, DELAY, ' '.join(bad)))
    # The freedoms of 8.3 without the late interrupt.
    n = tail_n(seed)
    cpu = 'max,lwp-seed=%d,lwp-tail-reread=%d,lwp-interval-reread=on' % (seed, n)
    ok, _, bad = run_guest(run_guest_py, qemu, image32, cpu, 0, 'tailn=%d intervals=1' % n)
    report(ok, '32-bit, -cpu %s: interrupts on time, ring and intervals %s'
           % (cpu, ' '.join(bad)))

    ok, out = refused([qemu_user, '-cpu', 'max,lwp-irq-delay=10', '/bin/true'],
                      'lwp-irq-delay: linux-user has no LWP threshold interrupt')
    report(ok, 'linux-user refuses lwp-irq-delay by name (%s)' % out)
    ok, out = refused([qemu_user, '-cpu', 'max,lwp-tail-reread=4', '/bin/true'],
                      'lwp-tail-reread: linux-user has no LWP threshold interrupt')
    report(ok, 'linux-user refuses lwp-tail-reread by name (%s)' % out)
    p = subprocess.run([qemu_user, '-cpu', 'max,lwp-interval-reread=on,lwp-seed=%d' % seed,
                        '/bin/true'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60)
    report(p.returncode == 0, 'linux-user takes lwp-interval-reread (%s)' % p.stdout.strip())
    print('SUMMARY: %d failed' % failures)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
