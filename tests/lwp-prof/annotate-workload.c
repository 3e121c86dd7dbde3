/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A function whose hot instruction is known by construction, for
 * `lwp-prof annotate`: annotate_me runs two loops of one instruction each
 * (LOOP), the first 3 * N times, the second N times, so 75 % and 25 % of
 * the instructions (and branches) it retires are those two LOOPs, and
 * every other instruction of it runs once.  It prints the offset of the
 * hot LOOP from the function's start.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uintptr_t hot, warm;

/*
 * The tree that built this (tests/lwp-prof/meson.build): ccache hashes the
 * preprocessed source, so the string keeps one object, and one DWARF
 * comp_dir, per build directory.
 */
const char workload_build_dir[] = WORKLOAD_BUILD_DIR;

__attribute__((noinline)) void annotate_me(unsigned long n)
{
    asm volatile("lea 1f(%%rip), %0\n\tmov %1, %%rcx\n1:\tloop 1b" /* HOT */
                 : "=&r"(hot) : "r"(3 * n) : "rcx", "memory");
    asm volatile("lea 1f(%%rip), %0\n\tmov %1, %%rcx\n1:\tloop 1b" /* WARM */
                 : "=&r"(warm) : "r"(n) : "rcx", "memory");
}

int main(int argc, char **argv)
{
    annotate_me(argc > 1 ? strtoul(argv[1], NULL, 0) : 4000000);
    printf("hot %lu warm %lu\n", (unsigned long)(hot - (uintptr_t)annotate_me),
           (unsigned long)(warm - (uintptr_t)annotate_me));
    return 0;
}
