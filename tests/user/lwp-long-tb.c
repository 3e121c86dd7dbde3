/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: instructions retired at the minimum interval through two
 * straight runs of code, each a loop that TCG translates as long TBs.
 *
 * - 1000 one-byte NOPs: a TB of the maximum length (512 instructions) and
 *   one of 490.  A counter crossing zero in the 512-instruction TB once
 *   made QEMU cut it to a length the TB flags cannot hold, and the program
 *   never progressed; the meson timeout catches that.
 * - 45 NOPs of every length from 1 to 15 bytes: one TB of 47 instructions,
 *   which crosses once per record (256 instructions apart), at each of its
 *   instructions in turn (256 and 47 are coprime).  Its record is gathered
 *   at the TB's start and names its instruction by adding up the lengths
 *   of those before it, which the TB passes packed: a length in the wrong
 *   place names another address.
 *
 * What the spec fixes (section 1.1, steps 2 and 5; section 2.2): with
 * EventInterval2 = 255 and no overrun, a record every 256 instructions
 * retired, each naming the instruction that made the counter negative.  A
 * loop is its NOPs, SUB and JNZ, so two consecutive records inside it name
 * instructions 256 apart modulo its length, and each names the first byte
 * of one of its instructions.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../common/lwp-len-nops.h"
#include "lwp-ire-session.h"

#define PERIOD 256
#define RING_RECORDS 1024
#define MIXED_NOPS (3 * 15)
#define MAX_NOPS 1000

static struct lwpcb cb;
static struct lwp_record ring[RING_RECORDS] __attribute__((aligned(32)));
extern const char sled_start[], sled_end[];
extern const char mixed_start[], mixed_end[];

/*
 * The loops: page-aligned, so that their first TB starts with them.  Each
 * NOP ends its run, SUB (3 bytes: 83 E9 01) and JNZ rel32 back close it.
 */
static void __attribute__((noinline, noclone)) run_sled(uint32_t iters)
{
    asm volatile("jmp 2f\n\t"
                 ".p2align 12\n"
                 "sled_start:\n\t"
                 ".rept 1000\n\t"
                 "nop\n\t"
                 ".endr\n"
                 "sled_end:\n\t"
                 "sub $1, %%ecx\n\t"
                 ".byte 0x0f, 0x85\n\t"
                 ".long sled_start - (. + 4)\n\t"
                 "jmp 3f\n"
                 "2:\n\t"
                 "jmp sled_start\n"
                 "3:\n"
                 : "+c"(iters) : : "memory", "cc");
}

static void __attribute__((noinline, noclone)) run_mixed(uint32_t iters)
{
    asm volatile("jmp 2f\n\t"
                 ".p2align 12\n"
                 "mixed_start:\n\t"
                 LEN_NOPS_MACRO
                 ".rept 3\n\t"
                 ".irp len, " LEN_NOPS_ORDER "\n\t"
                 "len_nop \\len\n\t"
                 ".endr\n\t"
                 ".endr\n\t"
                 ".purgem len_nop\n"
                 "mixed_end:\n\t"
                 "sub $1, %%ecx\n\t"
                 ".byte 0x0f, 0x85\n\t"
                 ".long mixed_start - (. + 4)\n\t"
                 "jmp 3f\n"
                 "2:\n\t"
                 "jmp mixed_start\n"
                 "3:\n"
                 : "+c"(iters) : : "memory", "cc");
}

/* A loop: where its instructions start, in order (then SUB and JNZ). */
struct loop {
    const char *name;
    void (*run)(uint32_t iters);
    uint32_t iters;             /* about 750 to 950 records */
    uintptr_t start[MAX_NOPS + 2];
    unsigned insns;
};

/* False if the NOPs' lengths do not add up to the loop's code. */
static int loop_layout(struct loop *l, const char *start, const char *end,
                       unsigned nops, unsigned (*len)(unsigned))
{
    uintptr_t at = (uintptr_t)start;

    for (unsigned i = 0; i < nops; i++) {
        l->start[i] = at;
        at += len ? len(i) : 1;
    }
    l->start[nops] = (uintptr_t)end;           /* SUB */
    l->start[nops + 1] = (uintptr_t)end + 3;   /* JNZ */
    l->insns = nops + 2;
    return at == (uintptr_t)end;
}

/* Index of the instruction that starts at @ip, or -1. */
static long loop_index(const struct loop *l, uint64_t ip)
{
    unsigned lo = 0, hi = l->insns;

    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;

        if (l->start[mid] < ip) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < l->insns && l->start[lo] == ip ? (long)lo : -1;
}

static void check_loop(const struct loop *l)
{
    unsigned records, in_loop = 0, pairs = 0, bad_pairs = 0, inside = 0;
    uintptr_t first = l->start[0], last = l->start[l->insns - 1];
    long prev = -1;
    char what[200];

    memset(&cb, 0, sizeof(cb));
    memset(ring, 0, sizeof(ring));
    lwp_ire_start(&cb, ring, sizeof(ring), PERIOD);
    l->run(l->iters);
    lwp_ire_stop();

    records = cb.head / sizeof(ring[0]);
    for (unsigned i = 0; i < records; i++) {
        uint64_t ip = ring[i].ip;
        long idx = ring[i].event_id == 2 ? loop_index(l, ip) : -1;

        /* In the loop's bytes, but not where an instruction starts. */
        inside += ring[i].event_id == 2 && ip >= first && ip <= last &&
                  idx < 0;
        if (idx < 0) {
            prev = -1;
            continue;
        }
        in_loop++;
        if (prev >= 0) {
            pairs++;
            bad_pairs += (idx - prev + l->insns) % l->insns !=
                         PERIOD % l->insns;
        }
        prev = idx;
    }
    snprintf(what, sizeof(what),
             "%s: the loop ran to its end with LWP counting: %u records, %u "
             "in the loop (at least %u expected), MissedEvents %llu",
             l->name, records, in_loop, l->iters * l->insns / PERIOD - 2,
             (unsigned long long)cb.missed);
    report(in_loop >= l->iters * l->insns / PERIOD - 2 && cb.missed == 0,
           what);
    snprintf(what, sizeof(what),
             "%s: every record in the loop names an instruction's first byte "
             "(%u do not)", l->name, inside);
    report(inside == 0, what);
    snprintf(what, sizeof(what),
             "%s: consecutive records are %d instructions apart (%u of %u "
             "pairs are not)", l->name, PERIOD, bad_pairs, pairs);
    report(pairs > 0 && bad_pairs == 0, what);
}

static struct loop ones = { .name = "1000 one-byte NOPs", .run = run_sled,
                            .iters = 200 };
static struct loop mixed = { .name = "45 NOPs of 1 to 15 bytes",
                             .run = run_mixed, .iters = 5000 };

int main(void)
{
    if (!lwp_ire_available()) {
        return 77;
    }
    if (!loop_layout(&ones, sled_start, sled_end, MAX_NOPS, NULL) ||
        !loop_layout(&mixed, mixed_start, mixed_end, MIXED_NOPS, lwp_len_nop)) {
        report(0, "the loops' lengths add up to their code");
        return report_summary();
    }
    check_loop(&ones);
    check_loop(&mixed);
    return report_summary();
}
