#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A late threshold interrupt, then a record stored late, pending across a
save and restore (docs/lwp-latitude.rst).

The interrupt: lwp-latitude.c with migrate=1 meets a threshold
and calls latitude_armed() with the interrupt still pending.  A gdbstub
breakpoint holds the guest there, the harness sets the guest's 'restored'
flag, and QEMU saves the stopped guest to a file (QMP migrate).  A new QEMU
restores it and continues: the interrupt must come, exactly once.  The
stop is a breakpoint, not a moment in time, so the test does not depend on
the machine's speed.  The seed is new each run and printed
(LWP_LATITUDE_SEED replays it).  The CPU takes the freedoms of section 8.3
too (lwp-tail-reread, lwp-interval-reread), whose state travels in the
subsection cpu/lwp/latitude/ring: it must be in the saved stream.

The store: with migrate=2 the guest runs NOPs at CPL 3 with a record
every 256 instructions and lwp-store-delay; a breakpoint stops it at the
start of the block after the one whose record is stored there.  The
harness checks that 'info registers' shows the record pending, saves the
guest and restores it; the guest then checks that the record reached its
ring once.  Again a place in the program, not a moment in time.

  test_latitude_migrate.py QEMU_SYSTEM IMAGE ELF
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
import qemu_python  # noqa: E402,F401  (QEMU's python/ on sys.path)
from checks import report, summary_exit  # noqa: E402
from gdb_rsp import Rsp, symbol_address  # noqa: E402
from latitude import run_seed  # noqa: E402
from qemu.machine import QEMUMachine  # noqa: E402

DELAY = 1000000
TIMEOUT = 120


def machine(qemu, image, cpu, out, extra, append='delay=%d migrate=1' % DELAY,
            icount=True):
    args = ['-M', 'pc', '-accel', 'tcg', '-cpu', cpu, '-m', '256',
            '-nodefaults', '-display', 'none', '-no-reboot', '-serial', 'none',
            '-chardev', 'file,id=dbg,path=%s' % out, '-device', 'isa-debugcon,chardev=dbg',
            '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04', '-kernel', image,
            '-append', append] + (['-icount', 'shift=0'] if icount else []) + extra
    return QEMUMachine(qemu, args=args)


def held_source(qemu, image, cpu, out, sock, **kw):
    """A QEMU held at its start by a gdbstub, to be saved while stopped."""
    return machine(qemu, image, cpu, out,
                   ['-chardev', 'socket,id=gdb,path=%s,server=on,wait=off' % sock,
                    '-gdb', 'chardev:gdb', '-S',
                    # The guest is saved stopped at a breakpoint: runstate
                    # 'debug', which QEMU 10.0 cannot enter from
                    # 'inmigrate' (it aborts).  Without the run state in
                    # the stream, the destination starts paused (-S).
                    '-global', 'migration.store-global-state=off'], **kw)


def restore_and_finish(qemu, image, cpu, state, out, **kw):
    """Restore the saved guest in a new QEMU and run it to its end."""
    dst = machine(qemu, image, cpu, out, ['-incoming', 'defer', '-S'], **kw)
    dst.launch()
    try:
        dst.cmd('migrate-incoming', uri='file:' + state)
        deadline = time.monotonic() + TIMEOUT
        while dst.cmd('query-status')['status'] == 'inmigrate' and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        dst.cmd('cont')
        dst.wait(timeout=TIMEOUT)
    finally:
        dst.shutdown()
    text = open(out).read()
    sys.stdout.write(text)
    report(dst.exitcode() == 1, 'the restored guest ran to its end (exit status %s)'
           % dst.exitcode())
    return text


def save_stopped(vm, state):
    vm.cmd('migrate', uri='file:' + state)
    status = wait_migration(vm)
    report(status == 'completed', 'the stopped guest saved to a file (%s)' % status)


def wait_migration(vm):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        status = vm.cmd('query-migrate').get('status')
        if status in ('completed', 'failed', 'cancelled'):
            return status
        time.sleep(0.1)
    return 'timed out'


def hold_and_save(qemu, image, elf, cpu, tmp, tag, symbol, check, **kw):
    """Run the guest to a breakpoint at @symbol, let @check(vm, stop reply)
    look at it, set its 'restored' flag and save it to a file: the file."""
    state, sock = os.path.join(tmp, 'state-' + tag), os.path.join(tmp, tag + '.sock')
    src = held_source(qemu, image, cpu, os.path.join(tmp, 'src-%s.out' % tag), sock, **kw)
    src.launch()
    try:
        gdb = Rsp(sock, TIMEOUT)
        gdb.command('?')
        at = symbol_address(elf, symbol)
        report(gdb.command('Z0,%x,1' % at) == 'OK', 'breakpoint at ' + symbol)
        stop = gdb.command('c')
        gdb.command('z0,%x,1' % at)
        check(src, stop)
        report(gdb.command('M%x,4:01000000' % symbol_address(elf, 'restored')) == 'OK',
               'restored flag set')
        save_stopped(src, state)
    finally:
        src.shutdown()
    return state


def pending_interrupt(qemu, image, elf, tmp, seed):
    cpu = 'max,lwp-irq-delay=%d,lwp-seed=%d,lwp-tail-reread=%d,lwp-interval-reread=on' % (
        DELAY, seed, 2 + seed % 15)

    def check(vm, stop):
        report(stop.startswith('T05') or stop.startswith('S05'),
               'the guest stopped with its threshold interrupt pending (%s)' % stop)

    state = hold_and_save(qemu, image, elf, cpu, tmp, 'irq', 'latitude_armed', check)
    with open(state, 'rb') as f:
        stream = f.read()
    report(b'cpu/lwp/latitude/ring' in stream,
           'the stream carries the subsection cpu/lwp/latitude/ring')
    out = restore_and_finish(qemu, image, cpu, state, os.path.join(tmp, 'dst-irq.out'))
    report('FAIL' not in out and 'after the restore: the pending interrupt, once' in out,
           'the restored guest took the pending interrupt once')


def pending_store(qemu, image, elf, tmp, seed):
    cpu = 'max,lwp-store-delay=511,lwp-seed=%d' % seed
    kw = {'append': 'migrate=2', 'icount': False}

    def check(vm, stop):
        regs = vm.cmd('human-monitor-command', command_line='info registers')
        m = re.search(r'pending=(\d+)', regs)
        report(stop[:3] in ('T05', 'S05') and m is not None and m.group(1) == '2',
               'the guest stopped with a record pending (%s; info registers: pending=%s, '
               'EventId 2 is instructions retired)' % (stop, m and m.group(1)))

    state = hold_and_save(qemu, image, elf, cpu, tmp, 'store', 'pending_store_stop', check,
                          **kw)
    out = restore_and_finish(qemu, image, cpu, state, os.path.join(tmp, 'dst-store.out'), **kw)
    report('FAIL' not in out and 'after the restore: the pending record stored once' in out,
           'the restored guest stored the pending record once')


def main():
    qemu, image, elf = sys.argv[1:4]
    seed = run_seed()
    with tempfile.TemporaryDirectory() as tmp:
        pending_interrupt(qemu, image, elf, tmp, seed)
        pending_store(qemu, image, elf, tmp, seed)
    summary_exit()


if __name__ == '__main__':
    main()
