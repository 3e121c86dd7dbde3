/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: LWP capabilities of an x86 CPU, CPUID Fn8000_001C and reset.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/qemu-print.h"
#include "hw/registerfields.h"
#include "cpu.h"
#include "exec/translation-block.h"
#include "lwp/lwp-caps.h"
#include "lwp-qemu.h"
#include "system/kvm.h"

/* CPUID Fn8000_001C_ECX, the capability flags (spec 3.3). */
FIELD(LWP_CPUID_ECX, DATA_ADDRESS, 5, 1)
FIELD(LWP_CPUID_ECX, BRANCH_PREDICTION, 28, 1)
FIELD(LWP_CPUID_ECX, IP_FILTERING, 29, 1)
FIELD(LWP_CPUID_ECX, CACHE_LEVELS, 30, 1)
FIELD(LWP_CPUID_ECX, CACHE_LATENCY, 31, 1)

/* "lwp-sync-store=on": where it means something, and alone. */
static bool x86_lwp_sync_store_ok(X86CPU *cpu, Error **errp)
{
    if (!(cpu->env.features[FEAT_8000_0001_ECX] & CPUID_EXT3_LWP)) {
        error_setg(errp, "lwp-sync-store needs the CPU feature 'lwp'");
        return false;
    }
    if (kvm_enabled()) {
        error_setg(errp, "lwp-sync-store needs TCG: under KVM the host CPU "
                   "stores the records");
        return false;
    }
    if (cpu->lwp_latitude.store_delay) {
        error_setg(errp, "lwp-sync-store=on stores every record when its "
                   "instruction retires, lwp-store-delay=%" PRIu32
                   " some after it: choose one",
                   cpu->lwp_latitude.store_delay);
        return false;
    }
    return true;
}

bool x86_lwp_realize(X86CPU *cpu, Error **errp)
{
    CPUX86State *env = &cpu->env;
    LwpCaps *caps = &cpu->lwp_caps;
    uint32_t flags = env->features[FEAT_8000_001C_ECX];
    const char *field, *why;

    memset(caps, 0, sizeof(*caps));
#ifdef CONFIG_KVM
    if (kvm_enabled() && !x86_lwp_kvm_realize(cpu, errp)) {
        return false;
    }
#endif
    if (!x86_lwp_latitude_realize(cpu, errp)) {
        return false;
    }
    if (cpu->lwp_sync_store && !x86_lwp_sync_store_ok(cpu, errp)) {
        return false;
    }
    if (!(env->features[FEAT_8000_0001_ECX] & CPUID_EXT3_LWP)) {
        return true;
    }
    if (!(env->features[FEAT_1_ECX] & CPUID_EXT_XSAVE)) {
        error_setg(errp, "CPU feature 'lwp' requires 'xsave' "
                   "(LWP state is managed with XSAVE/XRSTOR)");
        return false;
    }
    caps->features = LWP_FEAT_AVAIL | env->features[FEAT_8000_001C_EDX];
    caps->cb_size = cpu->lwp_cb_size;
    caps->event_size = cpu->lwp_event_size;
    caps->max_events = cpu->lwp_max_events;
    caps->event_offset = cpu->lwp_event_offset;
    caps->latency_max = cpu->lwp_latency_max;
    caps->latency_rnd = cpu->lwp_latency_rnd;
    caps->version = cpu->lwp_version;
    caps->min_buffer_size = cpu->lwp_min_buffer_size;
    caps->data_address = FIELD_EX32(flags, LWP_CPUID_ECX, DATA_ADDRESS);
    caps->branch_prediction = FIELD_EX32(flags, LWP_CPUID_ECX,
                                         BRANCH_PREDICTION);
    caps->ip_filtering = FIELD_EX32(flags, LWP_CPUID_ECX, IP_FILTERING);
    caps->cache_levels = FIELD_EX32(flags, LWP_CPUID_ECX, CACHE_LEVELS);
    caps->cache_latency = FIELD_EX32(flags, LWP_CPUID_ECX, CACHE_LATENCY);
    if (!lwp_caps_check(caps, &field, &why)) {
        error_setg(errp, "invalid LWP configuration: '%s' %s", field, why);
        return false;
    }
#ifdef CONFIG_KVM
    if (kvm_enabled() && !x86_lwp_kvm_check_caps(cpu, errp)) {
        return false;
    }
#endif
    return true;
}

