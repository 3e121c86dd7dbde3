#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A gdbstub read watchpoint on the LWPCB while LWP stores records.

Every record store reads the LWPCB's tail field (spec 8.3) from inside QEMU's
LWP model; a watchpoint there makes QEMU leave its CPU loop in the middle of
that read.  The demo guest's own code never reads the tail, so every hit
comes from LWP.  Checked: the debugger sees the hits, QEMU lives on, and the
guest's records, read back after the watchpoint is removed, are exactly the
ones of a run without a debugger (the demo's expected output).
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from gdb_rsp import Rsp, symbol_address  # noqa: E402

TAIL_OFFSET = 64           # LWPCB tail (table 6-1)
HITS = 5                   # stops to take before removing the watchpoint


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--qemu', required=True)
    ap.add_argument('--kernel', required=True, help='the demo guest image')
    ap.add_argument('--elf', required=True, help='the same guest with symbols')
    ap.add_argument('--expect', required=True)
    ap.add_argument('--cpu', default='max')
    ap.add_argument('--timeout', type=int, default=120)
    args, extra = ap.parse_known_args()

    tail = symbol_address(args.elf, 'cb') + TAIL_OFFSET
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, 'gdb.sock')
        cmd = [args.qemu, '-M', 'pc', '-accel', 'tcg', '-cpu', args.cpu, '-m', '256',
               '-nodefaults', '-display', 'none', '-no-reboot', '-serial', 'none',
               '-chardev', 'stdio,id=dbg,signal=off', '-device', 'isa-debugcon,chardev=dbg',
               '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04',
               '-chardev', 'socket,id=gdb,path=%s,server=on,wait=off' % sock,
               '-gdb', 'chardev:gdb', '-S', '-kernel', args.kernel] + extra
        print('# ' + ' '.join(cmd), flush=True)
        qemu = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        failed = 0
        try:
            gdb = Rsp(sock, args.timeout)
            gdb.command('?')
            ok = gdb.command('Z3,%x,4' % tail)
            print('%s: read watchpoint on the LWPCB tail at %#x accepted (%s)' %
                  ('PASS' if ok == 'OK' else 'FAIL', tail, ok))
            failed += ok != 'OK'
            hits = 0
            for _ in range(HITS):
                stop = gdb.command('c')
                if 'rwatch:' not in stop and 'watch:' not in stop:
                    print('# stop without a watchpoint: %s' % stop)
                    break
                hits += 1
            print('%s: the debugger saw %d of %d watchpoint hits on the tail' %
                  ('PASS' if hits == HITS else 'FAIL', hits, HITS))
            failed += hits != HITS
            gdb.command('z3,%x,4' % tail)
            gdb.send('c')
            out, _ = qemu.communicate(timeout=args.timeout)
        except (subprocess.TimeoutExpired, socket.timeout):
            qemu.kill()
            out, _ = qemu.communicate()
            print('FAIL: timed out after %d s' % args.timeout)
            failed += 1
        finally:
            if qemu.poll() is None:
                qemu.kill()
                qemu.wait()
    out = out.decode(errors='replace')
    sys.stdout.write(out)
    lines = out.splitlines()
    want = open(args.expect).read().splitlines()
    found = any(lines[i:i + len(want)] == want for i in range(len(lines)))
    print('%s: the records after the watchpoint are the expected ones' %
          ('PASS' if found else 'FAIL'))
    print('%s: QEMU exit status %d (guest exit code %d)' %
          ('PASS' if qemu.returncode == 1 else 'FAIL', qemu.returncode, qemu.returncode >> 1))
    failed += (not found) + (qemu.returncode != 1)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
