#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /init of the L1 initramfs of the nested test (scripts/build-nested-image.sh
# packs it; tests/kvm/run-nested.py boots it under TCG and reads the serial
# console).  Loads the KVM modules, then runs the guest test images (L2) with
# our qemu-system-x86_64 -accel kvm -cpu host and live-migrates
# tests/guest/lwp-migrate between L1 QEMU processes.
#
# Kernel command line (all optional):
#   l1tests=a,b,...   guest images of /tests to run (without .img);
#                     IMAGE@k=v@k2=v2 passes -append 'k=v k2=v2'
#   l1mig=A,B,...     guest images to migrate ('none': no migration)
#   l1hops=N          live migrations of each (QEMU 0 -> 1 -> ... -> N)
#   l1accels=a,b,...  accelerator of QEMU 0, 1, ... (kvm, the default, with
#                     -cpu host; tcg with -cpu l1tcgcpu, default Opteron_G5-v2)
#   l1lwp=auto|force  auto: tests needing LWP are skipped when KVM does not
#                     offer LWP to -cpu host; force: run them anyway
#   l1timeout=SECS    limit for each L2 run
#   l1migdiag=1       HMP 'info registers' (LWP lines) of the source before
#                     and of the destination after the migration
#   l1migdiag=sync    instead of the migration: one guest, 'info registers'
#                     in the middle of its run (a KVM state sync), then the key
#   l1ipf=0|1         -append ipf=N of lwp-events (1 when L0's CPU has lwpipf)
#   l1linux=a,b,...   lwptests= of the LWP Linux guest (/linux/, tests/linux)
#                     booted as L2 with -cpu host after the guest images
#                     ('none', the default: not booted)
#   l1dual=a:b:...    L1's own process and an L2 guest profile at once (an
#                     L1 kernel with LWP support of its own, e.g. the
#                     project's): /l1/lwp-linux-threads with these
#                     arguments (rounds 0: until 'q' on its standard input)
#                     runs in L1 while the LWP Linux guest profiles as L2
#                     (-smp 2, lwptests=l1dualguest, which must run until
#                     'q' on the console too, e.g. threads:4:0)
#                     ('none', the default: not run)
#   l1dualguest=a,b   lwptests= of that L2 guest (default threads:4:0)
#   l1dualwait=SECS   limit of each wait for the profilers' progress (default
#                     l1timeout)
#   l1dualidle=1      a second L2 Linux guest (lwptests=spin: busy, never
#                     using LWP) runs beside them while both profile; its
#                     kernel must count no LWP interrupt at all
#   l1kst=a,b,...     KVM selftests of /kselftest/kvm/ (built from the
#                     patched tree, tests/kvm/build-kvm-selftests.sh) to run
#                     in L1 after everything else ('none', the default: none)
#
# Lines for the harness:  'L1: ...' information, 'L2 NAME| ...' what an L2
# guest printed, '@@...' machine-readable markers (see run-nested.py).
/bin/busybox --install -s /bin
export PATH=/bin:/usr/local/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
ifconfig lo 127.0.0.1 up

QEMU=/usr/local/bin/qemu-system-x86_64
TESTS=smoke-64
MIG=lwp-migrate-64
LWPMODE=auto
T=600
IPF=0
DIAG=0
HOPS=2
ACCELS=kvm
TCGCPU=Opteron_G5-v2
LINUXTESTS=none
DUAL=none
DUALGUEST=threads:4:0
DUALIDLE=0
DUALWAIT=
KST=none
for w in $(cat /proc/cmdline); do
    case $w in
    l1tests=*) TESTS=$(echo "${w#*=}" | tr , ' ');;
    l1mig=*) MIG=$(echo "${w#*=}" | tr , ' ');;
    l1hops=*) HOPS=${w#*=};;
    l1accels=*) ACCELS=${w#*=};;
    l1tcgcpu=*) TCGCPU=${w#*=};;
    l1lwp=*) LWPMODE=${w#*=};;
    l1timeout=*) T=${w#*=};;
    l1ipf=*) IPF=${w#*=};;
    l1migdiag=*) DIAG=${w#*=};;
    l1linux=*) LINUXTESTS=${w#*=};;
    l1dual=*) DUAL=${w#*=};;
    l1dualguest=*) DUALGUEST=${w#*=};;
    l1dualidle=*) DUALIDLE=${w#*=};;
    l1dualwait=*) DUALWAIT=${w#*=};;
    l1kst=*) KST=$(echo "${w#*=}" | tr , ' ');;
    esac
