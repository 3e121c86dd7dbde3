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
#include "accel/tcg/internal-common.h"
#include "tcg/tcg.h"

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
 * One write of the model (probed writable).  In system mode, straight into
 * host memory when it lies in one page of plain RAM (a record, the common
 * case).  Otherwise byte by byte through QEMU's store path (MMIO,
 * watchpoints, a page boundary) -- always in linux-user, where only that
 * path turns a host fault (a page unmapped or past the end of its file
 * since the probe) into the program's signal instead of QEMU's death.
 * There eight bytes at a time within a page (a record is four stores, not
 * 32): a host fault hits a whole page, so what is written before it is
 * the same as byte by byte.
 */
static void lwp_store_bytes(LwpGuestMem *m, const LwpWrite *w)
{
    uint32_t j = 0;
#ifndef CONFIG_USER_ONLY
    void *host;

    if (w->len && -(w->addr | TARGET_PAGE_MASK) >= w->len &&
        probe_access_flags(m->env, w->addr, w->len, MMU_DATA_STORE,
                           m->mmu_idx, true, &host, m->ra) == 0 && host) {
        memcpy(host, w->data, w->len);
        return;
    }
#else
    for (; j + 8 <= w->len; j++) {
        uint64_t addr = w->addr + j;

        if (-(addr | TARGET_PAGE_MASK) >= 8) {
            cpu_stq_le_mmuidx_ra(m->env, addr, ldq_le_p(w->data + j),
                                 m->mmu_idx, m->ra);
            j += 7;
        } else {
            cpu_stb_mmuidx_ra(m->env, addr, w->data[j], m->mmu_idx, m->ra);
        }
    }
#endif
    for (; j < w->len; j++) {
        cpu_stb_mmuidx_ra(m->env, w->addr + j, w->data[j], m->mmu_idx, m->ra);
    }
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
        lwp_store_bytes(m, &out->writes[i]);
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

/* Guest memory and CPU environment of the model, faults unwinding to @ra. */
#define LWP_GUEST(env, m, e, ra) \
    LwpGuestMem m = { (env), cpu_mmu_index(env_cpu(env), false), (ra) }; \
    LwpMem m##_ops = { &m, lwp_mem_read, lwp_mem_probe_write }; \
    LwpCpuEnv e; \
    lwp_cpu_env((env), &e)

/* An LWP instruction's helper: #UD unless available. */
#define LWP_PREPARE(env, m, e) \
    LWP_GUEST(env, m, e, GETPC()); \
    LwpOutcome out; \
    lwp_check_available((env), m.ra)

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
        x86_lwp_state_changed(env);
    }
    lwp_llwpcb(&next, &cpu, &mem_ops, ea, &out);
    trace_lwp_llwpcb(ea, out.status, next.cbaddr, next.flags);
    lwp_complete(&mem, &out);
    env->lwp = next;
    x86_lwp_state_changed(env);
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

    trace_lwp_lwpval_helper(env->eip);

    if (!lwp_lwpval_stores(&next, &cpu, env->eip)) {
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
        env->lwp_cfg = lwp_cfg_written(env->lwp_cfg, val);
        return true;
    }
    if (!lwp_cbaddr_write(&env->lwp, val)) {
        return false;
    }
    x86_lwp_state_changed(env);
    return true;
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
    x86_lwp_state_changed(env);
    trace_lwp_xrstor(present, env->lwp.cbaddr);
}

/*
 * Hardware events (instructions retired, branches retired): the slow path of
 * a TB's start and the retirement of an instruction counted one by one.
 * Both run where the instruction boundary is exact (EIP and CC_OP up to
 * date), so faults are raised without unwinding: a fault at a TB's start is
 * taken before its first instruction, one at retirement after the
 * instruction that retired, as a record that could not be stored waits in
 * the pending slot.
 */

/*
 * The host return address their faults unwind to: none.  In system mode
 * that is 0.  In linux-user a store that passed the probe can still take a
 * host SIGBUS or SIGSEGV (a MAP_SHARED file mapping beyond the end of its
 * file, a page another thread unmaps or protects meanwhile); linux-user
 * hands such a fault to the guest only when the return address lies in the
 * code buffer (else it is QEMU's own bug and QEMU dies), and unwinds guest
 * state only when that address lies in a TB.  TCG's epilogue does the one
 * and not the other: the program gets its signal, with the record pending,
 * as for a store by LWPINS or LWPVAL.
 */
