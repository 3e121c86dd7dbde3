#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /init of the L1 initramfs of the nested test (scripts/build-nested-image.sh
# packs it; tests/kvm/run-nested.py boots it under TCG and reads the serial
# console).  Loads the KVM modules, then runs the guest test images (L2) with
# our qemu-system-x86_64 -accel kvm -cpu host and live-migrates
# tests/guest/lwp-migrate between two L1 QEMU processes.
#
# Kernel command line (all optional):
#   l1tests=a,b,...   guest images of /tests to run (without .img);
#                     IMAGE@k=v@k2=v2 passes -append 'k=v k2=v2'
#   l1mig=IMAGE       guest image to migrate ('none': no migration)
#   l1lwp=auto|force  auto: tests needing LWP are skipped when KVM does not
#                     offer LWP to -cpu host; force: run them anyway
#   l1timeout=SECS    limit for each L2 run
#   l1migdiag=1       HMP 'info registers' (LWP lines) of the source before
#                     and of the destination after the migration
#   l1migdiag=sync    instead of the migration: one guest, 'info registers'
#                     in the middle of its run (a KVM state sync), then the key
#   l1ipf=0|1         -append ipf=N of lwp-events (1 when L0's CPU has lwpipf)
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
for w in $(cat /proc/cmdline); do
    case $w in
    l1tests=*) TESTS=$(echo "${w#*=}" | tr , ' ');;
    l1mig=*) MIG=${w#*=};;
    l1lwp=*) LWPMODE=${w#*=};;
    l1timeout=*) T=${w#*=};;
    l1ipf=*) IPF=${w#*=};;
    l1migdiag=*) DIAG=${w#*=};;
    esac
done

say() { echo "L1: $*"; }
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
    lwp-events-*) set -- -append "ipf=$IPF";;
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