done

[ "$TESTS" = none ] && TESTS=
[ -n "$DUALWAIT" ] || DUALWAIT=$T
say() { echo "L1: $*"; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
up() { cut -d' ' -f1 /proc/uptime; }
finish() {
    echo "@@L1-DONE uptime=$(up)"
    sync
    poweroff -f
    sleep 5
    echo o >/proc/sysrq-trigger
}

echo "@@L1-INIT uptime=$(up)"
say "kernel $(uname -r), $(nproc) CPU, $(free -m | awk '/Mem:/ {print $2}') MiB"
sed 's/^/L1: image: /' /etc/nested-image
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
say "cpuinfo lwp: $(grep -o -w lwp /proc/cpuinfo | head -n1)"
say "cpuinfo svm: $(grep -o -w -E 'svm|npt|nrip_save|vgif|xsave' /proc/cpuinfo | sort -u | tr '\n' ' ')"

# --- KVM ------------------------------------------------------------------------
KVER=$(uname -r)
while read -r name src sum; do
    if insmod "/lib/modules/$KVER/$name.ko" 2>/tmp/insmod.err; then
        say "insmod $name.ko ($src, sha256 $sum): ok"
    else
        say "insmod $name.ko ($src, sha256 $sum): FAILED: $(cat /tmp/insmod.err)"
    fi
done </lib/modules/load-order
dmesg | grep -i -E 'kvm|svm|lwp' | sed 's/^/L1: dmesg: /'
if [ ! -c /dev/kvm ]; then
    say "no /dev/kvm"
    echo "@@L1-NOKVM L1 kernel has no /dev/kvm: nested SVM unavailable"
    finish
fi
say "/dev/kvm present"
echo "@@L1-KVM"

# Does KVM offer LWP to -cpu host?  (enforce makes a missing flag an error)
if echo quit | timeout 120 $QEMU -M pc -accel kvm -cpu host,+lwp,enforce -m 16 -nodefaults \
        -display none -S -monitor stdio >/tmp/probe.out 2>&1; then
    HAVE_LWP=1
    echo "@@L1-LWP yes"
else
    HAVE_LWP=0
    grep -v '^(qemu)\|^QEMU .* monitor' /tmp/probe.out | sed 's/^/L1: probe: /'
    echo "@@L1-LWP no"
fi

needs_lwp() {
    case $1 in
    lwp-absent-*|smoke-*|*nolwp=1*) return 1;;
    *) return 0;;
    esac
}

# --- the L2 tests, each the way tests/guest/run_guest.py runs it ------------------
for name in $TESTS; do
    # IMAGE@k=v@k2=v2 runs IMAGE with -append 'k=v k2=v2'.
    img=/tests/${name%%@*}.img
    cpu=host
    set --
    case $name in
    *@*) set -- -append "$(echo "${name#*@}" | tr @ ' ')";;
    # KVM intercepts and emulates CPUID: it never retires in the guest.
    lwp-events-*) set -- -append "ipf=$IPF cpuid_exits=1";;
    # The CPU (L0's) decodes as its own features say, not L2's CPUID.
    lwp-absent-*) set -- -append "hw_decoder=1";;
    esac
    case $name in lwp-absent-*) cpu=host,-lwp;; esac
    if [ ! -f "$img" ]; then
        echo "@@L2-SKIP $name no image $img"
        continue
    fi
    if needs_lwp "$name" && [ $HAVE_LWP = 0 ] && [ "$LWPMODE" != force ]; then
        echo "@@L2-SKIP $name KVM in L1 does not offer lwp to -cpu host"
        continue
    fi
    echo "@@L2-BEGIN $name cpu=$cpu uptime=$(up) $*"
    { timeout -s KILL "$T" $QEMU -M pc -accel kvm -cpu $cpu -m 256 \
          -nodefaults -display none -no-reboot -serial none \
          -chardev stdio,id=dbg,signal=off -device isa-debugcon,chardev=dbg \
          -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
          -kernel "$img" "$@" </dev/null 2>&1
      echo "@@rc $?"; } | sed "s/^/L2 $name| /"
    echo "@@L2-END $name uptime=$(up)"
