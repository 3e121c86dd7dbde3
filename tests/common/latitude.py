# SPDX-License-Identifier: GPL-2.0-or-later
"""Seeds of latitude mode (docs/lwp-latitude.rst) for the test harnesses: a
new one each run, printed so that a failure can be replayed with
LWP_LATITUDE_SEED=S."""
import os
import random


def run_seed():
    """This run's seed: LWP_LATITUDE_SEED, else a new random one; printed."""
    seed = int(os.environ.get('LWP_LATITUDE_SEED', random.randrange(1 << 63)))
    print('# latitude seed %d (replay: LWP_LATITUDE_SEED=%d)' % (seed, seed), flush=True)
    return seed


def resolve_cpu(cpu):
    """@cpu with 'lwp-seed=random' replaced by this run's seed."""
    if 'lwp-seed=random' not in cpu:
        return cpu
    return cpu.replace('lwp-seed=random', 'lwp-seed=%d' % run_seed())
