# SPDX-License-Identifier: GPL-2.0-or-later
"""What the two parts of bench/run-bench.sh share."""
import resource


def children_cpu():
    """User + system CPU seconds of the children that have been waited for."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def judge_ratio(rmed, rmin, target):
    """'OK', 'MISS' or 'noisy' for a ratio of medians and of minima.

    Targets are judged on the median.  On a loaded machine one slow run
    moves a median of a few runs, not both it and the minimum: a median
    over the target is a miss only when the ratio of the minima, the runs
    least disturbed, is over it too.  Otherwise it is reported as noisy.
    """
    if target is None:
        return ''
    if rmed <= target:
        return 'OK'
    return 'MISS' if rmin > target else 'noisy'
