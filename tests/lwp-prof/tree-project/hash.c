/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include "util.h"

static unsigned long fnv1a(const char *s, unsigned long len)
{
    unsigned long h = 1469598103934665603ul;

    for (unsigned long i = 0; i < len; i++) {
        h = (h ^ (unsigned char)s[i]) * 1099511628211ul;
    }
    return h;
}

unsigned long hash_words(const char *text)
{
    unsigned long h = 0;

    while (*text) {
        const char *start;
        while (*text && !isalpha((unsigned char)*text)) {
            text++;
        }
        start = text;
        while (isalpha((unsigned char)*text)) {
            text++;
        }
        if (text > start) {
            h ^= fnv1a(start, (unsigned long)(text - start));
        }
    }
    return h;
}
