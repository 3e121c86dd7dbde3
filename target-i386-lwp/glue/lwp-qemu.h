/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: what QEMU's i386 target needs from the LWP glue.
 */
#ifndef QEMU_LWP_GLUE_H
#define QEMU_LWP_GLUE_H

#include "hw/registerfields.h"
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
FIELD(LWP_TB_INFO, CHARGED, 0, 10)      /* instructions charged at its start */
FIELD(LWP_TB_INFO, ICOUNT, 10, 10)      /* its instructions */
FIELD(LWP_TB_INFO, BRANCH, 20, 2)       /* LwpBranchClass of its last one */
FIELD(LWP_TB_INFO, SINGLE, 22, 1)       /* cut to length */
FIELD(LWP_TB_INFO, CSIZE, 23, 2)        /* 0: 64-bit code, 1: 32, 2: 16 */
/* The TB's fast path charged it before branching to the slow path. */
FIELD(LWP_TB_INFO, PRECHARGED, 25, 1)
/*
 * A crossing may go on in the TB cut to length when it is translated
 * already: the slow path jumps to the host code the helper returns.
 */
FIELD(LWP_TB_INFO, GOTO, 26, 1)
/* helper_lwp_tb_slow's @eip is the TB's start (else EIP already is). */
FIELD(LWP_TB_INFO, EIP, 27, 1)
/* A crossing's record may be stored after the TB (lwp_tb_defer). */
FIELD(LWP_TB_INFO, DEFER, 28, 1)
/*
 * Its last instruction, a branch, can be counted where it retires: each
 * exit calls helper_lwp_retire while lwp_tcg.exit_tb is this TB.
 */
FIELD(LWP_TB_INFO, EXIT, 29, 1)
/*
 * Below this branches-retired interval, a TB ending in a branch tests at
 * its exits whether to count it there (a load, a compare and a branch at
 * every exit, ~1 ns); from it on, a branch record cuts its TB to length
 * instead (a translation the first time, 1-4 us on programs with much
 * code).  The two break even near an interval of a few thousand branches.
 * Either way is exact: this decides cost alone.
 */
#define LWP_EXIT_HOOK_INTERVAL 4096
FIELD(LWP_TB_INFO, LAST_OFF, 32, 32)    /* its last instruction's offset */
/* ... what helper_lwp_retire learns of its instruction ... */
FIELD(LWP_RETIRE, LEN, 0, 8)
FIELD(LWP_RETIRE, BRANCH, 8, 2)
FIELD(LWP_RETIRE, CSIZE, 10, 2)
FIELD(LWP_RETIRE, REP, 13, 1)           /* a REP string instruction */
FIELD(LWP_RETIRE, TAKEN, 14, 1)         /* after its taken exit */
/* Inside a TB: how many of its instructions ran (0: the TB's last one). */
FIELD(LWP_RETIRE, INDEX, 16, 10)
/*
 * ... and what a fault at an instruction gives back: insn_start data[1]
 * above CC_OP.
 */
#define LWP_UNWIND_SHIFT 16
FIELD(LWP_UNWIND, IRE, 0, 10)           /* IRE charge of it and later ones */
FIELD(LWP_UNWIND, BRANCH, 10, 2)        /* the TB's last branch's class */


/* linux-user: a new thread or process starts with LWP disabled (spec 8.4). */
void x86_lwp_new_task(CPUX86State *env);
/* LWP disabled, internal state discarded (a signal handler's start). */
void x86_lwp_reset_state(CPUX86State *env);
/* Recompute what translated code counts after any change of LWP state. */
void x86_lwp_state_changed(CPUX86State *env);
/* A fault in @tb undid the instructions from one on: give back their charge. */
void x86_lwp_unwind(CPUX86State *env, const TranslationBlock *tb,
                    uint64_t unwind);

/* Assemble and check cpu->lwp_caps; false with @errp set if inconsistent. */
bool x86_lwp_realize(X86CPU *cpu, Error **errp);
/* Reset LWP state (linux-user also makes LWP available, as its OS would). */
void x86_lwp_reset(X86CPU *cpu);
/* At the CPU's unrealize: what realize made (latitude mode's timer). */
void x86_lwp_unrealize(X86CPU *cpu);

/* Latitude mode (lwp-latitude.c, docs/lwp-latitude.rst). */
bool x86_lwp_latitude_on(X86CPU *cpu);
bool x86_lwp_latitude_realize(X86CPU *cpu, Error **errp);
void x86_lwp_latitude_unrealize(X86CPU *cpu);
void x86_lwp_latitude_reset(X86CPU *cpu);
/* Whether a record @after instructions before its TB's end is stored there. */
bool x86_lwp_latitude_store_late(X86CPU *cpu, uint32_t after);
/* CPUID Fn8000_001C for @env (all zero unless the CPU has LWP). */
void x86_lwp_cpuid(CPUX86State *env, uint32_t *eax, uint32_t *ebx,
                   uint32_t *ecx, uint32_t *edx);

#ifndef CONFIG_USER_ONLY
/* The "cpu/lwp" migration subsection (validated on load). */
extern const VMStateDescription vmstate_x86_lwp;
extern const VMStateDescription vmstate_x86_lwp_latitude;
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
