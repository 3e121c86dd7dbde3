#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The LWP CPU options as a user meets them: -cpu help, QMP's
query-cpu-model-expansion, CPU model versions, start-up refusals that name
the property, 'info registers' and trace events.
Usage: test_cpu_options.py QEMU_SYSTEM DEMO_GUEST_IMAGE PROFILING_GUEST_IMAGE"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import report, summary_exit  # noqa: E402
import qemu_python  # noqa: E402,F401  (QEMU's python/ on sys.path)
from qemu.machine import QEMUMachine  # noqa: E402

qemu, demo, profiling_guest = sys.argv[1], sys.argv[2], sys.argv[3]



def run(*args, timeout=60):
    return subprocess.run([qemu, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, timeout=timeout, text=True)


def qmp(commands, *args, machine='none'):
    """Run QMP commands against a fresh QEMU (qemu.machine); return their
    replies in order."""
    vm = QEMUMachine(qemu, args=['-machine', machine, '-accel', 'tcg', '-nodefaults', '-S',
                                 *args])
    vm.launch()
    try:
        return [vm.qmp(c['execute'], args_dict=c.get('arguments', {})) for c in commands]
    finally:
        vm.shutdown()


def expand(model):
    r = qmp([{'execute': 'query-cpu-model-expansion',
              'arguments': {'type': 'full', 'model': {'name': model}}}])[0]
    return r.get('return', {}).get('model', {}).get('props', {})


out = run('-cpu', 'help').stdout
flags = out[out.find('Recognized CPUID flags'):].split()
for f in ('lwp', 'lwpval', 'lwpire', 'lwpbre', 'lwpint', 'lwpipf'):
    report(f in flags, '-cpu help lists the flag %s' % f)
report('Opteron_G4-v2' in out and 'Opteron_G5-v2' in out,
       '-cpu help lists Opteron_G4-v2 and Opteron_G5-v2')

props = expand('max')
report(props.get('lwp') is True and props.get('lwpval') is True and props.get('lwpint') is True,
       'max expands with lwp, lwpval, lwpint')
report(props.get('lwp-cb-size') == 19 and props.get('lwp-max-events') == 3 and
       props.get('lwp-event-offset') == 128 and props.get('lwp-min-buffer-size') == 1,
       'max expands with the family-15h numeric properties')
report(expand('Opteron_G4-v2').get('lwp') is True, 'Opteron_G4-v2 has lwp')
report(expand('Opteron_G5-v2').get('lwpval') is True, 'Opteron_G5-v2 has lwpval')
report(expand('Opteron_G4-v1').get('lwp') is False, 'Opteron_G4-v1 keeps its ABI: no lwp')
report(expand('Opteron_G4').get('lwp') is False, 'Opteron_G4 (default version) has no lwp')
report(expand('qemu64').get('lwp') is False, 'qemu64 has no lwp')

refusals = [
    ('qemu64,+lwp', "'lwp' requires 'xsave'"),
    ('max,lwp-max-events=6', "'lwp-cb-size'"),
    ('max,lwp-event-size=16', "'lwp-event-size'"),
    ('max,lwp-version=0', "'lwp-version'"),
    ('max,lwp-event-offset=84', "'lwp-event-offset'"),
    ('max,lwp-event-offset=80', "'lwp-event-offset'"),
    # Latitude mode (docs/lwp-latitude.rst): a window beyond its bound, a
    # delay with no LWP to delay, a seed that is not a number.
    ('max,lwp-irq-delay=1000000001', "lwp-irq-delay=1000000001 is out of range"),
    ('max,-lwp,lwp-irq-delay=10', "lwp-irq-delay needs the CPU feature 'lwp'"),
    ('max,lwp-store-delay=512', "lwp-store-delay=512 is out of range"),
    ('max,-lwp,lwp-store-delay=8', "lwp-store-delay needs the CPU feature 'lwp'"),
    ('max,lwp-seed=banana', "lwp-seed"),
    # The freedoms of 8.3: a cadence beyond "some small value of n", no
    # LWP to relax, values that are not a number or a switch.
    ('max,lwp-tail-reread=17', "lwp-tail-reread=17 is out of range"),
    ('max,lwp-tail-reread=two', "lwp-tail-reread"),
    ('max,-lwp,lwp-tail-reread=2', "lwp-tail-reread needs the CPU feature 'lwp'"),
    ('max,lwp-interval-reread=maybe', "lwp-interval-reread"),
    ('max,-lwp,lwp-interval-reread=on', "lwp-interval-reread needs the CPU feature 'lwp'"),
    # Records stored when their instruction retires: not a switch, no LWP,
    # or against the late store's draw.
    ('max,lwp-sync-store=maybe', "lwp-sync-store"),
    ('max,-lwp,lwp-sync-store=on', "lwp-sync-store needs the CPU feature 'lwp'"),
    ('max,lwp-sync-store=on,lwp-store-delay=8', "lwp-store-delay=8 some after it: choose one"),
]
for cpu, msg in refusals:
    p = run('-M', 'pc', '-accel', 'tcg', '-cpu', cpu, '-nodefaults', '-display', 'none', '-S',
            '-monitor', 'none', timeout=20)
    report(p.returncode != 0 and msg in p.stdout, '-cpu %s refused naming %s' % (cpu, msg))
p = run('-M', 'pc', '-accel', 'tcg', '-cpu', 'max,lwp-max-events=6,lwp-cb-size=22',
        '-nodefaults', '-display', 'none', '-monitor', 'none', '-kernel', demo,
        '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04', timeout=60)
report(p.returncode == 1, 'a consistent non-default combination starts (max-events 6, cb-size 22)')

regs = qmp([{'execute': 'human-monitor-command',
             'arguments': {'command-line': 'info registers'}}], '-cpu', 'max', machine='pc')
text = regs[0].get('return', '') if regs else '?'
report('EAX=' in text and 'LWP' not in text,
       "'info registers' at reset (LWP state all zero) shows no LWP line")
regs = qmp([{'execute': 'human-monitor-command',
             'arguments': {'command-line': 'info registers'}}], '-cpu', 'max,-lwp',
           machine='pc')
text = regs[0].get('return', '') if regs else '?'
report('EAX=' in text and 'LWP_CFG' not in text, "'info registers' shows no LWP without LWP")

# A guest that enables LWP (spec 8.7.1) and profiles until a key is pressed
# (iterations=4000000000: its default 200000 can end before the first
# query on a loaded machine): once it has, 'info registers' shows the LWP
# registers and the session.
vm = QEMUMachine(qemu, args=['-machine', 'pc', '-accel', 'tcg', '-cpu', 'max', '-nodefaults',
                             '-display', 'none', '-kernel', profiling_guest,
                             '-append', 'iterations=4000000000'])
vm.launch()
text = ''
try:
    deadline = time.monotonic() + 60          # an upper bound only
    while 'LWP flags=' not in text and time.monotonic() < deadline:
        time.sleep(0.1)
        text = vm.qmp('human-monitor-command', command_line='info registers').get('return', '')
finally:
    vm.shutdown()
cbaddr = [w for w in text.split() if w.startswith('LWP_CBADDR=')]
report(bool(cbaddr) and int(cbaddr[0].split('=')[1], 16) != 0 and 'LWP flags=' in text,
       "'info registers' of a profiling guest shows LWP_CFG, LWP_CBADDR and the session: %s"
       % ' '.join(w for w in text.split() if w.startswith(('LWP_', 'XCR0.LWP'))))

p = run('-M', 'pc', '-accel', 'tcg', '-cpu', 'max', '-nodefaults', '-display', 'none',
        '-monitor', 'none', '-kernel', demo, '-trace', 'lwp_*',
        '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04', timeout=60)
report('lwp_llwpcb' in p.stdout and 'lwp_store' in p.stdout and
       'lwp_threshold_interrupt' in p.stdout and 'lwp_wrmsr' in p.stdout,
       "-trace 'lwp_*' reports the demo's LLWPCB, stores, MSR write and interrupts")

summary_exit()
