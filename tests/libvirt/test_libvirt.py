#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""libvirt (Debian's 11.3) moves a profiling LWP guest between hosts.

A pool of libvirt hosts on loopback (libvirt_hosts.py), each a libvirtd in a
mount namespace of its own:
  a, b  our QEMU, libvirt's cpu_map with tools/libvirt's LWP features
  c     an old host: Debian's stock QEMU 10.0.2 and libvirt's stock cpu_map
  d     our QEMU on a CPU without LWP's threshold interrupt (lwpint), i.e. a
        QEMU whose CPUs cannot enable lwpint
  e     a half-upgraded host: the LWP cpu_map, but Debian's stock QEMU

Checks: domcapabilities and the hypervisor's CPU models show LWP on our
QEMU; the pool's baseline (virsh hypervisor-cpu-baseline over the hosts'
CPU descriptions) agrees with lwp-baseline; a guest defined from it
(tests/guest/lwp-migrate.c, profiling all along) is live-migrated a <-> b
with 'virsh migrate --live', direct, --p2p and --p2p --tunnelled (with
'virsh event' watching one round trip), saved on one host and restored on
the other; migrating it to c, d or e, or restoring its save there, is
refused naming LWP while the guest runs on; at the end the guest proves its
record stream continuous (no record lost, MissedEvents 0).  Then the Linux
guest (docs/lwp-linux.rst, direct kernel boot, the same baseline <cpu>) is
live-migrated a <-> b in the three modes (each for a round trip) while
lwp-linux-threads profiles itself in four threads, which run until the
harness sends a BREAK on the guest's serial line after the last migration;
each migration must fall inside that run, and after each the program's
progress line must show records drained on the new host.  The program
judges its own record streams for the rounds it ran (every record exact,
MissedEvents 0) on the serial console, run_linux.judge() the rest.  Only
timeouts bound the waits, from above: nothing assumes the machine is fast
or slow.
Usage: test_libvirt.py QEMU_SYSTEM GUEST_IMAGE LWP_BASELINE LINUX_KERNEL LINUX_INITRD"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'common'))
sys.path.insert(0, os.path.join(HERE, '..', 'linux'))
sys.path.insert(0, HERE)
import checks  # noqa: E402
from checks import report, summary_exit  # noqa: E402
import libvirt_hosts  # noqa: E402
import qemu_python  # noqa: E402
from latitude import resolve_cpu  # noqa: E402
import run_linux  # noqa: E402

QEMU, IMAGE, BASELINE, LINUX_KERNEL, LINUX_INITRD = (os.path.abspath(a) for a in sys.argv[1:6])
STOCK_QEMU = '/usr/bin/qemu-system-x86_64'      # Debian's 10.0.2, without LWP
DOM = 'lwp-prof'
MIGRATIONS = 12                 # a->b->a...: direct, direct, p2p, p2p, tunnelled, ...
# The modes, each for a round trip a->b->a in turn.
MODES = ([], [], ['--p2p'], ['--p2p'], ['--p2p', '--tunnelled'], ['--p2p', '--tunnelled'])
LINUX_DOM = 'lwp-linux'
# lwp-linux-threads: 4 threads on 2 vCPUs, each through rounds of its loop
# (tests/linux/lwp-linux-threads.c) until the harness sends a BREAK on the
# guest's serial line (rounds 0), which it does after the last migration:
# however fast or loaded the machine, every migration falls inside the run,
# and the program checks its records against the rounds it actually ran.
# The guest goes a -> b -> a ..., each mode for a round trip in turn.
LINUX_TESTS = 'threads:4:0'
LINUX_MIGRATIONS = len(MODES)
LWP_FEATURES = ['lwp', 'lwpval', 'lwpire', 'lwpbre', 'lwpdme', 'lwpcnh', 'lwprnh', 'lwpint',
                'lwpdaddr', 'lwpbrpred', 'lwpipf', 'lwpcachelvl', 'lwpcachelat']

