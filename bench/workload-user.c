/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The linux-user program of bench/run-bench.sh (built with gcc -mlwp):
 *   workload-user MODE [INTERVAL [ROUNDS]]
 * MODE is none, val, ire or bre (tests/common/lwp-bench-workload.h).  Prints
 * one line "bench: mode M interval N rounds R checksum C records K bad B
 * missed M"; exits 2 when the event is not available, 1 on bad usage.
 */
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#define NOINLINE __attribute__((noinline))
#define BENCH_CPUID(leaf, a, b, c, d) __cpuid_count(leaf, 0, a, b, c, d)
#define BENCH_LLWPCB(p) __llwpcb((void *)(p))
#define BENCH_SLWPCB() __slwpcb()
#define BENCH_LWPVAL32(d2, d1, f) __lwpval32(d2, d1, f)
#include "../tests/common/lwp-bench-workload.h"

#define DEFAULT_ROUNDS 2000

static struct bench_state state;

int main(int argc, char **argv)
{
    struct bench_result r;
    int mode = argc > 1 ? bench_parse_mode(argv[1], strlen(argv[1])) : -1;
    unsigned long interval = argc > 2 ? strtoul(argv[2], NULL, 0) : 65535;
    unsigned long rounds = argc > 3 ? strtoul(argv[3], NULL, 0) : DEFAULT_ROUNDS;

    if (mode < 0 || argc > 4) {
        fprintf(stderr, "usage: %s none|val|ire|bre [INTERVAL [ROUNDS]]\n", argv[0]);
        return 1;
    }
    bench_run(&state, mode, interval, rounds, &r);
    if (r.status) {
        printf("bench: mode %s unavailable\n", argv[1]);
        return r.status;
    }
    printf("bench: mode %s interval %lu rounds %lu checksum %08x records %llu bad %llu missed %llu\n",
           argv[1], interval, rounds, r.checksum, (unsigned long long)r.records,
           (unsigned long long)r.bad_records, (unsigned long long)r.missed);
    return 0;
}
