/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: TCG side of LWP -- the four instructions, the MSRs and XSAVE
 * component 62 -- on top of the C++ model.
 *
 * The model never faults: it reads guest memory through callbacks that probe
 * first (non-faulting) and catch any exit from the CPU loop a load may take
 * (lwp_load_caught), and reports a needed #PF or #GP in its outcome, with LWP
 * state untouched.  Only this file raises exceptions or leaves the CPU loop,
 * after the model has returned, so no longjmp ever crosses C++ frames; and
 * the model's writes are performed only when all of them are known to be
 * permitted.
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
#ifdef CONFIG_USER_ONLY
#include "exec/page-protection.h"
#include "user/page-protection.h"
#else
#include "accel/tcg/internal-target.h"
#endif
#include "tcg/tcg.h"

/*
 * One LWP operation's access to guest memory.  @ops is what the model
 * calls; faults unwind to @ra (0: none, at a TB boundary).
 */
typedef struct LwpGuestMem {
    LwpMem ops;
    CPUX86State *env;
    int mmu_idx;
    uintptr_t ra;
    /* A probe may leave the CPU loop: @ra lies in a TB (precise SMC). */
    bool probes_unwind;
    /* An access left the CPU loop: the outcome is dropped (lwp_complete). */
    bool left_loop;
    /* The threshold interrupt was signalled. */
    bool raised;
    /* A write went through QEMU's store path (a device, a watchpoint). */
    bool slow_write;
} LwpGuestMem;

#ifdef CONFIG_USER_ONLY
/*
 * What page_get_flags said of the page of [addr, addr + len), if that lies
 * in one page asked about lately and no mapping has changed since: every
 * access to a ring page but its first, and to the LWPCB.  A race with
 * another thread's munmap or mprotect is the host's to catch, as for the
 * program's own accesses (lwp_store_bytes, lwp_load).
 */
static int lwp_page_index(CPUX86State *env, uint64_t page, uint32_t gen)
{
    QemuLwpTcg *t = &env->lwp_tcg;

    for (unsigned i = 0; i < ARRAY_SIZE(t->known); i++) {
        if (t->known[i].flags && t->known[i].page == page &&
            t->known[i].gen == gen) {
            return i;
        }
    }
    return -1;
}

static int lwp_page_known(CPUX86State *env, uint64_t addr, uint32_t len)
{
    uint64_t page = addr & TARGET_PAGE_MASK;

    if (((addr + len - 1) & TARGET_PAGE_MASK) != page) {
        return -1;
    }
    return lwp_page_index(env, page, page_flags_generation());
}

static int lwp_page_known_flags(CPUX86State *env, uint64_t addr,
                                uint32_t len)
{
    int i = lwp_page_known(env, addr, len);

    return i < 0 ? 0 : env->lwp_tcg.known[i].flags;
}

/* Returns the index in lwp_tcg.known of what it learnt. */
static unsigned lwp_page_learn(CPUX86State *env, uint64_t page, uint32_t gen)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    uint64_t cb_page = env->lwp.cbaddr & TARGET_PAGE_MASK;
    QemuLwpKnownPage *k;
    unsigned index;

    /*
     * Keep the LWPCB's page while it is current: the ring's pages come
     * and go around it.
     */
    if (t->known[t->known_victim].page == cb_page &&
        t->known[t->known_victim].flags &&
        t->known[t->known_victim].gen == gen) {
        t->known_victim ^= 1;
    }
    index = t->known_victim;
    k = &t->known[index];
    t->known_victim ^= 1;
    k->page = page;
    k->gen = gen;
    /* A page whose code is protected is not writable until its next fault. */
    k->flags = page_get_flags(page);
    return index;
}
#endif

#ifdef CONFIG_USER_ONLY
/* The index in lwp_tcg.known of @page, learnt if it was not known. */
static unsigned lwp_page_find(CPUX86State *env, uint64_t page, uint32_t gen)
{
    int index = lwp_page_index(env, page, gen);

    return index >= 0 ? index : lwp_page_learn(env, page, gen);
}
#endif

/*
 * Whether every page of [addr, addr + len) allows @access.  *@plain is the
 * host address of the range when it lies in one page of plain RAM (system
 * mode: no MMIO, watchpoint or clean-page tracking), else NULL.
 */
static bool lwp_probe(LwpGuestMem *m, uint64_t addr, uint32_t len,
                      MMUAccessType access, void **plain)
{
    /* Walk by the last byte, so a range ending at 2^64 is still probed. */
    uint64_t last_page = (addr + len - 1) & TARGET_PAGE_MASK;
    uint64_t page = addr & TARGET_PAGE_MASK;
    void *host;
    int flags;
#ifdef CONFIG_USER_ONLY
    /* Read before the look-up: a change meanwhile makes it stale. */
    uint32_t gen = page_flags_generation();
    int need = access == MMU_DATA_STORE ? PAGE_WRITE : PAGE_READ;

    /* Another thread may unmap the page at any time: never plain. */
    *plain = NULL;
    if (lwp_page_known_flags(m->env, addr, len) & need) {
        return true;
    }
#endif

    for (;; page += TARGET_PAGE_SIZE) {
        flags = probe_access_flags(m->env, MAX(page, addr), 1, access,
                                   m->mmu_idx, true, &host, m->ra);
        if (flags & TLB_INVALID_MASK) {
            return false;
        }
        if (page == last_page) {
            break;
        }
    }
#ifdef CONFIG_USER_ONLY
    if (page == (addr & TARGET_PAGE_MASK)) {
        lwp_page_learn(m->env, page, gen);
    }
#else
    *plain = page == (addr & TARGET_PAGE_MASK) && flags == 0 ? host : NULL;
#endif
    return true;
}

/* Through QEMU's load path: devices, watchpoints, linux-user host faults. */
static void lwp_load_bytes(LwpGuestMem *m, uint64_t addr, uint8_t *buf,
                           uint32_t len)
{
    uint32_t i = 0;

    while (i < len) {
        uint64_t at = addr + i;

        if (len - i >= 8 && -(at | TARGET_PAGE_MASK) >= 8) {
            stq_le_p(buf + i, cpu_ldq_le_mmuidx_ra(m->env, at, m->mmu_idx,
                                                   m->ra));
            i += 8;
        } else {
            buf[i++] = cpu_ldub_mmuidx_ra(m->env, at, m->mmu_idx, m->ra);
        }
    }
}

/* An access for the model: false if it would fault. */
typedef bool LwpGuestAccess(LwpGuestMem *m, uint64_t addr, void *buf,
                            uint32_t len);

static bool lwp_load(LwpGuestMem *m, uint64_t addr, void *buf, uint32_t len)
{
#ifdef CONFIG_USER_ONLY
    if (-(addr | TARGET_PAGE_MASK) >= len &&
        !cpu_plugin_mem_cbs_enabled(env_cpu(m->env))) {
        /*
         * Probed readable: one copy, with the return address set so that
         * a host fault (a page unmapped meanwhile, a file mapping past its
         * end) becomes the program's signal, caught by lwp_access_caught.
         */
        set_helper_retaddr(m->ra);
        memcpy(buf, g2h(env_cpu(m->env), addr), len);
        clear_helper_retaddr();
        return true;
    }
#endif
    lwp_load_bytes(m, addr, buf, len);
    return true;
}

static bool lwp_probe_store(LwpGuestMem *m, uint64_t addr, void *buf,
                            uint32_t len)
{
    void *plain;

    return lwp_probe(m, addr, len, MMU_DATA_STORE, &plain);
}

