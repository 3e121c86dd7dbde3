/* SPDX-License-Identifier: GPL-2.0-or-later */
/* xAPIC access for guest tests (identity-mapped at its default base). */
#ifndef GUEST_APIC_H
#define GUEST_APIC_H

#include "libguest.h"

#define APIC_BASE 0xFEE00000u
#define APIC_ID   0x20
#define APIC_EOI  0xB0
#define APIC_SVR  0xF0
#define APIC_ESR  0x280
#define APIC_ESR_RECV_ILLEGAL (1u << 6)

static inline uint32_t apic_read(uint32_t reg)
{
    return *(volatile uint32_t *)(uintptr_t)(APIC_BASE + reg);
}

static inline void apic_write(uint32_t reg, uint32_t v)
{
    *(volatile uint32_t *)(uintptr_t)(APIC_BASE + reg) = v;
}

/* Software-enable the local APIC (SVR bit 8) with spurious vector 0xFF. */
static inline void apic_enable(void)
{
    apic_write(APIC_SVR, 0x1FF);
}

static inline void apic_eoi(void)
{
    apic_write(APIC_EOI, 0);
}

#endif
