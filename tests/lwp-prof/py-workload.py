#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A small CPU-bound Python program for lwp-prof's process-tree test: its
output depends on its argument only."""
import sys


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    best = max(range(1, limit), key=collatz_steps)
    print('longest Collatz chain below %d starts at %d (%d steps)' %
          (limit, best, collatz_steps(best)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