# Host d's QEMU: every CPU model without lwpint, whatever -cpu asks (as a
# KVM host filters what its CPU lacks).  -global reaches libvirt's probe of
# -cpu max (its host model); the rewrite reaches the guest's -cpu.
NO_LWPINT_WRAPPER = """#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
import os, sys
args = [a.replace('lwpint=on', 'lwpint=off') for a in sys.argv[1:]]
os.execv('@REAL@', ['@REAL@'] + args + ['-global', 'x86_64-cpu.lwpint=off'])
"""


# Latitude mode (docs/lwp-latitude.rst) on hosts a and b: LWP_LIBVIRT_LATITUDE
# holds its properties, lwp-seed=random a new seed, printed, the same on both.
# Every x86 CPU of their QEMU gets them as -global, as a host's QEMU
# configuration would give them.
LATITUDE = resolve_cpu(os.environ.get('LWP_LIBVIRT_LATITUDE', ''))
LATITUDE_WRAPPER = """#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
import os, sys
extra = []
for prop in '@PROPS@'.split(','):
    extra += ['-global', 'x86_64-cpu.' + prop]
os.execv('@REAL@', ['@REAL@'] + sys.argv[1:] + extra)
"""


def xml_features(xml, policy='require'):
    return sorted(set(re.findall(r"<feature policy='%s' name='([^']+)'/>" % policy, xml)))


def lwp_only(features):
    return [f for f in features if f.startswith('lwp')]


def host_model(host, emulator=QEMU):
    p = host.virsh('domcapabilities', '--virttype', 'qemu', '--emulatorbin', emulator,
                   '--arch', 'x86_64', '--machine', 'pc', check=True)
    m = re.search(r"<mode name='host-model' supported='yes'>(.*?)</mode>", p.stdout, re.S)
    return p.stdout, (m.group(1) if m else '')


def test_capabilities(a, c):
    """Our QEMU's host model lists every LWP feature QEMU's -cpu max has;
    Debian's stock QEMU's none.  Our QEMU reports the LWP CPU models."""
    props = qemu_python.cpu_expansion(QEMU)
    want = [f for f in LWP_FEATURES if props.get(f)]
    _, model = host_model(a)
    got = lwp_only(xml_features(model))
    report('lwp' in want and got == sorted(want),
           'virsh domcapabilities (our QEMU): the host model has %s, as -cpu max' %
           ','.join(got))
    _, model = host_model(c, STOCK_QEMU)
    report(model and not lwp_only(xml_features(model)),
           'virsh domcapabilities (stock QEMU): no LWP feature')
    models = a.virsh('cpu-models', 'x86_64').stdout.split()
    report('Opteron_G5' in models and 'EPYC' in models,
           'virsh cpu-models x86_64 with the LWP cpu_map: %d models' % len(models))