void x86_lwp_reset(X86CPU *cpu)
{
    CPUX86State *env = &cpu->env;

    /* lwp and lwp_cfg sit before end_reset_fields: already zero here. */
#ifdef CONFIG_USER_ONLY
    /*
     * The emulated OS makes every supported feature available except the
     * threshold interrupt, which has no user-mode delivery; COREID is the
     * vCPU index, as an OS would use the APIC ID.
     */
    uint64_t core_id = CPU(cpu)->cpu_index & 0xff;

    env->lwp_cfg = lwp_cfg_written(0, (cpu->lwp_caps.features & ~LWP_FEAT_INT) |
                                   core_id << 32);
#endif
    x86_lwp_latitude_reset(cpu);
    x86_lwp_state_changed(env);
}

void x86_lwp_unrealize(X86CPU *cpu)
{
    x86_lwp_latitude_unrealize(cpu);
}

void x86_lwp_new_task(CPUX86State *env)
{
    /* COREID is the new vCPU's index, as x86_lwp_reset() sets it. */
    lwp_state_reset(&env->lwp);
    x86_lwp_reset(env_archcpu(env));
}

void x86_lwp_reset_state(CPUX86State *env)
{
    lwp_state_reset(&env->lwp);
    x86_lwp_state_changed(env);
}

void x86_lwp_state_changed(CPUX86State *env)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    LwpHwConfig cfg;

    lwp_hw_config(&env->lwp, &env_archcpu(env)->lwp_caps, &cfg);
    t->tb_flags = (cfg.val ? HF_LWP_VAL_MASK : 0) |
                  (cfg.ire ? HF_LWP_IRE_MASK : 0) |
                  (cfg.bre ? HF_LWP_BRE_MASK : 0) |
                  (cfg.ipf ? HF_LWP_IPF_MASK : 0);
    memcpy(t->branch_weight, cfg.branch_weight, sizeof(t->branch_weight));
    t->exit_hooks = cfg.bre &&
                    env->lwp.interval[LWP_EVENT_BRE] < LWP_EXIT_HOOK_INTERVAL;
    t->tb_uncharged = 0;
    t->deferred_unwind = 0;
    t->exit_tb = NULL;
}

void x86_lwp_unwind(CPUX86State *env, const TranslationBlock *tb,
                    uint64_t unwind)
{
    QemuLwpTcg *t = &env->lwp_tcg;
    uint32_t tb_flags = tb->flags;
    uint32_t ire_left = FIELD_EX64(unwind, LWP_UNWIND, IRE);
    uint32_t branch = FIELD_EX64(unwind, LWP_UNWIND, BRANCH);
    bool exit_counts = t->exit_tb == tb;

    /* Only this TB's exit could count its branch: none of them now. */
    t->exit_tb = NULL;
    if (t->tb_uncharged) {
        /* Nothing of this TB was charged. */
        t->tb_uncharged = 0;
        return;
    }
    if (t->deferred_unwind) {
        /*
         * The record gathered at this TB's start, unless its instruction
         * ran (or a later TB is the one unwound: it charged the counter).
         */
        if (env->lwp.counter[LWP_EVENT_IRE] == t->deferred_counter &&
            ire_left >= t->deferred_unwind) {
            lwp_tb_defer_undo(&env->lwp);
        }
        t->deferred_unwind = 0;
    }
    if (exit_counts) {
        /*
         * Its last instruction, the branch, which did not retire, was
         * charged nothing (LWP_TB_RETIRE_LAST): neither an instruction
         * nor a branch to give back for it.
         */
        if ((tb_flags & HF_LWP_IRE_MASK) && ire_left) {
            env->lwp.counter[LWP_EVENT_IRE] += ire_left - 1;
        }
        return;
    }
    if (tb_flags & HF_LWP_IRE_MASK) {
        env->lwp.counter[LWP_EVENT_IRE] += ire_left;
    }
    if (tb_flags & HF_LWP_BRE_MASK) {
        env->lwp.counter[LWP_EVENT_BRE] += t->branch_weight[branch];
    }
}