done

# --- the LWP Linux guest as L2, the way tests/linux/run_linux.py boots it ---------
if [ "$LINUXTESTS" != none ]; then
    if [ ! -f /linux/bzImage ] || [ ! -f /linux/initramfs.cpio.gz ]; then
        echo "@@LINUX-SKIP no /linux/bzImage and initramfs.cpio.gz in the image"
    elif [ $HAVE_LWP = 0 ] && [ "$LWPMODE" != force ]; then
        echo "@@LINUX-SKIP KVM in L1 does not offer lwp to -cpu host"
    else
        echo "@@LINUX-BEGIN bzImage cpu=host uptime=$(up)"
        # The guest's console lines end in CR LF: no CR in the relayed lines.
        { timeout -s KILL "$T" $QEMU -M pc -accel kvm -cpu host -smp 1 -m 256 \
              -nodefaults -display none -no-reboot -serial stdio \
              -kernel /linux/bzImage -initrd /linux/initramfs.cpio.gz \
              -append "console=ttyS0 panic=-1 oops=panic loglevel=5 no_timer_check lwptests=$LINUXTESTS" \
              </dev/null 2>&1
          echo "@@rc $?"; } | tr -d '\r' | sed "s/^/L2 linux| /"
        echo "@@LINUX-END bzImage uptime=$(up)"
    fi
fi

