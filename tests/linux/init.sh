#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: GPL-2.0-or-later
# /init of the Linux guest of the `linux` suite (tests/linux/make-initramfs.sh
# packs it with busybox and the test programs; tests/linux/run_linux.py boots
# it and reads the serial console).
#
# Kernel command line:
#   lwptests=a,b,...   programs of /tests to run, in order; arguments after
#                      colons: threads:4:1500 runs 'lwp-linux-threads 4 1500';
#                      threads:4:0 runs until the harness sends a BREAK
#                      (or 'q') on the console, the program's standard input
#                      (names without the lwp-linux- prefix; msvc is
#                      lwp-msvc-port, whose output the harness compares)
#                      prof runs lwp-prof-guest.sh: lwp-prof record and
#                      report, drained at the threshold interrupt;
#                      mixed:B:N:R runs 'lwp-linux-threads -b B N R': N LWP
#                      threads beside B processes that never use LWP;
#                      mixed-late:B:N:R the same under QEMU's latitude
#                      mode (-l: late drains, MissedEvents accounted);
#                      kselftest, kselftest32: the kernel's selftest
#                      tools/testing/selftests/x86/lwp.c, 64- and 32-bit;
#                      spin: a busy loop that never uses LWP, until a line
#                      on the console (tests/kvm/l1-init.sh's bystander
#                      guest, whose LWP interrupt count must stay 0))
#
# Lines for the harness: '@@RUN name', the program's output, '@@END name rc=N',
# '@@DMESG-LWP' then the kernel's LWP lines, '@@DONE'.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
echo "@@UP $(cut -d' ' -f1 /proc/uptime)"

TESTS=
for w in $(cat /proc/cmdline); do
    case $w in
    lwptests=*) TESTS=$(echo "${w#*=}" | tr , ' ');;
    esac
done

# spin: keep a CPU busy in user mode, without LWP, until a line arrives.
spin() {
    (while :; do :; done) &
    spinner=$!
    echo "spinning"
    read -r line
    kill $spinner
    wait $spinner 2>/dev/null
    echo "stopped by '$line'"
}

for t in $TESTS; do
    name=${t%%:*}
    args=
    [ "$name" = "$t" ] || args=$(echo "${t#*:}" | tr : ' ')
    case $name in
    msvc) prog=/tests/lwp-msvc-port;;
    prof) prog=/tests/lwp-prof-guest.sh;;
    mixed) prog="/tests/lwp-linux-threads -b";;
    mixed-late) prog="/tests/lwp-linux-threads -l -b";;
    kselftest) prog=/tests/lwp_64;;
    kselftest32) prog=/tests/lwp_32;;
    spin) prog=spin;;
    *) prog=/tests/lwp-linux-$name;;
    esac
    echo "@@RUN $name"
    # shellcheck disable=SC2086 # prog and args are words
    $prog $args
    echo "@@END $name rc=$?"
done

echo "@@DMESG-LWP"
dmesg | grep -E "x86/fpu|x86/lwp"
grep -E "^ *(LWP|LWU):" /proc/interrupts
echo "@@DONE $(cut -d' ' -f1 /proc/uptime)"
poweroff -f
