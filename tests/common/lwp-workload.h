/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The value-profiling workload shared by the linux-user MSVC-port program
 * and the demo guest: the same code must leave the same records everywhere.
 * Before including, define NOINLINE and the LWP primitives LWPVAL32(data2,
 * data1, flags) and LWPINS32(data2, data1, flags).
 */
#ifndef LWP_WORKLOAD_H
#define LWP_WORKLOAD_H

/* Sample the divisor every (interval + 1) divisions, then mark the end. */
NOINLINE static unsigned Workload(unsigned x)
{
    unsigned sum = 0;

    for (unsigned i = 0; i < 12; i++) {
        unsigned divisor = 3 + i % 5;
        LWPVAL32(divisor, i, 0x11);
        sum += x / divisor;
    }
    LWPINS32(0xEE, sum, 0x22);
    return sum;
}

/* Workload's records are reported by where they come from, not by address. */
#define WORKLOAD_RECORD_FORMAT \
    "event %3u flags 0x%04x data1 0x%08x data2 0x%016llx ip %s\n"
#define WORKLOAD_IP_NAME(ip) \
    ((ip) >= (uintptr_t)Workload && (ip) < (uintptr_t)Workload + 256 ? \
     "in Workload" : "elsewhere")

#endif
