#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Every CPU property an LWP error message names exists on the CPU object,
so that a user can act on the message.

Two ways, both against the CPU object's real property list (QMP
device-list-properties of max-x86_64-cpu):
 - statically: every lwp* name and every 'quoted' name inside a string
   literal of the LWP model and glue (target-i386-lwp/), which is where the
   messages, and the field names they are built from, are written;
 - dynamically: QEMU started with each configuration that the CPU object
   refuses under TCG; every name its message quotes, and every lwp* name
   in it, must exist, and the quoted ones must include the one the test
   set.

Usage: test_error_properties.py QEMU_SYSTEM SOURCE_ROOT"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import report, summary_exit  # noqa: E402
import qemu_python  # noqa: E402,F401  (QEMU's python/ on sys.path)
from qemu.machine import QEMUMachine  # noqa: E402

qemu, root = sys.argv[1], sys.argv[2]

vm = QEMUMachine(qemu, args=['-machine', 'none', '-accel', 'tcg', '-nodefaults', '-S'])
vm.launch()
try:
    reply = vm.qmp('device-list-properties', typename='max-x86_64-cpu')
finally:
    vm.shutdown()
props = {p['name'] for p in reply.get('return', [])}
report('lwp' in props and 'lwp-cb-size' in props and 'xsave' in props,
       'the CPU object lists its properties (%d)' % len(props))

LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
LWP_NAME = re.compile(r'(?<![\w./-])lwp[a-z0-9-]*(?![\w.])')
QUOTED = re.compile(r"'([a-z][a-z0-9-]*)'")

sources = sorted(glob.glob(os.path.join(root, 'target-i386-lwp', 'core', '*.cc')) +
                 glob.glob(os.path.join(root, 'target-i386-lwp', 'glue', '*.c')) +
                 glob.glob(os.path.join(root, 'target-i386-lwp', 'glue', '*.inc')))
report(len(sources) > 5, 'found the LWP sources (%d files)' % len(sources))
named = {}
for path in sources:
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.lstrip().startswith('#'):
                continue                  # includes, not messages
            for lit in LITERAL.findall(line):
                for name in LWP_NAME.findall(lit) + QUOTED.findall(lit):
                    named.setdefault(name, set()).add(os.path.basename(path))
report({'lwpdme', 'lwp-cb-size', 'lwpcachelvl'} <= set(named),
       'the scan sees the names the messages use (%d)' % len(named))
for name in sorted(named):
    report(name in props, "'%s' (named in %s) is a property of the CPU object"
           % (name, ', '.join(sorted(named[name]))))

# Negative control: the names the review found are not properties.
for wrong in ('lwp-features', 'lwp-dme', 'lwp-cache-levels', 'lwp-cache-latency',
              'lwp-branch-prediction'):
    report(wrong not in props and wrong not in named,
           "'%s' is no property and no message names it" % wrong)

# Configurations the CPU object refuses under TCG; the message must name
# the property set here, and only real properties.
refused = [
    ('max,lwp-version=0', 'lwp-version'),
    ('max,lwp-event-size=16', 'lwp-event-size'),
    ('max,lwp-event-offset=0x84', 'lwp-event-offset'),
    ('max,lwp-max-events=7', 'lwp-max-events'),
    ('max,lwp-cb-size=1', 'lwp-cb-size'),
    ('max,lwp-latency-max=12', 'lwpdme'),
    ('max,lwp-latency-rnd=2', 'lwpdme'),
    ('max,-xsave', 'xsave'),
]
for cpu, want in refused:
    # -S: a configuration accepted by mistake waits, up to the timeout.
    try:
        r = subprocess.run([qemu, '-machine', 'pc', '-accel', 'tcg', '-nodefaults',
                            '-display', 'none', '-monitor', 'none', '-cpu', cpu, '-S'],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=30, text=True)
        out, rc = r.stdout.strip(), r.returncode
    except subprocess.TimeoutExpired:
        out, rc = '(accepted: still running after 30 s)', 0
    quoted = QUOTED.findall(out)
    names = set(quoted) | set(LWP_NAME.findall(out))
    report(rc != 0 and want in quoted and all(q in props for q in names),
           "-cpu %s is refused naming '%s', and every name in it is a property: %s"
           % (cpu, want, out.splitlines()[-1] if out else '(no output)'))
summary_exit()