/*
 * QEMU's load path and store probe may leave the CPU loop by siglongjmp: a
 * device access that must be the last instruction of its TB
 * (cpu_io_recompile), a watchpoint, a store into the running TB's code
 * (precise self-modifying code), a linux-user host fault on a page another
 * thread unmapped since the probe.  The model that asked for the access is
 * C++ and must not be unwound, so the jump is caught here, in C, with
 * QEMU's state already set for the exit (EIP restored, the next TB's flags,
 * the guest's signal queued); lwp_complete() takes that exit once the model
 * has returned, and the model goes on without touching guest memory or CPU
 * state again.  False if the jump was caught.
 */
static bool lwp_access_caught(LwpGuestMem *m, LwpGuestAccess *access,
                              uint64_t addr, void *buf, uint32_t len,
                              bool *ok)
{
    CPUState *cs = env_cpu(m->env);
    sigjmp_buf outer LWP_UNINITIALIZED;
    bool caught;

    memcpy(outer, cs->jmp_env, sizeof(outer));
    caught = sigsetjmp(cs->jmp_env, 0) != 0;
    if (!caught) {
        *ok = access(m, addr, buf, len);
    }
    memcpy(cs->jmp_env, outer, sizeof(outer));
    if (caught) {
        /* Left set by the access (linux-user); nothing else is accessed. */
        clear_helper_retaddr();
        trace_lwp_access_left_loop(addr);
        m->left_loop = true;
    }
    return !caught;
}

static bool lwp_mem_read(void *opaque, uint64_t addr, void *buf, uint32_t len)
{
    LwpGuestMem *m = opaque;
    void *plain;
    bool ok;

    if (m->left_loop) {
        /* The outcome is dropped: guest memory is not read again. */
        memset(buf, 0, len);
        return true;
    }
    if (!lwp_probe(m, addr, len, MMU_DATA_LOAD, &plain)) {
        return false;
    }
    if (plain) {
        memcpy(buf, plain, len);
    } else if (!lwp_access_caught(m, lwp_load, addr, buf, len, &ok)) {
        memset(buf, 0, len);
    }
    return true;
}

static bool lwp_mem_probe_write(void *opaque, uint64_t addr, uint32_t len)
{
    LwpGuestMem *m = opaque;
    bool ok = true;

    if (m->left_loop) {
        return true;
    }
#ifdef CONFIG_USER_ONLY
    if (lwp_page_known_flags(m->env, addr, len) & PAGE_WRITE) {
        return true;
    }
#endif
    if (!m->probes_unwind) {
        /* No TB to restore: a store probe cannot leave the CPU loop. */
        return lwp_probe_store(m, addr, NULL, len);
    }
    lwp_access_caught(m, lwp_probe_store, addr, NULL, len, &ok);
    return ok;
}

static void lwp_cpu_env(CPUX86State *env, LwpCpuEnv *e)
{
    const SegmentCache *ds = &env->segs[R_DS];

    /* Every field, and no memset: this runs for every record. */
    e->caps = &env_archcpu(env)->lwp_caps;
    e->lwp_cfg = env->lwp_cfg;
    e->cpl = env->hflags & HF_CPL_MASK;
    e->mode64 = env->hflags & HF_CS64_MASK;
    e->ds_base = ds->base;
    e->ds_limit = ds->limit;
    e->ds_expand_down =
        (ds->flags & (DESC_CS_MASK | DESC_E_MASK)) == DESC_E_MASK;
    e->ds_big = ds->flags & DESC_B_MASK;
    e->ds_writable = (ds->flags & (DESC_CS_MASK | DESC_W_MASK)) == DESC_W_MASK;
    e->ds_usable = (ds->flags & DESC_P_MASK) || !(env->cr[0] & CR0_PE_MASK);
    e->va_bits = (env->cr[4] & CR4_LA57_MASK) ? 57 : 48;
    e->long_mode = env->hflags & HF_LMA_MASK;
    e->latitude = env_archcpu(env)->lwp_latitude.model;
}

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

/* The model's view of guest memory and of the CPU, faults unwinding to @ra. */
static void lwp_guest_init(LwpGuestMem *m, LwpCpuEnv *cpu, CPUX86State *env,
                           uintptr_t ra)
{
    m->ops.opaque = m;
    m->ops.read = lwp_mem_read;
    m->ops.probe_write = lwp_mem_probe_write;
    m->env = env;
    m->mmu_idx = cpu_mmu_index(env_cpu(env), false);
    m->ra = ra;
    m->probes_unwind = ra != lwp_boundary_ra();
    m->left_loop = false;
    m->raised = false;
    m->slow_write = false;
    lwp_cpu_env(env, cpu);
}

/*
 * Records are written one after another into a ring that is usually far
 * larger than the cache: without a hint, each new cache line costs a wait
 * for its read-for-ownership, which at the minimum interval weighs more
 * than the rest of the store.  Ask for the line a few records ahead (a
 * prefetch never faults, whatever the address).
 */
#define LWP_PREFETCH_AHEAD (4 * LWP_RECORD_SIZE)

static void lwp_store_record_host(void *host, const uint8_t *record)
{
    /* A constant size: a few moves, not a call of the library's memcpy. */
    memcpy(host, record, LWP_RECORD_SIZE);
    __builtin_prefetch((uint8_t *)host + LWP_PREFETCH_AHEAD, 1, 3);
}

static void lwp_store_host(void *host, const LwpWrite *w)
{
    if (w->len == LWP_RECORD_SIZE) {
        lwp_store_record_host(host, w->data);
    } else {
        memcpy(host, w->data, w->len);
    }
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
        lwp_store_host(host, w);
        return;
    }
    m->slow_write = true;
#else
    if (w->len && -(w->addr | TARGET_PAGE_MASK) >= w->len &&
        !cpu_plugin_mem_cbs_enabled(env_cpu(m->env))) {
        /*
         * What cpu_stq_le_mmuidx_ra does for each 8 bytes, once: the
         * store is made with the return address set, so that a host fault
         * becomes the program's signal.
         */
        set_helper_retaddr(m->ra);
        lwp_store_host(g2h(env_cpu(m->env), w->addr), w);
        clear_helper_retaddr();
        return;
    }
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
 * Whether @out is I/O: a write that reaches a device, or the threshold
 * interrupt.  An instruction that may not do I/O (it is not the last of its
 * TB) then runs again as the last one (cpu_io_recompile), before anything
 * is written.  The TB-boundary helpers always may (lwp_boundary_begin).
 */
#ifndef CONFIG_USER_ONLY
static bool lwp_outcome_is_io(LwpGuestMem *m, const LwpOutcome *out)
{
    /* An interrupt is I/O only to -icount. */
    if (out->interrupt && (curr_cflags(env_cpu(m->env)) & CF_USE_ICOUNT)) {
        return true;
    }
    for (uint32_t i = 0; i < out->nwrites; i++) {
        const LwpWrite *w = &out->writes[i];
        uint64_t page = w->addr & TARGET_PAGE_MASK;
        uint64_t last_page = (w->addr + w->len - 1) & TARGET_PAGE_MASK;

        for (;; page += TARGET_PAGE_SIZE) {
            void *host;

            if (probe_access_flags(m->env, MAX(page, w->addr), 1,
                                   MMU_DATA_STORE, m->mmu_idx, true, &host,
                                   m->ra) & TLB_MMIO) {
                return true;
            }
            if (page == last_page) {
                break;
            }
        }
    }
    return false;
}
#endif

/*
 * Carry out what the model decided: leave the CPU loop as a caught load
 * asked, raise the model's fault, or perform its writes and signal the
 * threshold interrupt.  Returns only on success.
 */
