/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: a sampling profiler written for LWP gets the histogram the
 * architecture implies.  Instructions retired (or branches retired) sampled
 * every N+1 events over a loop of K instructions land on the loop's
 * instructions in a fixed rotation: each sample is (N+1) mod K
 * instructions after the previous one, so the histogram is flat to within
 * one and the sequence of addresses is fully determined.  IP filtering
 * restricts the samples to the chosen range (or, inverted, to the rest).
 */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>

#define NREC 4096
#define LOOPS 20000

#include "../common/lwp-user-abi.h"


static struct lwpcb cb;
static struct lwp_record ring[NREC] __attribute__((aligned(64)));
static int tests, failures;

/* The profiled loop: seven instructions, two of them branches. */
extern const char prof_i0[], prof_i1[], prof_i2[], prof_i3[], prof_i4[],
    prof_i5[], prof_i6[], prof_end[];
static const char *const prof_insn[] = {
    prof_i0, prof_i1, prof_i2, prof_i3, prof_i4, prof_i5, prof_i6,
};
#define K 7

__attribute__((noinline)) static void workload(unsigned loops)
{
    asm volatile("prof_i0: add %%ecx, %%eax\n\t"
                 "prof_i1: test $1, %%ecx\n\t"
                 "prof_i2: jz prof_i4\n\t"        /* taken every other time */
                 "prof_i3: xor $0x5a, %%eax\n\t"
                 "prof_i4: rol $3, %%eax\n\t"
                 "prof_i5: dec %%ecx\n\t"
                 "prof_i6: jnz prof_i0\n\t"
                 "prof_end:\n"
                 : "+c"(loops) : : "eax", "cc");
}

static void report(int pass, const char *what)
{
    printf("%s: %s\n", pass ? "PASS" : "FAIL", what);
    tests++;
    failures += !pass;
}

static int index_of(uint64_t ip)
{
    for (int i = 0; i < K; i++) {
        if (ip == (uintptr_t)prof_insn[i]) {
            return i;
        }
    }
    return -1;
}

/*
 * Profile the workload with event @event sampled every @interval + 1;
 * filters as given.  Returns the number of records, all of which must be
 * this event's.
 */
static unsigned profile(unsigned event, uint32_t interval, uint32_t filters,
                        uint64_t base, uint64_t limit)
{
    memset(&cb, 0, sizeof(cb));
    memset(ring, 0, sizeof(ring));
    cb.flags = 1u << event;
    cb.buffer_size = sizeof(ring);
    cb.buffer_base = (uintptr_t)ring;
    cb.filters = filters;
    cb.base_ip = base;
    cb.limit_ip = limit;
    cb.event[event - 1].interval = interval;
    cb.event[event - 1].counter = interval;
    __llwpcb(&cb);
    workload(LOOPS);
    __slwpcb();
    asm volatile("" ::: "memory");
    __llwpcb(0);
    return cb.head / sizeof(struct lwp_record);
}

/*
 * The architecture fixes the samples: the eligible instructions the loop
 * executes form a cycle (@cycle, @n entries, loop instruction indices), and
 * each sample is 257 eligible instructions after the previous one.  Check
 * that one starting point of the cycle explains every sample taken inside
 * the loop, and that each instruction got its share of them.
 */
static void check_rotation(const char *what, unsigned nrec, const int *cycle,
                           int n, unsigned expect_min)
{
    unsigned hist[K] = {0}, inside = 0, outside = 0, first = 0;
    int explained = 0;
    char line[160];

    for (unsigned r = 0; r < nrec; r++) {
        int i = index_of(ring[r].ip);
        if (i < 0) {
            outside++;
            continue;
        }
        if (!inside++) {
            first = r;
        }
        hist[i]++;
    }
    for (int start = 0; start < n && !explained; start++) {
        int ok = 1;
        for (unsigned j = 0; j < inside && ok; j++) {
            ok = index_of(ring[first + j].ip) == cycle[(start + 257ull * j) % n];
        }
        explained = ok;
    }
    snprintf(line, sizeof(line), "%s: %u samples in the loop, %u elsewhere", what,
             inside, outside);
    report(inside >= expect_min && outside <= 2, line);
    snprintf(line, sizeof(line), "%s: each sample 257 eligible instructions after the last",
             what);
    report(inside > 1 && explained, line);
    unsigned flat = 1;
    for (int i = 0; i < K; i++) {
        unsigned occ = 0;
        for (int c = 0; c < n; c++) {
            occ += cycle[c] == i;
        }
        unsigned want = (unsigned)((uint64_t)inside * occ / n);
        flat &= hist[i] + 1 >= want && hist[i] <= want + 1;
    }
    snprintf(line, sizeof(line), "%s: histogram follows the cycle of %d instructions", what, n);
    report(flat, line);
}

