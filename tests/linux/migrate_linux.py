#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Live-migrate the Linux guest of the `linux` suite several times while its
threads profile themselves (docs/lwp-linux.rst, spec 8.2.3).

QEMU 0 boots the LWP kernel with lwptests=threads:...; once the guest has
started the program, the harness migrates it live to QEMU 1, then 2, ...
(unix sockets, QMP), each hop while the threads run.  The console is the
concatenation of each process's serial file.  The guest program then judges
its own record streams: every record of every thread is the exact
instruction the architecture implies and MissedEvents is 0, so the LWP state
of each thread (in the kernel's xstate, in the vCPUs' registers, or in the
middle of a store) survived every hop; run_linux.judge() checks the rest.

Usage: migrate_linux.py --qemu Q --kernel K --initrd I [--hops N] ...
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
import checks  # noqa: E402
import run_linux  # noqa: E402


class Qemu:
    def __init__(self, args, tmp, index, incoming=None):
        self.name = 'q%d' % index
        self.serial = os.path.join(tmp, self.name + '.serial')
        qmp = os.path.join(tmp, self.name + '.qmp')
        cmd = [args.qemu, '-accel', 'tcg', '-cpu', args.cpu, '-smp', str(args.smp),
               '-m', '256', '-nodefaults', '-display', 'none', '-no-reboot',
               '-serial', 'file:' + self.serial,
               '-kernel', args.kernel, '-initrd', args.initrd,
               '-append', run_linux.kernel_cmdline(args.tests),
               '-qmp', 'unix:%s,server=on,wait=off' % qmp]
        if incoming:
            cmd += ['-incoming', incoming]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(qmp)
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError('%s did not start: %s' % (self.name, self.output()))
                time.sleep(0.05)
        self.sock.settimeout(60)
        self.buf = b''
        self._read()
        self.cmd('qmp_capabilities')

    def _read(self):
        while True:
            while b'\n' not in self.buf:
                data = self.sock.recv(65536)
                if not data:
                    raise RuntimeError('%s closed QMP' % self.name)
                self.buf += data
            line, self.buf = self.buf.split(b'\n', 1)
            msg = json.loads(line)
            if 'event' not in msg:
                return msg

    def cmd(self, name, **arguments):
        self.sock.sendall(json.dumps({'execute': name, 'arguments': arguments}).encode() + b'\n')
        reply = self._read()
        if 'error' in reply:
            raise RuntimeError('%s: %s: %s' % (self.name, name, reply['error']))
        return reply.get('return')

    def console(self):
        try:
            with open(self.serial, 'rb') as f:
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''

    def output(self):
        if self.proc.poll() is None:
            return ''
        return self.proc.stdout.read().decode('utf-8', 'replace')

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def migrate(src, dst_uri):
    try:
        src.cmd('migrate', uri=dst_uri)
        deadline = time.time() + 120
        while time.time() < deadline:
            st = src.cmd('query-migrate').get('status')
            if st == 'completed':
                return True
            if st in ('failed', 'cancelled'):
                return False
            time.sleep(0.1)
    except (OSError, RuntimeError) as e:
        print('note: %s: %s (exit status %s)' % (src.name, e, src.proc.poll()))
    return False


def main():
    ap = run_linux.guest_argument_parser(__doc__, smp=2)
    ap.add_argument('--hops', type=int, default=3)
    ap.add_argument('--interval', type=float, default=1.0,
                    help='seconds of profiling between hops')
    ap.add_argument('--tests', default='threads:4:400000')
    ap.add_argument('--timeout', type=float, default=600)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix='lwp-linux-mig-')
    procs = []
    try:
        procs.append(Qemu(args, tmp, 0))
        deadline = time.time() + args.timeout
        while '@@RUN ' not in procs[0].console():
            if procs[0].proc.poll() is not None or time.time() > deadline:
                break
            time.sleep(0.2)
        started = '@@RUN ' in procs[0].console()
        checks.report(started, 'the guest booted and started its program on QEMU 0')
        hops = 0
        for i in range(1, args.hops + 1):
            if not started:
                break
            time.sleep(args.interval)
            uri = 'unix:' + os.path.join(tmp, 'mig%d.sock' % i)
            dst = Qemu(args, tmp, i, incoming='defer')
            dst.cmd('migrate-incoming', uri=uri)
            procs.append(dst)
            ok = migrate(procs[i - 1], uri)
            if ok:
                try:
                    procs[i - 1].cmd('quit')
                except (OSError, RuntimeError):
                    pass
                hops += 1
            checks.report(ok, 'live migration %d (QEMU %d -> %d) while the threads profile'
                          % (i, i - 1, i))
            if not ok:
                dst.kill()          # never got the guest
                procs.pop()
                break
        last = procs[-1]
        while last.proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        finished = last.proc.poll() is not None
        console = ''.join(p.console() for p in procs)
        lines = console.splitlines()
        # The program must have been running across every hop.
        mid = [p.console() for p in procs[:-1]]
        checks.report(hops == args.hops and '@@RUN ' in procs[0].console() and
                      all('@@END ' not in c for c in mid),
                      'every hop happened while the program ran (%d hops)' % hops)
        run_linux.judge(lines, args.tests, None, False,
                        'the migrated guest powered off within %.0f s' % args.timeout,
                        finished)
        if checks.failed:
            print('---- console ----')
            print(console)
            for p in procs:
                out = p.output()
                if out:
                    print('---- %s ----\n%s' % (p.name, out))
    finally:
        for p in procs:
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    checks.summary_exit()


if __name__ == '__main__':
    main()
