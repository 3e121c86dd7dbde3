#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Mutation campaign over the LWP core and glue: single-point bugs, each
applied alone, built, and run against the tests that should catch it.

    tests/mutation/run-mutants.py [--core-only] [NAME...]

A core mutant is judged by the unit tests and the fuzz targets (10 s each);
a glue mutant rebuilds QEMU and runs the guest and user tests named with it.
It prints KILLED/SURVIVED per mutant and the kill rate.  The tree is
restored after each mutant (and on interrupt).  Not part of the test
command: a developer's tool, run before a release (docs/lwp.rst,
"Guarantees").
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LWP = os.path.join(ROOT, 'build', 'lwp')
QEMU = os.path.join(ROOT, 'build', 'qemu')
CORE = 'target-i386-lwp/core/'
GLUE = 'target-i386-lwp/glue/'

# name, file, original text, mutated text, [guest/user tests for glue]
MUTANTS = [
    ('cfg-ignore-bit0-not', CORE + 'lwp_msr.cc', '0xFFFF000000000001ull', '0xFFFF000000000000ull'),
    ('cfg-features-gp-off', CORE + 'lwp_msr.cc',
     'return !(value & kCfgFeatureBits & ~static_cast<uint64_t>(caps->features));', 'return true;'),
    ('cbaddr-nonzero-ok', CORE + 'lwp_msr.cc', '    if (value) {\n        return false;',
     '    if (value == 1) {\n        return false;'),
    ('llwpcb-no-cb-writecheck', CORE + 'lwp_instructions.cc',
     'if (!access.check_writable(cbaddr, len)) {', 'if (false) {'),
    ('llwpcb-min-size', CORE + 'lwp_instructions.cc', 'size < min_buffer_bytes(caps)',
     'size < min_buffer_bytes(caps) / 2'),
    ('interval-min', CORE + 'lwpcb.cc', 'id == LWP_EVENT_VAL ? 0 : LWP_MIN_HW_INTERVAL',
     'id == LWP_EVENT_VAL ? 0 : LWP_MIN_HW_INTERVAL - 1'),
    ('field-sign', CORE + 'lwpcb.cc', 'return static_cast<int32_t>(raw << 6) >> 6;',
     'return static_cast<int32_t>(raw & 0x3ffffff);'),
    ('ring-wrap', CORE + 'lwp_ring.cc', 'const uint32_t next = (st.head + LWP_RECORD_SIZE) % st.buffer_size;',
     'const uint32_t next = st.head + LWP_RECORD_SIZE;'),
    # Equivalent: the space used never reaches BufferSize (a full ring keeps
    # one slot free), so a threshold equal to it never interrupts either way.
    ('ring-threshold-le', CORE + 'lwp_ring.cc', 'st.threshold <= st.buffer_size &&',
     'st.threshold < st.buffer_size &&'),
    ('ring-missed-not-counted', CORE + 'lwp_ring.cc', 'missed_events + 1)', 'missed_events)'),
    ('ring-full-no-reread', CORE + 'lwp_ring.cc',
     '        if (!reread_tail(st, access)) {\n            return false;\n        }\n        tail_fresh = true;',
     '        tail_fresh = false;'),
    ('xrstor-head-clamp', CORE + 'lwp_xsave.cc', 'next.head = head > size - LWP_RECORD_SIZE',
     'next.head = head > size'),
    ('xrstor-cpl-check', CORE + 'lwp_xsave.cc', 'if (env->cpl != 0 && !restored_addresses_ok(*env, next)) {',
     'if (false) {'),
    ('state-check-head', CORE + 'lwp_state_check.cc', 's->head >= s->buffer_size', 's->head > s->buffer_size'),
    # Glue: the two blind spots of issue 15 and the fixes of this branch.
    ('ud-keyed-on-osxsave', GLUE + 'lwp-tcg.c', 'if (!(env->xcr0 & XSTATE_LWP_MASK)) {',
     'if (!(env->cr[4] & CR4_OSXSAVE_MASK)) {', ['lwp-insn-64', 'lwp-insn-32']),
    ('data2-not-truncated', GLUE + 'lwp-emit.c.inc',
     'tcg_gen_ext_tl(data2, cpu_regs[decode->op[0].n], decode->op[0].ot);',
     'tcg_gen_mov_tl(data2, cpu_regs[decode->op[0].n]);', ['lwp-insn-64']),
    ('irq-illegal-vector-delivered', 'hw/intc/apic-lwp.c.inc', 'if (vector < 16) {', 'if (vector < 1) {',
     ['lwp-insn-64', 'lwp-insn-32']),
    ('icount-no-io', GLUE + 'lwp-emit.c.inc', 'translator_io_start(&s->base);', '',
     ['demo-lwp-icount-64']),
]


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def core_killed():
    if run(['ninja', '-C', LWP, 'tests/unit/lwp-unit-tests', 'tests/fuzz/fuzz_llwpcb']).returncode:
        return True, 'build failed'
    if run([os.path.join(LWP, 'tests/unit/lwp-unit-tests')]).returncode:
        return True, 'unit tests'
    env = dict(os.environ, LWP_FUZZ_SECONDS='10')
    for t in ('fuzz_llwpcb', 'fuzz_xrstor', 'fuzz_migration'):
        if run(['ninja', '-C', LWP, 'tests/fuzz/' + t]).returncode:
            return True, 'build failed'
        r = run(['sh', os.path.join(ROOT, 'tests/fuzz/run-fuzzer.sh'),
                 os.path.join(LWP, 'tests/fuzz', t),
                 os.path.join(ROOT, 'tests/fuzz/corpus', t), '10'], env=env)
        if r.returncode:
            return True, t
    return False, ''


def glue_killed(tests):
    r = run(['ninja', '-C', os.path.join(ROOT, 'build', 'qemu'),
             'qemu-system-x86_64', 'qemu-x86_64', 'qemu-i386'])
    if r.returncode:
        return True, 'build failed'
    r = run(['meson', 'test', '-C', LWP, '--no-rebuild'] + tests)
    return r.returncode != 0, ' '.join(tests) if r.returncode else ''


def main():
    names = [a for a in sys.argv[1:] if not a.startswith('--')]
    core_only = '--core-only' in sys.argv
    killed = total = 0
    for m in MUTANTS:
        name, path, old, new = m[:4]
        glue = len(m) > 4
        if (names and name not in names) or (core_only and glue):
            continue
        full = os.path.join(ROOT, path)
        text = open(full).read()
        if text.count(old) != 1:
            print('SKIP: %s: the original text is not found once in %s' % (name, path))
            continue
        try:
            open(full, 'w').write(text.replace(old, new))
            dead, by = glue_killed(m[4]) if glue else core_killed()
        finally:
            open(full, 'w').write(text)
        total += 1
        killed += dead
        print('%s: %s%s' % ('KILLED' if dead else 'SURVIVED', name, ' (by %s)' % by if dead else ''),
              flush=True)
    if run(['ninja', '-C', LWP]).returncode:
        print('warning: rebuilding the restored tree failed')
    print('kill rate: %d of %d' % (killed, total))
    return 0


if __name__ == '__main__':
    sys.exit(main())
