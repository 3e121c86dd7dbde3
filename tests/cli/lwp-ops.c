/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The program test_zero_cost.py translates with -d op: it runs the same
 * loop without LWP, or with instructions retired counted, and prints the
 * loop's address so the test can find its translation blocks.
 *   lwp-ops off     run the loop; never touch LWP
 *   lwp-ops ire     run the loop with instructions retired enabled
 *   lwp-ops val N   1000 LWPVALs with EventInterval1 = N
 *   lwp-ops bre N   run the loop with branches retired, EventInterval3 = N
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "../common/lwp-user-abi.h"

static struct lwpcb cb;
static uint8_t ring[32 * 1024] __attribute__((aligned(64)));
extern char ops_loop[];

/* Out of line, so that the compiler cannot duplicate the label. */
__attribute__((noinline)) static void run_loop(void)
{
    asm volatile("mov $100000, %%ecx\n"
                 "ops_loop: add %%ecx, %%eax\n\t"
                 "xor $0x55, %%eax\n\t"
                 "dec %%ecx\n\t"
                 "jnz ops_loop\n" ::: "eax", "ecx", "cc");
}

int main(int argc, char **argv)
{
    int ire = argc > 1 && !strcmp(argv[1], "ire");
    int bre = argc > 2 && !strcmp(argv[1], "bre");

    if (argc > 2 && !strcmp(argv[1], "val")) {
        cb.flags = 1u << 1;
        cb.buffer_size = sizeof(ring);
        cb.buffer_base = (uintptr_t)ring;
        cb.event[0].interval = cb.event[0].counter = strtoul(argv[2], NULL, 0);
        __llwpcb(&cb);
        for (unsigned i = 0; i < 1000; i++) {
            __lwpval32(i, i, 0);
        }
        __llwpcb(0);
        printf("head %u\n", cb.head);
        return 0;
    }

    if (ire) {
        cb.flags = 1u << 2;
        cb.buffer_size = sizeof(ring);
        cb.buffer_base = (uintptr_t)ring;
        cb.event[1].interval = cb.event[1].counter = 65535;
        __llwpcb(&cb);
    }
    if (bre) {
        cb.flags = 1u << 3;
        cb.buffer_size = sizeof(ring);
        cb.buffer_base = (uintptr_t)ring;
        cb.event[2].interval = cb.event[2].counter = strtoul(argv[2], NULL, 0);
        __llwpcb(&cb);
    }
    run_loop();
    if (ire || bre) {
        __llwpcb(0);
    }
    if (bre) {
        printf("head %u\n", cb.head);
    }
    printf("ops_loop %#lx\n", (unsigned long)(uintptr_t)ops_loop);
    return 0;
}