# --- both halves in one kernel: L1's own process and an L2 guest profile --------
# Both programs run until told to stop, so that they overlap however fast
# or loaded the machine is: the guest (A) boots and profiles first, then
# the bystander guest (B) spins, then L1's own process profiles; only once
# each has drained records while the other was profiling is A stopped, then
# L1's process, then B.  Both check their records exactly.
# L1's one CPU runs L1's profiler, A's two vCPUs and B's at once: RCU stall
# warnings in the guests tell of that overcommit, not of a bug, and their
# Call Trace would read as a kernel failure.  no_timer_check: the boot's
# check that the timer ticks while a TSC-timed delay passes fails whenever
# L1 is not scheduled during it ("IO-APIC + timer doesn't work!", a panic).
OVERCOMMIT="rcupdate.rcu_cpu_stall_suppress=1 no_timer_check"
lwp_irqs() {    # the LWP lines of /proc/interrupts, one line
    grep -E '^ *LW[PUG]:' /proc/interrupts | awk '{ printf "%s %s ", $1, $2 }'
}
progress() {    # progress FILE: how many progress lines the program printed
    local n
    n=$(grep -c 'progress: ' "$1" 2>/dev/null)
    echo "${n:-0}"      # (0 too before the file exists)
}
secs() { cut -d. -f1 /proc/uptime; }
# wait_more FILE N PID: until FILE has more than N progress lines, at most
# DUALWAIT seconds (by the clock: a loaded machine stretches a count of
# sleeps far beyond it)
wait_more() {
    local end=$(($(secs) + DUALWAIT))
    while [ "$(progress "$1")" -le "$2" ] && alive "$3" && [ "$(secs)" -lt $end ]; do
        sleep 0.2
    done
    [ "$(progress "$1")" -gt "$2" ]
}
fifo() {        # fifo NAME: a FIFO held open, so writers never block; sets HOLDER
    rm -f "$1"
    mkfifo "$1"
    sleep 100000 <>"$1" &
    HOLDER=$!
}
# l2_linux NAME SMP MEM LWPTESTS: the LWP Linux guest under KVM, its console
# on /tmp/NAME.in and /tmp/NAME.out, its firmware's debug console in
# /tmp/NAME.bios, HMP on the pipe /tmp/NAME.mon (answers in
# /tmp/NAME.hmp); sets HOLDER (of the input FIFO) and L2_PID.
l2_linux() {
    fifo "/tmp/$1.mon.in"
    DIAG_HOLDERS="$DIAG_HOLDERS $HOLDER"
    rm -f "/tmp/$1.mon.out"
    mkfifo "/tmp/$1.mon.out"
    cat <>"/tmp/$1.mon.out" >"/tmp/$1.hmp" &
    DIAG_HOLDERS="$DIAG_HOLDERS $!"
    fifo "/tmp/$1.in"
    # A little longer than the waits for its progress, so that l2_diag
    # finds it running.
    timeout -s KILL $((T + 120)) $QEMU -M pc -accel kvm -cpu host -smp "$2" -m "$3" \
        -nodefaults -display none -no-reboot -serial stdio \
        -chardev file,id=bios,path="/tmp/$1.bios" \
        -device isa-debugcon,iobase=0x402,chardev=bios \
        -chardev pipe,id=mon,path="/tmp/$1.mon" -mon chardev=mon \
        -kernel /linux/bzImage -initrd /linux/initramfs.cpio.gz \
        -append "console=ttyS0 panic=-1 oops=panic loglevel=5 $OVERCOMMIT lwptests=$4" \
        <"/tmp/$1.in" >"/tmp/$1.out" 2>&1 &
    L2_PID=$!
}
# l2_diag NAME PID: why guest NAME (PID: its QEMU, which busybox's timeout
# execs) makes no progress: where its vCPUs are (HMP, if the main loop
# still answers), where QEMU's threads wait in L1's kernel, the end of its
# firmware's log, of its console and of L1's kernel log.
l2_diag() {
    local t
    echo "@@DIAG $1: no progress at uptime $(up)"
    echo 'info cpus' >>"/tmp/$1.mon.in"
    echo 'info registers -a' >>"/tmp/$1.mon.in"
    t=0
    while [ "$(grep -c -E '^(RIP|EIP)=' "/tmp/$1.hmp")" -lt 2 ] && [ $t -lt 100 ]; do
        sleep 0.2; t=$((t + 1))
    done
    tr -cd '\11\12\40-\176' <"/tmp/$1.hmp" |
        grep -E '(CPU|RAX|RSI|R8 |RIP|EAX|EIP|CS |CR0|EFER|LWP)' | sed "s/^/L1: $1 diag: hmp: /"
    for t in /proc/$2/task/*; do
        [ -d "$t" ] || continue
        echo "L1: $1 diag: thread ${t##*/} $(cut -d' ' -f2,3 "$t/stat") wchan $(cat "$t/wchan")"
    done
    tail -n 15 "/tmp/$1.bios" | tr -cd '\11\12\40-\176' | sed "s/^/L1: $1 diag: bios: /"
    tail -n 15 "/tmp/$1.out" | tr -cd '\11\12\40-\176' | sed "s/^/L1: $1 diag: console: /"
    dmesg | tail -n 20 | sed "s/^/L1: $1 diag: dmesg: /"
}
if [ "$DUAL" != none ]; then
    if [ ! -x /l1/lwp-linux-threads ]; then
        echo "@@DUAL-SKIP no /l1/lwp-linux-threads in the image"
    elif [ ! -f /linux/bzImage ] || [ ! -f /linux/initramfs.cpio.gz ]; then
        echo "@@DUAL-SKIP no /linux/bzImage and initramfs.cpio.gz in the image"
    elif [ $HAVE_LWP = 0 ] && [ "$LWPMODE" != force ]; then
        echo "@@DUAL-SKIP KVM in L1 does not offer lwp to -cpu host"
    else
        echo "@@DUAL-BEGIN l1=$DUAL guest=$DUALGUEST uptime=$(up) irqs: $(lwp_irqs)"
        rm -f /tmp/a.out /tmp/b.out /tmp/dual.out
        # A: the profiling guest, on two vCPUs.
        l2_linux a 2 256 "$DUALGUEST"
        a_holder=$HOLDER
        a_pid=$L2_PID
        if ! wait_more /tmp/a.out 0 $a_pid; then
            # Where it hangs, then on without it (the waits below end at once).
            l2_diag a $a_pid
            kill -9 $a_pid 2>/dev/null
        fi
        echo "@@DUAL-GUEST-PROFILING uptime=$(up) $(progress /tmp/a.out) progress lines"
        # B: the bystander guest, busy in guest mode, LWP available, unused.
        b_pid=
        if [ "$DUALIDLE" = 1 ]; then
            l2_linux b 1 128 spin
            b_holder=$HOLDER
            b_pid=$L2_PID
            end=$(($(secs) + DUALWAIT))
            while ! grep -q '^spinning' /tmp/b.out && alive $b_pid && [ "$(secs)" -lt $end ]; do
                sleep 0.2
            done
            if ! grep -q '^spinning' /tmp/b.out; then
                l2_diag b $b_pid
                kill -9 $b_pid 2>/dev/null
            fi
            echo "@@DUAL-IDLE-SPINNING uptime=$(up) $(grep -c '^spinning' /tmp/b.out)"
        fi
        # L1's own process.
        fifo /tmp/dual.in
        dual_holder=$HOLDER
        # shellcheck disable=SC2046 # the arguments are words
        /l1/lwp-linux-threads $(echo "$DUAL" | tr : ' ') </tmp/dual.in >/tmp/dual.out 2>&1 &
        dual_pid=$!
        wait_more /tmp/dual.out 0 $dual_pid
        n_a=$(progress /tmp/a.out)
        n_l1=$(progress /tmp/dual.out)
        echo "@@DUAL-L1-PROFILING uptime=$(up) $n_l1 progress lines"
        # Both drain records while the other profiles.
        wait_more /tmp/a.out "$n_a" $a_pid && wait_more /tmp/dual.out "$n_l1" $dual_pid
        echo "@@DUAL-BOTH uptime=$(up) guest $n_a -> $(progress /tmp/a.out), L1 $n_l1 -> $(progress /tmp/dual.out) progress lines"
        echo q >>/tmp/a.in
        i=0
        while alive $a_pid && [ $i -lt $((T * 5)) ]; do sleep 0.2; i=$((i + 1)); done
        alive $a_pid && kill -9 $a_pid
        wait $a_pid
        echo "@@rc $?" >>/tmp/a.out
        echo "@@DUAL-GUEST-END uptime=$(up) L1 process alive: $(alive $dual_pid && echo yes || echo no)"
        echo q >>/tmp/dual.in
        i=0
        while alive $dual_pid && [ $i -lt $((T * 5)) ]; do sleep 0.2; i=$((i + 1)); done
        alive $dual_pid && kill -9 $dual_pid
        wait $dual_pid
        rc=$?
        if [ -n "$b_pid" ]; then
            echo "@@DUAL-IDLE-STOP uptime=$(up) alive: $(alive $b_pid && echo yes || echo no)"
            echo stop >>/tmp/b.in
            i=0
            while alive $b_pid && [ $i -lt $((T * 5)) ]; do sleep 0.2; i=$((i + 1)); done
            alive $b_pid && kill -9 $b_pid
            wait $b_pid
            echo "@@rc $?" >>/tmp/b.out
            kill $b_holder 2>/dev/null
        fi
        kill $a_holder $dual_holder $DIAG_HOLDERS 2>/dev/null
        tr -d '\r' </tmp/a.out | grep -v '^progress: ' | sed "s/^/L2 dual| /"
        [ -z "$b_pid" ] || tr -d '\r' </tmp/b.out | sed "s/^/L2 idle| /"
        grep -v '^progress: ' /tmp/dual.out | sed "s/^/L1 dual| /"
        echo "@@DUAL-END rc=$rc uptime=$(up) irqs: $(lwp_irqs)"
    fi
