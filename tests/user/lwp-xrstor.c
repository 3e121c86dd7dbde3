/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: XRSTOR that enables LWP changes what the instructions right
 * after it count, on every CPU with LWP and not only on those with MPX
 * (named models such as Opteron_G5 and EPYC have none).  Expected values
 * come from the spec: 7.4 (XRSTOR loads the counters from the image), 2.1
 * and 5.3 (each LWPVAL decrements EventCounter1 and stores a record when it
 * becomes negative, then resets it to the interval), 2.2 (each instruction
 * retired decrements EventCounter2).  XRSTOR itself retires in the restored
 * session (docs/lwp-events.rst).  And PAUSE, counted, still retires exactly
 * and still leaves the TB (run-pause-tb.sh checks QEMU's translation).
 */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../common/lwp-user-abi.h"

#define NREC 32
#define XCR0_LWP (1ull << 62)
#define LWP_OFF 0x340
#define LWP_F_VAL (1u << 1)
#define LWP_F_IRE (1u << 2)

static struct lwpcb cb;
static struct lwp_record ring[NREC] __attribute__((aligned(64)));
static uint8_t area_a[4096] __attribute__((aligned(64)));
static uint8_t area_b[4096] __attribute__((aligned(64)));
static int tests, failures;

#define LWP_U32(area, off) (*(uint32_t *)((area) + LWP_OFF + (off)))

static void report(int pass, const char *what, long got, long want)
{
    printf("%s: %s (got %ld, want %ld)\n", pass ? "PASS" : "FAIL", what, got, want);
    tests++;
    failures += !pass;
}

static void llwpcb(void *p)
{
    asm volatile("llwpcb %0" : : "r"(p) : "memory");
}

static uintptr_t slwpcb(void)
{
    uintptr_t v;

    asm volatile("slwpcb %0" : "=r"(v) : : "memory");
    return v;
}

static void xsave(uint8_t *area)
{
    asm volatile("xsave (%0)" : : "r"(area), "a"((uint32_t)XCR0_LWP),
                 "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
}


static void start(uint32_t flags, int event, uint32_t interval)
{
    memset(&cb, 0, sizeof(cb));
    memset(ring, 0, sizeof(ring));
    cb.flags = flags;
    cb.buffer_size = sizeof(ring);
    cb.buffer_base = (uintptr_t)ring;
    cb.event[event].interval = interval;
    cb.event[event].counter = interval;
    llwpcb(&cb);
}

/*
 * An IRE session saved into area_a with EventCounter2 = @counter, LWP
 * stopped and the ring cleared; its interval (>= 255, the minimum written
 * back by LLWPCB).
 */
static uint32_t ire_image_with_counter(uint32_t counter)
{
    uint32_t interval;

    start(LWP_F_IRE, 1, 255);
    interval = cb.event[1].interval;
    xsave(area_a);
    llwpcb(NULL);
    LWP_U32(area_a, 68) = counter;
    memset(ring, 0, sizeof(ring));
    return interval;
}

extern char xr_nop5[], xr_pause[];

int main(void)
{
    unsigned a, b, c, d;
    uint32_t interval;

    __cpuid(0x8000001C, a, b, c, d);
    if (!(a & LWP_F_VAL) || !(a & LWP_F_IRE)) {
        printf("SKIP: LWPVAL or instructions retired not available (%#x)\n", a);
        return 77;
    }

    /* Two LWPVALs right after XRSTOR, interval 0: two records. */
    start(LWP_F_VAL, 0, 0);
    xsave(area_a);
    llwpcb(NULL);
    asm volatile("xrstor (%0)\n\t"
                 "lwpval $0, %1, %2\n\t"
                 "lwpval $0, %3, %2\n\t"
                 : : "r"(area_a), "r"(0x11u), "r"((uintptr_t)0), "r"(0x22u),
                     "a"((uint32_t)XCR0_LWP), "d"((uint32_t)(XCR0_LWP >> 32))
                 : "memory");
    report(slwpcb() == (uintptr_t)&cb, "XRSTOR re-enabled the session",
           slwpcb() == (uintptr_t)&cb, 1);
    report(cb.head == 2 * 32, "two LWPVALs after XRSTOR store two records: head",
           cb.head, 64);
    report(ring[0].event_id == 1 && ring[0].data1 == 0x11 &&
           ring[1].event_id == 1 && ring[1].data1 == 0x22,
           "the records are the two LWPVALs' (data1 of the second)",
           ring[1].data1, 0x22);
    llwpcb(NULL);

    /*
     * Instructions retired: the image's EventCounter2 is 5.  XRSTOR 5 -> 4,
     * NOPs 1-4 -> 0, NOP 5 -> -1: its record, reset to the interval; the
     * 15 NOPs after it count down from there, and XSAVE saves the count
     * before itself.
     */
    interval = ire_image_with_counter(5);
    asm volatile("xrstor (%0)\n\t"
                 ".rept 4\n\tnop\n\t.endr\n"
                 "xr_nop5:\n\t"
                 ".rept 16\n\tnop\n\t.endr\n\t"
                 "xsave (%1)\n\t"
                 : : "r"(area_a), "r"(area_b), "a"((uint32_t)XCR0_LWP),
                     "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
    slwpcb();
    llwpcb(NULL);
    report(ring[0].event_id == 2, "an instructions-retired record was stored",
           ring[0].event_id, 2);
    report(ring[0].ip == (uintptr_t)xr_nop5,
           "the 5th NOP after XRSTOR stores it: IP - NOP 5",
           (long)(ring[0].ip - (uintptr_t)xr_nop5), 0);
    report((int32_t)LWP_U32(area_b, 68) == (int32_t)interval - 15,
           "the 15 NOPs after it count: XSAVE saves EventCounter2",
           (int32_t)LWP_U32(area_b, 68), (int32_t)interval - 15);

    /*
     * PAUSE while counting keeps its semantics (it lets other vCPUs run:
     * QEMU leaves the TB and the CPU loop) and still retires exactly:
     * EventCounter2 = 3 from the image, XRSTOR 3 -> 2, NOPs -> 1, 0, the
     * PAUSE -> -1: the record names the PAUSE; 16 NOPs after it.
     */
    interval = ire_image_with_counter(3);
    asm volatile("xrstor (%0)\n\t"
                 "nop\n\tnop\n"
                 "xr_pause:\n\t"
                 "pause\n\t"
                 ".rept 16\n\tnop\n\t.endr\n\t"
                 "xsave (%1)\n\t"
                 : : "r"(area_a), "r"(area_b), "a"((uint32_t)XCR0_LWP),
                     "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
    slwpcb();
    llwpcb(NULL);
    report(ring[0].event_id == 2 && ring[0].ip == (uintptr_t)xr_pause,
           "the PAUSE that makes EventCounter2 negative stores the record: IP - PAUSE",
           (long)(ring[0].ip - (uintptr_t)xr_pause), 0);
    report((int32_t)LWP_U32(area_b, 68) == (int32_t)interval - 16,
           "the 16 NOPs after the PAUSE count: XSAVE saves EventCounter2",
           (int32_t)LWP_U32(area_b, 68), (int32_t)interval - 16);

    printf("%d tests, %d failures\n", tests, failures);
    return failures != 0;
}
