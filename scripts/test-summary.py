#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Summarise a meson testlog.json: per suite, the tests and the individual
checks they reported (GoogleTest cases, PASS:/FAIL: lines of guest and user
programs, check-tcg TEST lines), then one closing line 'N passed, N failed'
counting tests.  Exit 1 when anything failed or nothing ran."""
import collections
import json
import re
import sys

OK = ('OK', 'EXPECTEDFAIL')


def checks(stdout):
    m = re.search(r'\[  PASSED  \] (\d+) test', stdout)
    if m:
        return int(m.group(1))
    n = len(re.findall(r'^PASS: ', stdout, re.M))
    return n or len(re.findall(r'^  TEST ', stdout, re.M))


def main():
    results = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    suites = collections.defaultdict(lambda: [0, 0, 0, 0])
    passed = failed = skipped = 0
    for r in results:
        suite = r['name'].split(' / ')[0].split(':')[-1]
        if r['result'] == 'SKIP':
            # A test that could not run here says why; it is not a pass.
            suites[suite][3] += 1
            skipped += 1
            reason = [l for l in (r.get('stdout') or '').splitlines() if l.startswith('SKIP')]
            print('skipped: %s (%s)' % (r['name'], reason[0] if reason else 'no reason given'))
            continue
        ok = r['result'] in OK
        suites[suite][0 if ok else 1] += 1
        suites[suite][2] += checks(r.get('stdout') or '')
        passed += ok
        failed += not ok
        if not ok:
            print('failed: %s (%s)' % (r['name'], r['result']))
    for suite, (p, f, c, k) in sorted(suites.items()):
        print('suite %-11s %3d passed, %d failed, %d skipped (%d checks passed)' % (suite, p, f, k, c))
    print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
    return 1 if failed or not passed else 0


if __name__ == '__main__':
    sys.exit(main())