fi

# --- live migration between L1 QEMU processes ------------------------------------------
# Process k of a migration run is QEMU number k: it reads HMP commands from
# the FIFO /tmp/mK.in and writes HMP's answers to /tmp/mK.out (a pipe
# chardev), its guest's debug console goes to /tmp/mK.dbg.  Holder processes
# keep both FIFOs open read-write, so writing a command never blocks, even
# once that QEMU has gone.
count() { grep -c "$1" "$2" 2>/dev/null; }
hmp() {         # hmp WHO COMMAND...
    local who=$1; shift
    echo "$*" >>/tmp/$who.in
}
hmp_text() {    # HMP's answers of WHO, printable
    tr -cd '\11\12\40-\176' </tmp/$1.hmp
}
wait_text() {   # wait_text FILE PATTERN SECS PID: until FILE has PATTERN
    local i=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt $(($3 * 5)) ] || ! alive "$4"; then
            grep -q "$2" "$1" 2>/dev/null
            return
        fi
        sleep 0.2
    done
}
wait_text_n() { # wait_text_n FILE PATTERN N SECS: until PATTERN appears N times
    local i=0
    while [ "$(count "$2" "$1")" -lt "$3" ] && [ $i -lt $(($4 * 5)) ]; do
        sleep 0.2; i=$((i + 1))
    done
}
query() {       # query WHO COMMAND PATTERN SECS PID: repeat COMMAND until PATTERN
    local i=0
    while :; do
        hmp "$1" "$2"
        sleep 0.5
        hmp_text "$1" | grep -q "$3" && return 0
        i=$((i + 1))
        if [ $i -gt $(($4 * 2)) ] || ! alive "$5"; then
            return 1
        fi
    done
}
lwp_regs() {    # lwp_regs WHO WHEN: the LWP lines of HMP's 'info registers'
    local n
    n=$(hmp_text "$1" | grep -c '^LWP_CFG')
    hmp "$1" 'info registers'
    local i=0
    while [ "$(hmp_text "$1" | grep -c '^LWP_CFG')" -le "$n" ] && [ $i -lt 50 ]; do
        sleep 0.2; i=$((i + 1))
    done
    # The whole answer is there once HMP prompts again after it.
    while ! hmp_text "$1" | awk '/^LWP_CFG/ { s = 1; p = 0 } s && /\(qemu\)/ { p = 1 }
                                 END { exit !p }' && [ $i -lt 100 ]; do
        sleep 0.2; i=$((i + 1))
    done
    hmp_text "$1" | grep '^LWP' | tail -n3 | sed "s/^/L1: $1 LWP state $2: /"
}

