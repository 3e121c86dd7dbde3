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

    /*
     * Spec 8.3: the intervals "can be cached in the hardware when the
     * LLWPCB instruction is executed, or they can be read from the LWPCB
     * each time the counter overflows".  EventInterval1 = 3, rewritten to
     * 6 before the 14th LWPVAL: records every 4th LWPVAL throughout
     * (cached), or from the overflow after the rewrite every 7th (live),
     * nothing else.  Exact mode caches; latitude mode's
     * lwp-interval-reread draws per session (docs/lwp-latitude.rst).
     */
    unsigned cached = 0, live = 0, other = 0;
    for (int session = 0; session < 8; session++) {
        memset(&cb, 0, sizeof(cb));
        memset(ring, 0, sizeof(ring));
        cb.flags = 1u << 1;
        cb.buffer_size = sizeof(ring);
        cb.buffer_base = (uintptr_t)ring;
        cb.event[0].interval = 3;
        __llwpcb(&cb);
        for (unsigned i = 1; i <= 40; i++) {
            if (i == 14) {
                *(volatile uint32_t *)&cb.event[0].interval = 6;
            }
            __lwpval32(0, i, 0);
        }
        __llwpcb(0);
        lwp_barrier();
        unsigned n = cb.head / 32, prev = 0, kind = 0;     /* 0 cached, 1 live */
        for (unsigned k = 0; k < n && kind < 2; k++) {
            unsigned gap = ring[k].data1 - prev;
            if (k == 0 ? ring[k].data1 != 1 :
                !(gap == 4 && kind == 0) && !(gap == 7 && prev >= 14)) {
                kind = 2;
            } else if (k > 0 && gap == 7) {
                kind = 1;
            }
            prev = ring[k].data1;
        }
        kind = n < 6 ? 2 : kind;
        cached += kind == 0;
        live += kind == 1;
        other += kind == 2;
    }
    char what[160];
    snprintf(what, sizeof(what), "a rewritten EventInterval is used from the next overflow "
             "or never (%u sessions cached, %u live, %u otherwise)", cached, live, other);
    report(other == 0, what);

    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
