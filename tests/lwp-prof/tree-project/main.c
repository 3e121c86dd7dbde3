/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include "util.h"
#include "version.h"

int main(void)
{
    printf("wordstat %s: %lu primes, hash %lx\n", WORDSTAT_VERSION,
           count_primes(100000), hash_words("the quick brown fox jumps over the lazy dog"));
    return 0;
}
