#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""libvirt (Debian's 11.3) drives our QEMU with LWP: the cpu_map additions
of tools/libvirt, a domain whose <cpu> requires lwp and LWP capability
features, 'virsh save' and 'virsh restore' while the guest profiles (its
record stream continuous afterwards), and libvirt's CPU baseline over our
cpu_map agreeing with lwp-baseline.  The daemons are started here (as root)
and stopped again if this test started them.
Usage: test_libvirt.py QEMU_SYSTEM GUEST_IMAGE LWP_BASELINE"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import report, summary_exit  # noqa: E402

QEMU, IMAGE, BASELINE = (os.path.abspath(a) for a in sys.argv[1:4])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
URI = 'qemu:///system'
NAME = 'qemu-lwp-test-%d' % os.getpid()



def run(*args, check=False):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and p.returncode:
        raise RuntimeError('%s: %s' % (' '.join(args), p.stdout.strip()))
    return p


def virsh(*args, check=False):
    return run('virsh', '-c', URI, *args, check=check)


def start_daemons():
    started = []
    for daemon, pidfile in (('virtlogd', '/run/virtlogd.pid'), ('libvirtd', '/run/libvirtd.pid')):
        if run('pgrep', '-x', daemon).returncode != 0:
            run(daemon, '-d', check=True)
            started.append(pidfile)
    deadline = time.time() + 30
    while virsh('version').returncode != 0:
        if time.time() > deadline:
            raise RuntimeError('libvirtd did not answer: ' + virsh('version').stdout)
        time.sleep(0.2)
    return started


def stop_daemons(pidfiles):
    for pidfile in pidfiles:
        try:
            pid = int(open(pidfile).read())
            os.kill(pid, 15)
            deadline = time.time() + 15
            while time.time() < deadline:
                os.kill(pid, 0)                 # raises once it has gone
                time.sleep(0.1)
        except (OSError, ValueError):
            pass


def domain_xml(tmp, kernel):
    # check='partial': libvirt verifies the required LWP features against
    # what our QEMU offers before starting ('full' also objects to qemu64's
    # own extra features, hypervisor and lahf_lm, unrelated to LWP).
    return """<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>%(name)s</name>
  <memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>%(kernel)s</kernel>
    <cmdline>iterations=4000000000</cmdline>
  </os>
  <cpu mode='custom' match='exact' check='partial'>
    <model fallback='forbid'>qemu64</model>
    <feature policy='require' name='xsave'/>
    <feature policy='require' name='lwp'/>
    <feature policy='require' name='lwpval'/>
    <feature policy='require' name='lwpint'/>
    <feature policy='disable' name='lwpipf'/>
  </cpu>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>%(qemu)s</emulator>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-chardev'/>
    <qemu:arg value='file,id=dbg,path=%(tmp)s/debug.txt,append=on'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='isa-debugcon,chardev=dbg'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='isa-debug-exit,iobase=0xf4,iosize=0x04'/>
  </qemu:commandline>
</domain>
""" % {'name': NAME, 'kernel': kernel, 'qemu': QEMU, 'tmp': tmp}


def domain_state():
    p = virsh('domstate', NAME)
    return p.stdout.strip() if p.returncode == 0 else 'gone'


def test_domain(tmp):
    # QEMU runs as libvirt's unprivileged user: it must reach the directory,
    # read the kernel and append to the debug console file.
    os.chmod(tmp, 0o711)
    kernel = os.path.join(tmp, 'guest.img')
    shutil.copy(IMAGE, kernel)
    os.chmod(kernel, 0o644)
    debug = os.path.join(tmp, 'debug.txt')
    open(debug, 'w').close()
    os.chmod(debug, 0o666)
    xml = os.path.join(tmp, 'dom.xml')
    open(xml, 'w').write(domain_xml(tmp, kernel))

    p = virsh('create', xml)
    report(p.returncode == 0, 'libvirt starts a domain whose <cpu> requires lwp: %s' %
           p.stdout.strip().splitlines()[-1:])
    log = open('/var/log/libvirt/qemu/%s.log' % NAME).read()
    cpu = next((l for l in log.splitlines() if l.startswith('-cpu ')), '')
    report('lwp=on' in cpu and 'lwpval=on' in cpu and 'lwpint=on' in cpu and 'lwpipf=off' in cpu,
           'libvirt passes the LWP features to QEMU: %s' % cpu.strip(' \\'))
    deadline = time.time() + 60
    while 'profiling' not in open(debug).read() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    report('profiling' in open(debug).read() and 'SUMMARY' not in open(debug).read(),
           'the guest is profiling')
    save = os.path.join(tmp, 'dom.save')
    p = virsh('save', NAME, save)
    report(p.returncode == 0 and domain_state() == 'gone',
           'virsh save while the guest profiles: %s' % p.stdout.strip())
    p = virsh('restore', save)
    report(p.returncode == 0, 'virsh restore: %s' % p.stdout.strip())
    time.sleep(0.5)
    # The guest profiles until a key is pressed (see tests/guest/lwp-migrate.c).
    virsh('send-key', NAME, 'KEY_A')
    deadline = time.time() + 180
    while domain_state() != 'gone' and time.time() < deadline:
        time.sleep(0.5)
    out = open(debug).read()
    for line in out.splitlines():
        if line.startswith(('PASS', 'FAIL', 'SUMMARY')):
            print('  guest: ' + line)
    report('SUMMARY: 5 tests, 0 failures' in out and 'FAIL' not in out,
           'after save/restore the record stream is continuous')