int main(void)
{
    unsigned a, b, c, d;
    const uint32_t interval = 256;            /* period 257 */

    __cpuid(0x8000001C, a, b, c, d);
    report((a & 0x0d) == 0x0d, "instructions and branches retired available");
    report(c & (1u << 29), "IP filtering supported");

    /* Instructions retired over the whole loop: 257 mod 7 = 5. */
    /* prof_i3 runs every other iteration: a cycle of 13 instructions. */
    static const int all[] = {0, 1, 2, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6};
    unsigned n = profile(2, interval, 0, 0, 0);
    check_rotation("IRE", n, all, 13, (LOOPS * 13 / 2 - 300) / 257);

    /* Only prof_i1..prof_i3: about 2.5 of them run per iteration. */
    unsigned n_in = profile(2, interval, 1u << 31, (uintptr_t)prof_i1,
                            (uintptr_t)prof_i3);
    unsigned in_range = 1;
    for (unsigned r = 0; r < n_in; r++) {
        int i = index_of(ring[r].ip);
        in_range &= i >= 1 && i <= 3;
    }
    report(n_in > 0 && in_range, "IPF: every sample inside [BaseIP, LimitIP]");
    static const int inner[] = {1, 2, 1, 2, 3};
    check_rotation("IPF", n_in, inner, 5, (LOOPS * 5 / 2 - 300) / 257);
    report(n_in >= (LOOPS * 5 / 2 - 2) / 257 && n_in <= (LOOPS * 5 / 2 + 2) / 257 + 1,
           "IPF: as many samples as in-range instructions ran / 257");

    /* Inverted: everything but prof_i1..prof_i3, and the code around the loop. */
    unsigned n_out = profile(2, interval, 3u << 30, (uintptr_t)prof_i1,
                             (uintptr_t)prof_i3);
    unsigned out_of_range = 1;
    for (unsigned r = 0; r < n_out; r++) {
        int i = index_of(ring[r].ip);
        out_of_range &= !(i >= 1 && i <= 3);
    }
    report(n_out > 0 && out_of_range, "IPI: no sample inside the range");
    static const int outer[] = {0, 4, 5, 6};
    check_rotation("IPI", n_out, outer, 4, (LOOPS * 4 - 300) / 257);

    /* Branches retired: 1.5 per iteration; prof_i6 every time, prof_i2 too. */
    unsigned nb = profile(3, interval, 0, 0, 0);
    unsigned at2 = 0, at6 = 0, tkn_ok = 1, target_ok = 1;
    for (unsigned r = 0; r < nb; r++) {
        int i = index_of(ring[r].ip);
        int taken = ring[r].flags >> 15;
        at2 += i == 2;
        at6 += i == 6;
        if (i == 2) {
            tkn_ok &= ring[r].data2 == (uintptr_t)(taken ? prof_i4 : prof_i3);
        } else if (i == 6) {
            target_ok &= ring[r].data2 == (uintptr_t)(taken ? prof_i0 : prof_end);
        }
    }
    report(nb >= (LOOPS * 2 - 4) / 257 && at2 + at6 + 2 >= nb,
           "BRE: samples land on the loop's two branches");
    report(at2 > 0 && at6 > 0 && (at2 > at6 ? at2 - at6 : at6 - at2) <= 2,
           "BRE: both branches sampled equally often (each runs once per iteration)");
    report(tkn_ok && target_ok, "BRE: TargetAddress is where execution went (TKN agrees)");

    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