static void lwp_complete(LwpGuestMem *m, const LwpOutcome *out)
{
    CPUX86State *env = m->env;
    CPUState *cs = env_cpu(env);

    if (m->left_loop) {
        cpu_loop_exit(cs);
    }
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
        cpu_loop_exit_restore(cs, m->ra);
    }
#ifndef CONFIG_USER_ONLY
    if (m->ra && !cs->neg.can_do_io && lwp_outcome_is_io(m, out)) {
        cpu_io_recompile(cs, m->ra);
    }
#endif
    for (uint32_t i = 0; i < out->nwrites; i++) {
        lwp_store_bytes(m, &out->writes[i]);
    }
    if (out->interrupt) {
        trace_lwp_threshold_interrupt(LWP_CFG_VECTOR(env->lwp_cfg));
        x86_lwp_raise_threshold_irq(env, LWP_CFG_VECTOR(env->lwp_cfg));
        m->raised = true;
    }
}

/* Spec 5: #UD unless LWP is supported and XCR0[62] makes it available. */
static void lwp_check_available(CPUX86State *env, uintptr_t ra)
{
    if (!(env->xcr0 & XSTATE_LWP_MASK)) {
        raise_exception_ra(env, EXCP06_ILLOP, ra);
    }
}

void helper_lwp_llwpcb(CPUX86State *env, target_ulong ea)
{
    LwpGuestMem mem LWP_UNINITIALIZED;
    LwpCpuEnv cpu LWP_UNINITIALIZED;
    LwpOutcome out LWP_UNINITIALIZED;
    LwpState next = env->lwp;

    lwp_check_available(env, GETPC());
    lwp_guest_init(&mem, &cpu, env, GETPC());
    /*
     * Spec 5.1 steps 2-3 complete before step 4 looks at the new LWPCB: the
     * old session is flushed and disabled first (a fault there leaves it
     * enabled), and a fault on the new LWPCB then leaves LWP disabled.
     */
    if (next.cbaddr && ea) {
        lwp_llwpcb(&next, &cpu, &mem.ops, 0, &out);
        trace_lwp_llwpcb(0, out.status, next.cbaddr, next.flags);
        lwp_complete(&mem, &out);
        env->lwp = next;
        x86_lwp_state_changed(env);
    }
    lwp_llwpcb(&next, &cpu, &mem.ops, ea, &out);
    trace_lwp_llwpcb(ea, out.status, next.cbaddr, next.flags);
    lwp_complete(&mem, &out);
    env->lwp = next;
    x86_lwp_state_changed(env);
}

target_ulong helper_lwp_slwpcb(CPUX86State *env)
{
    LwpGuestMem mem LWP_UNINITIALIZED;
    LwpCpuEnv cpu LWP_UNINITIALIZED;
    LwpOutcome out LWP_UNINITIALIZED;
    LwpState next = env->lwp;

    lwp_check_available(env, GETPC());
    lwp_guest_init(&mem, &cpu, env, GETPC());
    lwp_slwpcb(&next, &cpu, &mem.ops, &out);
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
    LwpGuestMem mem LWP_UNINITIALIZED;
    LwpCpuEnv cpu LWP_UNINITIALIZED;
    LwpOutcome out LWP_UNINITIALIZED;
    LwpState next = env->lwp;
    uint32_t data1 = src;

    lwp_check_available(env, GETPC());
    trace_lwp_lwpval_helper(env->eip);
    lwp_guest_init(&mem, &cpu, env, GETPC());
    if (lwp_lwpval_stores(&next, &cpu, env->eip)) {
        if (is_mem) {
            data1 = cpu_ldl_data_ra(env, src, mem.ra);
        }
        lwp_lwpval(&next, &cpu, &mem.ops, data2, data1, imm, env->eip, &out);
        trace_lwp_store(LWP_EVENT_VAL, env->eip, out.status, next.head);
    } else {
        lwp_lwpval(&next, &cpu, &mem.ops, data2, 0, imm, env->eip, &out);
    }
    lwp_complete(&mem, &out);
    env->lwp = next;
}

