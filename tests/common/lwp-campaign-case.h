/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the seeded campaigns of the guest and user suites share: their
 * random source (xorshift64, replayable from the seed printed per case) and
 * the random LWPCB a case loads.  Mostly plausible values, sometimes
 * anything: reserved and Random bits, heads and thresholds off the ring,
 * intervals below the minimum.
 */
#ifndef LWP_CAMPAIGN_CASE_H
#define LWP_CAMPAIGN_CASE_H

#include <stdint.h>

#include "lwp-user-abi.h"

static uint64_t campaign_rng_state;

static void campaign_seed(uint64_t seed)
{
    campaign_rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
}

static uint64_t rnd(void)
{
    campaign_rng_state ^= campaign_rng_state << 13;
    campaign_rng_state ^= campaign_rng_state >> 7;
    campaign_rng_state ^= campaign_rng_state << 17;
    return campaign_rng_state;
}

static uint32_t rnd_below(uint32_t n)
{
    return (uint32_t)(rnd() % n);
}

/* @cb is all zeroes; the ring is @ring_size bytes at @ring. */
static void campaign_random_lwpcb(struct lwpcb *cb, const void *ring,
                                  uint32_t ring_size)
{
    cb->flags = (uint32_t)rnd() & (rnd_below(4) ? 0x8000000e : 0xffffffff);
    /* Random in 31:28 (Random) and 4:0 (ignored); the ring stays in place. */
    cb->buffer_size = ring_size |
                      (rnd_below(4) ? 0 : ((uint32_t)rnd() & 0xf000001f));
    cb->buffer_base = (uintptr_t)ring;
    cb->head = rnd_below(4) ? 32 * rnd_below(ring_size / 32) : (uint32_t)rnd();
    cb->threshold = rnd_below(2) ? 32 * rnd_below(ring_size / 32)
                                 : (uint32_t)rnd();
    cb->filters = rnd_below(4) ? 0 : (uint32_t)rnd();
    for (int i = 0; i < 3; i++) {
        cb->event[i].interval = rnd_below(300);
        cb->event[i].counter = rnd_below(300);
    }
}

#endif
