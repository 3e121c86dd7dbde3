/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: what QEMU's i386 target needs from the LWP glue.
 */
#ifndef QEMU_LWP_GLUE_H
#define QEMU_LWP_GLUE_H

#include "../include/lwp/lwp-caps.h"

/* CPUID[8000_001C].EDX bits TCG implements. */
#define QEMU_LWP_TCG_FEATURES \
    (LWP_FEAT_VAL | LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_INT)
/* CPUID[8000_001C].ECX flags TCG implements: LwpIpFiltering. */
#define QEMU_LWP_TCG_CAP_FLAGS  (1u << 29)

/*
 * Hardware-event counting in translated code (lwp-translate.c.inc,
 * lwp-tcg.c): what helper_lwp_tb_slow learns of its TB ...
 */
#define LWP_TB_INFO(charged, icount, branch, single, csize, last_off) \
    ((uint64_t)(charged) | (uint64_t)(icount) << 10 | \
     (uint64_t)(branch) << 20 | (uint64_t)(single) << 22 | \
     (uint64_t)(csize) << 23 | (uint64_t)(last_off) << 32)
#define LWP_TB_INFO_CHARGED(i)   ((uint32_t)(i) & 0x3ff)
#define LWP_TB_INFO_ICOUNT(i)    ((uint32_t)((i) >> 10) & 0x3ff)
#define LWP_TB_INFO_BRANCH(i)    ((uint32_t)((i) >> 20) & 3)
#define LWP_TB_INFO_SINGLE(i)    ((uint32_t)((i) >> 22) & 1)
#define LWP_TB_INFO_CSIZE(i)     ((uint32_t)((i) >> 23) & 3)
#define LWP_TB_INFO_LAST_OFF(i)  ((uint32_t)((i) >> 32))
/* The TB's fast path charged it before branching to the slow path. */
#define LWP_TB_INFO_PRECHARGED   (1ull << 25)
/*
 * A crossing may go on in the TB cut to length when it is translated
 * already: the slow path jumps to the host code the helper returns.
 */
#define LWP_TB_INFO_GOTO         (1ull << 26)
/* helper_lwp_tb_slow's @eip is the TB's start (else EIP already is). */
#define LWP_TB_INFO_EIP          (1ull << 27)
/* ... what helper_lwp_retire learns of its instruction ... */
#define LWP_RETIRE_LEN(info)     ((info) & 0xff)
#define LWP_RETIRE_BRANCH(info)  (((info) >> 8) & 3)
#define LWP_RETIRE_CSIZE(info)   (((info) >> 10) & 3)
#define LWP_RETIRE_REP           (1u << 13)
#define LWP_RETIRE_TAKEN         (1u << 14)
/* Inside a TB: how many of its instructions ran (0: the TB's last one). */
#define LWP_RETIRE_INDEX_SHIFT   16
#define LWP_RETIRE_INDEX(info)   (((info) >> LWP_RETIRE_INDEX_SHIFT) & 0x3ff)
/* ... and what a fault at an instruction gives back (insn_start data[1]). */
#define LWP_UNWIND_SHIFT 16
#define LWP_UNWIND(ire_left, branch) ((uint64_t)(ire_left) | (uint64_t)(branch) << 10)
#define LWP_UNWIND_IRE(u)        ((uint32_t)(u) & 0x3ff)
#define LWP_UNWIND_BRANCH(u)     ((uint32_t)((u) >> 10) & 3)

/* linux-user: a new thread or process starts with LWP disabled (spec 8.4). */
void x86_lwp_new_task(CPUX86State *env);
/* LWP disabled, internal state discarded (a signal handler's start). */
void x86_lwp_reset_state(CPUX86State *env);
/* Recompute what translated code counts after any change of LWP state. */
void x86_lwp_state_changed(CPUX86State *env);
/* A fault undid the instructions from one on: give back their charge. */
void x86_lwp_unwind(CPUX86State *env, uint32_t tb_flags, uint64_t unwind);

/* Assemble and check cpu->lwp_caps; false with @errp set if inconsistent. */
bool x86_lwp_realize(X86CPU *cpu, Error **errp);
/* Reset LWP state (linux-user also makes LWP available, as its OS would). */
void x86_lwp_reset(X86CPU *cpu);
/* CPUID Fn8000_001C for @env (all zero unless the CPU has LWP). */
void x86_lwp_cpuid(CPUX86State *env, uint32_t *eax, uint32_t *ebx,
                   uint32_t *ecx, uint32_t *edx);

#ifndef CONFIG_USER_ONLY
/* The "cpu/lwp" migration subsection (validated on load). */
extern const VMStateDescription vmstate_x86_lwp;
#endif

/* LWP registers and live state for "info registers" / -d cpu. */
void x86_lwp_dump_state(CPUX86State *env, FILE *f);

/* MSRs (TCG): false means #GP. */
bool x86_lwp_wrmsr(CPUX86State *env, uint32_t msr, uint64_t val);
bool x86_lwp_rdmsr(CPUX86State *env, uint32_t msr, uint64_t *val);

/* XSAVE component 62 for an accelerator's XSAVE buffer (KVM). */
bool x86_lwp_get_xsave_image(CPUX86State *env, uint8_t *area);
void x86_lwp_set_xsave_image(CPUX86State *env, const uint8_t *area,
                             bool present);

#ifdef CONFIG_KVM
/* KVM: offer LWP only as the host does (feature bits already filtered). */
bool x86_lwp_kvm_realize(X86CPU *cpu, Error **errp);
/* KVM: the host must cover the CPU model's numeric LWP fields. */
bool x86_lwp_kvm_check_caps(X86CPU *cpu, Error **errp);
#endif

/* XSAVE component 62 (TCG): the 128-byte image and the XSTATE_BV bit. */
bool x86_lwp_xsave(CPUX86State *env, uint8_t *area);
void x86_lwp_xrstor(CPUX86State *env, const uint8_t *area, bool present);

#endif
