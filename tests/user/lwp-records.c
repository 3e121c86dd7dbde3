/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: a program built with gcc -mlwp uses LWP through the compiler's
 * intrinsics (<x86intrin.h>: __llwpcb, __slwpcb, __lwpval32, __lwpins32),
 * as an application on an LWP-enabled OS would.
 */
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>

#define NREC 32

#include "../common/lwp-user-abi.h"


static struct lwpcb cb;
static struct lwp_record ring[NREC] __attribute__((aligned(64)));
static int tests, failures;

/* The intrinsics do not tell the compiler that LWP writes memory. */
#define lwp_barrier() asm volatile("" ::: "memory")

static void report(int pass, const char *what)
{
    printf("%s: %s\n", pass ? "PASS" : "FAIL", what);
    tests++;
    failures += !pass;
}

static uintptr_t handler_cbaddr = 1;

static void on_signal(int sig)
{
    (void)sig;
    /*
     * Linux gives a handler the initial extended state: it starts with LWP
     * disabled (its LWPINS stores nothing), and sigreturn's XRSTOR puts the
     * interrupted state back.
     */
    handler_cbaddr = (uintptr_t)__slwpcb();
    __lwpins32(0x516, 0x51, 0);
}

int main(void)
{
    unsigned a, b, c, d;

    __cpuid(0x8000001C, a, b, c, d);
    report(a & 1, "LWP available to applications (8000_001C.EAX[0])");
    report((a & (1u << 31)) == 0, "threshold interrupt not offered by the emulated OS");
    report((a & ~1u) == (d & ~(1u << 31) & ~1u), "every other supported feature available");

    memset(&cb, 0, sizeof(cb));
    cb.flags = (1u << 1) | (1u << 31);
    cb.buffer_size = sizeof(ring);
    cb.buffer_base = (uintptr_t)ring;
    cb.event[0].interval = 1;              /* every second LWPVAL */
    __llwpcb(&cb);
    lwp_barrier();
    report(cb.flags == (1u << 1), "LLWPCB writes back Flags without INT");
    report(__slwpcb() == &cb, "__slwpcb returns the LWPCB");

    for (unsigned i = 0; i < 6; i++) {
        __lwpval32(i, 0x100 + i, 0x10 + i);
    }
    report(__lwpins32(0xabc, 0xdef, 0x1234) == 0, "__lwpins32 returns 0 while the ring has room");
    __slwpcb();
    lwp_barrier();
    report(cb.head == 4 * 32, "3 sampled values and 1 inserted record");
    report(ring[0].event_id == 1 && ring[0].data1 == 0x100 && ring[0].flags == 0x10,
           "first LWPVAL record");
    report(ring[2].data1 == 0x104 && ring[2].data2 == 4, "third LWPVAL record (sample 5)");
    report(ring[3].event_id == 255 && ring[3].data1 == 0xdef && ring[3].data2 == 0xabc &&
           ring[3].flags == 0x1234, "LWPINS record");
    report(ring[0].core_id == 0, "CoreId is the vCPU index (0)");

    signal(SIGUSR1, on_signal);
    raise(SIGUSR1);
    lwp_barrier();
    __slwpcb();
    lwp_barrier();
    report(handler_cbaddr == 0 && ring[4].event_id == 0,
           "a signal handler starts with LWP disabled and stores nothing");
    report(__slwpcb() == &cb && cb.head == 4 * 32,
           "sigreturn restores the interrupted LWP state (head back to 4 records)");

    unsigned char cf = 0;
    for (int i = 5; i < NREC + 2; i++) {
        cf = __lwpins32(0, i, 0);
    }
    __slwpcb();
    lwp_barrier();
    report(cf == 1 && cb.missed == 2, "full ring: CF = 1 and MissedEvents counted");
    __llwpcb(0);
    report(__slwpcb() == 0, "__llwpcb(0) stops profiling");

    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
