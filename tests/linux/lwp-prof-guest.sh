#!/bin/sh
# shellcheck shell=dash
# SPDX-License-Identifier: GPL-2.0-or-later
# lwptests=prof of the Linux guest (tests/linux/init.sh): lwp-prof
# (docs/lwp-prof.rst) runs on the guest's own LWP -- no emulator: the CPU
# has LWP, so `record` runs the program directly -- and drains each
# thread's ring at LWP's threshold interrupt, which the kernel delivers as
# the signal each thread asked for (lwp-prof's preload opts every thread in
# with arch_prctl(ARCH_LWP_SET_SIGNAL): Documentation/x86/lwp.rst).
# Both `record` and `report` run here, on the binaries and shared libraries
# make-initramfs.sh copied in; tests/linux/run_linux.py judges the output:
#
#   @@PROF name          a profile: name is proportions (the 60/30/10
#                        program, checked exactly) or xz (a real program)
#   @@LWP-IRQ N          threshold interrupts so far (/proc/interrupts)
#   @@RECORD rc=N T0 T1  lwp-prof record's exit status, start and end
#                        (seconds of /proc/uptime)
#   @@REPORT ... @@CSV   `lwp-prof report` (header and the top rows)
#   @@CSV ... @@ENDPROF  `lwp-prof report --csv --limit 0`
set -u
T=/tests

lwp_irqs() {
    awk '$1 == "LWP:" { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s }' \
        /proc/interrupts
}

# profile NAME SIGNAL RECORD-OPTIONS... -- PROGRAM ARGS...
profile() {
    name=$1 sig=$2
    shift 2
    echo "@@PROF $name"
    echo "@@LWP-IRQ $(lwp_irqs)"
    t0=$(cut -d' ' -f1 /proc/uptime)
    $T/lwp-prof record --threshold-signal "$sig" -o /tmp/"$name".prof "$@"
    echo "@@RECORD rc=$? $t0 $(cut -d' ' -f1 /proc/uptime)"
    echo "@@LWP-IRQ $(lwp_irqs)"
    echo "@@REPORT"
    $T/lwp-prof report --limit 8 /tmp/"$name".prof
    echo "@@CSV"
    $T/lwp-prof report --csv --limit 0 /tmp/"$name".prof
    echo "@@ENDPROF"
}

# xz's input: 590 kB of text, compressed at -3 in one thread.
seq 1 100000 >/tmp/numbers.txt
# 5 x 10^7 instructions, a sample every 4096: about 12,200 samples; a
# threshold (half of a 1024-record ring) every 512.
# Any signal will do: a real-time one here, SIGIO (no longer implied) for xz.
profile proportions SIGRTMIN+1 -e ire -i 4095 --ring 1024 -- $T/proportions serial
profile xz SIGIO -e ire -i 4095 --ring 1024 -- $T/xz -T1 -3 -k -f /tmp/numbers.txt
