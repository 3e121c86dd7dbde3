#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""LWP under KVM on this machine's host: what QEMU offers and says.

Without /dev/kvm (or with a KVM QEMU cannot use) every check is skipped
with the reason, and the test reports SKIP (exit 77) -- never a pass.
On a host without LWP (every CPU made since 2017): LWP is not offered by
-cpu host, asking for it warns and filters it, 'enforce' refuses to start
naming the feature, and the family-15h models lose their LWP the same way.
On a host with LWP the same checks assert the opposite.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'common'))
from checks import report, summary_exit  # noqa: E402
import qemu_python  # noqa: E402,F401  (QEMU's python/ on sys.path)
from qemu.machine import QEMUMachine  # noqa: E402
from qemu.machine.machine import VMLaunchFailure  # noqa: E402

# arch-capabilities: MSR 0x10a, which some nested KVM hosts refuse to set.
HOST = 'host,-arch-capabilities'


def run_qemu(qemu, cpu, qmp_cmds=(), machine='pc'):
    """Start QEMU paused with @cpu (qemu.machine), run QMP commands, quit;
    returns (exit status, its output, [QMP answers])."""
    cpu_args = ['-cpu', cpu] if cpu else []
    vm = QEMUMachine(qemu, args=['-machine', machine, '-accel', 'kvm', *cpu_args, '-S',
                                 '-nodefaults'])
    try:
        vm.launch()
    except VMLaunchFailure as e:                # refused to start
        return e.exitcode, e.output or '', []
    try:
        answers = [vm.qmp(c['execute'], args_dict=c.get('arguments', {})) for c in qmp_cmds]
    finally:
        vm.shutdown()
    return vm.exitcode(), vm.get_log() or '', answers


def kvm_usable(qemu):
    if not os.path.exists('/dev/kvm'):
        return 'no /dev/kvm on this machine'
    rc, out, _ = run_qemu(qemu, None, machine='none')
    if rc != 0:
        return 'KVM is not usable: ' + (out.strip().splitlines() or ['exit %s' % rc])[-1]
    return None


def lwp_prop(answers, index=0):
    ret = answers[index].get('return', {})
    if isinstance(ret, dict) and 'model' in ret:
        return ret['model']['props'].get('lwp')
    return ret


def main():
    qemu = sys.argv[1]
    why = kvm_usable(qemu)
    if why:
        print(f'SKIP: {why}; the KVM path is covered by tests/kvm/run-nested.py')
        print('0 passed, 0 failed, 1 skipped')
        sys.exit(77)
    host_lwp = 'lwp' in open('/proc/cpuinfo').read().split()
    print(f'host CPU {"has" if host_lwp else "lacks"} LWP')

    expand = {'execute': 'query-cpu-model-expansion',
              'arguments': {'type': 'full', 'model': {'name': 'host'}}}
    rc, err, ans = run_qemu(qemu, HOST, [expand])
    report(rc == 0 and lwp_prop(ans) == host_lwp,
           f'query-cpu-model-expansion of "host": lwp={lwp_prop(ans) if ans else None} '
           f'as the host')

    vcpu_lwp = {'execute': 'qom-get',
                'arguments': {'path': '/machine/unattached/device[0]', 'property': 'lwp'}}
    rc, err, ans = run_qemu(qemu, HOST + ',+lwp,+lwpval', [vcpu_lwp])
    if host_lwp:
        report(rc == 0 and ans and ans[0].get('return') is True,
               '-cpu host,+lwp: the vCPU has LWP')
    else:
        report(rc == 0 and 'CPUID.80000001H:ECX.lwp [bit 15]' in err,
               '-cpu host,+lwp: QEMU warns that the host lacks lwp, naming the bit')
        report(rc == 0 and 'CPUID.8000001CH:EDX.lwpval [bit 1]' in err,
               '... and lwpval (CPUID 8000_001C.EDX[1])')
        report(ans and ans[0].get('return') is False,
               '... starts, and the vCPU has LWP filtered out')

        rc, err, _ = run_qemu(qemu, HOST + ',+lwp,enforce')
        report(rc != 0 and 'lwp' in err and "Host doesn't support requested features" in err,
               '-cpu host,+lwp,enforce: refuses to start, naming lwp')
        rc, err, _ = run_qemu(qemu, HOST + ',+lwp,+lwpire,enforce')
        report(rc != 0 and 'CPUID.8000001CH:EDX.lwpire [bit 2]' in err,
               '-cpu host,+lwp,+lwpire,enforce: names lwpire')
        rc, err, ans = run_qemu(qemu, 'Opteron_G5-v2', [vcpu_lwp])
        report(rc == 0 and 'ECX.lwp [bit 15]' in err and ans and ans[0].get('return') is False,
               'Opteron_G5-v2 (family 15h, LWP) on this host: warned, LWP filtered')
        rc, err, _ = run_qemu(qemu, 'Opteron_G5-v2,enforce')
        report(rc != 0 and 'ECX.lwp [bit 15]' in err,
               'Opteron_G5-v2,enforce: refuses to start, naming lwp')
    summary_exit()


if __name__ == '__main__':
    main()
