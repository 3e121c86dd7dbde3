/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test reporting over the debug console, exit through isa-debug-exit.
 * The harness (tests/guest/run_guest.py) reads the PASS/FAIL/SKIP lines and
 * the SUMMARY line; a missing SUMMARY means the guest died.
 */
#include "libguest.h"

#define DEBUG_EXIT_PORT 0xf4

static unsigned tests, failures, skipped;

static void vreport(const char *tag, const char *fmt, va_list ap)
{
    char buf[256];

    vsnprintf(buf, sizeof(buf), fmt, ap);
    printf("%s: %s\n", tag, buf);
}

void report(bool pass, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(pass ? "PASS" : "FAIL", fmt, ap);
    va_end(ap);
    tests++;
    failures += !pass;
}

void report_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport("SKIP", fmt, ap);
    va_end(ap);
    skipped++;
}

int report_summary(void)
{
    printf("SUMMARY: %u tests, %u failures, %u skipped\n", tests, failures, skipped);
    return failures ? 1 : 0;
}

void guest_exit(int code)
{
    /* QEMU exits with status (code << 1) | 1. */
    outl(DEBUG_EXIT_PORT, code);
    for (;;) {
        asm volatile("cli; hlt");
    }
}