def test_baseline(tmp):
    hosts = os.path.join(tmp, 'hosts.xml')
    open(hosts, 'w').write("""<cpu><arch>x86_64</arch><model>qemu64</model><vendor>AMD</vendor>
  <feature name='xsave'/><feature name='lwp'/><feature name='lwpval'/>
  <feature name='lwpire'/><feature name='lwpint'/>
</cpu>
<cpu><arch>x86_64</arch><model>qemu64</model><vendor>AMD</vendor>
  <feature name='xsave'/><feature name='lwp'/><feature name='lwpval'/>
  <feature name='lwpint'/><feature name='lwpipf'/>
</cpu>
""")
    p = virsh('cpu-baseline', hosts)
    libvirt_lwp = sorted(l.split("name='")[1].split("'")[0] for l in p.stdout.splitlines()
                         if "policy='require'" in l and "name='lwp" in l)
    q = run(BASELINE, '--cpu', 'qemu64,+xsave,+lwp,+lwpval,+lwpire,+lwpint',
            '--cpu', 'qemu64,+xsave,+lwp,+lwpval,+lwpint,+lwpipf')
    ours = sorted(l.split("name='")[1].split("'")[0] for l in q.stdout.splitlines()
                  if "policy='require'" in l)
    report(p.returncode == 0 and libvirt_lwp == ['lwp', 'lwpint', 'lwpval'],
           "libvirt's cpu-baseline over our cpu_map: %s" % libvirt_lwp)
    report(libvirt_lwp == ours, 'lwp-baseline agrees with libvirt: %s' % ours)


def test_compare(tmp):
    """libvirt's hypervisor-cpu-compare against our QEMU (TCG) and
    lwp-baseline against the same QEMU's -cpu max expansion agree on which
    LWP configurations the hypervisor can run."""
    qmp = '\n'.join(['{"execute":"qmp_capabilities"}',
                     '{"execute":"query-cpu-model-expansion","arguments":'
                     '{"type":"full","model":{"name":"max"}}}',
                     '{"execute":"quit"}']) + '\n'
    expansion = os.path.join(tmp, 'max.json')
    with open(expansion, 'w') as f:
        subprocess.run([QEMU, '-machine', 'none', '-accel', 'tcg', '-nodefaults', '-display',
                        'none', '-qmp', 'stdio'], input=qmp, stdout=f, text=True, check=True)
    for features in (['lwp', 'lwpval', 'lwpint'], ['lwp', 'lwpval'],
                     ['lwp', 'lwpval', 'lwpint', 'lwpire'], ['lwp', 'lwpipf']):
        xml = os.path.join(tmp, 'cmp.xml')
        open(xml, 'w').write("<cpu mode='custom' match='exact'><model>qemu64</model>"
                             "<feature policy='require' name='xsave'/>" +
                             ''.join("<feature policy='require' name='%s'/>" % f
                                     for f in features) + '</cpu>')
        p = virsh('hypervisor-cpu-compare', '--virttype', 'qemu', '--emulator', QEMU,
                  '--arch', 'x86_64', '--machine', 'pc', xml)
        libvirt_ok = 'superset' in p.stdout or 'identical' in p.stdout
        q = run(BASELINE, expansion, '--cpu', 'qemu64,+xsave,' + ','.join('+' + f for f in features))
        common = {l.split("name='")[1].split("'")[0] for l in q.stdout.splitlines()
                  if "policy='require'" in l}
        ours_ok = q.returncode == 0 and set(features) <= common
        report(p.returncode in (0, 1) and libvirt_ok == ours_ok,
               'compare %s: libvirt %s, lwp-baseline %s' %
               ('+'.join(features), 'runs it' if libvirt_ok else 'refuses',
                'covered' if ours_ok else 'not covered'))


def main():
    if os.geteuid() != 0:
        report(False, 'the libvirt test needs root (it starts libvirtd)')
        return
    run(os.path.join(ROOT, 'tools/libvirt/install-cpu-map.sh'), check=True)
    tmp = tempfile.mkdtemp(prefix='lwp-libvirt-')
    started = start_daemons()
    try:
        # libvirt reads cpu_map when it starts; a daemon already running
        # before the install would not know the LWP features.
        test_baseline(tmp)
        test_compare(tmp)
        test_domain(tmp)
    finally:
        virsh('destroy', NAME)
        stop_daemons(started)
        shutil.rmtree(tmp, ignore_errors=True)


try:
    main()
except Exception as e:
    report(False, 'libvirt test: %s' % e)
summary_exit()