HOLDERS=
start_qemu() {  # start_qemu K IMAGE APPEND [EXTRA...]: QEMU number K; sets QPID
    local k=$1 img=$2 append=$3
    shift 3
    rm -f /tmp/m$k.in /tmp/m$k.out /tmp/m$k.dbg /tmp/m$k.hmp /tmp/m$k.log
    mkfifo /tmp/m$k.in /tmp/m$k.out
    touch /tmp/m$k.dbg /tmp/m$k.hmp
    sleep 100000 <>/tmp/m$k.in &
    HOLDERS="$HOLDERS $!"
    cat <>/tmp/m$k.out >/tmp/m$k.hmp &
    HOLDERS="$HOLDERS $!"
    # QEMU k's accelerator: word k of l1accels (default kvm).
    local accel cpu=host
    accel=$(echo "$ACCELS" | tr , '\n' | sed -n "$((k + 1))p")
    [ -n "$accel" ] || accel=kvm
    [ "$accel" = tcg ] && cpu=$TCGCPU
    # With TCG among them, no kvmclock device (TCG has no such section):
    # machines before 5.2 create it only for a CPU with kvmclock.
    local machine=pc
    case ",$ACCELS," in
    *,tcg,*)
        machine=pc-i440fx-5.1
        [ "$accel" = kvm ] && cpu=host,-kvmclock;;
    esac
    # The device arguments of tests/migration/test_migration.py.
    $QEMU -M $machine -accel $accel -cpu $cpu -m 128 -nodefaults -display none -no-reboot \
        -serial none -chardev file,id=dbg,path=/tmp/m$k.dbg \
        -device isa-debugcon,chardev=dbg -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
        -kernel "$img" -append "$append" \
        -chardev pipe,id=mon,path=/tmp/m$k -mon chardev=mon "$@" >/tmp/m$k.log 2>&1 &
    QPID=$!
}

