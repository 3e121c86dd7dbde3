/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * LWP helpers for guest tests: the LWPCB and record layouts of AMD pub.
 * 43724 (table 6-1, figures 2-1/2-2/2-8), the instructions, and the OS-side
 * enabling sequence of section 8.7.1.
 */
#ifndef GUEST_LWP_H
#define GUEST_LWP_H

#include "libguest.h"

#define MSR_LWP_CFG     0xC0000105
#define MSR_LWP_CBADDR  0xC0000106
#define XCR0_LWP        (1ull << 62)

#define LWP_F_VAL  (1u << 1)
#define LWP_F_IRE  (1u << 2)
#define LWP_F_BRE  (1u << 3)
#define LWP_F_INT  (1u << 31)

/* The LWPCB (LwpEventOffset 0x80, three events) and the event record. */
#include "../../common/lwp-user-abi.h"

static inline void llwpcb(const void *cb)
{
    asm volatile("llwpcb %0" : : "r"(cb) : "memory");
}

static inline uintptr_t slwpcb(void)
{
    uintptr_t v;
    asm volatile("slwpcb %0" : "=r"(v) : : "memory");
    return v;
}

/* LWPINS/LWPVAL take their flags as an immediate: these are macros. */
#define lwpins(data2, data1, imm) ({                                        \
    uint8_t cf_;                                                            \
    asm volatile("lwpins %2, %1, %3\n\tsetc %0"                             \
                 : "=qm"(cf_) : "rm"((uint32_t)(data1)), "i"(imm),          \
                   "r"((uintptr_t)(data2)) : "memory", "cc");               \
    cf_; })

#define lwpval(data2, data1, imm)                                           \
    asm volatile("lwpval %1, %0, %2"                                        \
                 : : "rm"((uint32_t)(data1)), "i"(imm),                     \
                   "r"((uintptr_t)(data2)) : "memory")

/* CPUID Fn8000_001C. */
static inline void lwp_cpuid(uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
    cpuid_count(0x8000001C, 0, a, b, c, d);
}

/*
 * Spec 8.7.1: CR4.OSXSAVE, XCR0[62], LWP_CFG = supported features, COREID
 * and the threshold vector.
 */
static inline void lwp_os_enable(uint8_t core_id, uint8_t vector)
{
    uint32_t a, b, c, d;

    write_cr4(read_cr4() | CR4_OSXSAVE);
    xsetbv(0, xgetbv(0) | XCR0_LWP);
    lwp_cpuid(&a, &b, &c, &d);
    wrmsr(MSR_LWP_CFG, d | (uint64_t)core_id << 32 | (uint64_t)vector << 40);
}

static inline void lwpcb_init(struct lwpcb *cb, void *buf, uint32_t size,
                              uint32_t flags)
{
    memset(cb, 0, sizeof(*cb));
    cb->flags = flags;
    cb->buffer_size = size;
    cb->buffer_base = (uintptr_t)buf;
}

#endif
