#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""End-to-end nested test of LWP without LWP hardware.

L0: our qemu-system-x86_64 under TCG, with an AMD CPU model offering SVM and
    LWP, boots Debian's kernel with the initramfs of
    scripts/build-nested-image.sh (built first, incrementally).
L1: that kernel loads the KVM modules (Debian's, or the patched ones of
    build/kvm-modules/<kernel-version>/) and runs the same QEMU binary with
    -accel kvm -cpu host on the guest test images (L2), the way
    tests/guest/run_guest.py runs them, then live-migrates the
    tests/guest/lwp-migrate guest between two L1 QEMU processes (HMP over
    pipe chardevs; the destination gets the key press that ends the run).
    With --linux-tests, L1 also boots the LWP Linux guest of tests/linux
    (bzImage and initramfs, when built) as L2 with -cpu host and this
    harness judges its console the way tests/linux/run_linux.py does.

With --l1-kernel BZIMAGE, L1 runs that kernel instead of Debian's: the
project's own (scripts/build-linux-kernel.sh), which has the LWP core and
KVM built in, so L1 both uses LWP for its own processes and gives it to
its guests.  --dual then runs an L1 process that profiles itself
(tests/linux/lwp-linux-threads, until told to stop) while the LWP Linux
guest, the same kernel, profiles in L2; both check their records exactly,
and the LWP lines of /proc/interrupts on both levels show where every
threshold interrupt went.