def lwp_baseline(descriptions):
    p = subprocess.run([BASELINE] + descriptions, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def test_pool_baseline(pool, hosts, tmp):
    """virsh hypervisor-cpu-baseline over the hosts' CPU descriptions (their
    domcapabilities) against lwp-baseline over the same hosts' QEMU
    (query-cpu-model-expansion); returns the pool {a, b}'s <cpu>."""
    a, b, c, d = hosts[:4]
    expansion = {}
    for h in (a, b, c, d):
        args = ['-global', 'x86_64-cpu.lwpint=off'] if h is d else []
        props = qemu_python.cpu_expansion(STOCK_QEMU if h is c else QEMU, args=args)
        path = os.path.join(tmp, h.name + '-max.json')
        with open(path, 'w') as f:
            json.dump({'return': {'model': {'name': 'max', 'props': props}}}, f)
        expansion[h.name] = path
    pool_cpu = None
    for members in ((a, b), (a, b, d), (a, b, c)):
        names = '+'.join(h.name for h in members)
        caps = os.path.join(tmp, 'pool-%s.xml' % names)
        with open(caps, 'w') as f:
            for h in members:
                f.write(host_model(h, STOCK_QEMU if h is c else QEMU)[0])
        p = a.virsh('hypervisor-cpu-baseline', '--virttype', 'qemu', '--emulator', QEMU,
                    '--arch', 'x86_64', '--machine', 'pc', caps)
        libvirt_lwp = lwp_only(xml_features(p.stdout))
        rc, out = lwp_baseline([expansion[h.name] for h in members])
        ours = lwp_only(xml_features(out)) if "name='lwp'/>" in out and 'lwp=on' in out else []
        report(p.returncode == 0 and rc == 0 and libvirt_lwp == ours,
               'pool %s: hypervisor-cpu-baseline LWP %s, lwp-baseline %s' %
               (names, ','.join(libvirt_lwp) or 'none', ','.join(ours) or 'none'))
        if members == (a, b):
            pool_cpu, pool_lwp = p.stdout.strip(), ours
    return pool_cpu, pool_lwp


def test_cpu_baseline(a, tmp):
    """libvirt's cpu-baseline over two LWP hosts' <cpu> elements and
    lwp-baseline over the same hosts as -cpu strings keep the same LWP
    features."""
    hosts = os.path.join(tmp, 'hosts.xml')
    with open(hosts, 'w') as f:
        f.write("""<cpu><arch>x86_64</arch><model>qemu64</model><vendor>AMD</vendor>
  <feature name='xsave'/><feature name='lwp'/><feature name='lwpval'/>
  <feature name='lwpire'/><feature name='lwpint'/>
</cpu>
<cpu><arch>x86_64</arch><model>qemu64</model><vendor>AMD</vendor>
  <feature name='xsave'/><feature name='lwp'/><feature name='lwpval'/>
  <feature name='lwpint'/><feature name='lwpipf'/>
</cpu>
""")
    p = a.virsh('cpu-baseline', hosts)
    libvirt_lwp = lwp_only(xml_features(p.stdout))
    rc, out = lwp_baseline(['--cpu', 'qemu64,+xsave,+lwp,+lwpval,+lwpire,+lwpint',
                            '--cpu', 'qemu64,+xsave,+lwp,+lwpval,+lwpint,+lwpipf'])
    ours = lwp_only(xml_features(out))
    report(p.returncode == 0 and libvirt_lwp == ['lwp', 'lwpint', 'lwpval'],
           "libvirt's cpu-baseline over our cpu_map: %s" % libvirt_lwp)
    report(rc == 0 and libvirt_lwp == ours, 'lwp-baseline agrees with libvirt: %s' % ours)


def test_compare(a, tmp):
    """libvirt's hypervisor-cpu-compare against our QEMU and lwp-baseline
    against the same QEMU's -cpu max expansion agree on which LWP
    configurations the hypervisor can run."""
    expansion = os.path.join(tmp, 'max.json')
    with open(expansion, 'w') as f:
        json.dump({'return': {'model': {'name': 'max', 'props':
                                        qemu_python.cpu_expansion(QEMU)}}}, f)
    for features in (['lwp', 'lwpval', 'lwpint'], ['lwp', 'lwpval'],
                     ['lwp', 'lwpval', 'lwpint', 'lwpire'], ['lwp', 'lwpipf']):
        xml = os.path.join(tmp, 'cmp.xml')
        with open(xml, 'w') as f:
            f.write("<cpu mode='custom' match='exact'><model>qemu64</model>"
                    "<feature policy='require' name='xsave'/>" +
                    ''.join("<feature policy='require' name='%s'/>" % f for f in features) +
                    '</cpu>')
        p = a.virsh('hypervisor-cpu-compare', '--virttype', 'qemu', '--emulator', QEMU,
                    '--arch', 'x86_64', '--machine', 'pc', xml)
        libvirt_ok = 'superset' in p.stdout or 'identical' in p.stdout
        rc, out = lwp_baseline([expansion, '--cpu',
                                'qemu64,+xsave,' + ','.join('+' + f for f in features)])
        ours_ok = rc == 0 and set(features) <= set(xml_features(out))
        report(p.returncode in (0, 1) and libvirt_ok == ours_ok,
               'compare %s: libvirt %s, lwp-baseline %s' %
               ('+'.join(features), 'runs it' if libvirt_ok else 'refuses',
                'covered' if ours_ok else 'not covered'))


def guest_cpu(cpu, check='partial'):
    """The pool's baseline <cpu> for a domain.  check='partial': each host's
    libvirt compares the guest's CPU with what its QEMU can offer before
    starting it (also on an incoming migration or a restore)."""
    head = "<cpu mode='custom' match='exact'>"
    if not cpu.startswith(head):
        raise RuntimeError("unexpected baseline <cpu>: %s" % cpu[:80])
    return cpu.replace(head, "<cpu mode='custom' match='exact' check='%s'>" % check, 1)


def domain_xml(cpu, kernel, debug, name=DOM, check='partial'):
    cpu = guest_cpu(cpu, check)
    return """<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>%(name)s</name>
  <memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>%(kernel)s</kernel>
    <cmdline>iterations=4000000000</cmdline>
  </os>
  %(cpu)s
  <on_poweroff>destroy</on_poweroff>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>%(qemu)s</emulator>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-chardev'/>
    <qemu:arg value='file,id=dbg,path=%(debug)s,append=on'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='isa-debugcon,chardev=dbg'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='isa-debug-exit,iobase=0xf4,iosize=0x04'/>
  </qemu:commandline>
</domain>
""" % {'name': name, 'kernel': kernel, 'qemu': QEMU, 'debug': debug, 'cpu': cpu}


def linux_domain_xml(cpu, kernel, initrd, console):
    """The Linux guest of tests/linux (run_linux.py's -kernel, -initrd and
    -append) as a domain: its serial console goes to a file every host
    appends to, so that the console is one transcript across migrations."""
    return """<domain type='qemu'>
  <name>%(name)s</name>
  <memory unit='MiB'>128</memory>
  <vcpu>2</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>%(kernel)s</kernel>
    <initrd>%(initrd)s</initrd>
    <cmdline>%(cmdline)s</cmdline>
  </os>
  %(cpu)s
  <features><acpi/><apic/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>%(qemu)s</emulator>
    <serial type='file'>
      <source path='%(console)s' append='on'/>
      <target port='0'/>
    </serial>
  </devices>
</domain>
""" % {'name': LINUX_DOM, 'kernel': kernel, 'initrd': initrd, 'qemu': QEMU,
       'console': console, 'cpu': guest_cpu(cpu),
       'cmdline': run_linux.kernel_cmdline(LINUX_TESTS)}


class Guest:
    """The profiling domain, wherever it currently runs."""

    def __init__(self, host, debug, name=DOM):
        self.host = host
        self.debug = debug
        self.name = name

    def output(self):
        with open(self.debug, errors='replace') as f:
            return f.read()

    def state(self, host=None):
        p = (host or self.host).virsh('domstate', self.name)
        return p.stdout.strip() if p.returncode == 0 else 'gone'

    def wait_output(self, text, timeout=60):
        deadline = time.time() + timeout
        while text not in self.output():
            if time.time() > deadline:
                raise RuntimeError('the guest never printed %r' % text)
            time.sleep(0.1)

    def progresses(self, timeout=90):
        """The guest is running and its console output grows."""
        before = len(self.output())
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.output()) > before and self.state() == 'running':
                return True
            time.sleep(0.1)
        return False


