#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Migration of a guest in the middle of profiling (spec 8.2.3), with real
QEMU processes driven over QMP unix sockets and migrating over unix sockets
or files:

  ping-pong    >= 10 live migrations while tests/guest/lwp-migrate.c records
               and drains; the guest then proves the stream is continuous
  in-handler   10 migrations taken while the guest is inside its threshold
               interrupt handler
  snapshot     save to a file, restore in a new process
  savevm       HMP savevm/loadvm with a qcow2 image
  stock        to and from Debian's stock QEMU 10.0.2
  cancel       a cancelled migration leaves the source profiling
  mismatch     a destination without 'lwpint' is refused by name; the
               source goes on
  hostile      edited LWP state in a saved stream is refused cleanly

Usage: test_migration.py QEMU_SYSTEM GUEST_IMAGE [case...]
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import report, summary_exit  # noqa: E402
from latitude import resolve_cpu  # noqa: E402
import qemu_python  # noqa: E402,F401  (QEMU's python/ on sys.path)
from qemu.machine import QEMUMachine  # noqa: E402
from qemu.machine.machine import AbnormalShutdown, VMLaunchFailure  # noqa: E402

QEMU, IMAGE = sys.argv[1], sys.argv[2]
STOCK_QEMU = '/usr/bin/qemu-system-x86_64'      # Debian's 10.0.2, without LWP
# The guest profiles until the harness presses a key (see finish()), so no
# case depends on how fast this machine runs it.
RUN_UNTIL_KEY = 4000000000
CASES = sys.argv[3:] or ['ping-pong', 'events', 'in-handler', 'snapshot', 'savevm', 'cancel',
                         'mismatch', 'hostile', 'stock']
# Latitude mode (docs/lwp-latitude.rst) for every QEMU of ours with -cpu max:
# LWP_MIGRATION_LATITUDE holds its properties, lwp-seed=random a new seed,
# printed, the same for every QEMU of the run.
LATITUDE = resolve_cpu(os.environ.get('LWP_MIGRATION_LATITUDE', ''))
TMP = tempfile.mkdtemp(prefix='lwp-mig-')
MACHINES = []


def cleanup(*_):
    """Kill every QEMU this test started and remove its files."""
    for q in MACHINES:
        q.kill()
    shutil.rmtree(TMP, ignore_errors=True)


atexit.register(cleanup)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))   # atexit runs on exit