void x86_lwp_cpuid(CPUX86State *env, uint32_t *eax, uint32_t *ebx,
                   uint32_t *ecx, uint32_t *edx)
{
    LwpCpuidRegs regs;

    lwp_cpuid_leaf(&env_archcpu(env)->lwp_caps, env->lwp_cfg,
                   env->xcr0 & XSTATE_LWP_MASK, &regs);
    *eax = regs.eax;
    *ebx = regs.ebx;
    *ecx = regs.ecx;
    *edx = regs.edx;
}

void x86_lwp_dump_state(CPUX86State *env, FILE *f)
{
    /* Architectural values: a counter restarted ahead of its store settled. */
    LwpState settled = env->lwp;
    const LwpState *lwp = &settled;

    lwp_settle(&settled);
    if (!(env_archcpu(env)->lwp_caps.features & LWP_FEAT_AVAIL)) {
        return;
    }
    /* Like other optional state, nothing to show while it is all zero. */
    if (!env->lwp_cfg && !lwp->cbaddr && !(env->xcr0 & XSTATE_LWP_MASK)) {
        return;
    }
    qemu_fprintf(f, "LWP_CFG=%016" PRIx64 " LWP_CBADDR=%016" PRIx64
                 " XCR0.LWP=%d\n", env->lwp_cfg, lwp->cbaddr,
                 !!(env->xcr0 & XSTATE_LWP_MASK));
    if (!lwp->cbaddr) {
        return;
    }
    qemu_fprintf(f, "LWP flags=%08x base=%016" PRIx64 " size=%08x head=%08x"
                 " tail=%08x threshold=%08x filters=%08x pending=%u\n",
                 lwp->flags, lwp->buffer_base, lwp->buffer_size, lwp->head,
                 lwp->tail, lwp->threshold, lwp->filters, lwp->pending[0]);
    qemu_fprintf(f, "LWP counters");
    for (int id = 1; id <= LWP_MAX_EVENT; id++) {
        if (lwp->flags & (1u << id)) {
            qemu_fprintf(f, " %d:%d/%u", id, lwp->counter[id],
                         lwp->interval[id]);
        }
    }
    qemu_fprintf(f, "\n");
}

/*
 * Component 62 of an XSAVE image handed to or taken from an accelerator
 * (KVM_GET/SET_XSAVE): the same 128-byte layout as XSAVE (figure 7-1).
 * Loading is state transfer, not an XRSTOR at the guest's CPL: no address
 * checks beyond the model's own.
 */
bool x86_lwp_get_xsave_image(CPUX86State *env, uint8_t *area)
{
    return lwp_xsave(&env->lwp, area);
}

void x86_lwp_set_xsave_image(CPUX86State *env, const uint8_t *area,
                             bool present)
{
    static const uint8_t init_area[LWP_XSAVE_SIZE];
    const LwpCaps *caps = &env_archcpu(env)->lwp_caps;
    /*
     * Not filtered by LWP_CFG: KVM hands over the XSAVE image before the
     * MSRs, so env->lwp_cfg may not be the guest's yet.
     */
    LwpCpuEnv cpu = {
        .caps = caps,
        .lwp_cfg = caps->features,
        .cpl = 0,
        .long_mode = env->hflags & HF_LMA_MASK,
        .va_bits = 48,
    };

    lwp_xrstor(&env->lwp, &cpu, present ? area : init_area, present);
    x86_lwp_state_changed(env);
}
