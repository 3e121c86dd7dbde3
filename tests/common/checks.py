# SPDX-License-Identifier: GPL-2.0-or-later
"""One PASS:/FAIL: line per check and the closing 'N passed, N failed' line,
for the Python test programs (imported by path, see sys.path below)."""
import sys

passed = failed = 0


def report(ok, what):
    global passed, failed
    print('%s: %s' % ('PASS' if ok else 'FAIL', what), flush=True)
    passed += bool(ok)
    failed += not ok


def summary_exit():
    print('%d passed, %d failed' % (passed, failed))
    sys.exit(1 if failed or not passed else 0)
