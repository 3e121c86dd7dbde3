#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Live-migrate the Linux guest of the `linux` suite several times while its
threads profile themselves (docs/lwp-linux.rst, spec 8.2.3).

QEMU 0 boots the LWP kernel with lwptests=threads:4:0: the program's threads
profile themselves until the harness sends a BREAK on the serial line (QMP
chardev-send-break; tests/linux/lwp-linux-threads.c, rounds 0), so the run lasts as long as the
migrations take, however fast or loaded the machine is.  Once the program
has drained its first records, the harness migrates the guest live to
QEMU 1, then 2, ... (unix sockets, QMP); after each hop it waits until the
program's progress line shows more records drained on the new QEMU.  After
the last hop it sends the BREAK through the last QEMU.  The console is the concatenation of each process's serial log.  The checks: the
number of migrations that fell inside the program's run ('@@RUN' before the
first, the stop after the last, no '@@END' before the stop) is the number
asked for; the program then judges its own record streams for the rounds
each thread ran: every record of every thread is the exact instruction the
architecture implies and MissedEvents is 0, so the LWP state of each thread
(in the kernel's xstate, in the vCPUs' registers, or in the middle of a
store) survived every hop; run_linux.judge() checks the rest.  Only
timeouts bound the run, from above.

Usage: migrate_linux.py --qemu Q --kernel K --initrd I [--hops N] [--tests threads:4:0]
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
import checks  # noqa: E402
import latitude  # noqa: E402
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


PROGRESS = re.compile(r'^progress: (\d+) records', re.M)


def progress(text):
    """The records the program says it has drained so far, or -1."""
    got = [int(n) for n in PROGRESS.findall(text)]
    return max(got) if got else -1


def wait_progress(q, above, deadline):
    """Until q's console shows more than @above records drained (or q
    exits, or the deadline passes); returns the count seen."""
    while True:
        n = progress(q.console())
        if n > above or q.proc.poll() is not None or time.time() > deadline:
            return n
        time.sleep(0.2)


def send_stop(q):
    """A BREAK on q's serial line (the chardev of -serial, 'serial0'): the
    program reads it as a NUL byte on its standard input and stops."""
    try:
        q.cmd('chardev-send-break', id='serial0')
        return True
    except (OSError, RuntimeError) as e:
        print('note: %s: chardev-send-break: %s' % (q.name, e))
        return False


def main():
    ap = run_linux.guest_argument_parser(__doc__, smp=2)
    ap.add_argument('--hops', type=int, default=3)
    ap.add_argument('--tests', default='threads:4:0',
                    help="lwptests=: one program, run until the BREAK (threads:N:0)")
    ap.add_argument('--timeout', type=float, default=600)
    args = ap.parse_args()
    # Every hop the same CPU, latitude mode's seed included (printed).
    args.cpu = latitude.resolve_cpu(args.cpu)
    name = args.tests.split(':')[0]

    tmp = tempfile.mkdtemp(prefix='lwp-linux-mig-')
    procs = []
    try:
        t0 = time.time()
        procs.append(Qemu(args, tmp, 0))
        deadline = t0 + args.timeout
        # Running: it printed '@@RUN' and drained its first records.
        seen = wait_progress(procs[0], 0, deadline)
        started = '@@RUN %s' % name in procs[0].console() and seen > 0
        t_run = time.time()
        checks.report(started, 'the guest booted and its program profiles on QEMU 0 '
                      '(%d records drained, %.1f s after start)' % (seen, t_run - t0))
        hops = 0
        inside = []             # the hops that fell inside the program's run
        for i in range(1, args.hops + 1):
            if not started:
                break
            uri = 'unix:' + os.path.join(tmp, 'mig%d.sock' % i)
            dst = Qemu(args, tmp, i, incoming='defer')
            dst.cmd('migrate-incoming', uri=uri)
            procs.append(dst)
            before = progress(procs[i - 1].console())
            t = time.time()
            ok = migrate(procs[i - 1], uri)
            took = time.time() - t
            if ok:
                try:
                    procs[i - 1].cmd('quit')
                except (OSError, RuntimeError):
                    pass
                hops += 1
                if '@@END ' not in procs[i - 1].console():
                    inside.append(i)
            checks.report(ok, 'live migration %d (QEMU %d -> %d) while the threads profile '
                          '(%.1f s, %d records drained before it)' % (i, i - 1, i, took, before))
            if not ok:
                dst.kill()          # never got the guest
                procs.pop()
                break
            after = wait_progress(dst, before, deadline)
            checks.report(after > before, 'the threads profile on QEMU %d after the hop '
                          '(%d -> %d records drained)' % (i, before, after))
            if after <= before:
                break
        last = procs[-1]
        # Nothing ends the program but the BREAK: it must still run.
        running = '@@END ' not in ''.join(p.console() for p in procs)
        t_stop = time.time()
        stopped = started and send_stop(last)
        while last.proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        finished = last.proc.poll() is not None
        console = ''.join(p.console() for p in procs)
        lines = console.splitlines()
        stop_note = [ln for ln in last.console().splitlines() if ln.startswith('note: stop: ')]
        checks.report(stopped and running and hops == args.hops and inside == list(
            range(1, args.hops + 1)) and stop_note and 'BREAK' in stop_note[0],
            '%d of %d live migrations fell inside the program\'s run, which ended at the '
            'BREAK sent after the last (%s)' % (len(inside), args.hops,
                                                    stop_note[0][6:] if stop_note else
                                                    'no stop note'))
        iso = [ln for ln in lines if ln.startswith('THREAD-ISOLATION:')]
        print('note: the program ran %.1f s (from its first records to the BREAK), '
              '%d hops; %s' % (t_stop - t_run, hops, iso[0] if iso else 'no THREAD-ISOLATION line'))
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