target_ulong helper_lwp_lwpins(CPUX86State *env, target_ulong data2,
                               target_ulong src, uint32_t imm, uint32_t is_mem)
{
    LwpGuestMem mem LWP_UNINITIALIZED;
    LwpCpuEnv cpu LWP_UNINITIALIZED;
    LwpOutcome out LWP_UNINITIALIZED;
    LwpState next = env->lwp;
    uint32_t data1;

    lwp_check_available(env, GETPC());
    data1 = is_mem ? cpu_ldl_data_ra(env, src, GETPC()) : src;
    lwp_guest_init(&mem, &cpu, env, GETPC());
    lwp_lwpins(&next, &cpu, &mem.ops, data2, data1, imm, env->eip, &out);
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

/*
 * A record still waiting for its store with its counter restarted (at CPL
 * 0, or in linux-user's signal frames: a TB that ends in XSAVE or XRSTOR
 * stored it at its start) is saved pending, its counter below zero, as
 * one whose store faulted (spec 8.6, "saving the event record in the
 * XSAVE area and retrying the store later").
 */
bool x86_lwp_xsave(CPUX86State *env, uint8_t *area)
{
    lwp_settle(&env->lwp);
    return lwp_xsave(&env->lwp, area);
}

void x86_lwp_xrstor(CPUX86State *env, const uint8_t *area, bool present)
{
    static const uint8_t init_area[LWP_XSAVE_SIZE];
    LwpCpuEnv cpu LWP_UNINITIALIZED;

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
 * -icount charged a TB's instructions at its start: give them back, or take
 * them again.
 */
static void lwp_icount_give_back(CPUState *cs, uint32_t insns, bool back)
{
#ifndef CONFIG_USER_ONLY
    if (curr_cflags(cs) & CF_USE_ICOUNT) {
        cs->neg.icount_decr.u16.low += back ? insns : -insns;
    }
#endif
}

/*
 * A boundary helper may store into a device (the LWPCB or the ring in MMIO
 * or unassigned memory) and raise the threshold interrupt: I/O, which QEMU
 * allows only where the instruction count is exact and the TB may end
 * (can_do_io; cpu_io_recompile and -icount abort otherwise, having no TB
 * to recompile).  At a TB's start none of it has run and its -icount
 * charge is given back; its last instruction may do I/O already.  An
 * instruction that retires inside a TB cut to length (@index > 0, the
 * instructions run so far) gives back what follows it for as long as the
 * helper runs: any exit from the CPU loop then leaves the count exact.
 */
typedef struct LwpBoundary {
    uint32_t rest;          /* instructions of the TB after this one */
    bool inside;            /* inside the TB, not at its end */
    bool ends_tb;           /* at its end, its last instruction retired */
} LwpBoundary;

static LwpBoundary lwp_boundary_begin(CPUX86State *env, uint32_t index)
{
    CPUState *cs = env_cpu(env);
    LwpBoundary b = { .rest = 0, .inside = index != 0, .ends_tb = false };

    if (b.inside) {
        if (env->lwp_tcg.tb_icount > index) {
            b.rest = env->lwp_tcg.tb_icount - index;
        }
        lwp_icount_give_back(cs, b.rest, true);
    }
#ifndef CONFIG_USER_ONLY
    cs->neg.can_do_io = true;
#endif
    return b;
}

/*
 * After the threshold interrupt (taken before the next instruction) or a
 * write through QEMU's store path (a device that may interrupt, code of
 * the running TB), leave the TB here.  Otherwise it goes on as translated;
 * so does a TB at its end, whose last instruction retired: what gen_eob
 * does after it (the interrupt shadow, RF, a single-step trap) is still
 * to be done, and the next TB starts by taking a pending interrupt.
 */
static void lwp_boundary_end(CPUX86State *env, const LwpBoundary *b,
                             const LwpGuestMem *m)
{
    CPUState *cs = env_cpu(env);

    if ((m->raised || m->slow_write) && !b->ends_tb) {
        cpu_loop_exit_noexc(cs);
    }
    if (b->inside) {
        lwp_icount_give_back(cs, b->rest, false);
#ifndef CONFIG_USER_ONLY
        cs->neg.can_do_io = false;
#endif
    }
}

/* A model step on env->lwp. */
typedef void LwpStateStep(LwpState *st, const LwpCpuEnv *env,
                          const LwpMem *mem, LwpOutcome *out);

/* Run one model step on env->lwp; a fault raises it, state unchanged. */
static void lwp_step_or_fault(LwpGuestMem *m, LwpCpuEnv *cpu,
                              LwpStateStep *step)
{
    CPUX86State *env = m->env;
    LwpState next = env->lwp;
    LwpOutcome out LWP_UNINITIALIZED;

    step(&next, cpu, &m->ops, &out);
    lwp_complete(m, &out);
    env->lwp = next;
}

/*
 * Store st.pending; on a fault the record stays pending and #PF is raised.
 * The model's fast path decides the common store without a copy of the
 * state; the record stays pending until its writes are done, so a write
 * that leaves the CPU loop (linux-user: a page unmapped since the probe)
 * leaves it pending, as on the general path.
 */
static void lwp_store_pending_or_fault(LwpGuestMem *m, LwpCpuEnv *cpu)
{
    CPUX86State *env = m->env;
    uint8_t event = env->lwp.pending[0];
    LwpStoreCommit commit LWP_UNINITIALIZED;
    LwpOutcome out LWP_UNINITIALIZED;

    if (!event) {
        return;
    }
    if (lwp_store_fast(&env->lwp, cpu, &m->ops, &out, &commit)) {
        lwp_complete(m, &out);
        lwp_store_commit(&env->lwp, cpu->caps, &commit);
    } else {
        /* A fault is traced (lwp_fault) and raised by lwp_complete. */
        lwp_step_or_fault(m, cpu, lwp_store_pending);
    }
    trace_lwp_store(event, env->eip, LWP_OK, env->lwp.head);
}

/*
 * The record path at its floor (issue 25).  The common record is gathered
 * (lwp_tb_cross, else lwp_tb_defer_known) and stored (lwp_store_lean) once
 * lwp_slot_host found its slot writable; a store that reads the LWPCB (a
 * full ring, a threshold) is decided by lwp_store_lean too, on a copy of
 * the LWPCB's fields made here once lwp_fields_host found them readable,
 * and written once found writable.
 * In linux-user the pages lwp_probe's page memory knows while no mapping
 * changed since (PAGE_WRITE is off while a page holds translated code),
 * read and written here, in C, with the return address set, so that a
 * host fault (a page another thread unmapped, a file mapping that ends
 * before it) becomes the program's signal, as for the writes
 * (lwp_store_bytes).  In system mode plain RAM, probed for this one call
 * (the TLB may change between calls): no device, watchpoint or translated
 * code.
 */
/* Linear addresses are 64-bit: long mode (or 64-bit code). */
static bool lwp_long_mode(CPUX86State *env)
{
    return env->hflags & (HF_LMA_MASK | HF_CS64_MASK);
}

#ifndef CONFIG_USER_ONLY
/*
 * The host address of [addr, addr + len), in one page, if @access may be
 * made there now as to plain RAM (no device, watchpoint or translated
 * code), by a probe that cannot fault; else NULL.
 */
static void *lwp_plain_ram(CPUX86State *env, uint64_t addr, uint32_t len,
                           MMUAccessType access)
{
    void *host;

    if (probe_access_flags(env, addr, len, access,
                           cpu_mmu_index(env_cpu(env), false), true, &host,
                           0) || !host) {
        return NULL;
    }
    return host;
}
#endif

/*
 * Where a record may be written at @slot now, with no fault possible but a
 * host fault linux-user turns into the program's signal: the host address,
 * or NULL.  *@writable, unless NULL: where the next record's slot may be
 * written as well, in this helper call (the page in linux-user, the next
 * slot in system mode).
 */
static inline QEMU_ALWAYS_INLINE void *lwp_slot_host(CPUX86State *env,
                                                     uint64_t slot,
                                                     LwpWritable *writable)
{
    uint64_t page = slot & TARGET_PAGE_MASK;
    bool in_page = ((slot + LWP_RECORD_SIZE - 1) & TARGET_PAGE_MASK) == page;
#ifdef CONFIG_USER_ONLY
    QemuLwpTcg *t = &env->lwp_tcg;
    uint32_t gen = page_flags_generation();
    const QemuLwpKnownPage *k = &t->known[t->ring_known];

    if (unlikely(!in_page)) {
        return NULL;
    }
    if (unlikely(cpu_plugin_mem_cbs_enabled(env_cpu(env)))) {
        return NULL;
    }
    if (unlikely(k->page != page || k->gen != gen || !k->flags)) {
        t->ring_known = lwp_page_find(env, page, gen);
        k = &t->known[t->ring_known];
    }
    if (unlikely(!(k->flags & PAGE_WRITE))) {
        return NULL;
    }
    if (writable) {
        writable->lo = page;
        writable->hi = page + TARGET_PAGE_SIZE;
    }
    return g2h(env_cpu(env), slot);
#else
    /*
     * The next slot too, in the common case that it follows in the page:
     * what makes a probe fail (MMIO, a watchpoint) is per page, so this
     * probe fails only where the slot's alone would.  It marks the next
     * slot's bytes dirty and their translated code invalid one record
     * early, as the next record's store there would.
     */
    uint32_t len = writable ? MIN(2 * LWP_RECORD_SIZE,
                                  page + TARGET_PAGE_SIZE - slot)
                            : LWP_RECORD_SIZE;
    void *host;

    if (!in_page) {
        return NULL;
    }
    host = lwp_plain_ram(env, slot, len, MMU_DATA_STORE);
    if (host && writable) {
        writable->lo = slot;
        writable->hi = slot + len;
    }
    return host;
#endif
}

/*
 * The host address of the LWPCB's fields a store reads (lwp_store_fields),
 * if they may be read (@access MMU_DATA_LOAD) or written now as
 * lwp_slot_host's slot may be; else NULL.  In system mode a store probe
 * sets the PTE's Dirty bit and makes translated code in the range invalid,
 * so it is made only for a store that writes a field.
 */
static inline QEMU_ALWAYS_INLINE void *lwp_fields_host(CPUX86State *env,
                                                       uint64_t addr,
                                                       MMUAccessType access)
{
    uint64_t page = addr & TARGET_PAGE_MASK;

    if (((addr + LWP_STORE_FIELDS_LEN - 1) & TARGET_PAGE_MASK) != page) {
        return NULL;
    }
#ifdef CONFIG_USER_ONLY
    int want = access == MMU_DATA_STORE ? PAGE_WRITE : PAGE_READ;
    QemuLwpTcg *t = &env->lwp_tcg;
    uint32_t gen = page_flags_generation();
    const QemuLwpKnownPage *k = &t->known[t->cb_known];

    if (cpu_plugin_mem_cbs_enabled(env_cpu(env))) {
        return NULL;
    }
    if (k->page != page || k->gen != gen || !k->flags) {
        t->cb_known = lwp_page_find(env, page, gen);
        k = &t->known[t->cb_known];
    }
    if (!(k->flags & want)) {
        return NULL;
    }
    return g2h(env_cpu(env), addr);
#else
    return lwp_plain_ram(env, addr, LWP_STORE_FIELDS_LEN, access);
#endif
}

/*
 * lwp_store_lean on a copy of the LWPCB's fields as they are now, at
 * linear address *@cb: the store of a full ring or past a threshold, out
 * of the common store's way but next to it (hot: a ring that stays full
 * comes here at every record).  *@cb_host: where the fields may be
 * written, if that was found on the way (linux-user), else NULL.
 */
static __attribute__((hot, noinline))
bool lwp_store_lean_on_fields(CPUX86State *env, bool long_mode,
                              uint8_t tail_reread, LwpLeanStore *s,
                              uint64_t *cb, uint8_t **cb_host)
{
    uint8_t fields[LWP_STORE_FIELDS_LEN];
    uint8_t *host;

    if (!lwp_store_fields(&env->lwp, long_mode, cb)) {
        return false;
    }
    host = lwp_fields_host(env, *cb, MMU_DATA_LOAD);
    if (!host) {
        return false;
    }
#ifdef CONFIG_USER_ONLY
    /* The page lwp_fields_host just looked up. */
    *cb_host = env->lwp_tcg.known[env->lwp_tcg.cb_known].flags & PAGE_WRITE ?
               host : NULL;
    set_helper_retaddr(lwp_boundary_ra());
#endif
    memcpy(fields, host, sizeof(fields));
#ifdef CONFIG_USER_ONLY
    clear_helper_retaddr();
#endif
    return lwp_store_lean(&env->lwp, long_mode, tail_reread, fields, s);
}

/*
 * The store of the pending record as lwp_store_lean decides it, performed:
 * the record alone, or with the LWPCB's fields a full ring or a threshold
 * writes.  The caller commits *@s.  *@writable, unless NULL: where the
 * next record may be written too (lwp_slot_host).  False: nothing changed,
 * the general path decides.
 */
static inline QEMU_ALWAYS_INLINE
bool lwp_store_pending_lean(CPUX86State *env, LwpLeanStore *s,
                            LwpWritable *writable)
{
    X86CPU *cpu = env_archcpu(env);
    QemuLwpTcg *t = &env->lwp_tcg;
    bool long_mode = lwp_long_mode(env);
    uint8_t tail_reread = cpu->lwp_latitude.model.tail_reread;
    uint8_t *cb_host = NULL;
    uint64_t cb = 0;
    bool decided;
    void *host;

    /*
     * A ring that stays full reads the LWPCB at every store (8.3): while
     * the last store did, the copy of its fields is made first.  Either
     * order decides the same store (the copy only adds what the fields
     * say), so where the first declines the second is asked.
     */
    if (t->store_writes_fields) {
        decided = lwp_store_lean_on_fields(env, long_mode, tail_reread, s,
                                           &cb, &cb_host) ||
                  lwp_store_lean(&env->lwp, long_mode, tail_reread, NULL, s);
    } else {
        decided = lwp_store_lean(&env->lwp, long_mode, tail_reread, NULL, s) ||
                  lwp_store_lean_on_fields(env, long_mode, tail_reread, s,
                                           &cb, &cb_host);
    }
    if (unlikely(!decided)) {
        t->store_writes_fields = 0;
        return false;
    }
    t->store_writes_fields = s->nfields != 0;
    host = lwp_slot_host(env, s->slot, writable);
    if (unlikely(!host)) {
        return false;
    }
    if (unlikely(s->nfields) && !cb_host) {
        cb_host = lwp_fields_host(env, cb, MMU_DATA_STORE);
        if (!cb_host) {
            return false;
        }
    }
#ifdef CONFIG_USER_ONLY
    set_helper_retaddr(lwp_boundary_ra());
#endif
    lwp_store_record_host(host, env->lwp.pending);
    for (uint32_t i = 0; i < s->nfields; i++) {
        const LwpFieldWrite *f = &s->fields[i];

        if (f->len == 8) {
            stq_le_p(cb_host + f->off, f->value);
        } else {
            stl_le_p(cb_host + f->off, f->value);
        }
    }
#ifdef CONFIG_USER_ONLY
    clear_helper_retaddr();
#endif
    return true;
}

/* lwp_store_pending_lean, committed. */
static bool lwp_store_pending_now(CPUX86State *env)
{
    uint8_t event = env->lwp.pending[0];
    LwpLeanStore s;

    if (!lwp_store_pending_lean(env, &s, NULL)) {
        return false;
    }
    lwp_store_commit(&env->lwp, &env_archcpu(env)->lwp_caps, &s.commit);
    trace_lwp_store(event, env->eip, LWP_OK, env->lwp.head);
    return true;
}

/*
 * lwp_tb_defer when the slot may be written now: false if not.  With
 * @restart, the counter restarts now (lwp_tb_defer_restart).
 */
static inline QEMU_ALWAYS_INLINE bool lwp_tb_defer_quickly(CPUX86State *env,
                                                           const LwpTbShape *tb,
                                                           uint64_t ip,
                                                           bool restart)
{
    const LwpCaps *caps = &env_archcpu(env)->lwp_caps;
    uint8_t core_id = LWP_CFG_COREID(env->lwp_cfg);
    uint64_t slot;

    if (!lwp_record_slot(&env->lwp, lwp_long_mode(env), &slot) ||
        !lwp_slot_host(env, slot, NULL)) {
        return false;
    }
    if (restart) {
        lwp_tb_defer_restart(&env->lwp, caps, core_id, tb, ip);
    } else {
        lwp_tb_defer_known(&env->lwp, caps, core_id, tb, ip);
    }
    return true;
}

/* Give back what a TB's fast path charged before it took the slow path. */
static void lwp_tb_give_back_charge(CPUX86State *env, uint64_t info)
{
    QemuLwpTcg *t = &env->lwp_tcg;

    if (t->tb_flags & HF_LWP_IRE_MASK) {
        env->lwp.counter[LWP_EVENT_IRE] +=
            FIELD_EX64(info, LWP_TB_INFO, CHARGED);
    }
    if (t->tb_flags & HF_LWP_BRE_MASK) {
        env->lwp.counter[LWP_EVENT_BRE] +=
            t->branch_weight[FIELD_EX64(info, LWP_TB_INFO, BRANCH)];
    }
}

static inline QEMU_ALWAYS_INLINE void lwp_tb_shape(CPUX86State *env,
                                                    uint64_t info,
                                                    uint64_t lens,
                                                    uint64_t lens_more,
                                                    LwpTbShape *tb)
{
    tb->first_ip = env->eip;
    tb->last_ip = lwp_ip_wrap(env->eip +
                              FIELD_EX64(info, LWP_TB_INFO, LAST_OFF),
                              FIELD_EX64(info, LWP_TB_INFO, CSIZE));
    tb->icount = FIELD_EX64(info, LWP_TB_INFO, ICOUNT);
    tb->charged = FIELD_EX64(info, LWP_TB_INFO, CHARGED);
    tb->branch = FIELD_EX64(info, LWP_TB_INFO, BRANCH);
    /* Set only with lwp-store-delay (lwp_tr_tb_start). */
    tb->may_defer = FIELD_EX64(info, LWP_TB_INFO, DEFER);
    tb->last_at_exit = FIELD_EX64(info, LWP_TB_INFO, EXIT);
    tb->lens[0] = lens;
    tb->lens[1] = lens_more;
    tb->csize = FIELD_EX64(info, LWP_TB_INFO, CSIZE);
}

/*
 * LWP_TB_RETIRE_LAST: the TB's last instruction, a branch, is counted at
 * the exit it takes, by helper_lwp_retire.
 */
static inline QEMU_ALWAYS_INLINE void lwp_tb_arm_exit(CPUX86State *env,
                                                       const LwpTbShape *tb,
                                                       const void *tb_ptr)
{
    env->lwp_tcg.insn_ip = tb->last_ip;
    env->lwp_tcg.exit_tb = tb_ptr;
}

/*
 * The effective address of instruction @index of @tb, which starts at EIP:
 * from the linear addresses its insn_start data keeps.  With CF_PCREL they
 * are page offsets; the instruction then lies within a page after the
 * TB's first (LWP_TB_INFO.DEFER).
 */
static uint64_t lwp_tb_insn_ip(CPUX86State *env, const TranslationBlock *tb,
                               uint32_t index, unsigned csize)
{
    uint64_t first = env->eip + tb->cs_base;
    uint64_t pc = tb_insn_start_pc(tb, index);
    uint64_t linear;

    if (tb_cflags(tb) & CF_PCREL) {
        linear = (first & TARGET_PAGE_MASK) | pc;
        if (linear < first) {
            linear += TARGET_PAGE_SIZE;
        }
    } else {
        linear = pc;
    }
    return lwp_ip_wrap(env->eip + (linear - first), csize);
}

/*
 * The address of instruction @split of a TB whose record is deferred.
 * Every instruction of such a TB is charged, so the first and the last
 * one's addresses are known without decoding, and those between from
 * the lengths the TB passes or else its unwind data.
 */
static uint64_t lwp_tb_defer_ip(CPUX86State *env, const LwpTbShape *tb,
                                uint32_t split, const void *tb_ptr)
{
    uint64_t ip;

    /* The translator's packing, which lwp_tb_lens_sum adds up. */
    QEMU_BUILD_BUG_ON(LWP_TB_WORD_LENS * LWP_TB_LEN_BITS != 64 ||
                      LWP_TB_LEN_BITS != 4);
    if (lwp_tb_insn_ip_known(tb, split, &ip)) {
        return ip;
    }
    return lwp_tb_insn_ip(env, tb_ptr, split, tb->csize);
}

/*
 * How a TB runs.  A TB cut to length counts each instruction when it
 * retires, so it is charged nothing ahead; under -icount a record (and
 * its threshold interrupt) may only be stored by its last instruction, so
 * it is cut again if a counter crosses zero before that.
 */
static LwpTbAction lwp_tb_decide(CPUX86State *env, uint64_t info,
                                 const LwpTbShape *tb, uint32_t *split)
{
    const LwpCaps *caps = &env_archcpu(env)->lwp_caps;
    LwpState probe LWP_UNINITIALIZED;

    if (!FIELD_EX64(info, LWP_TB_INFO, SINGLE)) {
        return lwp_tb_plan(&env->lwp, caps, tb, split);
    }
    env->lwp_tcg.tb_icount = tb->icount;
    probe = env->lwp;
    if ((curr_cflags(env_cpu(env)) & CF_USE_ICOUNT) &&
        lwp_tb_plan(&probe, caps, tb, split) == LWP_TB_SPLIT &&
        *split < tb->icount) {
        return LWP_TB_SPLIT;
    }
    return LWP_TB_CHARGE;
}

/*
 * Cut the TB to @split instructions: returns the host code to go on at, or
 * leaves the CPU loop to translate it.
 */
static const void *lwp_tb_split(CPUX86State *env, uint64_t info,
                                uint32_t split, uint32_t icount)
{
    CPUState *cs = env_cpu(env);
    uint32_t cflags = curr_cflags(cs) & ~CF_COUNT_MASK;
    /*
     * Cut to its own length: one translation per TB, reused, that stores
     * the record when the crossing instruction retires.  Under -icount a
     * helper may raise the threshold interrupt only at the end of a TB:
     * cut after the crossing instruction.
     */
    bool own_length = !(env->lwp_tcg.tb_flags & HF_LWP_IPF_MASK) &&
                      !(cflags & CF_USE_ICOUNT);

    if (own_length) {
        split = icount;
    }
    /*
     * A TB of TCG_MAX_INSNS (512) instructions has a length the count
     * field cannot hold: 512 would be CF_NO_GOTO_TB, the lookup would find
     * the uncut TB, which crosses again, for ever.  Cut it to 511; its last
     * instruction starts the next TB, which decides for itself.
     */
    split = MIN(split, CF_COUNT_MASK);
    trace_lwp_tb_split(env->eip, split);
    if (own_length && FIELD_EX64(info, LWP_TB_INFO, GOTO)) {
        /*
         * Translated already (the common case): the TB goes on there, at
         * its start, as nothing of it has run.
         */
        const void *next = tcg_lookup_tb_ptr_cflags(cs, cflags | split);

        if (next) {
            return next;
        }
    }
    /* Else translate it in the main loop. */
    cs->cflags_next_tb = cflags | split;
    cpu_loop_exit_noexc(cs);
}

/*
 * Spec 1.1 (Store): "The store need not complete synchronously with the
 * instruction retiring".  A record that can wait for its TB's end, @after
 * instructions after its own, waits there, as it costs no TB cut to its
 * instruction; "lwp-sync-store" stores it when its instruction retires,
 * and latitude mode's "lwp-store-delay" draws between the two.
 */
static bool lwp_store_after_tb(X86CPU *cpu, uint32_t after)
{
    if (cpu->lwp_latitude.store_delay) {
        return x86_lwp_latitude_store_late(cpu, after);
    }
    return !cpu->lwp_sync_store;
}

/*
 * helper_lwp_tb_slow in every case but the common ones: a store or a
 * deferral the lean paths declined, a counter that crosses in a way that
 * cuts the TB, IP filtering, a TB cut to length, -icount.  Decides from
 * the start (the plan changes nothing unless it charges the TB).  Kept
 * out of the common path's way: at the minimum interval a record lands in
 * a TB the program has not run for a while, and every cache line of
 * helper code it runs may have to be fetched again.
 */
static __attribute__((cold, noinline))
const void *lwp_tb_slow_general(CPUX86State *env, uint64_t info,
                                const void *tb_ptr, uint64_t lens,
                                uint64_t lens_more)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    CPUState *cs = env_cpu(env);
    LwpBoundary b LWP_UNINITIALIZED;
    LwpGuestMem mem LWP_UNINITIALIZED;
    LwpCpuEnv cpu LWP_UNINITIALIZED;
    LwpTbShape tb LWP_UNINITIALIZED;
    LwpTbAction action;
    uint32_t split;

    /*
     * Until this returns, none of the TB has run: a fault or a split
     * leaves it, and -icount must not have charged its instructions.
     */
    lwp_icount_give_back(cs, FIELD_EX64(info, LWP_TB_INFO, ICOUNT), true);
    /* A store that faults leaves its record waiting, its counter below 0. */
    lwp_settle(&env->lwp);
    /* The model's view of memory only when it will access memory. */
    if (env->lwp.pending[0] || (t->tb_flags & HF_LWP_IPF_MASK)) {
        b = lwp_boundary_begin(env, 0);
        lwp_guest_init(&mem, &cpu, env, lwp_boundary_ra());
        lwp_store_pending_or_fault(&mem, &cpu);
        if (t->tb_flags & HF_LWP_IPF_MASK) {
            lwp_step_or_fault(&mem, &cpu, lwp_prepare);
        }
        /* None of the TB has run: it may be left before its first one. */
        lwp_boundary_end(env, &b, &mem);
    }

    lwp_tb_shape(env, info, lens, lens_more, &tb);
    action = lwp_tb_decide(env, info, &tb, &split);
    if (action == LWP_TB_DEFER) {
        uint64_t ip = lwp_tb_defer_ip(env, &tb, split, tb_ptr);
        bool deferred = false;

        if (lwp_store_after_tb(env_archcpu(env), tb.charged - split - 1)) {
            deferred = lwp_tb_defer_quickly(env, &tb, ip, false);
            if (!deferred) {
                /* A store probe cannot leave the CPU loop (no TB to unwind). */
                lwp_guest_init(&mem, &cpu, env, lwp_boundary_ra());
                deferred = lwp_tb_defer(&env->lwp, &cpu, &mem.ops, &tb, ip);
            }
        }
        if (deferred) {
            t->deferred_unwind = tb.charged - split;
            t->deferred_counter = env->lwp.counter[LWP_EVENT_IRE];
            trace_lwp_tb_defer(env->eip, split);
        } else {
            action = LWP_TB_SPLIT;
            split++;
        }
    }
    if (action == LWP_TB_SPLIT) {
        return lwp_tb_split(env, info, split, tb.icount);
    }
    if (action == LWP_TB_RETIRE_LAST) {
        lwp_tb_arm_exit(env, &tb, tb_ptr);
    }
    lwp_icount_give_back(cs, tb.icount, false);
    t->tb_uncharged = action == LWP_TB_SKIP;
    return NULL;
}

/* The TB's record gathered at its start, its store after it. */
static inline QEMU_ALWAYS_INLINE void lwp_tb_deferred(CPUX86State *env,
                                                      const LwpTbShape *tb,
                                                      uint32_t split)
{
    env->lwp_tcg.deferred_unwind = tb->charged - split;
    env->lwp_tcg.deferred_counter = env->lwp.counter[LWP_EVENT_IRE];
    trace_lwp_tb_defer(env->eip, split);
}

/*
 * helper_lwp_tb_slow after a store at the start of a TB that came for it
 * alone, its counter reset now, or whose code the store overwrote: the
 * store committed, the TB starts over.  Out of exact mode's way (its
 * records wait with their counters restarted); latitude mode's late
 * stores come here.
 */
static __attribute__((noinline))
const void *lwp_tb_start_over(CPUX86State *env, const void *tb_ptr,
                              const LwpStoreCommit *stored, uint8_t event)
{
    lwp_store_commit(&env->lwp, &env_archcpu(env)->lwp_caps, stored);
    trace_lwp_store(event, env->eip, LWP_OK, env->lwp.head);
    /*
     * The record overwrote this TB's code (the ring in its page): nothing
     * of it has run, translate it again.
     */
    if (tb_cflags(tb_ptr) & CF_INVALID) {
        cpu_loop_exit_noexc(env_cpu(env));
    }
    /*
     * Stored, its counter reset: the TB starts again and charges itself
     * from there, with no plan made here (nothing of it has run, and
     * -icount, which charged it at its start, forbids GOTO).  After a
     * waiting record (its counter restarted already) the TB is decided
     * in helper_lwp_tb_slow: it came for the next crossing, or for the
     * waiting record alone (lwp_tr_tb_start).
     */
    return ((const TranslationBlock *)tb_ptr)->tc.ptr;
}

/*
 * helper_lwp_tb_slow once lwp_tb_cross planned the TB, for the plans out
 * of the common way: a record lwp_tb_cross could not gather, a TB cut,
 * the general path.
 */
static __attribute__((cold, noinline))
const void *lwp_tb_slow_planned(CPUX86State *env, uint64_t info,
                                const void *tb_ptr, const LwpCrossing *cross,
                                LwpTbAction action, uint32_t split)
{
    switch (action) {
    case LWP_TB_DEFER:
        /* Its address or its slot not known to lwp_tb_cross. */
        if (cross->gather &&
            lwp_tb_defer_quickly(env, &cross->tb,
                                 lwp_tb_defer_ip(env, &cross->tb, split,
                                                 tb_ptr), true)) {
            lwp_tb_deferred(env, &cross->tb, split);
            return NULL;
        }
        break;
    case LWP_TB_SPLIT:
        /*
         * A branch record (or one that may not wait): the TB cut to
         * length stores it when its instruction retires.  Under -icount
         * the cut is made after the crossing instead (lwp_tb_split).
         */
        if (!(curr_cflags(env_cpu(env)) & CF_USE_ICOUNT)) {
            return lwp_tb_split(env, info, split, cross->tb.icount);
        }
        break;
    default:
        break;
    }
    return lwp_tb_slow_general(env, info, tb_ptr, cross->tb.lens[0],
                               cross->tb.lens[1]);
}

/*
 * The pending record written at the slot lwp_tb_cross_plain decided, if
 * that and the next record's slot may be written now (lwp_slot_host):
 * false, and nothing written, if not.
 */
static inline QEMU_ALWAYS_INLINE bool lwp_store_plain(CPUX86State *env,
                                                      const LwpPlainCross *p)
{
    LwpWritable writable LWP_UNINITIALIZED;
    void *host = lwp_slot_host(env, p->slot, &writable);

    if (unlikely(!host || !lwp_writable_holds(&writable, p->next_slot))) {
        return false;
    }
#ifdef CONFIG_USER_ONLY
    set_helper_retaddr(lwp_boundary_ra());
#endif
    lwp_store_record_host(host, env->lwp.pending);
#ifdef CONFIG_USER_ONLY
    clear_helper_retaddr();
#endif
    return true;
}

/*
 * A TB's start when a counter crossed zero in it or a record is pending.
 * The common cases, here: the pending record stored by the lean store,
 * after which the TB starts over and charges itself from the reset
 * counter; the TB charged whole; the crossing's record gathered for
 * a store after the TB.  Everything else is lwp_tb_slow_general's.
 */
__attribute__((hot))
const void *helper_lwp_tb_slow(CPUX86State *env, uint64_t info,
                               target_ulong eip, const void *tb_ptr,
                               uint64_t lens, uint64_t lens_more)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    X86CPU *cpu = env_archcpu(env);
    const LwpStoreCommit *stored = NULL;
    LwpCrossing cross LWP_UNINITIALIZED;
    LwpPlainCross plain LWP_UNINITIALIZED;
    LwpLeanStore store LWP_UNINITIALIZED;
    LwpTbAction action;
    uint8_t event = 0;
    uint32_t split;

    if (FIELD_EX64(info, LWP_TB_INFO, EIP)) {
        env->eip = eip;
    }
    if (FIELD_EX64(info, LWP_TB_INFO, PRECHARGED)) {
        lwp_tb_give_back_charge(env, info);
    }
    t->tb_uncharged = 0;
    t->deferred_unwind = 0;
    t->exit_tb = NULL;
    if (unlikely((t->tb_flags & HF_LWP_IPF_MASK) ||
                 FIELD_EX64(info, LWP_TB_INFO, SINGLE))) {
        return lwp_tb_slow_general(env, info, tb_ptr, lens, lens_more);
    }
    lwp_tb_shape(env, info, lens, lens_more, &cross.tb);
    cross.core_id = LWP_CFG_COREID(env->lwp_cfg);
    cross.long_mode = lwp_long_mode(env);
    cross.gather = !cpu->lwp_latitude.store_delay && !cpu->lwp_sync_store;
    /*
     * The commonest crossing, decided by the model in one step with no
     * copy of the ring and no LWPCB field: the waiting record's plain
     * store and the crossing's gather.  Not tried while the last store
     * wrote LWPCB fields: a ring that stays full (every store a missed
     * event) goes straight to the lean store, which a ring drained since
     * sends back here after one store.
     */
    if (likely(!t->store_writes_fields) &&
        likely(lwp_tb_cross_plain(&env->lwp, &cpu->lwp_caps, &cross,
                                  &plain)) &&
        likely(lwp_store_plain(env, &plain))) {
        event = env->lwp.pending[0];
        if (unlikely(FIELD_EX64(info, LWP_TB_INFO, GOTO) && tb_ptr &&
                     (tb_cflags(tb_ptr) & CF_INVALID))) {
            return lwp_tb_start_over(env, tb_ptr, &plain.stored, event);
        }
        lwp_tb_cross_plain_commit(&env->lwp, &cpu->lwp_caps, &cross, &plain);
        trace_lwp_store(event, env->eip, LWP_OK, env->lwp.head);
        lwp_tb_deferred(env, &cross.tb, plain.split);
        return NULL;
    }
    cross.writable.lo = cross.writable.hi = 0;
    if (likely(env->lwp.pending[0])) {
        /* Its counter restarted when it was gathered, some TBs ago. */
        bool restarted = env->lwp.restarted;

        event = env->lwp.pending[0];
        if (unlikely(!lwp_store_pending_lean(env, &store, &cross.writable))) {
            return lwp_tb_slow_general(env, info, tb_ptr, lens, lens_more);
        }
        stored = &store.commit;
        if (unlikely(FIELD_EX64(info, LWP_TB_INFO, GOTO) && tb_ptr &&
                     ((tb_cflags(tb_ptr) & CF_INVALID) || !restarted))) {
            return lwp_tb_start_over(env, tb_ptr, stored, event);
        }
    }

    /*
     * Exact mode: a record that may wait for its TB's end waits, and
     * longer: its counter restarts now, so that the TBs after this one
     * need not call here for its store; the next record's crossing stores
     * it, or whatever reads LWP state first stores or settles it
     * (lwp_settle).
     */
    action = lwp_tb_cross(&env->lwp, &cpu->lwp_caps, &cross, stored, &split);
    if (stored) {
        trace_lwp_store(event, env->eip, LWP_OK, env->lwp.head);
    }
    if (likely(action == LWP_TB_DEFERRED)) {
        lwp_tb_deferred(env, &cross.tb, split);
        return NULL;
    }
    if (action == LWP_TB_CHARGE) {
        return NULL;
    }
    if (action == LWP_TB_RETIRE_LAST) {
        /* A branch record, or a crossing at the branch: no TB cut. */
        lwp_tb_arm_exit(env, &cross.tb, tb_ptr);
        return NULL;
    }
    return lwp_tb_slow_planned(env, info, tb_ptr, &cross, action, split);
}

