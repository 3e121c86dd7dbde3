/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: instructions retired at the minimum interval through a
 * straight run of 1000 NOPs, which TCG translates as a TB of its maximum
 * length (512 instructions) and one of 490.  A counter crossing zero in the
 * 512-instruction TB once made QEMU cut it to a length the TB flags cannot
 * hold, and the program never progressed; the meson timeout catches that.
 *
 * What the spec fixes (section 1.1, steps 2 and 5; section 2.2): with
 * EventInterval2 = 255 and no overrun, a record every 256 instructions
 * retired, each naming the instruction that made the counter negative.  The
 * loop is 1002 instructions (1000 NOPs, SUB, JNZ), so two consecutive
 * records inside it are 256 instructions apart modulo 1002.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lwp-ire-session.h"

#define NOPS 1000
#define LOOP_INSNS (NOPS + 2)
#define ITERS 200
#define PERIOD 256
#define RING_RECORDS 1024

static struct lwpcb cb;
static struct lwp_record ring[RING_RECORDS] __attribute__((aligned(32)));
extern const char sled_start[], sled_end[];

/* The loop: page-aligned, so that its first TB is 512 NOPs. */
static void __attribute__((noinline, noclone)) run_sled(uint32_t iters)
{
    asm volatile("jmp 2f\n\t"
                 ".p2align 12\n"
                 "sled_start:\n\t"
                 ".rept " "1000" "\n\t"
                 "nop\n\t"
                 ".endr\n"
                 "sled_end:\n\t"
                 "sub $1, %%ecx\n\t"        /* 3 bytes: 83 E9 01 */
                 ".byte 0x0f, 0x85\n\t"     /* JNZ rel32 to sled_start */
                 ".long sled_start - (. + 4)\n\t"
                 "jmp 3f\n"
                 "2:\n\t"
                 "jmp sled_start\n"
                 "3:\n"
                 : "+c"(iters) : : "memory", "cc");
}

/* Index of @ip in the loop (0..1001), or -1 outside it. */
static long loop_index(uint64_t ip)
{
    uintptr_t start = (uintptr_t)sled_start, end = (uintptr_t)sled_end;

    if (ip >= start && ip < end) {
        return (long)(ip - start);
    }
    if (ip == end) {
        return NOPS;                /* SUB */
    }
    if (ip == end + 3) {
        return NOPS + 1;            /* JNZ */
    }
    return -1;
}

int main(void)
{
    unsigned records, in_loop = 0, pairs = 0, bad_pairs = 0;
    long prev = -1;
    char what[160];

    if (!lwp_ire_available()) {
        return 77;
    }
    lwp_ire_start(&cb, ring, sizeof(ring), PERIOD);
    run_sled(ITERS);
    lwp_ire_stop();

    records = cb.head / sizeof(ring[0]);
    for (unsigned i = 0; i < records; i++) {
        long idx = loop_index(ring[i].ip);

        if (ring[i].event_id != 2) {
            prev = -1;
            continue;
        }
        if (idx < 0) {
            prev = -1;
            continue;
        }
        in_loop++;
        if (prev >= 0) {
            pairs++;
            bad_pairs += (idx - prev + LOOP_INSNS) % LOOP_INSNS != PERIOD;
        }
        prev = idx;
    }
    snprintf(what, sizeof(what),
             "the loop ran to its end with LWP counting: %u records, %u in the "
             "loop (at least %u expected), MissedEvents %llu",
             records, in_loop, ITERS * LOOP_INSNS / PERIOD - 2,
             (unsigned long long)cb.missed);
    report(in_loop >= ITERS * LOOP_INSNS / PERIOD - 2 && cb.missed == 0, what);
    snprintf(what, sizeof(what),
             "consecutive records are %d instructions apart (%u of %u pairs "
             "are not)", PERIOD, bad_pairs, pairs);
    report(pairs > 0 && bad_pairs == 0, what);
    return report_summary();
}
