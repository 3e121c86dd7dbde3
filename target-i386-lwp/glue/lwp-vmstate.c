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
#include "lwp-qemu.h"

static bool lwp_state_needed(void *opaque)
{
    X86CPU *cpu = opaque;

    return cpu->env.lwp_cfg || cpu->env.lwp.cbaddr;
}

static const char *lwp_state_invalid(X86CPU *cpu)
{
    const LwpCaps *caps = &cpu->lwp_caps;
    const LwpState *s = &cpu->env.lwp;
    uint32_t min_size = 32u * caps->min_buffer_size * LWP_RECORD_SIZE;
    uint32_t events = ((1u << (LWP_MAX_EVENT + 1)) - 2) | LWP_FEAT_INT;

    if (!(caps->features & LWP_FEAT_AVAIL)) {
        return "the destination CPU has no LWP (enable 'lwp')";
    }
    if (!lwp_cfg_write_ok(caps, cpu->env.lwp_cfg)) {
        return "LWP_CFG enables features the destination CPU does not support";
    }
    if (!s->cbaddr) {
        return NULL;
    }
    if (s->buffer_size % LWP_RECORD_SIZE || s->buffer_size < MAX(min_size, 1u)) {
        return "BufferSize";
    }
    if (s->head % LWP_RECORD_SIZE || s->head >= s->buffer_size) {
        return "BufferHeadOffset";
    }
    if (s->flags & ~events) {
        return "Flags";
    }
    if (s->threshold % LWP_RECORD_SIZE || s->random > 15) {
        return "Threshold/Random";
    }
    for (int id = 1; id <= LWP_MAX_EVENT; id++) {
        if (s->counter[id] < -(1 << 25) || s->counter[id] >= (1 << 25) ||
            s->interval[id] >= (1u << 25)) {
            return "event counters";
        }
    }
    if (s->pending[0] > LWP_MAX_EVENT && s->pending[0] != LWP_EVENT_INS) {
        return "SavedEventRecord";
    }
    return NULL;
}

static int lwp_state_post_load(void *opaque, int version_id)
{
    X86CPU *cpu = opaque;
    const char *bad = lwp_state_invalid(cpu);

    if (bad) {
        error_report("cpu/lwp: refusing incoming LWP state: %s", bad);
        return -EINVAL;
    }
    return 0;
}

const VMStateDescription vmstate_x86_lwp = {
    .name = "cpu/lwp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = lwp_state_needed,
    .post_load = lwp_state_post_load,
    .fields = (const VMStateField[]) {
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
    }
};
