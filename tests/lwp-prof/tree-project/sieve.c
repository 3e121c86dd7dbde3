/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>
#include "util.h"

unsigned long count_primes(unsigned long limit)
{
    unsigned char *composite = calloc(limit + 1, 1);
    unsigned long n = 0;

    for (unsigned long i = 2; i <= limit; i++) {
        if (composite[i]) {
            continue;
        }
        n++;
        for (unsigned long j = i * i; j <= limit; j += i) {
            composite[j] = 1;
        }
    }
    free(composite);
    return n;
}
