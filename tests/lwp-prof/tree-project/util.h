/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef UTIL_H
#define UTIL_H
unsigned long count_primes(unsigned long limit);
unsigned long hash_words(const char *text);
#endif