static uintptr_t lwp_boundary_ra(void)
{
#ifdef CONFIG_USER_ONLY
    return (uintptr_t)tcg_code_gen_epilogue;
#else
    return 0;
#endif
}

static uint64_t lwp_wrap_ip(uint64_t ip, unsigned csize)
{
    return csize == 0 ? ip : csize == 1 ? (uint32_t)ip : (uint16_t)ip;
}

/* Store st.pending; on a fault the record stays pending and #PF is raised. */
typedef void LwpStateStep(LwpState *st, const LwpCpuEnv *env,
                          const LwpMem *mem, LwpOutcome *out);

/* Run one model step on env->lwp; a fault raises it, state unchanged. */
static void lwp_step_or_fault(LwpGuestMem *m, LwpMem *ops, LwpCpuEnv *cpu,
                              LwpStateStep *step)
{
    CPUX86State *env = m->env;
    LwpState next = env->lwp;
    /* Large, and filled by the step: not zeroed on every record. */
    LwpOutcome out __attribute__((uninitialized));

    step(&next, cpu, ops, &out);
    lwp_complete(m, &out);
    env->lwp = next;
}

/* Store st.pending; on a fault the record stays pending and #PF is raised. */
static void lwp_store_pending_or_fault(LwpGuestMem *m, LwpMem *ops,
                                       LwpCpuEnv *cpu)
{
    uint8_t event = m->env->lwp.pending[0];

    if (event) {
        /* A fault is traced (lwp_fault) and raised by lwp_complete. */
        lwp_step_or_fault(m, ops, cpu, lwp_store_pending);
        trace_lwp_store(event, m->env->eip, LWP_OK, m->env->lwp.head);
    }
}

/* -icount charged a TB's instructions at its start: give them back, or take them again. */
static void lwp_icount_give_back(CPUState *cs, uint32_t insns, bool back)
{
#ifndef CONFIG_USER_ONLY
    if (curr_cflags(cs) & CF_USE_ICOUNT) {
        cs->neg.icount_decr.u16.low += back ? insns : -insns;
    }
#endif
}

/* Give back what a TB's fast path charged before it took the slow path. */
static void lwp_tb_give_back_charge(CPUX86State *env, uint64_t info)
{
    QemuLwpTcg *t = &env->lwp_tcg;

    if (t->tb_flags & HF_LWP_IRE_MASK) {
        env->lwp.counter[LWP_EVENT_IRE] += LWP_TB_INFO_CHARGED(info);
    }
    if (t->tb_flags & HF_LWP_BRE_MASK) {
        env->lwp.counter[LWP_EVENT_BRE] +=
            t->branch_weight[LWP_TB_INFO_BRANCH(info)];
    }
}

