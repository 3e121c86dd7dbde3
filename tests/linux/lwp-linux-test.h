/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers for the test programs that run inside the Linux guest of the
 * `linux` suite (docs/lwp-linux.rst): one "PASS: what" / "FAIL: what" line
 * per check, which tests/linux/run_linux.py reads, and the LWP layouts of
 * tests/common/lwp-user-abi.h.
 */
#ifndef LWP_LINUX_TEST_H
#define LWP_LINUX_TEST_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/lwp-user-abi.h"

/* Event ids (spec 2.1-2.3) and LWPCB flags (table 6-2) */
#define LWP_EV_VAL 1
#define LWP_EV_IRE 2
#define LWP_EV_BRE 3
#define LWP_FLAG_INT (1u << 31)
#define LWP_RECORD 32u

/* The LWP XSAVE component (spec table 7-1) in a signal frame, at 340h */
struct lwp_xstate {
    uint64_t lwpcb_addr;
    uint32_t flags, head;
    uint64_t buffer_base;
    uint32_t buffer_size, filters;
    uint8_t pending[32];
    uint32_t counter[6];
    uint8_t reserved[40];
} __attribute__((packed));
#define LWP_XSTATE_OFFSET 0x340
#define XSTATE_BV_OFFSET 512
#define XFEATURE_MASK_LWP (1ull << 62)

#include "../../tools/lwp-prof/linux-lwp-abi.h"

static inline long lwp_set_signal(long sig)
{
    return syscall(SYS_arch_prctl, ARCH_LWP_SET_SIGNAL, sig);
}

static inline long lwp_get_signal(void)
{
    return syscall(SYS_arch_prctl, ARCH_LWP_GET_SIGNAL, 0L);
}

/* The sum over CPUs of a /proc/interrupts line ("LWP", "LWU"), or -1. */
static inline long long proc_interrupts(const char *name)
{
    char line[4096];
    size_t len = strlen(name);
    long long sum = -1;
    FILE *f = fopen("/proc/interrupts", "r");

    while (f && fgets(line, sizeof(line), f)) {
        const char *p = line;
        char *end;

        while (*p == ' ') {
            p++;
        }
        if (strncmp(p, name, len) || p[len] != ':') {
            continue;
        }
        p += len + 1;
        sum = 0;
        for (;;) {
            long long v = strtoll(p, &end, 10);

            if (end == p) {
                break;
            }
            sum += v;
            p = end;
        }
        break;
    }
    if (f) {
        fclose(f);
    }
    return sum;
}

static int lt_tests, lt_failures;

static inline void report(int pass, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("%s: ", pass ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    lt_tests++;
    lt_failures += !pass;
}

static inline void note(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("note: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

static inline int report_summary(const char *prog)
{
    printf("SUMMARY: %s: %d checks, %d failed\n", prog, lt_tests, lt_failures);
    fflush(stdout);
    return lt_failures ? 1 : 0;
}

/* LLWPCB/SLWPCB without GCC's intrinsics' prototypes getting in the way. */
static inline void llwpcb(const void *cb)
{
    asm volatile("llwpcb %0" : : "r"(cb) : "memory");
}

static inline void *slwpcb(void)
{
    void *cb;

    asm volatile("slwpcb %0" : "=r"(cb) : : "memory");
    return cb;
}

#endif
