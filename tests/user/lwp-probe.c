/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user smoke test, built with gcc -mlwp: LWP instructions must be
 * usable exactly when CPUID Fn8000_001C_EAX[LwpAvail] says the OS made LWP
 * available; otherwise they raise #UD, which Linux delivers as SIGILL.
 */
#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>

static sigjmp_buf on_sigill;
static int failures, tests;

static void report(int pass, const char *what)
{
    printf("%s: %s\n", pass ? "PASS" : "FAIL", what);
    tests++;
    failures += !pass;
}

static void sigill_handler(int sig)
{
    (void)sig;
    siglongjmp(on_sigill, 1);
}

int main(void)
{
    unsigned a, b, c, d, max_ext;
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = sigill_handler;
    sigaction(SIGILL, &sa, NULL);

    __cpuid(0x80000000, max_ext, b, c, d);
    __cpuid(0x80000001, a, b, c, d);
    int supported = c >> 15 & 1;
    volatile int available = 0;
    if (supported && max_ext >= 0x8000001C) {
        __cpuid(0x8000001C, a, b, c, d);
        available = a & 1;
    }
    printf("# LWP supported %d, available %d\n", supported, available);

    volatile int trapped = 0;
    void *volatile lwpcb = (void *)1;
    if (sigsetjmp(on_sigill, 1) == 0) {
        lwpcb = __slwpcb();
    } else {
        trapped = 1;
    }
    if (available) {
        report(!trapped && lwpcb == NULL, "SLWPCB returns 0 while no LWPCB is loaded");
    } else {
        report(trapped, "SLWPCB raises SIGILL (#UD) when LWP is not available");
    }
    report(!available || supported, "LWP is only available where it is supported");
    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
