/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: C ABI of the LWP capability model (AMD pub. 43724, section 3).
 *
 * A CPU's LWP capabilities are what CPUID Fn8000_001C reports in EBX, ECX and
 * EDX.  The model behind this header is C++; every entry point is noexcept and
 * takes and returns plain data only.
 */
#ifndef LWP_CAPS_H
#define LWP_CAPS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The C++ model defines every entry point noexcept; declaring them so for
 * C++ keeps the declarations and definitions in agreement (clang rejects a
 * mismatch) without changing anything for C.
 */
#ifndef LWP_NOEXCEPT
#ifdef __cplusplus
#define LWP_NOEXCEPT noexcept
#else
#define LWP_NOEXCEPT
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* CPUID Fn8000_001C_EDX / EAX and LWP_CFG[31:0] feature bits (table 3-1). */
#define LWP_FEAT_AVAIL  (1u << 0)
#define LWP_FEAT_VAL    (1u << 1)
#define LWP_FEAT_IRE    (1u << 2)
#define LWP_FEAT_BRE    (1u << 3)
#define LWP_FEAT_DME    (1u << 4)
#define LWP_FEAT_CNH    (1u << 5)
#define LWP_FEAT_RNH    (1u << 6)
#define LWP_FEAT_INT    (1u << 31)
/* Bits 30:7 are reserved for future events. */
#define LWP_FEAT_DEFINED (LWP_FEAT_AVAIL | LWP_FEAT_VAL | LWP_FEAT_IRE | \
                          LWP_FEAT_BRE | LWP_FEAT_DME | LWP_FEAT_CNH | \
                          LWP_FEAT_RNH | LWP_FEAT_INT)

typedef struct LwpCaps {
    uint32_t features;        /* EDX: supported features, LWP_FEAT_* */
    /* EBX */
    uint8_t cb_size;          /* LwpCbSize, quadwords */
    uint8_t event_size;       /* LwpEventSize, bytes */
    uint8_t max_events;       /* LwpMaxEvents */
    uint8_t event_offset;     /* LwpEventOffset, bytes, multiple of 8 */
    /* ECX */
    uint8_t latency_max;      /* LwpLatencyMax, bits (10..31, 0 without DME) */
    bool data_address;        /* LwpDataAddress */
    uint8_t latency_rnd;      /* LwpLatencyRnd (0..4) */
    uint8_t version;          /* LwpVersion (1..127) */
    uint8_t min_buffer_size;  /* LwpMinBufferSize, units of 32 records */
    bool branch_prediction;   /* LwpBranchPrediction */
    bool ip_filtering;        /* LwpIpFiltering */
    bool cache_levels;        /* LwpCacheLevels */
    bool cache_latency;       /* LwpCacheLatency */
} LwpCaps;

typedef struct LwpCpuidRegs {
    uint32_t eax, ebx, ecx, edx;
} LwpCpuidRegs;

/* The capabilities of an AMD family 15h model 01h part ("Zambezi"). */
void lwp_caps_family15h(LwpCaps *caps) LWP_NOEXCEPT;

/* Pack @caps into CPUID Fn8000_001C EBX/ECX/EDX (EAX left 0). */
void lwp_caps_to_cpuid(const LwpCaps *caps,
                       LwpCpuidRegs *regs) LWP_NOEXCEPT;
/* Unpack CPUID Fn8000_001C EBX/ECX/EDX into @caps. */
void lwp_caps_from_cpuid(const LwpCpuidRegs *regs,
                         LwpCaps *caps) LWP_NOEXCEPT;

/*
 * CPUID Fn8000_001C as a guest sees it: EBX/ECX/EDX from @caps and
 * EAX = (LWP_CFG[31:1] & EDX) | XCR0[62].  All zero when LWP is unsupported.
 */
void lwp_cpuid_leaf(const LwpCaps *caps, uint64_t lwp_cfg, bool xcr0_lwp,
                    LwpCpuidRegs *regs) LWP_NOEXCEPT;

/*
 * Check that @caps describes an implementable LWP; on failure return false
 * and write into @field the name of the offending property (QEMU's spelling)
 * and into @why a short reason.
 */
bool lwp_caps_check(const LwpCaps *caps, const char **field,
                    const char **why) LWP_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* LWP_CAPS_H */