This harness reads L1's serial console (tests/kvm/l1-init.sh writes it),
judges every step and prints PASS:/FAIL:/SKIP: lines, the timings and the
closing line 'N passed, N failed'.  Exit status: 0 when nothing failed, 77
(meson's skip) when L1 has no /dev/kvm, 1 otherwise.  The whole serial log,
with the host time of every line, is kept in build/nested/serial.log.

Usage:
  tests/kvm/run-nested.py                     # everything, defaults below
  tests/kvm/run-nested.py --tests smoke-64 --migrate none
  tests/kvm/run-nested.py --lwp force         # run LWP tests even when KVM
                                              # does not offer LWP (expect FAILs)
"""
import argparse
import os
import random
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'common'))
from checks import report  # noqa: E402
import checks  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, 'tests', 'linux'))
import run_linux  # noqa: E402

DEFAULT_TESTS = ('smoke-64,smoke-32,lwp-absent-64,lwp-absent-32,lwp-cpuid-64,lwp-cpuid-32,'
                 'lwp-insn-64,lwp-insn-32,lwp-xsave-64,lwp-xsave-32,lwp-fault-64,lwp-fault-32,'
                 'demo-lwp-64,demo-lwp-32,lwp-migrate-64,lwp-migrate-32,'
                 'lwp-events-64,lwp-events-32')
DEFAULT_CPU = 'Opteron_G5-v2,+svm,+npt,+xsaveopt,+lwp,+lwpval,+lwpire,+lwpbre,+lwpint'
EXPECT = os.path.join(ROOT, 'tests', 'user', 'lwp-msvc-port.expected')
skipped = 0


def skip(what):
    global skipped
    print('SKIP: ' + what, flush=True)
    skipped += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--qemu', default=os.path.join(ROOT, 'build', 'qemu', 'qemu-system-x86_64'),
                    help='L0 QEMU (also packed into the image for L1)')
    ap.add_argument('--outdir', default=os.path.join(ROOT, 'build', 'nested'),
                    help='image directory (kernel, initramfs, serial.log)')
    ap.add_argument('--guest-dir', default=os.path.join(ROOT, 'build', 'lwp', 'tests', 'guest'),
                    help='where the guest test images are (default %(default)s)')
    ap.add_argument('--no-build', action='store_true', help='use the existing image as it is')
    ap.add_argument('--cpu', default=DEFAULT_CPU, help='L0 CPU model (default %(default)s)')
    ap.add_argument('--mem', default='2G', help='L0 memory (default %(default)s)')
    ap.add_argument('--tests', default=DEFAULT_TESTS,
                    help='comma-separated guest images to run in L2 (default: %(default)s)')
    ap.add_argument('--migrate', default='lwp-migrate-64,lwp-migrate-32',
                    help="comma-separated guest images to live-migrate inside L1, or 'none' "
                    "(default %(default)s)")
    ap.add_argument('--hops', type=int, default=2,
                    help='live migrations of each guest, QEMU 0 -> 1 -> ... (default %(default)s)')
    ap.add_argument('--lwp', choices=('auto', 'force'), default='auto',
                    help='force: run the LWP tests even when KVM does not offer LWP')
    ap.add_argument('--accels', default='kvm',
                    help='accelerators of the migrating QEMUs 0, 1, ..., e.g. kvm,kvm,tcg '
                    '(the rest kvm; tcg runs -cpu --tcg-cpu)')
    ap.add_argument('--tcg-cpu', default='Opteron_G5-v2', help='-cpu of a tcg QEMU in L1')
    ap.add_argument('--mig-diag', choices=('0', '1', 'sync'), default='0',
                    help="1: print the LWP lines of HMP 'info registers' before and after "
                    "each migration; sync: no migration, one 'info registers' in the middle "
                    "of the guest's run")
    ap.add_argument('--linux-tests', default='abi,msvc,threads:4:1500',
                    help="lwptests= of the LWP Linux guest booted as L2 (tests/linux/init.sh), "
                    "or 'none' (default %(default)s)")
    ap.add_argument('--linux-dir',
                    help='where the Linux guest (bzImage, initramfs.cpio.gz) is; given, it must '
                    'be there (default: build/lwp/tests/linux when built)')
    ap.add_argument('--l1-kernel',
                    help="L1's kernel: a bzImage with KVM built in, e.g. the project's "
                    "(default: Debian's, with the KVM modules); the image goes to "
                    "OUTDIR (default build/nested-lwp then)")
    ap.add_argument('--dual', default='none',
                    help="lwp-linux-threads arguments (colon-separated, rounds 0) of an L1 "
                    "process that profiles while the L2 Linux guest does, or 'none' "
                    "(default %(default)s; needs --l1-kernel)")
    ap.add_argument('--dual-guest', default='threads:4:0',
                    help='lwptests= of the L2 Linux guest beside it (default %(default)s)')
    ap.add_argument('--dual-idle', action='store_true',
                    help='with --dual, a second L2 Linux guest, busy but never using LWP, '
                    'runs beside them: its kernel must take no LWP interrupt')
    ap.add_argument('--dual-wait', type=int,
                    help='limit of each wait for the --dual profilers to make progress (s, '
                    'default: --l2-timeout)')
    ap.add_argument('--kselftest-dir',
                    help='KVM selftests (tests/kvm/build-kvm-selftests.sh) to pack into the '
                    'L1 image, in /kselftest/kvm/')
    ap.add_argument('--kselftests', default='none',
                    help="comma-separated KVM selftests of --kselftest-dir that L1 runs first, "
                    "each of which must exit 0 (pass), or 'none' (default %(default)s)")
    ap.add_argument('--l1-append', default='',
                    help="more of L1's kernel command line, e.g. tsc_early_khz=N")
    ap.add_argument('--l2-timeout', type=int, default=300, help='limit of each L2 run in L1 (s)')
    ap.add_argument('--timeout', type=int, default=900, help='limit of the whole L0 run (s)')
    ap.add_argument('--verbose', action='store_true',
                    help='echo every serial line (default: L1/L2 lines and kernel lines about KVM)')
    args = ap.parse_args()
    if 'lwp-seed=random' in args.cpu:
        # Latitude mode in L0 (docs/lwp-latitude.rst): a new seed each run,
        # printed so that a failure can be replayed.
        seed = random.randrange(1 << 32)
        args.cpu = args.cpu.replace('lwp-seed=random', 'lwp-seed=%d' % seed)
        print('# L0 latitude seed %d (replay: --cpu %s)' % (seed, args.cpu), flush=True)
    if args.l1_kernel and args.outdir == ap.get_default('outdir'):
        args.outdir = os.path.join(ROOT, 'build', 'nested-lwp')

    t_start = time.monotonic()
    image_info = ''
    if not args.no_build:
        env = dict(os.environ, QEMU_LWP_QEMU_BUILDDIR=os.path.dirname(os.path.abspath(args.qemu)),
                   NESTED_GUEST_DIR=os.path.abspath(args.guest_dir))
        if args.linux_dir:
            env['NESTED_LINUX_DIR'] = os.path.abspath(args.linux_dir)
        if args.l1_kernel:
            env['NESTED_L1_KERNEL'] = os.path.abspath(args.l1_kernel)
        if args.kselftest_dir:
            env['NESTED_KSELFTEST_DIR'] = os.path.abspath(args.kselftest_dir)
        r = subprocess.run(['bash', os.path.join(ROOT, 'scripts', 'build-nested-image.sh'),
                            args.outdir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=env)
        for line in r.stdout.splitlines():
            if line.startswith('nested-image:') or 'error' in line:
                print('# ' + line)
        if r.returncode != 0:
            report(False, 'build the L1 image (scripts/build-nested-image.sh)')
            checks.summary_exit()
    t_built = time.monotonic()
    kernel = os.path.join(args.outdir, 'vmlinuz')
    initrd = os.path.join(args.outdir, 'initramfs.cpio.gz')
    try:
        image_info = open(os.path.join(args.outdir, 'image.info')).read()
        print('# image: ' + image_info.strip().replace('\n', '; '))
        print('# modules: ' + open(os.path.join(args.outdir, 'modules.txt')).read()
              .strip().replace('\n', '; '))
    except OSError:
        pass

    # lwp-events expects IP filtering where L0's CPU offers it.
    ipf = int(args.cpu.startswith('max') or '+lwpipf' in args.cpu)
    # no_timer_check: a timer check timed by the TSC fails on a busy host.
    append = ('console=ttyS0 panic=-1 no_timer_check l1tests=%s l1mig=%s l1lwp=%s l1timeout=%d l1ipf=%d l1migdiag=%s l1hops=%d l1accels=%s l1tcgcpu=%s l1linux=%s l1dual=%s l1dualguest=%s l1dualidle=%d l1dualwait=%d l1kst=%s'
              % (args.tests, args.migrate, args.lwp, args.l2_timeout, ipf, args.mig_diag,
                 args.hops, args.accels, args.tcg_cpu, args.linux_tests, args.dual,
                 args.dual_guest, int(args.dual_idle), args.dual_wait or args.l2_timeout,
                 args.kselftests))
    if args.l1_append:
        append += ' ' + args.l1_append
    cmd = [args.qemu, '-M', 'pc', '-accel', 'tcg', '-cpu', args.cpu, '-m', args.mem,
           '-smp', '1', '-nodefaults', '-display', 'none', '-no-reboot', '-serial', 'stdio',
           '-kernel', kernel, '-initrd', initrd, '-append', append]
    print('# ' + ' '.join("'%s'" % a if ' ' in a else a for a in cmd), flush=True)

    log_path = os.path.join(args.outdir, 'serial.log')
    lines = []                                   # (seconds since L0 start, text)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    timer = threading.Timer(args.timeout, proc.kill)
    timer.start()
    progress = 0
    with open(log_path, 'w') as log:
        for raw in proc.stdout:
            t = time.monotonic() - t0
            text = raw.decode(errors='replace').rstrip('\r\n')
            lines.append((t, text))
            log.write('%8.2f %s\n' % (t, text))
            log.flush()
            if re.search(r'\| progress \d+$', text):
                progress += 1
                if not args.verbose:
                    continue
            if (args.verbose or text.startswith(('L1', 'L2', '@@', 'qemu-system')) or
                    re.search(r'kvm|svm|lwp|panic|BUG|Oops|Call Trace|error', text, re.I)):
                print('%8.2f %s' % (t, text), flush=True)
    rc = proc.wait()
    timed_out = not timer.is_alive() and rc != 0
    timer.cancel()
    t_end = time.monotonic()
    print('# L0 exited with status %d after %.1f s (%d progress lines not shown; serial log: %s)'
          % (rc, t_end - t0, progress, log_path))
    judge(args, lines, timed_out)
    timing(lines, t_built - t_start, t_end - t0, t_end - t_start)
    if not any(l.startswith('@@L1-KVM') for _, l in lines) and \
            any(l.startswith('@@L1-NOKVM') for _, l in lines) and not checks.failed:
        print('%d passed, %d failed' % (checks.passed, checks.failed))
        sys.exit(77)
    checks.summary_exit()


def first(lines, prefix):
    for t, l in lines:
        if l.startswith(prefix):
            return t, l
    return None, None


def judge(args, lines, timed_out):
    texts = [l for _, l in lines]
    t_init, _ = first(lines, '@@L1-INIT')
    report(t_init is not None, 'L0 (TCG, -cpu %s) boots the L1 kernel to /init%s'
           % (args.cpu, ' in %.1f s' % t_init if t_init is not None else ''))
    if t_init is None:
        tail(texts)
        return
    for l in texts:
        m = re.match(r'L1: insmod (\S+) \((\w+), .*\): (ok|FAILED.*)', l)
        if m:
            report(m.group(3) == 'ok', 'L1 loads %s (%s)%s' % (
                m.group(1), m.group(2), '' if m.group(3) == 'ok' else ': ' + m.group(3)))
    _, nokvm = first(lines, '@@L1-NOKVM')
    if nokvm:
        reason = nokvm.split(' ', 1)[1]
        for name in [] if args.tests == 'none' else args.tests.split(','):
            skip('L2 %s: %s' % (name, reason))
        for name in [] if args.migrate == 'none' else args.migrate.split(','):
            skip('live migration of %s in L1: %s' % (name, reason))
        if args.linux_tests != 'none':
            skip('L2 Linux guest: %s' % reason)
        return
    report('@@L1-KVM' in texts, 'L1 has /dev/kvm (nested SVM on TCG)')
    # L0 itself giving up (cpu_abort): name it, with the CPU state it dumped.
    for i, l in enumerate(texts):
        if l.startswith('qemu: fatal:') or 'Assertion' in l and 'failed' in l:
            state = [x for x in texts[i + 1:i + 30]
                     if x.startswith(('EIP=', 'TR =', 'CR0=', 'EFER=', 'LWP_CFG='))]
            before = next((x for x in reversed(texts[:i]) if x.startswith('@@')), '')
            report(False, 'L0 (TCG) aborted: %r after %r; %s' % (l, before, ' | '.join(state)))
    lwp = 'yes' if '@@L1-LWP yes' in texts else 'no' if '@@L1-LWP no' in texts else '?'
    print('# KVM in L1 offers LWP to -cpu host: %s' % lwp)

    for name in [] if args.kselftests == 'none' else args.kselftests.split(','):
        judge_kselftest(name, lines)
    for name in [] if args.tests == 'none' else args.tests.split(','):
        judge_l2(name, lines)
    judge_linux(args, lines)
    judge_dual(args, lines)
    judge_migration(args, lines)
    done = '@@L1-DONE' in ' '.join(texts)
    report(done, 'L1 ran to the end' + (' (L0 timed out after %d s)' % args.timeout
                                        if timed_out else ''))
    if not done:
        tail(texts, 8)


def tail(texts, n=25):
    for l in texts[-n:]:
        print('  | ' + l)


def relayed(texts, prefix):
    """The lines L1 relayed under @prefix, and the '@@rc N' among them (None: none)."""
    out = [l[len(prefix):] for l in texts if l.startswith(prefix)]
    rc = None
    for l in out:
        if l.startswith('@@rc '):
            rc = int(l.split()[1])
    return out, rc


def judge_kselftest(name, lines):
    """A KVM selftest L1 ran: exit status 0 (kselftest's KSFT_SKIP, 4, is not a pass)."""
    texts = [l for _, l in lines]
    t_begin, begin = first(lines, '@@KST-BEGIN %s ' % name)
    t_end, end = first(lines, '@@KST-END %s ' % name)
    if begin is None:
        report(False, 'KVM selftest %s in L1: %s' % (
            name, 'not in the image' if end and 'rc=missing' in end else 'never started'))
        return
    out, rc = relayed(texts, 'L1 kst %s| ' % name)
    took = ' in %.1f s' % (t_end - t_begin) if t_end is not None else ''
    why = {None: 'no exit status', 4: 'skipped (exit status 4)'}.get(rc, 'exit status %s' % rc)
    report(rc == 0, 'KVM selftest %s in L1 (the guest in L2)%s%s' % (
        name, took, '' if rc == 0 else ': ' + why))
    if rc != 0:
        for l in out[-12:]:
            print('  | ' + l)


def judge_l2(name, lines):
    """The verdict of tests/guest/run_guest.py, on the lines L1 relayed."""
    texts = [l for _, l in lines]
    for l in texts:
        if l.startswith('@@L2-SKIP %s ' % name):
            skip('L2 %s: %s' % (name, l.split(' ', 2)[2]))
            return
    t_begin, begin = first(lines, '@@L2-BEGIN %s ' % name)
    if begin is None:
        report(False, 'L2 %s: never started' % name)
        return
    t_end, _ = first(lines, '@@L2-END %s ' % name)
    out, rc = relayed(texts, 'L2 %s| ' % name)
    passed = sum(1 for l in out if l.startswith('PASS:'))
    failed = [l for l in out if l.startswith('FAIL:')]
    summary = any(l.startswith('SUMMARY:') for l in out)
    problems = []
    if name.startswith('demo-lwp'):
        # run_guest.py --expect: the block counts as one check.
        want = open(EXPECT).read().splitlines()
        if any(out[i:i + len(want)] == want for i in range(len(out))):
            passed += 1
        else:
            problems.append('output lacks the block of %s' % os.path.basename(EXPECT))
    if rc != 1:
        problems.append('qemu exit status %s%s' % (
            rc, ' (guest exit code %d)' % (rc >> 1) if rc is not None and rc & 1 else ''))
    if not summary:
        problems.append('no SUMMARY line')
    if failed:
        problems.append('%d FAIL lines: %s' % (len(failed), ' | '.join(failed[:3])))
    if not passed:
        problems.append('no PASS line')
    took = ' in %.1f s' % (t_end - t_begin) if t_end is not None else ''
    cpu = re.search(r'cpu=(\S+)', begin).group(1)
    report(not problems, 'L2 %s under KVM in L1 (-cpu %s): %d checks passed%s%s' % (
        name, cpu, passed, took, '' if not problems else ': ' + '; '.join(problems)))


def judge_linux(args, lines):
    """The verdict of tests/linux/run_linux.py on the LWP Linux guest's console."""
    if args.linux_tests == 'none':
        return
    texts = [l for _, l in lines]
    _, skipped_why = first(lines, '@@LINUX-SKIP ')
    if skipped_why:
        # Given --linux-dir, the image holds the guest: no reason to skip.
        why = skipped_why.split(' ', 1)[1]
        if args.linux_dir and not why.startswith('KVM in L1 does not offer'):
            report(False, 'L2 Linux guest: %s' % why)
        else:
            skip('L2 Linux guest: %s' % why)
        return
    t_begin, begin = first(lines, '@@LINUX-BEGIN ')
    if begin is None:
        report(False, 'L2 Linux guest: never started')
        return
    t_end, _ = first(lines, '@@LINUX-END ')
    out = guest_lines(texts, 'L2 linux| ')
    rc = next((l.split()[1] for l in out if l.startswith('@@rc ')), None)
    label = 'L2 Linux under KVM in L1 (-cpu %s): ' % re.search(r'cpu=(\S+)', begin).group(1)
    run_linux.judge(out, args.linux_tests, EXPECT, False,
                    'the guest powered off%s (QEMU exit status %s)'
                    % (' in %.1f s' % (t_end - t_begin) if t_end is not None else '', rc),
                    rc == '0', label)


def lwp_irqs(text):
    """{'LWP:': n, 'LWU:': n, 'LWG:': n} of an '... irqs: LWP: n LWU: n' line."""
    w = text.split('irqs:', 1)[1].split() if 'irqs:' in text else []
    return {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2) if w[i + 1].isdigit()}


def judge_dual(args, lines):
    """L1's own process and the L2 Linux guest profiled at once (l1-init.sh)."""
    if args.dual == 'none':
        return
    texts = [l for _, l in lines]
    _, why = first(lines, '@@DUAL-SKIP ')
    if why:
        report(False, 'L1 process and L2 guest profiling at once: %s' % why.split(' ', 1)[1])
        return
    t_begin, begin = first(lines, '@@DUAL-BEGIN ')
    if begin is None:
        report(False, 'L1 process and L2 guest profiling at once: never started')
        return
    _, gprof = first(lines, '@@DUAL-GUEST-PROFILING ')
    _, prof = first(lines, '@@DUAL-L1-PROFILING ')
    _, both = first(lines, '@@DUAL-BOTH ')
    _, gend = first(lines, '@@DUAL-GUEST-END ')
    t_end, end = first(lines, '@@DUAL-END ')
    m = both and re.search(r'guest (\d+) -> (\d+), L1 (\d+) -> (\d+)', both)
    report(gprof is not None and not gprof.endswith(' 0 progress lines') and
           prof is not None and not prof.endswith(' 0 progress lines') and
           bool(m) and int(m.group(2)) > int(m.group(1)) and int(m.group(4)) > int(m.group(3))
           and gend is not None and gend.endswith('alive: yes'),
           'L1 process (lwp-linux-threads %s) and L2 guest (%s) each drained records while '
           'the other profiled (%s), and the L1 process outlived the guest'
           % (args.dual.replace(':', ' '), args.dual_guest,
              both.split(' ', 2)[2] if both else 'never'))
    # L2: the LWP Linux guest, judged as run_linux.py does, and where its
    # threshold interrupts went (/proc/interrupts, printed by its /init).
    out = guest_lines(texts, 'L2 dual| ')
    rc = next((l.split()[1] for l in out if l.startswith('@@rc ')), None)
    run_linux.judge(out, args.dual_guest, EXPECT, False,
                    'the guest powered off (QEMU exit status %s)' % rc, rc == '0',
                    'L2 beside an L1 process: ')
    l2 = {}
    for l in out:
        m = re.match(r'\s*(LW[PUG]):((?:\s+\d+)+)', l)
        if m:
            l2[m.group(1)] = sum(int(x) for x in m.group(2).split())
    latitude = 'lwp-irq-delay=' in args.cpu
    what = ('L2 beside an L1 process: its kernel took %d LWP threshold interrupts, %s of them '
            'unclaimed' % (l2.get('LWP', 0), l2.get('LWU', '?')))
    if latitude:
        # Late interrupts may come after their thread exited: unclaimed.
        report(l2.get('LWP', 0) > 0, what + ' (unclaimed ones allowed in latitude mode)')
    else:
        report(l2.get('LWP', 0) > 0 and l2.get('LWU') == 0,
               what + ' (an interrupt of L1 or of another guest would be)')
    # L1: its own process, and its kernel's counts over the run.
    body = guest_lines(texts, 'L1 dual| ')
    for l in body:
        if l.startswith(('PASS: ', 'FAIL: ', 'note: ', 'SUMMARY: ', 'THREAD-ISOLATION:')):
            print('  L1 dual| ' + l)
    fails = [l for l in body if l.startswith('FAIL: ')]
    passes = sum(1 for l in body if l.startswith('PASS: '))
    rc1 = re.search(r' rc=(\S+)', end).group(1) if end else None
    report(rc1 == '0' and passes > 0 and not fails,
           'L1 process beside the L2 guest: ran to the end, status %s, %d checks passed, '
           '%d failed%s' % (rc1, passes, len(fails), ': ' + ' | '.join(fails[:3]) if fails else ''))
    i0, i1 = lwp_irqs(begin), lwp_irqs(end or '')
    d = {k: i1.get(k, 0) - i0.get(k, 0) for k in ('LWP:', 'LWU:', 'LWG:')}
    report(bool(i1) and (latitude or d['LWU:'] == 0) and d['LWG:'] > 0 and
           d['LWP:'] > d['LWG:'],
           "L1's kernel: %d LWP threshold interrupts during the run, %d passed to KVM for the "
           "L2 guest (LWG), %d to its own process, %d unclaimed (LWU%s)"
           % (d['LWP:'], d['LWG:'], d['LWP:'] - d['LWG:'] - d['LWU:'], d['LWU:'],
              ', allowed in latitude mode' if latitude else ''))
    if args.dual_idle:
        judge_idle(lines)
    if t_end is not None:
        print('TIMING: L1 process and L2 guest profiling at once %.1f s' % (t_end - t_begin))


def judge_idle(lines):
    """The bystander L2 guest: busy, never using LWP, beside the profilers."""
    texts = [l for _, l in lines]
    _, spin = first(lines, '@@DUAL-IDLE-SPINNING ')
    _, stop = first(lines, '@@DUAL-IDLE-STOP ')
    out = guest_lines(texts, 'L2 idle| ')
    report(spin is not None and spin.endswith(' 1') and stop is not None and
           stop.endswith('alive: yes'),
           'bystander L2 guest: busy from before the L1 process started profiling until both '
           'profilers ended')
    trouble = [l for l in out if run_linux.KERNEL_TROUBLE.search(l)]
    counts = {}
    for l in out:
        m = re.match(r'\s*(LW[PUG]):((?:\s+\d+)+)', l)
        if m:
            counts[m.group(1)] = sum(int(x) for x in m.group(2).split())
    rc = next((l.split()[1] for l in out if l.startswith('@@rc ')), None)
    report('@@END spin rc=0' in out and any(l.startswith('@@DONE') for l in out) and
           rc == '0' and not trouble and 'LWP' in counts,
           'bystander L2 guest: spun until told to stop, powered off (QEMU status %s)%s'
           % (rc, ': ' + trouble[0] if trouble else ''))
    report(counts.get('LWP') == 0,
           'bystander L2 guest: its kernel took %s LWP threshold interrupts (none of them '
           "can be its own: an L1 process's or the other guest's given to it)"
           % counts.get('LWP', '?'))


def judge_migration(args, lines):
    texts = [l for _, l in lines]
    names = [] if args.migrate == 'none' else args.migrate.split(',')
    for name in names:
        if args.mig_diag == 'sync':
            judge_sync(name, texts)
        else:
            judge_migration_run(name, texts)


def guest_lines(texts, prefix):
    return [l[len(prefix):] for l in texts if l.startswith(prefix)]


def judge_migration_run(name, texts):
    for l in texts:
        if l.startswith('@@MIG-SKIP %s ' % name):
            skip('live migration of %s %s' % (name, l.split(' ', 2)[2]))
    begin = next((l for l in texts if l.startswith('@@MIG-BEGIN %s ' % name)), None)
    if begin is None:
        report(False, 'live migration of %s in L1: never started' % name)
        return
    mode = re.search(r'mode=(\w+)', begin).group(1)
    hops = int(re.search(r'hops=(\d+)', begin).group(1))
    end = next((l for l in texts if l.startswith('@@MIG-END %s ' % name)), '')
    outs = {}
    for l in texts:
        m = re.match(r'L2 mig %s (\d+)\| (.*)' % re.escape(name), l)
        if m:
            outs.setdefault(int(m.group(1)), []).append(m.group(2))
    done = 0
    for k in range(1, hops + 1):
        hop = next((l for l in texts if l.startswith('@@MIG-HOP %s %d ' % (name, k))), None)
        if hop is None:
            report(False, '%s: live migration %d (QEMU %d -> %d) never happened' % (name, k, k - 1, k))
            break
        st = re.search(r'status=(\S+)', hop).group(1)
        tt = re.search(r'total_time:_(\S+)_ms', hop)
        dt = re.search(r'downtime:_(\S+)_ms', hop)
        src = outs.get(k - 1, [])
        accels = (re.search(r'accels=(\S+)', begin).group(1).split(',') + ['kvm'] * 99)
        report(st == 'completed' and not any(l.startswith('SUMMARY') for l in src),
               '%s: live migration %d in L1, QEMU %d (%s) -> %d (%s) (%s guest, running with %d '
               'progress lines): %s, total %s ms, downtime %s ms'
               % (name, k, k - 1, accels[k - 1], k, accels[k], mode,
                  sum(1 for l in src if l.startswith('progress')), st,
                  tt.group(1) if tt else '?', dt.group(1) if dt else '?'))
        if st != 'completed':
            break
        done += 1
    last = int(re.search(r'last=(\d+)', end).group(1)) if end else None
    rc = re.search(r' rc=(\S+)', end).group(1) if end else None
    report(done == hops and last == hops and
           all(any(l.startswith('progress') for l in outs.get(k, [])) for k in range(1, hops + 1)),
           '%s: the guest made progress on each of the %d destinations' % (name, hops))
    final = outs.get(last, []) if last is not None else []
    both = [l for k in sorted(outs) for l in outs[k]]
    want = 'SUMMARY: 5 tests, 0 failures' if mode == 'lwp' else 'SUMMARY: 2 tests, 0 failures'
    for l in final:
        if l.startswith(('PASS', 'FAIL', 'SUMMARY')):
            print('  guest: ' + l)
    report(rc == '1' and any(l.startswith(want) for l in final) and
           not any(l.startswith('FAIL') for l in both),
           "%s: the last destination's guest passed after the key press (%s; qemu exit status %s)"
           % (name, 'LWP record stream continuous across %d migrations' % hops if mode == 'lwp'
              else 'run without LWP', rc))


def judge_sync(name, texts):
    end = next((l for l in texts if l.startswith('@@SYNC-END %s ' % name)), '')
    out = guest_lines(texts, 'L2 sync %s| ' % name)
    for l in out:
        if l.startswith(('PASS', 'FAIL', 'SUMMARY')):
            print('  guest: ' + l)
    report('rc=1 ' in end + ' ' and any(l.startswith('SUMMARY: 5 tests, 0 failures') for l in out)
           and not any(l.startswith('FAIL') for l in out),
           "%s: a state sync with KVM (HMP info registers) in the middle of profiling "
           "changes nothing" % name)


def timing(lines, build, l0, total):
    t_init, _ = first(lines, '@@L1-INIT')
    t_kernel = next((t for t, l in lines if l.startswith('[')), None)
    t_kvm, _ = first(lines, '@@L1-KVM')
    print('TIMING: image build/check %.1f s' % build)
    if t_kernel is not None:
        print('TIMING: L0 start to first kernel line %.1f s' % t_kernel)
    if t_init is not None:
        print('TIMING: L0 start to L1 /init %.1f s' % t_init)
    if t_kvm is not None:
        print('TIMING: L0 start to /dev/kvm ready %.1f s' % t_kvm)
    begins = {}
    for t, l in lines:
        m = re.match(r'@@(L2|MIG|SYNC|LINUX)-(BEGIN|END) (\S+)', l)
        if m:
            key = (m.group(1), m.group(3))
            if m.group(2) == 'BEGIN':
                begins[key] = t
            elif key in begins:
                print('TIMING: %s %s %.1f s' % ({'L2': 'L2 test', 'MIG': 'migration run',
                                                  'SYNC': 'sync run',
                                                  'LINUX': 'L2 Linux guest'}[m.group(1)],
                                                 key[1], t - begins[key]))
    print('TIMING: L0 run %.1f s, total %.1f s' % (l0, total))
    if skipped:
        print('# %d skipped' % skipped)


if __name__ == '__main__':
    main()
