/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A session over a fixed loop: LLWPCB, @after_llwpcb (if any), N rounds of
 * five instructions (three NOPs, DEC, JNZ), SLWPCB, LLWPCB 0.  Returns a
 * hash of the records stored, so that two runs can be compared record for
 * record.
 */
#ifndef LWP_COUNTED_RUN_H
#define LWP_COUNTED_RUN_H

#include <x86intrin.h>

#include "../common/lwp-user-abi.h"

static inline unsigned long lwp_counted_run_then(struct lwpcb *cb,
                                                 const struct lwp_record *ring,
                                                 unsigned rounds, unsigned *records,
                                                 void (*after_llwpcb)(void))
{
    unsigned long hash = 0;

    __llwpcb(cb);
    if (after_llwpcb) {
        after_llwpcb();
    }
    asm volatile("1: nop\n nop\n nop\n dec %0\n jnz 1b\n"
                 : "+c"(rounds) : : "cc");
    __slwpcb();
    asm volatile("" ::: "memory");
    __llwpcb(0);
    *records = cb->head / 32;
    for (unsigned i = 0; i < *records; i++) {
        hash = hash * 31 + ring[i].ip + ring[i].event_id + ring[i].data2;
    }
    return hash;
}

static inline unsigned long lwp_counted_run(struct lwpcb *cb,
                                            const struct lwp_record *ring,
                                            unsigned rounds, unsigned *records)
{
    return lwp_counted_run_then(cb, ring, rounds, records, NULL);
}

#endif
