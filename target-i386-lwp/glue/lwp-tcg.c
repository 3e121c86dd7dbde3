/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: TCG side of LWP -- the four instructions, the MSRs and XSAVE
 * component 62 -- on top of the C++ model.
 *
 * The model never faults: it reads guest memory through callbacks that only
 * probe (non-faulting) and reports a needed #PF or #GP in its outcome, with
 * LWP state untouched.  Only this file raises exceptions, after the model has
 * returned, so no longjmp ever crosses C++ frames; and the model's writes are
 * performed only when all of them are known to be permitted.
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/cpu_ldst.h"
#include "exec/helper-proto.h"
#include "tcg/helper-tcg.h"
#include "lwp/lwp-model.h"
#include "lwp-qemu.h"
#include "lwp-irq.h"
#include "trace.h"

typedef struct LwpGuestMem {
    CPUX86State *env;
    int mmu_idx;
    uintptr_t ra;
} LwpGuestMem;

static bool lwp_probe(LwpGuestMem *m, uint64_t addr, uint32_t len,
                      MMUAccessType access)
{
    /* Walk by the last byte, so a range ending at 2^64 is still probed. */
    uint64_t last_page = (addr + len - 1) & TARGET_PAGE_MASK;
    uint64_t page = addr & TARGET_PAGE_MASK;
    void *host;

    for (;; page += TARGET_PAGE_SIZE) {
        int flags = probe_access_flags(m->env, MAX(page, addr), 1, access,
                                       m->mmu_idx, true, &host, m->ra);
        if (flags & TLB_INVALID_MASK) {
            return false;
        }
        if (page == last_page) {
            return true;
        }
    }
}

static bool lwp_mem_read(void *opaque, uint64_t addr, void *buf, uint32_t len)
{
    LwpGuestMem *m = opaque;
    uint8_t *p = buf;

    if (!lwp_probe(m, addr, len, MMU_DATA_LOAD)) {
        return false;
    }
    for (uint32_t i = 0; i < len; i++) {
        p[i] = cpu_ldub_mmuidx_ra(m->env, addr + i, m->mmu_idx, m->ra);
    }
    return true;
}

static bool lwp_mem_probe_write(void *opaque, uint64_t addr, uint32_t len)
{
    return lwp_probe(opaque, addr, len, MMU_DATA_STORE);
}

static void lwp_cpu_env(CPUX86State *env, LwpCpuEnv *e)
{
    const SegmentCache *ds = &env->segs[R_DS];

    memset(e, 0, sizeof(*e));
    e->caps = &env_archcpu(env)->lwp_caps;
    e->lwp_cfg = env->lwp_cfg;
    e->cpl = env->hflags & HF_CPL_MASK;
    e->mode64 = env->hflags & HF_CS64_MASK;
    e->ds_base = ds->base;
    e->ds_limit = ds->limit;
    e->ds_expand_down = (ds->flags & (DESC_CS_MASK | DESC_E_MASK)) == DESC_E_MASK;
    e->ds_big = ds->flags & DESC_B_MASK;
    e->ds_writable = (ds->flags & (DESC_CS_MASK | DESC_W_MASK)) == DESC_W_MASK;
    e->ds_usable = (ds->flags & DESC_P_MASK) || !(env->cr[0] & CR0_PE_MASK);
    e->va_bits = (env->cr[4] & CR4_LA57_MASK) ? 57 : 48;
    e->long_mode = env->hflags & HF_LMA_MASK;
}

/*
 * Carry out what the model decided: raise its fault, or perform its writes
 * and signal the threshold interrupt.  Returns only on success.
 */
static void lwp_complete(LwpGuestMem *m, const LwpOutcome *out)
{
    CPUX86State *env = m->env;

    switch (out->status) {
    case LWP_OK:
        break;
    case LWP_FAULT_GP:
        trace_lwp_fault("#GP", 0);
        raise_exception_err_ra(env, EXCP0D_GPF, 0, m->ra);
    case LWP_FAULT_PF:
        trace_lwp_fault("#PF", out->fault_addr);
        probe_access(env, out->fault_addr, 1,
                     out->fault_write ? MMU_DATA_STORE : MMU_DATA_LOAD,
                     m->mmu_idx, m->ra);
        /* The page became accessible meanwhile: run the instruction again. */
        cpu_loop_exit_restore(env_cpu(env), m->ra);
    }
    for (uint32_t i = 0; i < out->nwrites; i++) {
        const LwpWrite *w = &out->writes[i];
        for (uint32_t j = 0; j < w->len; j++) {
            cpu_stb_mmuidx_ra(env, w->addr + j, w->data[j], m->mmu_idx, m->ra);
        }
    }
    if (out->interrupt) {
        trace_lwp_threshold_interrupt(LWP_CFG_VECTOR(env->lwp_cfg));
        x86_lwp_raise_threshold_irq(env, LWP_CFG_VECTOR(env->lwp_cfg));
    }
}

