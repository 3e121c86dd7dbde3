#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Summarise a meson testlog.json: per-suite counts and one closing line
'N passed, N failed' (exit 1 when anything failed or nothing ran)."""
import collections
import json
import sys

results = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
per_suite = collections.defaultdict(lambda: [0, 0])
passed = failed = 0
for r in results:
    ok = r['result'] in ('OK', 'EXPECTEDFAIL', 'SKIP')
    suite = (r.get('suite') or ['?'])[0].split(':')[-1]
    per_suite[suite][0 if ok else 1] += 1
    if ok:
        passed += 1
    else:
        failed += 1
        print('failed: %s (%s)' % (r['name'], r['result']))
for suite, (p, f) in sorted(per_suite.items()):
    print('suite %-10s %3d passed, %d failed' % (suite, p, f))
print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed or not passed else 0)