const void *helper_lwp_tb_slow(CPUX86State *env, uint64_t info,
                              target_ulong eip)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    CPUState *cs = env_cpu(env);
    LwpTbShape tb;
    LwpTbAction action;
    uint32_t split, cflags;
    LWP_GUEST(env, mem, cpu, lwp_boundary_ra());

    if (info & LWP_TB_INFO_EIP) {
        env->eip = eip;
    }
    if (info & LWP_TB_INFO_PRECHARGED) {
        lwp_tb_give_back_charge(env, info);
    }
    t->gathering = 0;
    t->tb_uncharged = 0;
    /*
     * Until this returns, none of the TB has run: a fault or a split
     * leaves it, and -icount must not have charged its instructions.
     */
    lwp_icount_give_back(cs, LWP_TB_INFO_ICOUNT(info), true);
    lwp_store_pending_or_fault(&mem, &mem_ops, &cpu);
    if (t->tb_flags & HF_LWP_IPF_MASK) {
        lwp_step_or_fault(&mem, &mem_ops, &cpu, lwp_prepare);
    }

    tb.first_ip = env->eip;
    tb.last_ip = lwp_wrap_ip(env->eip + LWP_TB_INFO_LAST_OFF(info),
                             LWP_TB_INFO_CSIZE(info));
    tb.icount = LWP_TB_INFO_ICOUNT(info);
    tb.charged = LWP_TB_INFO_CHARGED(info);
    tb.branch = LWP_TB_INFO_BRANCH(info);
    tb.single = LWP_TB_INFO_SINGLE(info);
    if (tb.single) {
        /*
         * A TB cut to length counts each instruction when it retires.
         * Under -icount a record (and its threshold interrupt) may only
         * be stored by the TB's last instruction: cut again if a counter
         * crosses zero before it.
         */
        LwpState probe = env->lwp;

        /* Nothing to charge ahead (its unwind data give nothing back). */
        action = LWP_TB_CHARGE;
        if ((curr_cflags(cs) & CF_USE_ICOUNT) &&
            lwp_tb_plan(&probe, cpu.caps, &tb, &split) == LWP_TB_SPLIT) {
            action = LWP_TB_SPLIT;
        }
    } else {
        action = lwp_tb_plan(&env->lwp, cpu.caps, &tb, &split);
    }
    if (action != LWP_TB_SPLIT) {
        lwp_icount_give_back(cs, tb.icount, false);
    }
    switch (action) {
    case LWP_TB_CHARGE:
        break;
    case LWP_TB_SKIP:
        t->tb_uncharged = 1;
        break;
    case LWP_TB_GATHER:
        t->gathering = 1;
        t->insn_ip = tb.last_ip;
        break;
    case LWP_TB_SPLIT:
        cflags = curr_cflags(cs) & ~CF_COUNT_MASK;
        if (!(t->tb_flags & HF_LWP_IPF_MASK) && !(cflags & CF_USE_ICOUNT)) {
            /*
             * Cut to its own length: one translation per TB, reused, that
             * stores the record when the crossing instruction retires.
             * Under -icount a helper may raise the threshold interrupt
             * only at the end of a TB: cut after the crossing instruction.
             */
            split = tb.icount;
            trace_lwp_tb_split(env->eip, split);
            if (info & LWP_TB_INFO_GOTO) {
                /*
                 * Translated already (the common case): the TB goes on
                 * there, at its start, as nothing of it has run.
                 */
                const void *next = tcg_lookup_tb_ptr_cflags(cs, cflags | split);

                if (next) {
                    return next;
                }
            }
        } else {
            trace_lwp_tb_split(env->eip, split);
        }
        /* Else translate it in the main loop. */
        cs->cflags_next_tb = cflags | split;
        cpu_loop_exit_noexc(cs);
    }
    return NULL;
}

void helper_lwp_retire(CPUX86State *env, uint32_t info)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    uint8_t records[2][LWP_RECORD_SIZE];
    LwpRetired insn;
    unsigned n;

    if (!(info & LWP_RETIRE_POST) && !t->gathering) {
        return;
    }
    t->gathering = 0;
    t->tb_uncharged = 0;
    /* Left CPL 3, or a REP string instruction that has not finished. */
    if ((env->hflags & HF_CPL_MASK) != 3 ||
        ((info & LWP_RETIRE_REP) && env->eip == t->insn_ip)) {
        return;
    }

    LWP_GUEST(env, mem, cpu, lwp_boundary_ra());
    if (t->tb_flags & HF_LWP_IPF_MASK) {
        lwp_step_or_fault(&mem, &mem_ops, &cpu, lwp_prepare);
    }
    insn.ip = t->insn_ip;
    insn.fallthrough = lwp_wrap_ip(insn.ip + LWP_RETIRE_LEN(info),
                                   LWP_RETIRE_CSIZE(info));
    insn.next_ip = env->eip;
    insn.branch = LWP_RETIRE_BRANCH(info);
    insn.counted = true;
    insn.taken = info & LWP_RETIRE_TAKEN;
    n = lwp_retire(&env->lwp, &cpu, &insn, records);
    for (unsigned i = 0; i < n; i++) {
        /* If this store faults, the record waits and any later one is lost. */
        memcpy(env->lwp.pending, records[i], LWP_RECORD_SIZE);
        lwp_store_pending_or_fault(&mem, &mem_ops, &cpu);
    }
}