/* Spec 5: #UD unless LWP is supported and XCR0[62] makes it available. */
static void lwp_check_available(CPUX86State *env, uintptr_t ra)
{
    if (!(env->xcr0 & XSTATE_LWP_MASK)) {
        raise_exception_ra(env, EXCP06_ILLOP, ra);
    }
}

#define LWP_PREPARE(env, m, e) \
    LwpGuestMem m = { (env), cpu_mmu_index(env_cpu(env), false), GETPC() }; \
    LwpMem m##_ops = { &m, lwp_mem_read, lwp_mem_probe_write }; \
    LwpCpuEnv e; \
    LwpOutcome out; \
    lwp_check_available((env), m.ra); \
    lwp_cpu_env((env), &e)

void helper_lwp_llwpcb(CPUX86State *env, target_ulong ea)
{
    LWP_PREPARE(env, mem, cpu);
    LwpState next = env->lwp;

    /*
     * Spec 5.1 steps 2-3 complete before step 4 looks at the new LWPCB: the
     * old session is flushed and disabled first (a fault there leaves it
     * enabled), and a fault on the new LWPCB then leaves LWP disabled.
     */
    if (next.cbaddr && ea) {
        lwp_llwpcb(&next, &cpu, &mem_ops, 0, &out);
        trace_lwp_llwpcb(0, out.status, next.cbaddr, next.flags);
        lwp_complete(&mem, &out);
        env->lwp = next;
    }
    lwp_llwpcb(&next, &cpu, &mem_ops, ea, &out);
    trace_lwp_llwpcb(ea, out.status, next.cbaddr, next.flags);
    lwp_complete(&mem, &out);
    env->lwp = next;
}

target_ulong helper_lwp_slwpcb(CPUX86State *env)
{
    LWP_PREPARE(env, mem, cpu);
    LwpState next = env->lwp;

    lwp_slwpcb(&next, &cpu, &mem_ops, &out);
    trace_lwp_slwpcb(out.status, out.value);
    lwp_complete(&mem, &out);
    env->lwp = next;
    return out.value;
}

/*
 * LWPVAL/LWPINS: @src is the r/m operand's value, or its linear address when
 * @is_mem; LWPVAL reads memory only when it stores a record (spec 5.3).
 */
void helper_lwp_lwpval(CPUX86State *env, target_ulong data2, target_ulong src,
                       uint32_t imm, uint32_t is_mem)
{
    LWP_PREPARE(env, mem, cpu);
    LwpState next = env->lwp;
    uint32_t data1 = src;

    if (!lwp_lwpval_stores(&next, &cpu)) {
        lwp_lwpval(&next, &cpu, &mem_ops, data2, 0, imm, env->eip, &out);
        env->lwp = next;
        return;
    }
    if (is_mem) {
        data1 = cpu_ldl_data_ra(env, src, mem.ra);
    }
    lwp_lwpval(&next, &cpu, &mem_ops, data2, data1, imm, env->eip, &out);
    trace_lwp_store(LWP_EVENT_VAL, env->eip, out.status, next.head);
    lwp_complete(&mem, &out);
    env->lwp = next;
}

target_ulong helper_lwp_lwpins(CPUX86State *env, target_ulong data2,
                               target_ulong src, uint32_t imm, uint32_t is_mem)
{
    LWP_PREPARE(env, mem, cpu);
    LwpState next = env->lwp;
    uint32_t data1 = is_mem ? cpu_ldl_data_ra(env, src, mem.ra) : src;

    lwp_lwpins(&next, &cpu, &mem_ops, data2, data1, imm, env->eip, &out);
    trace_lwp_store(LWP_EVENT_INS, env->eip, out.status, next.head);
    lwp_complete(&mem, &out);
    env->lwp = next;
    return out.value;
}

bool x86_lwp_wrmsr(CPUX86State *env, uint32_t msr, uint64_t val)
{
    const LwpCaps *caps = &env_archcpu(env)->lwp_caps;

    if (!(caps->features & LWP_FEAT_AVAIL)) {
        return false;
    }
    trace_lwp_wrmsr(msr, val);
    if (msr == MSR_LWP_CFG) {
        if (!lwp_cfg_write_ok(caps, val)) {
            return false;
        }
        env->lwp_cfg = val;
        return true;
    }
    return lwp_cbaddr_write(&env->lwp, val);
}

bool x86_lwp_rdmsr(CPUX86State *env, uint32_t msr, uint64_t *val)
{
    if (!(env_archcpu(env)->lwp_caps.features & LWP_FEAT_AVAIL)) {
        return false;
    }
    *val = msr == MSR_LWP_CFG ? env->lwp_cfg : env->lwp.cbaddr;
    return true;
}

bool x86_lwp_xsave(CPUX86State *env, uint8_t *area)
{
    return lwp_xsave(&env->lwp, area);
}

void x86_lwp_xrstor(CPUX86State *env, const uint8_t *area, bool present)
{
    static const uint8_t init_area[LWP_XSAVE_SIZE];
    LwpCpuEnv cpu;

    lwp_cpu_env(env, &cpu);
    lwp_xrstor(&env->lwp, &cpu, present ? area : init_area, present);
    trace_lwp_xrstor(present, env->lwp.cbaddr);
}