# mig_uri K in|out: the stream into QEMU K (-incoming), or out of its
# source (HMP migrate).  Over TCP on loopback; an L1 kernel without
# networking (the linux suite's, in nested-kvm-lwp-host) streams through a
# FIFO with exec: instead, which is still a live migration, only another
# transport.
mig_uri() {
    if [ -e /proc/net/tcp ]; then
        echo "tcp:127.0.0.1:$((4443 + $1))"
    elif [ "$2" = in ]; then
        rm -f /tmp/mig$1
        mkfifo /tmp/mig$1
        echo "exec:cat /tmp/mig$1"
    else
        echo "\"exec:cat >/tmp/mig$1\""
    fi
}

# migrate_run IMAGE: the guest profiles (iterations until a key press) on
# QEMU 0, is live-migrated to QEMU 1, 2, ... HOPS (mig_uri), each time once
# it has made progress on the new one; the last one gets the key.
migrate_run() {
    local name=$1 img=/tests/$1.img mode=lwp append="iterations=4000000000 " want=profiling
    local cur=0 k st pids rc n
    if [ ! -f "$img" ]; then
        echo "@@MIG-SKIP $name no image $img"; return
    fi
    if [ $HAVE_LWP = 0 ] && [ "$LWPMODE" != force ]; then
        # Still prove live migration of a KVM guest inside L1, without LWP.
        mode=nolwp
        append="iterations=4000000000 nolwp=1"
        want='running without LWP'
        echo "@@MIG-SKIP $name with LWP: KVM in L1 does not offer lwp to -cpu host (migrating the guest with nolwp=1 instead)"
    fi
    echo "@@MIG-BEGIN $name mode=$mode hops=$HOPS accels=$ACCELS uptime=$(up)"
    start_qemu 0 "$img" "$append"
    pids=$QPID
    eval "pid0=$QPID"
    st=started
    if ! wait_text /tmp/m0.dbg "$want" "$T" $QPID; then
        say "migration $name: the guest never printed '$want'"
        st=guest-failed
    elif ! wait_text /tmp/m0.dbg 'progress ' 120 $QPID; then
        say "migration $name: no progress line from the guest in 120 s"
        st=guest-failed
    fi
    k=1
    while [ $st = started -o $st = completed ] && [ $k -le $HOPS ]; do
        start_qemu $k "$img" "$append" -incoming "$(mig_uri $k in)"
        pids="$pids $QPID"
        eval "pid$k=$QPID"
        eval "src=\$pid$cur"
        if ! query m$k 'info status' 'inmigrate' 60 $QPID; then
            say "migration $name hop $k: QEMU $k is not waiting for the stream"
            st=destination-failed
            break
        fi
        [ "$DIAG" = 1 ] && lwp_regs m$cur "before hop $k"
        n=$(count progress /tmp/m$cur.dbg)
        echo "@@MIG-START $name $k uptime=$(up) progress=$n"
        hmp m$cur "migrate -d $(mig_uri $k out)"
        if query m$cur 'info migrate' 'Migration status: \(completed\|failed\|cancelled\)' "$T" $src; then
            st=$(hmp_text m$cur | grep -o 'Migration status: [a-z]*' | tail -n1 | sed 's/.*: //')
        else
            st=timeout
            alive $src || st=source-died
        fi
        echo "@@MIG-HOP $name $k status=$st uptime=$(up)" \
            "$(hmp_text m$cur | grep -E '^(total time|downtime): ' | tail -n2 | tr ' \n' '_ ')"
        [ $st = completed ] || break
        if ! query m$k 'info status' 'VM status: running' 60 $QPID; then
            say "migration $name hop $k: QEMU $k does not run the guest"
            st=not-running
            break
        fi
        [ "$DIAG" = 1 ] && lwp_regs m$k "after hop $k"
        # It must make progress on the new host before it moves on.
        wait_text /tmp/m$k.dbg 'progress ' 300 $QPID ||
            say "migration $name hop $k: no progress line from QEMU $k in 300 s"
        hmp m$cur quit
        cur=$k
        k=$((k + 1))
    done
    eval "last=\$pid$cur"
    if [ $st = completed ]; then
        echo "@@MIG-KEY $name $cur uptime=$(up) progress=$(count progress /tmp/m$cur.dbg)"
        hmp m$cur 'sendkey a'
        local i=0
        while alive $last && [ $i -lt $((T * 5)) ]; do sleep 0.2; i=$((i + 1)); done
    fi
    for p in $pids; do alive $p && kill -9 $p; done
    rc=-
    for p in $pids; do
        wait $p
        n=$?
        [ $p = "$last" ] && rc=$n
    done
    k=0
    while [ -f /tmp/m$k.dbg ]; do
        sed "s/^/L2 mig $name $k| /" /tmp/m$k.dbg
        sed "s/^/L1: QEMU $k: /" /tmp/m$k.log
        # What HMP said that matters (not the echo of the commands).
        hmp_text m$k | grep -v '^(qemu)\|^QEMU .* monitor' |
            grep -E 'status|time|downtime|transferred|throughput|rror|arn|LWP' |
            uniq | sed "s/^/L1 hmp $name $k| /"
        rm -f /tmp/m$k.*
        k=$((k + 1))
    done
    kill $HOLDERS 2>/dev/null
    HOLDERS=
    echo "@@MIG-END $name mode=$mode status=$st last=$cur rc=$rc uptime=$(up)"
}