/* The instruction helper_lwp_retire retires, as @info describes it. */
static void lwp_retired_insn(CPUX86State *env, uint32_t info, LwpRetired *insn)
{
    insn->ip = env->lwp_tcg.insn_ip;
    insn->fallthrough = lwp_ip_wrap(insn->ip +
                                    FIELD_EX32(info, LWP_RETIRE, LEN),
                                    FIELD_EX32(info, LWP_RETIRE, CSIZE));
    insn->next_ip = env->eip;
    insn->branch = FIELD_EX32(info, LWP_RETIRE, BRANCH);
    insn->counted = true;
    insn->taken = FIELD_EX32(info, LWP_RETIRE, TAKEN);
}

/* Store @n records in turn, through the general path where needed. */
static void lwp_store_records(LwpGuestMem *m, LwpCpuEnv *cpu,
                              uint8_t (*records)[LWP_RECORD_SIZE], unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        /* If this store faults, the record waits and any later one is lost. */
        memcpy(m->env->lwp.pending, records[i], LWP_RECORD_SIZE);
        if (!lwp_store_pending_now(m->env)) {
            lwp_store_pending_or_fault(m, cpu);
        }
    }
}

/*
 * helper_lwp_retire with IP filtering, or where the lean store declined
 * the pending record: at an I/O boundary, with the model's view of
 * memory.  The pending record goes first: one XRSTOR restored would be
 * overwritten by the records gathered here, and a record gathered here
 * waits for the store before it.  Then the instruction retires, unless
 * it did already and @records holds the @n records after the pending one.
 */
