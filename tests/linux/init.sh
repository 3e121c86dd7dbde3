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
#                      guest, whose LWP interrupt count must stay 0);
#                      suspend:N: 'lwp-linux-threads N 0' profiles while
#                      the system suspends to RAM and the harness wakes
#                      it (run_linux.py --wake-on-suspend 1), then is
#                      stopped once it made
#                      progress after the resume)
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

# suspend_run N: N LWP threads (lwp-linux-threads N 0, until 'q' on its
# standard input) profile before, across and after a suspend to RAM.  At
# resume the processor's LWP_CFG is back at its reset value 0 (LWP
# unavailable): unless the kernel programs it again, the threads that run
# on that CPU lose their events and their counts are no longer exact.
progress() { n=$(grep -c '^progress: ' /tmp/suspend.out); echo "${n:-0}"; }
wait_progress() {   # wait_progress N: until more than N progress lines
    i=0
    while [ "$(progress)" -le "$1" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 1500 ]; do
        sleep 0.2; i=$((i + 1))
    done
    [ "$(progress)" -gt "$1" ]
}
suspend_run() {
    rm -f /tmp/suspend.in
    mkfifo /tmp/suspend.in
    sleep 100000 <>/tmp/suspend.in &
    holder=$!
    /tests/lwp-linux-threads "$1" 0 </tmp/suspend.in >/tmp/suspend.out 2>&1 &
    pid=$!
    wait_progress 0
    before=$(progress)
    ok=1
    # The harness wakes the guest once it is in S3 (run_linux.py
    # --wake-on-suspend: QMP system_wakeup at the SUSPEND event), so no
    # timer races the suspend however slow the machine is.
    if echo mem >/sys/power/state; then
        echo "PASS: suspend: writing 'mem' to /sys/power/state succeeded (the guest was woken)"
    else
        echo "FAIL: suspend: writing 'mem' to /sys/power/state failed"; ok=0
    fi
    entry=$(dmesg | grep -c 'PM: suspend entry (deep)')
    resumed=$(dmesg | grep -c 'PM: suspend exit')
    if [ "$entry" = 1 ] && [ "$resumed" = 1 ]; then
        echo "PASS: suspend: the kernel went the way of S3 and back (dmesg: one 'PM: suspend entry (deep)', one 'PM: suspend exit')"
    else
        echo "FAIL: suspend: the kernel suspended to RAM and resumed ($entry suspend entries (deep), $resumed exits)"
        ok=0
    fi
    at_resume=$(progress)
    if wait_progress "$at_resume"; then
        echo "PASS: suspend: the threads drained records before ($before progress lines) and after the resume ($at_resume -> $(progress))"
    else
        echo "FAIL: suspend: the threads drained records before ($before progress lines) and after the resume ($at_resume -> $(progress))"
        ok=0
    fi
    echo q >>/tmp/suspend.in
    i=0
    while kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
    kill -0 $pid 2>/dev/null && { echo "FAIL: suspend: lwp-linux-threads did not stop in 120 s"; kill -9 $pid; ok=0; }
    wait $pid
    rc=$?
    kill $holder
    grep -v '^progress: ' /tmp/suspend.out
    [ $ok = 1 ] && return $rc
    return 1
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
    threads-late) prog="/tests/lwp-linux-threads -l";;
    exited-owner) prog="/tests/lwp-linux-abi --exited-owner";;
    kselftest) prog=/tests/lwp_64;;
    kselftest32) prog=/tests/lwp_32;;
    spin) prog=spin;;
    suspend) prog=suspend_run;;
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