def jobinfo(host, dom):
    out = host.virsh('domjobinfo', '--completed', dom).stdout

    def ms(label):
        m = re.search(r'^%s:\s+(\d+)\s+ms' % label, out, re.M)
        return int(m.group(1)) if m else None
    return ms('Time elapsed'), ms('Total downtime')


class LifecycleWatch:
    """'virsh event --domain DOM --event lifecycle --loop' on a host, its
    output in a file.  virsh says nothing once it has registered, so the
    watch pauses and resumes the guest until it reports that: only then
    can no event of what follows be missed."""

    def __init__(self, guest, tmp, timeout=120):
        self.host = guest.host
        self.path = os.path.join(tmp, 'events-%s-%s.txt' % (guest.name, self.host.name))
        with open(self.path, 'w') as out:
            # stdbuf: virsh's stdout is a file, each event line must reach it.
            self.proc = subprocess.Popen(
                ['stdbuf', '-oL', 'virsh', '-c', self.host.uri, 'event', '--domain', guest.name,
                 '--event', 'lifecycle', '--loop', '--timeout', str(timeout)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        self.ready = False
        deadline = time.time() + 30
        while 'Resumed Unpaused' not in self.output() and time.time() < deadline:
            self.host.virsh('suspend', guest.name)
            self.host.virsh('resume', guest.name)
            self.wait_for(['Resumed Unpaused'], 2)
        self.ready = 'Resumed Unpaused' in self.output()

    def output(self):
        with open(self.path, errors='replace') as f:
            return f.read()

    def events(self):
        """The events' details, those after the pause and resume of
        __init__ once it is ready."""
        got = re.findall(r"^event 'lifecycle' for domain '[^']*': (.*)$", self.output(), re.M)
        if self.ready and 'Resumed Unpaused' in got:
            got = got[len(got) - got[::-1].index('Resumed Unpaused'):]
        return got

    def wait_for(self, events, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = self.events()
            if all(e in got for e in events):
                return True
            time.sleep(0.1)
        return False

    def close(self):
        libvirt_hosts.stop_pid(self.proc.pid, self.proc)


def migrate(guest, src, dst, mode, number):
    """virsh migrate --live MODE of the guest src -> dst; its timings
    (virsh, QEMU's part and the downtime from domjobinfo --completed on
    dst), or the error."""
    name = ' '.join(mode) or 'direct'
    t = time.time()
    p = src.virsh('migrate', '--live', *mode, guest.name, dst.uri)
    wall = time.time() - t
    if p.returncode != 0:
        return '%s: migration %d %s->%s %s: %s' % (guest.name, number, src.name, dst.name,
                                                   name, p.stderr.strip())
    guest.host = dst
    elapsed, downtime = jobinfo(dst, guest.name)
    print('  migration %2d %s->%s %-17s virsh %.2f s, QEMU %s ms, downtime %s ms' %
          (number, src.name, dst.name, name, wall, elapsed, downtime), flush=True)
    return wall, elapsed, downtime


def migrate_round_trips(guest, a, b, count, runs_on, watch_tmp=None, more=lambda: True):
    """Up to count live migrations a->b->a... in the modes of MODES, each
    mode for a round trip, each while more() holds; runs_on(guest, number)
    says whether the guest still runs (and profiles) after migration number.
    With watch_tmp, 'virsh event' on a watches the first round trip.
    Returns the timings."""
    timings = []
    watch = LifecycleWatch(guest, watch_tmp) if watch_tmp else None
    try:
        for i in range(count):
            if not more():
                break
            src, dst = (a, b) if i % 2 == 0 else (b, a)
            t = migrate(guest, src, dst, MODES[i % len(MODES)], i + 1)
            if isinstance(t, str):
                # Unless the guest ended its run (and powered off) meanwhile.
                if more():
                    report(False, t)
                else:
                    print('  (%s, after the guest\'s program ended)' % t)
                return timings
            timings.append(t)
            if not runs_on(guest, i + 1):
                report(False, '%s: after migration %d it runs on %s' %
                       (guest.name, i + 1, dst.name))
                return timings
            if watch and i == 1:
                # Leaving a (paused for the last pass, then stopped), coming
                # back (started, then resumed), as libvirt reports it.
                want = ['Suspended Migrated', 'Stopped Migrated', 'Started Migrated',
                        'Resumed Migrated']
                seen = watch.wait_for(want, 60)
                got = watch.events()
                report(watch.ready and seen and
                       [e for e in got if e in want] == want,
                       "virsh event --domain %s --event lifecycle on a, while it went to b "
                       "and back: %s" % (guest.name, ', '.join(got)))
                watch.close()
                watch = None
    finally:
        if watch:
            watch.close()
    return timings


def report_timings(what, timings, count):
    walls = [t[0] for t in timings]
    qemu = [t[1] for t in timings if t[1] is not None]
    down = [t[2] for t in timings if t[2] is not None]
    report(len(down) == count,
           '%s timings: virsh migrate %.2f/%.2f/%.2f s, QEMU %d/%d/%d ms, downtime %d/%d/%d ms '
           '(min/median/max)' % (what, min(walls), statistics.median(walls), max(walls),
                                 min(qemu), statistics.median(qemu), max(qemu),
                                 min(down), statistics.median(down), max(down)))


def test_migrations(guest, a, b, tmp):
    timings = migrate_round_trips(guest, a, b, MIGRATIONS,
                                  lambda guest, _: guest.progresses(), watch_tmp=tmp)
    report(len(timings) == MIGRATIONS and 'SUMMARY' not in guest.output(),
           '%d live migrations a<->b (direct, --p2p, --p2p --tunnelled) while the guest '
           'profiles' % MIGRATIONS)
    if timings:
        report_timings(guest.name, timings, MIGRATIONS)


def test_save_restore(guest, src, dst, tmp):
    save = os.path.join(tmp, 'on-%s.save' % src.name)
    p = src.virsh('save', DOM, save)
    report(p.returncode == 0 and guest.state(src) == 'gone',
           'virsh save on %s while the guest profiles' % src.name)
    p = dst.virsh('restore', save)
    guest.host = dst
    report(p.returncode == 0 and guest.progresses(),
           'virsh restore on %s: the guest profiles on (%s)' % (dst.name, p.stderr.strip()))


def refused(p, feature):
    err = ' '.join(p.stderr.split())
    return p.returncode != 0 and feature in err, err


def test_refusals(guest, hosts, tmp):
    a, b, c, d, e = hosts
    src = guest.host
    # What each refused host must name: c and e have no LWP, d lacks lwpint.
    refusing = ((c, 'lwp'), (d, 'lwpint'), (e, 'lwp'))
    for dst, name in refusing:
        for mode in ([], ['--p2p']):
            p = src.virsh('migrate', '--live', *mode, DOM, dst.uri)
            ok, err = refused(p, name)
            report(ok, 'virsh migrate %s->%s %s refused: %s' %
                   (src.name, dst.name, mode[0] if mode else 'direct', err))
            report(guest.state(src) == 'running' and guest.state(dst) == 'gone' and
                   guest.progresses(), 'the guest runs on, on %s' % src.name)
    save = os.path.join(tmp, 'for-refusal.save')
    p = src.virsh('save', DOM, save)
    report(p.returncode == 0, 'virsh save on %s' % src.name)
    for dst, name in refusing:
        p = dst.virsh('restore', save)
        ok, err = refused(p, name)
        report(ok and guest.state(dst) == 'gone',
               'virsh restore of that save on %s refused: %s' % (dst.name, err))
    p = src.virsh('restore', save)
    report(p.returncode == 0 and guest.progresses(),
           'restored on %s again, the guest profiles on' % src.name)


def finish(guest, what='the record stream is continuous across all of it (every record, '
                        'MissedEvents 0)'):
    """The guest profiles until a key is pressed (tests/guest/lwp-migrate.c),
    then checks its whole record stream and exits."""
    guest.host.virsh('send-key', guest.name, 'KEY_A')
    deadline = time.time() + 120
    while guest.state() not in ('gone', 'shut off') and time.time() < deadline:
        time.sleep(0.2)
    out = guest.output()
    for line in out.splitlines():
        if line.startswith(('PASS', 'FAIL', 'SUMMARY')):
            print('  guest: ' + line)
    report('SUMMARY: 5 tests, 0 failures' in out and 'FAIL' not in out, what)


PROGRESS = re.compile(r'^progress: (\d+) records', re.M)


def linux_progress(guest):
    """The records lwp-linux-threads says it has drained so far, or -1."""
    got = [int(n) for n in PROGRESS.findall(guest.output())]
    return max(got) if got else -1


def wait_linux_progress(guest, above, timeout=180):
    deadline = time.time() + timeout
    while True:
        n = linux_progress(guest)
        if n > above or time.time() > deadline or guest.state() != 'running':
            return n
        time.sleep(0.2)


def test_linux_guest(a, b, cpu, tmp):
    """The Linux guest, defined with the pool's baseline <cpu>, boots on a;
    while lwp-linux-threads profiles itself, it goes a->b->a... in every
    mode, then gets the BREAK that ends the program; then the program's own
    checks and run_linux.judge() decide."""
    kernel = os.path.join(tmp, 'bzImage')
    initrd = os.path.join(tmp, 'initramfs.cpio.gz')
    shutil.copy(LINUX_KERNEL, kernel)
    shutil.copy(LINUX_INITRD, initrd)
    console = os.path.join(tmp, 'linux-console.txt')
    open(console, 'w').close()
    xml = os.path.join(tmp, 'linux.xml')
    with open(xml, 'w') as f:
        f.write(linux_domain_xml(cpu, kernel, initrd, console))
    t0 = time.time()
    p = a.virsh('create', xml)
    report(p.returncode == 0, 'the Linux guest (%s) starts on a with the pool\'s baseline '
           '<cpu>%s' % (LINUX_DOM, '' if p.returncode == 0 else ': ' + p.stderr.strip()))
    if p.returncode:
        return
    guest = Guest(a, console, LINUX_DOM)
    guest.wait_output('@@RUN threads', timeout=180)
    first = wait_linux_progress(guest, 0)
    t_run = time.time()
    report(first > 0, '%s: /init runs %s, its threads profile (%d records drained, '
           '%.1f s after the start)' % (LINUX_DOM, LINUX_TESTS, first, t_run - t0))
    if first <= 0:
        return

    def program_runs():
        return '@@END threads' not in guest.output()
    during = []

    def runs_on(guest, number):
        before = seen[-1]
        if program_runs():
            during.append(number)       # the program ran across this one
        after = wait_linux_progress(guest, before)
        seen.append(after)
        report(after > before, '%s: after migration %d its threads profile on %s '
               '(%d -> %d records drained)' % (LINUX_DOM, number, guest.host.name,
                                               before, after))
        return guest.state() == 'running' and after > before
    seen = [linux_progress(guest)]
    timings = migrate_round_trips(guest, a, b, LINUX_MIGRATIONS, runs_on, more=program_runs)
    t_mig = time.time()
    # Nothing but the BREAK ends the program: it must still run now.
    still = program_runs()
    p = guest.host.virsh('qemu-monitor-command', LINUX_DOM,
                         '{"execute": "chardev-send-break", "arguments": {"id": "charserial0"}}')
    report(p.returncode == 0, '%s: a BREAK on its serial line after the last migration (%s)'
           % (LINUX_DOM, (p.stdout + p.stderr).strip()))
    deadline = time.time() + 240
    t_end = None
    while guest.state() != 'gone' and time.time() < deadline:
        if t_end is None and not program_runs():
            t_end = time.time()
        time.sleep(0.2)
    finished = guest.state() == 'gone'
    t_end = t_end or time.time()
    stop = [ln for ln in guest.output().splitlines() if ln.startswith('note: stop: ')]
    report(still and len(during) == LINUX_MIGRATIONS and
           during == list(range(1, LINUX_MIGRATIONS + 1)) and bool(stop) and 'BREAK' in stop[0],
           '%s: %d of %d live migrations a<->b (%s) fell inside its threads\' run, which '
           'ended at the BREAK (%s)' %
           (LINUX_DOM, len(during), LINUX_MIGRATIONS,
            ', '.join(sorted({' '.join(m) or 'direct' for m in MODES[:len(during)]})),
            stop[0][6:] if stop else 'no stop note'))
    iso = [ln for ln in guest.output().splitlines() if ln.startswith('THREAD-ISOLATION:')]
    print('  %s: the program profiled %.1f s from its first records to the BREAK, ended %.1f s '
          'after it; the guest powered off %.1f s after it started; %s' %
          (LINUX_DOM, t_mig - t_run, t_end - t_mig, time.time() - t0,
           iso[0] if iso else 'no THREAD-ISOLATION line'), flush=True)
    lines = guest.output().splitlines()
    failed = checks.failed
    run_linux.judge(lines, LINUX_TESTS, None, False,
                    '%s powered off by itself after its migrations' % LINUX_DOM, finished)
    if timings:
        report_timings(LINUX_DOM, timings, len(timings))
    if checks.failed > failed:
        print('---- %s console ----\n%s' % (LINUX_DOM, guest.output()))


def main():
    t0 = time.time()
    pool = libvirt_hosts.Pool(emulator=QEMU)
    wrapper = LATITUDE_WRAPPER.replace('@PROPS@', LATITUDE) if LATITUDE else None
    a = pool.add('a', qemu_wrapper=wrapper)
    b = pool.add('b', qemu_wrapper=wrapper)
    c = pool.add('c', qemu=STOCK_QEMU, lwp_cpu_map=False)
    d = pool.add('d', qemu_wrapper=NO_LWPINT_WRAPPER)
    e = pool.add('e', qemu=STOCK_QEMU)
    hosts = (a, b, c, d, e)
    pool.start()
    print('# %d libvirt hosts up in %.1f s' % (len(hosts), time.time() - t0), flush=True)
    tmp = pool.dir
    try:
        test_capabilities(a, c)
        test_cpu_baseline(a, tmp)
        test_compare(a, tmp)
        cpu, lwp = test_pool_baseline(pool, hosts, tmp)
        kernel = os.path.join(tmp, 'guest.img')
        shutil.copy(IMAGE, kernel)
        debug = os.path.join(tmp, 'debug.txt')
        open(debug, 'w').close()
        xml = os.path.join(tmp, 'dom.xml')
        with open(xml, 'w') as f:
            f.write(domain_xml(cpu, kernel, debug))
        p = a.virsh('create', xml)
        report(p.returncode == 0, "a domain with the pool's baseline <cpu> starts on a%s" %
               ('' if p.returncode == 0 else ': ' + p.stderr.strip()))
        if p.returncode:
            return
        guest = Guest(a, debug)
        cmdline = next((l for l in a.domain_log(DOM).splitlines() if l.startswith('-cpu ')), '')
        want = ['%s=on' % f for f in lwp]
        report(lwp and all(re.search(r'[,=]%s\b' % w, cmdline) for w in want),
               "libvirt gives QEMU the baseline's LWP features: %s" % cmdline.strip(' \\'))
        guest.wait_output('profiling')
        test_migrations(guest, a, b, tmp)
        test_save_restore(guest, guest.host, b if guest.host is a else a, tmp)
        test_refusals(guest, hosts, tmp)
        finish(guest)
        test_linux_guest(a, b, cpu, tmp)
    finally:
        pool.close()
    print('# libvirt suite: %.1f s' % (time.time() - t0))


try:
    main()
except Exception as e:                  # a harness error is a failure
    report(False, 'libvirt test: %s: %s' % (type(e).__name__, e))
summary_exit()