static __attribute__((cold, noinline))
void lwp_retire_general(CPUX86State *env, uint32_t info,
                        uint8_t (*records)[LWP_RECORD_SIZE], unsigned n)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    X86CPU *cpu = env_archcpu(env);
    LwpBoundary b LWP_UNINITIALIZED;
    LwpGuestMem mem LWP_UNINITIALIZED;
    LwpCpuEnv cpu_env LWP_UNINITIALIZED;
    LwpRetired insn LWP_UNINITIALIZED;
    uint8_t gathered[2][LWP_RECORD_SIZE] LWP_UNINITIALIZED;

    b = lwp_boundary_begin(env, FIELD_EX32(info, LWP_RETIRE, INDEX));
    b.ends_tb = !FIELD_EX32(info, LWP_RETIRE, INDEX);
    lwp_guest_init(&mem, &cpu_env, env, lwp_boundary_ra());
    if (env->lwp.pending[0]) {
        lwp_settle(&env->lwp);
        lwp_store_pending_or_fault(&mem, &cpu_env);
    }
    if (!records) {
        if (t->tb_flags & HF_LWP_IPF_MASK) {
            lwp_step_or_fault(&mem, &cpu_env, lwp_prepare);
        }
        lwp_retired_insn(env, info, &insn);
        records = gathered;
        n = lwp_retire(&env->lwp, &cpu->lwp_caps, LWP_CFG_COREID(env->lwp_cfg),
                       &insn, records);
    }
    lwp_store_records(&mem, &cpu_env, records, n);
    lwp_boundary_end(env, &b, &mem);
}