# --- live migration between two L1 QEMU processes --------------------------------------
# HMP through pipe chardevs: QEMU reads DIR.in and writes DIR.out; the shell
# keeps both FIFOs open read-write so that neither side ever blocks.
hmp() {     # hmp src|dst COMMAND...
    local who=$1; shift
    echo "$*" >>/tmp/$who.in
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
query() {       # query WHO COMMAND PATTERN SECS PID: repeat COMMAND until PATTERN
    local i=0
    while :; do
        hmp "$1" "$2"
        sleep 0.5
        grep -q "$3" /tmp/$1.hmp 2>/dev/null && return 0
        i=$((i + 1))
        if [ $i -gt $(($4 * 2)) ] || ! alive "$5"; then
            return 1
        fi
    done
}
alive() { kill -0 "$1" 2>/dev/null; }
lwp_regs() {    # lwp_regs WHO WHEN: the LWP lines of HMP's 'info registers'
    local n
    n=$(count '^LWP_CFG' /tmp/$1.hmp)
    hmp "$1" 'info registers'
    wait_text_n /tmp/$1.hmp '^LWP_CFG' $((n + 1)) 10
    sleep 0.5
    tr -cd '\11\12\40-\176' </tmp/$1.hmp | grep '^LWP' | tail -n3 |
        sed "s/^/L1: $1 LWP state $2: /"
}
wait_text_n() { # wait_text_n FILE PATTERN N SECS: until PATTERN appears N times
    local i=0
    while [ "$(count "$2" "$1")" -lt "$3" ] && [ $i -lt $(($4 * 5)) ]; do
        sleep 0.2; i=$((i + 1))
    done
}
count() { grep -c "$1" "$2" 2>/dev/null; }

migrate() {
    local img=/tests/$MIG.img mode=lwp append="iterations=4000000000 " t0=- t1=- status rc src_rc
    if [ "$MIG" = none ]; then return; fi
    if [ ! -f "$img" ]; then
        echo "@@MIG-SKIP no image $img"; return
    fi
    if [ $HAVE_LWP = 0 ] && [ "$LWPMODE" != force ]; then
        # Still prove live migration of a KVM guest inside L1, without LWP.
        mode=nolwp
        append="iterations=4000000000 nolwp=1"
        echo "@@MIG-SKIP with LWP: KVM in L1 does not offer lwp to -cpu host (migrating the guest with nolwp=1 instead)"
    fi
    for w in src dst; do
        rm -f /tmp/$w.in /tmp/$w.out /tmp/$w.dbg /tmp/$w.hmp /tmp/$w.log
        mkfifo /tmp/$w.in /tmp/$w.out
        touch /tmp/$w.dbg /tmp/$w.log
    done
    exec 5<>/tmp/src.in 6<>/tmp/src.out 7<>/tmp/dst.in 8<>/tmp/dst.out
    cat <&6 >/tmp/src.hmp &
    CATS=$!
    cat <&8 >/tmp/dst.hmp &
    CATD=$!
    set -- -M pc -accel kvm -cpu host -m 128 -nodefaults -display none -no-reboot \
        -serial none -device isa-debugcon,chardev=dbg \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$img"
    echo "@@MIG-BEGIN $MIG mode=$mode uptime=$(up)"
    $QEMU "$@" -append "$append" -chardev file,id=dbg,path=/tmp/src.dbg \
        -chardev pipe,id=mon,path=/tmp/src -mon chardev=mon >/tmp/src.log 2>&1 &
    SRC=$!
    DST=
    local want=profiling
    [ $mode = nolwp ] && want='running without LWP'
    if ! wait_text /tmp/src.dbg "$want" "$T" $SRC; then
        say "migration: the source guest never printed '$want'"
        status=source-failed
    elif ! wait_text /tmp/src.dbg 'progress ' 120 $SRC; then
        say "migration: no progress line from the source in 120 s"
        status=source-failed
    else
        $QEMU "$@" -append "$append" -chardev file,id=dbg,path=/tmp/dst.dbg \
            -chardev pipe,id=mon,path=/tmp/dst -mon chardev=mon \
            -incoming tcp:127.0.0.1:4444 >/tmp/dst.log 2>&1 &
        DST=$!
        if ! query dst 'info status' 'inmigrate' 60 $DST; then
            say "migration: the destination is not waiting for the stream"
            status=destination-failed
        else
            if [ "$DIAG" = 1 ]; then
                lwp_regs src "before the migration"
            fi
            t0=$(up)
            echo "@@MIG-START uptime=$t0 src_progress=$(count progress /tmp/src.dbg)"
            hmp src "migrate -d tcp:127.0.0.1:4444"
            if query src 'info migrate' 'Migration status: \(completed\|failed\|cancelled\)' "$T" $SRC; then
                status=$(grep -o 'Migration status: [a-z]*' /tmp/src.hmp | tail -n1 | sed 's/.*: //')
            else
                status=timeout
                alive $SRC || status=source-died
            fi
            t1=$(up)
            echo "@@MIG-STATUS $status uptime=$t1 src_progress=$(count progress /tmp/src.dbg)"
        fi
    fi
    if [ "$status" = completed ]; then
        query dst 'info status' 'VM status: running' 60 $DST || say "migration: destination not running"
        if [ "$DIAG" = 1 ]; then
            lwp_regs dst "after the migration"
        fi
        # Let it run on the destination: one more progress line.
        wait_text /tmp/dst.dbg 'progress ' 300 $DST ||
            say "migration: no progress line from the destination in 300 s"
        hmp src quit
        echo "@@MIG-KEY uptime=$(up) dst_progress=$(count progress /tmp/dst.dbg)"
        hmp dst 'sendkey a'
        local i=0
        while alive $DST && [ $i -lt $((T * 5)) ]; do sleep 0.2; i=$((i + 1)); done
    fi
    for p in $SRC $DST; do alive $p && kill -9 $p; done
    wait $SRC
    src_rc=$?
    rc=-
    if [ -n "$DST" ]; then
        wait $DST
        rc=$?
    fi
    sed 's/^/L2 mig-src| /' /tmp/src.dbg
    sed 's/^/L2 mig-dst| /' /tmp/dst.dbg
    cat /tmp/src.log /tmp/dst.log | sed 's/^/L1: migration qemu: /'
    kill $CATS $CATD 2>/dev/null
    # What HMP said that matters (not the echo of the commands).
    for w in src dst; do
        tr -cd '\11\12\40-\176' </tmp/$w.hmp | grep -v '^(qemu)\|^QEMU .* monitor' |
            grep -E 'status|time|downtime|transferred|throughput|rror|arn|LWP' |
            uniq | sed "s/^/L1 hmp-$w| /"
    done
    exec 5>&- 6>&- 7>&- 8>&-
    echo "@@MIG-END $MIG mode=$mode status=$status rc=$rc src_rc=$src_rc time=$t0-$t1 uptime=$(up)"
}
# l1migdiag=sync: no migration; HMP 'info registers' (a state sync with KVM,
# which QEMU writes back before the vCPU runs again) in the middle of the run.
sync_check() {
    local img=/tests/$MIG.img rc
    rm -f /tmp/src.in /tmp/src.out /tmp/src.dbg /tmp/src.hmp
    mkfifo /tmp/src.in /tmp/src.out
    touch /tmp/src.dbg
    exec 5<>/tmp/src.in 6<>/tmp/src.out
    cat <&6 >/tmp/src.hmp &
    CATS=$!
    echo "@@SYNC-BEGIN $MIG uptime=$(up)"
    $QEMU -M pc -accel kvm -cpu host -m 128 -nodefaults -display none -no-reboot \
        -serial none -chardev file,id=dbg,path=/tmp/src.dbg -device isa-debugcon,chardev=dbg \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$img" \
        -append "iterations=4000000000 " -chardev pipe,id=mon,path=/tmp/src -mon chardev=mon \
        >/tmp/src.log 2>&1 &
    SRC=$!
    wait_text /tmp/src.dbg 'progress ' 120 $SRC
    lwp_regs src "after 1M iterations"
    wait_text_n /tmp/src.dbg 'progress ' 3 120
    hmp src 'sendkey a'
    local i=0
    while alive $SRC && [ $i -lt $((T * 5)) ]; do sleep 0.2; i=$((i + 1)); done
    alive $SRC && kill -9 $SRC
    wait $SRC
    rc=$?
    kill $CATS
    exec 5>&- 6>&-
    sed 's/^/L2 sync| /' /tmp/src.dbg
    echo "@@SYNC-END rc=$rc uptime=$(up)"
}
if [ "$DIAG" = sync ]; then
    sync_check
else
    migrate
fi
finish
