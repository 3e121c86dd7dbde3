# SPDX-License-Identifier: GPL-2.0-or-later
"""Makes QEMU's own Python packages (qemu.qmp, qemu.machine) importable from
the QEMU source tree the build unpacked (build/src/qemu-10.0.2/python), the
way QEMU's functional tests use them.  Import this module first, then
'from qemu.machine import QEMUMachine'.

QEMU_LWP_BUILD overrides the build directory, as in scripts/lib.sh."""
import os
import sys

QEMU_VERSION = '10.0.2'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get('QEMU_LWP_BUILD', os.path.join(ROOT, 'build'))
QEMU_PYTHON = os.path.join(BUILD, 'src', 'qemu-' + QEMU_VERSION, 'python')

if not os.path.isdir(os.path.join(QEMU_PYTHON, 'qemu', 'machine')):
    raise ImportError('QEMU python packages not found in %s (run scripts/run.sh build)' %
                      QEMU_PYTHON)
if QEMU_PYTHON not in sys.path:
    sys.path.insert(0, QEMU_PYTHON)


def cpu_expansion(binary, model='max', args=()):
    """The 'props' of query-cpu-model-expansion (type full) of @model, as
    QEMU @binary started with @args reports them."""
    from qemu.machine import QEMUMachine
    vm = QEMUMachine(binary, args=['-machine', 'none', '-accel', 'tcg', '-nodefaults'] +
                     list(args))
    vm.launch()
    try:
        reply = vm.cmd('query-cpu-model-expansion', type='full', model={'name': model})
    finally:
        vm.shutdown()
    return reply['model']['props']
