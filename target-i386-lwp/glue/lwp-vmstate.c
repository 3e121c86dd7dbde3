/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: LWP_CFG and the LWP unit's internal state in the migration
 * stream ("cpu/lwp" subsection of the x86 CPU).  Incoming state is checked
 * against the destination CPU's LWP capabilities and the architectural
 * invariants the model relies on; anything else refuses the migration with
 * an error naming the field, rather than running a guest on corrupt state.
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "cpu.h"
#include "migration/vmstate.h"
#include "lwp/lwp-model.h"
#include "lwp/lwp-policy.h"
#include "lwp-qemu.h"

/*
 * The source CPU's CPUID[8000_001C] EBX/ECX/EDX travel with the state: the
 * destination must offer at least what the guest may have discovered.
 */
typedef struct LwpMigrationCaps {
    X86CPU *parent;
    uint32_t ebx, ecx, edx;
} LwpMigrationCaps;

static int lwp_caps_pre_save(void *opaque)
{
    LwpMigrationCaps *tmp = opaque;
    LwpCpuidRegs regs;

    lwp_caps_to_cpuid(&tmp->parent->lwp_caps, &regs);
    tmp->ebx = regs.ebx;
    tmp->ecx = regs.ecx;
    tmp->edx = regs.edx;
    return 0;
}

static int lwp_caps_post_load(void *opaque, int version_id)
{
    LwpMigrationCaps *tmp = opaque;
    LwpCpuidRegs regs = { 0, tmp->ebx, tmp->ecx, tmp->edx };
    LwpCaps source;
    const char *missing;

    lwp_caps_from_cpuid(&regs, &source);
    if (!lwp_caps_covers(&tmp->parent->lwp_caps, &source, &missing)) {
        error_report("cpu/lwp: the destination CPU lacks LWP capability '%s' "
                     "that the guest was given (source CPUID 8000_001C "
                     "EBX=%08x ECX=%08x EDX=%08x)", missing, tmp->ebx,
                     tmp->ecx, tmp->edx);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription vmstate_lwp_caps = {
    .name = "cpu/lwp/caps",
    .pre_save = lwp_caps_pre_save,
    .post_load = lwp_caps_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(ebx, LwpMigrationCaps),
        VMSTATE_UINT32(ecx, LwpMigrationCaps),
        VMSTATE_UINT32(edx, LwpMigrationCaps),
        VMSTATE_END_OF_LIST()
    }
};

/* Sent once the guest has made LWP available (or left state behind). */
static bool lwp_state_needed(void *opaque)
{
    X86CPU *cpu = opaque;

    return (cpu->env.xcr0 & XSTATE_LWP_MASK) || cpu->env.lwp_cfg ||
           cpu->env.lwp.cbaddr || cpu->lwp_latitude.irq_pending;
}

/* The model's check (lwp_state_check) for this CPU. */
static const char *lwp_state_invalid(X86CPU *cpu)
{
    LwpCpuEnv env = {
        .caps = &cpu->lwp_caps,
        .lwp_cfg = cpu->env.lwp_cfg,
        .va_bits = (cpu->env.cr[4] & CR4_LA57_MASK) ? 57 : 48,
        .long_mode = cpu->env.hflags & HF_LMA_MASK,
    };

    return lwp_state_check(&cpu->env.lwp, &env);
}

static int lwp_state_post_load(void *opaque, int version_id)
{
    X86CPU *cpu = opaque;
    const char *bad;

    /* Not in the stream: whatever ran here before is gone. */
    cpu->env.lwp.restarted = 0;
    bad = lwp_state_invalid(cpu);
    if (bad) {
        error_report("cpu/lwp: refusing incoming LWP state: %s", bad);
        return -EINVAL;
    }
    /* Bit 0 is write-ignored: as the guest's WRMSR would have left it. */
    cpu->env.lwp_cfg = lwp_cfg_written(0, cpu->env.lwp_cfg);
    x86_lwp_state_changed(&cpu->env);
    return 0;
}

/*
 * The stream carries architectural state: a counter restarted ahead of its
 * record's store (LwpState.restarted) is settled first, the record left
 * pending with its counter below zero.  The vCPUs are stopped.
 */
static int lwp_state_pre_save(void *opaque)
{
    X86CPU *cpu = opaque;

    lwp_settle(&cpu->env.lwp);
    return 0;
}

const VMStateDescription vmstate_x86_lwp = {
    .name = "cpu/lwp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = lwp_state_needed,
    .pre_save = lwp_state_pre_save,
    .post_load = lwp_state_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_WITH_TMP(X86CPU, LwpMigrationCaps, vmstate_lwp_caps),
        VMSTATE_UINT64(env.lwp_cfg, X86CPU),
        VMSTATE_UINT64(env.lwp.cbaddr, X86CPU),
        VMSTATE_UINT64(env.lwp.buffer_base, X86CPU),
        VMSTATE_UINT32(env.lwp.buffer_size, X86CPU),
        VMSTATE_UINT32(env.lwp.head, X86CPU),
        VMSTATE_UINT32(env.lwp.flags, X86CPU),
        VMSTATE_UINT32(env.lwp.filters, X86CPU),
        VMSTATE_INT32_ARRAY(env.lwp.counter, X86CPU, LWP_MAX_EVENT + 1),
        VMSTATE_UINT8_ARRAY(env.lwp.pending, X86CPU, LWP_RECORD_SIZE),
        VMSTATE_UINT8(env.lwp.cache_valid, X86CPU),
        VMSTATE_UINT8(env.lwp.random, X86CPU),
        VMSTATE_UINT32_ARRAY(env.lwp.interval, X86CPU, LWP_MAX_EVENT + 1),
        VMSTATE_UINT32(env.lwp.threshold, X86CPU),
        VMSTATE_UINT32(env.lwp.tail, X86CPU),
        VMSTATE_UINT64(env.lwp.base_ip, X86CPU),
        VMSTATE_UINT64(env.lwp.limit_ip, X86CPU),
        VMSTATE_UINT64(env.lwp.rng, X86CPU),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_x86_lwp_latitude,
        NULL
    }
};