__attribute__((hot))
void helper_lwp_retire(CPUX86State *env, uint32_t info)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    X86CPU *cpu = env_archcpu(env);
    uint8_t records[2][LWP_RECORD_SIZE] LWP_UNINITIALIZED;
    LwpRetired insn LWP_UNINITIALIZED;
    unsigned n;

    t->tb_uncharged = 0;
    t->deferred_unwind = 0;
    t->exit_tb = NULL;
    /* Left CPL 3, or a REP string instruction that has not finished. */
    if ((env->hflags & HF_CPL_MASK) != 3 ||
        (FIELD_EX32(info, LWP_RETIRE, REP) && env->eip == t->insn_ip)) {
        return;
    }
    /*
     * A record XRSTOR restored pending goes first (a record waiting since
     * its TB's start, its counter restarted, was stored at this TB's
     * start).
     */
    if ((t->tb_flags & HF_LWP_IPF_MASK) ||
        (env->lwp.pending[0] && !lwp_store_pending_now(env))) {
        lwp_retire_general(env, info, NULL, 0);
        return;
    }
    /*
     * The common case: counted, and its records stored by the lean store,
     * which does no I/O and in system mode never leaves the CPU loop: no
     * boundary needed.
     */
    lwp_retired_insn(env, info, &insn);
    n = lwp_retire(&env->lwp, &cpu->lwp_caps, LWP_CFG_COREID(env->lwp_cfg),
                   &insn, records);
    for (unsigned i = 0; i < n; i++) {
        memcpy(env->lwp.pending, records[i], LWP_RECORD_SIZE);
        if (!lwp_store_pending_now(env)) {
            lwp_retire_general(env, info, records + i + 1, n - i - 1);
            return;
        }
    }
}