# l1migdiag=sync: no migration; HMP 'info registers' (a state sync with KVM,
# which QEMU writes back before the vCPU runs again) in the middle of a run.
sync_check() {
    local name=$1 rc
    echo "@@SYNC-BEGIN $name uptime=$(up)"
    start_qemu 0 /tests/$name.img "iterations=4000000000 "
    wait_text /tmp/m0.dbg 'progress ' 120 $QPID
    lwp_regs m0 "after 1M iterations"
    wait_text_n /tmp/m0.dbg 'progress ' 3 120
    hmp m0 'sendkey a'
    local i=0
    while alive $QPID && [ $i -lt $((T * 5)) ]; do sleep 0.2; i=$((i + 1)); done
    alive $QPID && kill -9 $QPID
    wait $QPID
    rc=$?
    kill $HOLDERS 2>/dev/null
    HOLDERS=
    sed "s/^/L2 sync $name| /" /tmp/m0.dbg
    rm -f /tmp/m0.*
    echo "@@SYNC-END $name rc=$rc uptime=$(up)"
}

[ "$MIG" = none ] && MIG=
for name in $MIG; do
    if [ "$DIAG" = sync ]; then
        sync_check $name
    else
        migrate_run $name
    fi
done

# --- KVM selftests, with L1's KVM, their guests in L2 ---------------------------
# Each prints TAP-like lines of its own; its exit status is what counts
# (0 passed, 4 skipped as kselftest's KSFT_SKIP, anything else failed).
# Last, after the L2 guests: the selftests' guests leave nothing behind
# in L1 that the runs above should depend on.
[ "$KST" = none ] && KST=
for name in $KST; do
    if [ ! -x "/kselftest/kvm/$name" ]; then
        echo "@@KST-END $name rc=missing"
        continue
    fi
    echo "@@KST-BEGIN $name uptime=$(up)"
    (cd /kselftest/kvm && timeout -s KILL "$T" "./$name" </dev/null 2>&1
     echo "@@rc $?") | sed "s/^/L1 kst $name| /"
    echo "@@KST-END $name uptime=$(up)"
done

finish