class Qemu:
    """One QEMU process (qemu.machine.QEMUMachine, QMP over qemu.qmp) running
    the guest, its debug console in a file."""
    count = 0

    def __init__(self, cpu='max', incoming=None, iterations=RUN_UNTIL_KEY, return_path=True,
                 append='', binary=None, extra=()):
        Qemu.count += 1
        self.name = 'q%d' % Qemu.count
        self.dbg_path = os.path.join(TMP, self.name + '.dbg')
        if LATITUDE and binary is None and cpu.startswith('max'):
            cpu += ',' + LATITUDE
        args = ['-M', 'pc', '-accel', 'tcg', '-cpu', cpu, '-m', '128',
                '-nodefaults', '-no-reboot', '-serial', 'none',
                '-chardev', 'file,id=dbg,path=' + self.dbg_path,
                '-device', 'isa-debugcon,chardev=dbg',
                '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04',
                '-kernel', IMAGE, '-append', ('iterations=%d ' % iterations) + append]
        args += list(extra)
        if incoming:
            args += ['-incoming', incoming]
        self.vm = QEMUMachine(binary or QEMU, args=args, name=self.name, base_temp_dir=TMP)
        self.launch_failure = None
        MACHINES.append(self)
        try:
            self.vm.launch()
            # A return path lets a refusing destination fail the migration
            # on the source, which then keeps running (not for file: URIs).
            if return_path:
                self.cmd('migrate-set-capabilities',
                         capabilities=[{'capability': 'return-path', 'state': True}])
        except VMLaunchFailure as e:                  # exited at start-up: see output()
            self.launch_failure = e
        except Exception:                             # exited right after start-up
            self.wait_exit(20)

    @classmethod
    def destination(cls, uri, **kw):
        q = cls(incoming='defer', **kw)
        q.cmd('migrate-incoming', uri=uri)
        return q

    def cmd(self, name, **args):
        return self.vm.cmd(name, **args)

    def migration_status(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            st = self.cmd('query-migrate').get('status')
            if st in ('completed', 'failed', 'cancelled'):
                return st
            time.sleep(0.02)
        return 'timeout'

    def alive(self):
        return self.vm.is_running()

    def wait_output(self, text, timeout=60):
        """Wait until the guest has printed @text on its debug console."""
        deadline = time.time() + timeout
        while text not in self.debug_output():
            if time.time() > deadline or not self.alive():
                raise RuntimeError('%s: the guest never printed %r' % (self.name, text))
            time.sleep(0.05)

    def wait_running(self, timeout=120):
        deadline = time.time() + timeout
        while self.cmd('query-status')['status'] != 'running':
            if time.time() > deadline or not self.alive():
                raise RuntimeError('%s did not run' % self.name)
            time.sleep(0.02)

    def running(self):
        return self.cmd('query-status')['status'] == 'running'

    def debug_output(self):
        try:
            with open(self.dbg_path, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def output(self):
        """What QEMU printed, once it has exited."""
        if self.launch_failure is not None:
            return self.launch_failure.output or ''
        return '' if self.alive() else (self.vm.get_log() or '')

    def wait_exit(self, timeout):
        """QEMU's exit status, or None if it had to be killed."""
        if self.launch_failure is not None:
            return self.launch_failure.exitcode
        try:
            self.vm.wait(timeout)
        except AbnormalShutdown:
            return None
        return self.vm.exitcode()

    def kill(self):
        if self.alive():
            self.vm.kill()
        else:
            self.wait_exit(1)                   # an exited QEMU: collect its output


def progress(q):
    return q.debug_output().count('progress ')


def guest_word(q, symbol):
    """A 32-bit word of guest memory at @symbol of the guest image (HMP xp)."""
    out = q.cmd('human-monitor-command',
                **{'command-line': 'xp /1wx %#x' % guest_symbol(symbol)})
    return int(out.strip().split()[-1], 16)


def wait_profiles(q, timeout=120):
    """Until the guest on @q takes another threshold interrupt (its counter
    'interrupts' grows): it profiles there.  Bounded by @timeout only."""
    start = guest_word(q, 'interrupts')
    deadline = time.time() + timeout
    while time.time() < deadline and q.alive():
        now = guest_word(q, 'interrupts')
        if now != start:
            return True
        time.sleep(0.02)
    return False


def hand_over(src, name, outputs, **kw):
    """Live-migrate @src to a new QEMU over a unix socket.  On success the
    source's console output joins @outputs, the source is killed and the
    destination returned; on failure the destination is killed, None."""
    uri = 'unix:' + os.path.join(TMP, name + '.sock')
    dst = Qemu.destination(uri, **kw)
    src.cmd('migrate', uri=uri)
    if src.migration_status() != 'completed':
        dst.kill()
        return None
    outputs.append(src.debug_output())
    src.kill()
    return dst


def guest_verdict(outputs):
    text = ''.join(outputs)
    lines = text.splitlines()
    ok = ('SUMMARY: 5 tests, 0 failures' in text and
          not any(l.startswith('FAIL') for l in lines))
    return ok, [l for l in lines if l.startswith(('PASS', 'FAIL', 'SUMMARY'))]


def press_key(q):
    """Press a key for the guest on @q.  QEMU drops input events while the
    VM is not running (ui/input.c), e.g. while an incoming migration is
    still loading, and the guest would never see the key: so first wait
    until @q runs, however long the load takes."""
    q.wait_running()
    q.cmd('send-key', keys=[{'type': 'qcode', 'data': 'a'}])


def finish(q, outputs, what):
    """Tell the guest to stop profiling, then judge what it reports."""
    press_key(q)
    rc = q.wait_exit(120)
    outputs.append(q.debug_output())
    ok, lines = guest_verdict(outputs)
    for l in lines:
        print('  guest: ' + l)
    report(ok and rc == 1, what)


def ping_pong():
    src = Qemu()
    outputs, migrations = [], 0
    try:
        src.wait_output('profiling')
        for i in range(10):
            if not src.alive():
                break
            dst = hand_over(src, 'mig%d' % i, outputs)
            if dst is None:
                report(False, 'migration %d: %s' % (i + 1, src.cmd('query-migrate')['status']))
                break
            migrations += 1
            src = dst
            src.wait_running()
            if not wait_profiles(src):
                report(False, 'after migration %d the guest profiles on %s' % (i + 1, src.name))
                break
        report(migrations == 10, '%d live migrations, the guest profiling on each new host'
               % migrations)
        report(not any('SUMMARY' in o for o in outputs),
               'the guest was still profiling at every migration')
        finish(src, outputs, 'after the migrations the record stream is continuous')
    finally:
        src.kill()


# A digest every 64 * 4096 iterations: at every multiple, before the check
# for the key, so a run stopped by the key and one that ends there agree.
DIGEST_EVERY = 64 * 4096
EVENTS = 'events=1 digestevery=%d' % DIGEST_EVERY
DIGEST_RE = re.compile(r'events digest ([0-9a-f]+) after (\d+) records at iteration (\d+)')


def digests(text):
    """{iteration: {digest}} of the digest lines in @text."""
    got = {}
    for d, _, it in DIGEST_RE.findall(text):
        got.setdefault(int(it), set()).add(d)
    return got


def events():
    """Instructions and branches retired are counted exactly across live
    migrations and savevm/loadvm: the guest profiles until the key, printing
    a digest of every record and of the counters at every DIGEST_EVERY
    iterations; every digest of the migrated run, the last one taken after
    every migration and the loadvm, equals that of a run never migrated that
    ends at the same iteration."""
    disk = os.path.join(TMP, 'events.qcow2')
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', disk, '16M'], check=True)
    drive = ['-drive', 'if=none,id=d0,format=qcow2,file=' + disk]
    src = Qemu(append=EVENTS, extra=drive)
    outputs, migrations = [], 0
    try:
        src.wait_output('profiling')
        for i in range(5):
            dst = hand_over(src, 'ev%d' % i, outputs, append=EVENTS, extra=drive)
            if dst is None:
                break
            migrations += 1
            src = dst
            src.wait_running()
        hmp = lambda c: src.cmd('human-monitor-command', **{'command-line': c})
        hmp('savevm ev')
        ran = wait_profiles(src)              # so that loadvm goes back over something
        # Stopped across loadvm, so that the console splits exactly there:
        # what the guest printed after the snapshot is printed again.
        src.cmd('stop')
        after = len(src.debug_output())
        hmp('loadvm ev')
        src.cmd('cont')
        # A digest taken after every migration and the loadvm.
        deadline = time.time() + 120
        while not digests(src.debug_output()[after:]) and time.time() < deadline:
            time.sleep(0.05)
        last = max(digests(src.debug_output()[after:]) or [0])
        finish(src, outputs, 'and the LWPINS/LWPVAL stream is continuous')
    finally:
        src.kill()
    # The hops' consoles continue each other; the loadvm starts a new line.
    final = outputs.pop()
    got = digests(''.join(outputs) + final[:after] + '\n' + final[after:])
    report(migrations == 5 and ran and last > 0,
           '%d live migrations and a savevm/loadvm, all before the digest at iteration %d'
           % (migrations, last))
    if not last:
        return
    ref = Qemu(iterations=last, append=EVENTS)
    try:
        ref.wait_exit(600)
        want = digests(ref.debug_output())
    finally:
        ref.kill()
    records = [int(r) for _, r, it in DIGEST_RE.findall(ref.debug_output()) if int(it) == last]
    report(last in want and records and records[0] > 1000,
           'reference run to iteration %d: %d digests, %s records at the last'
           % (last, len(want), records[0] if records else None))
    compared = sorted(it for it in got if it <= last)
    bad = [it for it in compared if got[it] != want.get(it)]
    report(last in got and not bad,
           'the same records and counters as without migration at %d digests up to '
           'iteration %d (%s)' % (len(compared), last, 'differ at %s' % bad[:5] if bad else
                                  next(iter(got.get(last, {'none'})))))


def guest_symbol(name):
    out = subprocess.run(['nm', IMAGE], stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise RuntimeError('no symbol %s in %s' % (name, IMAGE))


def in_handler():
    """Migrate 10 times with the guest stopped inside its threshold
    interrupt handler (checked in guest memory before each migration)."""
    flag = guest_symbol('lwp_in_handler')
    args = dict(append='irqspin=5000')
    src = Qemu(**args)
    outputs, inside = [], 0
    try:
        for i in range(10):
            # Until a stop lands inside the handler; only a time limit bounds it.
            deadline = time.time() + 120
            while True:
                src.cmd('stop')
                word = src.cmd('human-monitor-command', **{'command-line': 'xp /1wx %#x' % flag})
                if word.strip().endswith('0x00000001') or time.time() > deadline:
                    break
                src.cmd('cont')
                time.sleep(0.01)
            if not word.strip().endswith('0x00000001'):
                src.cmd('cont')
                break
            dst = hand_over(src, 'irq%d' % i, outputs, **args)
            if dst is None:
                break
            inside += 1
            src = dst
            # The source was stopped, so the destination arrives paused.
            deadline = time.time() + 30
            while src.cmd('query-status')['status'] == 'inmigrate' and time.time() < deadline:
                time.sleep(0.02)
            src.cmd('cont')
        report(inside == 10, '%d migrations taken inside the threshold interrupt handler' % inside)
        finish(src, outputs, 'after them the record stream is continuous')
    finally:
        src.kill()


def stock():
    """Interoperability with Debian's stock QEMU 10.0.2 (no LWP): a guest
    that never made LWP available migrates both ways; one that did cannot
    land there silently."""
    if not os.path.exists(STOCK_QEMU):
        report(False, 'stock QEMU missing: ' + STOCK_QEMU)
        return
    plain = dict(cpu='qemu64', append='nolwp=1')
    src = Qemu(**plain)
    outputs = []
    try:
        src.wait_output('running without LWP')
        for i, binary in enumerate((STOCK_QEMU, QEMU)):
            uri = 'unix:' + os.path.join(TMP, 'stock%d.sock' % i)
            dst = Qemu.destination(uri, binary=binary, **plain)
            src.cmd('migrate', uri=uri)
            st = src.migration_status()
            report(st == 'completed', 'a guest without LWP migrates %s stock QEMU (%s)' %
                   ('to' if binary == STOCK_QEMU else 'back from', st))
            outputs.append(src.debug_output())
            src.kill()
            src = dst
        press_key(src)
        rc = src.wait_exit(120)
        outputs.append(src.debug_output())
        text = ''.join(outputs)
        report(rc == 1 and 'SUMMARY: 2 tests, 0 failures' in text,
               'the guest finishes correctly after the round trip')
    finally:
        src.kill()

    src = Qemu()
    try:
        src.wait_output('profiling')
        uri = 'unix:' + os.path.join(TMP, 'stock-lwp.sock')
        dst = Qemu.destination(uri, binary=STOCK_QEMU)
        src.cmd('migrate', uri=uri)
        st = src.migration_status()
        rc = dst.wait_exit(30)
        err = dst.output()
        # Stock QEMU does not know the cpu/lwp subsection and fails the CPU.
        report(st == 'failed' and rc not in (None, 0) and "device 'cpu'" in err,
               'a guest using LWP is refused by stock QEMU: %s' %
               next((l for l in err.splitlines() if "device 'cpu'" in l), '?'))
        report(src.running(), 'the source goes on profiling')
        finish(src, [], 'and completes with a continuous stream')
    finally:
        src.kill()


def savevm():
    """HMP savevm/loadvm with a qcow2 image: the guest continues from the
    snapshot (memory and LWP state) and its stream is still continuous."""
    disk = os.path.join(TMP, 'snap.qcow2')
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', disk, '16M'], check=True)
    src = Qemu(return_path=False,
               extra=['-drive', 'if=none,id=d0,format=qcow2,file=' + disk])
    try:
        src.wait_output('profiling')
        hmp = lambda c: src.cmd('human-monitor-command', **{'command-line': c})
        out = hmp('savevm lwp1')
        report(out.strip() == '' and 'lwp1' in hmp('info snapshots'),
               'savevm while profiling: %s' % (out.strip() or 'ok'))
        report(wait_profiles(src), 'the guest profiles on after savevm')
        out = hmp('loadvm lwp1')
        report(out.strip() == '', 'loadvm back to the snapshot: %s' % (out.strip() or 'ok'))
        report(src.running(), 'running again after loadvm')
        finish(src, [], 'the stream is continuous after the snapshot round trip')
    finally:
        src.kill()


def save_running_guest(path, what):
    """Save a profiling guest's state to @path; return its output so far."""
    src = Qemu(return_path=False)
    try:
        src.wait_output('profiling')
        src.cmd('migrate', uri='file:' + path)
        report(src.migration_status() == 'completed', what)
        return src.debug_output()
    finally:
        src.kill()


def snapshot():
    path = os.path.join(TMP, 'snapshot.bin')
    out = [save_running_guest(path, 'state saved to a file mid-profiling')]
    dst = Qemu(incoming='file:' + path)
    try:
        # Once the load is over (the VM runs), the restored guest must go on
        # profiling: its threshold interrupt counter grows on the new host.
        dst.wait_running()
        report(wait_profiles(dst), 'the restored guest profiles on')
        finish(dst, out, 'restored from the file, the stream is continuous')
    finally:
        dst.kill()


def cancel():
    # No return path: the destination's error must not race the cancel.
    src = Qemu(return_path=False)
    try:
        src.wait_output('profiling')
        src.cmd('migrate-set-parameters', **{'max-bandwidth': 1024})
        dst = Qemu.destination('unix:' + os.path.join(TMP, 'cancel.sock'))
        src.cmd('migrate', uri='unix:' + os.path.join(TMP, 'cancel.sock'))
        # Cancelled once it is under way (1 KiB/s: it cannot complete).
        deadline = time.time() + 60
        while src.cmd('query-migrate').get('status') != 'active' and time.time() < deadline:
            time.sleep(0.02)
        active = src.cmd('query-migrate').get('status')
        src.cmd('migrate_cancel')
        st = src.migration_status()
        info = src.cmd('query-migrate')
        report(active == 'active' and st == 'cancelled', 'migration cancelled while %s (%s %s)'
               % (active, st, info.get('error-desc', '')))
        report(src.running(), 'the source keeps running after the cancel')
        dst.kill()
        finish(src, [], 'the source completes with a continuous stream')
    finally:
        src.kill()


def mismatch():
    src = Qemu()
    try:
        src.wait_output('profiling')
        uri = 'unix:' + os.path.join(TMP, 'mismatch.sock')
        dst = Qemu.destination(uri, cpu='max,-lwpint')
        src.cmd('migrate', uri=uri)
        st = src.migration_status()
        rc = dst.wait_exit(30)
        err = dst.output()
        report(st == 'failed', 'migration to a destination without lwpint fails (%s)' % st)
        report(rc not in (None, 0) and rc > 0 and "lacks LWP capability 'lwpint'" in err,
               'the destination names the missing capability: %s' %
               (err.strip().splitlines() or ['?'])[0])
        report(src.running(), 'the source goes on running')
        finish(src, [], 'the source completes with a continuous stream')
    finally:
        src.kill()


def hostile():
    path = os.path.join(TMP, 'good.bin')
    save_running_guest(path, 'a stream saved mid-profiling')
    stream = open(path, 'rb').read()
    at = stream.find(b'\x07cpu/lwp')
    report(at > 0, 'the saved stream carries the cpu/lwp subsection')
    base = at + 8 + 4                           # name, version_id
    # Offsets of the big-endian fields after the version, in the order of
    # vmstate_x86_lwp: caps ebx/ecx/edx 0/4/8, LWP_CFG 12, cbaddr 20,
    # buffer_base 28, size 36, head 40, flags 44, filters 48, counters 52,
    # pending record 80.
    edits = [
        ('source capabilities claim lwpdme', base + 8, (0x80000013).to_bytes(4, 'big'),
         "lacks LWP capability 'lwpdme'"),
        ('BufferSize below the minimum', base + 36, (64).to_bytes(4, 'big'), 'BufferSize'),
        ('BufferHeadOffset beyond BufferSize', base + 40, (0x10000).to_bytes(4, 'big'),
         'BufferHeadOffset'),
        ('non-canonical ring buffer', base + 28, (0x0000800000000000).to_bytes(8, 'big'),
         'ring buffer address range'),
        ('LWP_CFG with reserved bits', base + 12, (1 << 63 | 0x8000000B).to_bytes(8, 'big'),
         'LWP_CFG reserved bits'),
        ('an LWPCB wrapping past 2^64', base + 20, (0xFFFFFFFFFFFFFFF8).to_bytes(8, 'big'),
         'LWPCB address range'),
        ('Flags with event 6, not supported', base + 44, (0x80000042).to_bytes(4, 'big'),
         'Flags'),
        ('Filters reserved bit 13', base + 48, (0x2000).to_bytes(4, 'big'), 'Filters'),
        ('a pending record of a disabled event', base + 80, bytes([4]), 'SavedEventRecord'),
    ]
    for what, off, data, expect in edits:
        bad = stream[:off] + data + stream[off + len(data):]
        bad_path = os.path.join(TMP, 'bad.bin')
        open(bad_path, 'wb').write(bad)
        q = Qemu(incoming='file:' + bad_path)
        rc = q.wait_exit(30)
        err = q.output()
        report(rc is not None and rc > 0 and expect in err,
               'hostile stream (%s) refused: %s' % (what, next(
                   (l for l in err.splitlines() if 'cpu/lwp' in l), '?')))
    truncated = os.path.join(TMP, 'truncated.bin')
    open(truncated, 'wb').write(stream[:base + 20])
    q = Qemu(incoming='file:' + truncated)
    rc = q.wait_exit(30)
    report(rc is not None and rc > 0, 'a truncated stream is refused without a crash (exit %s)' % rc)


for case in CASES:
    print('# ' + case, flush=True)
    try:
        {'ping-pong': ping_pong, 'events': events, 'in-handler': in_handler, 'snapshot': snapshot,
         'savevm': savevm, 'stock': stock, 'cancel': cancel,
         'mismatch': mismatch, 'hostile': hostile}[case]()
    except Exception as e:                      # a harness error is a failure
        report(False, '%s: %s' % (case, e))

summary_exit()
