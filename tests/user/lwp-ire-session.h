/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user test programs: a session counting instructions retired at a
 * fixed period into a ring that never interrupts (AMD pub. 43724, section
 * 2.2 and figure 6-1).
 */
#ifndef LWP_IRE_SESSION_H
#define LWP_IRE_SESSION_H

#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

#include "../common/lwp-user-abi.h"

static int lwp_tests, lwp_failures;

/* One check: a PASS or FAIL line. */
static void report(int pass, const char *what)
{
    printf("%s: %s\n", pass ? "PASS" : "FAIL", what);
    lwp_tests++;
    lwp_failures += !pass;
}

/* The last line and the exit status. */
static int report_summary(void)
{
    printf("%d passed, %d failed\n", lwp_tests - lwp_failures, lwp_failures);
    return lwp_failures ? 1 : 0;
}

/* Whether the CPU offers LWP's instructions-retired event; else says SKIP. */
static int lwp_ire_available(void)
{
    unsigned a, b, c, d;

    if (!__get_cpuid(0x80000001, &a, &b, &c, &d) || !(c & (1u << 15)) ||
        __get_cpuid_max(0x80000000, NULL) < 0x8000001C) {
        printf("SKIP: no LWP\n");
        return 0;
    }
    __cpuid_count(0x8000001C, 0, a, b, c, d);
    if (!(a & (1u << 2))) {
        printf("SKIP: no instructions-retired event\n");
        return 0;
    }
    return 1;
}

/* Enable @cb: a record every @period instructions retired into @ring. */
static void lwp_ire_start(struct lwpcb *cb, void *ring, uint32_t bytes,
                          uint32_t period)
{
    cb->flags = 1u << 2;
    cb->buffer_size = bytes;
    cb->buffer_base = (uintptr_t)ring;
    cb->threshold = bytes + 32;           /* never interrupts */
    cb->event[1].interval = period - 1;
    cb->event[1].counter = period - 1;
    asm volatile("" ::: "memory");
    __llwpcb(cb);
}

/* Flush the head and the counters into @cb, and disable LWP. */
static void lwp_ire_stop(void)
{
    __slwpcb();
    asm volatile("" ::: "memory");
    __llwpcb(0);
}

#endif
