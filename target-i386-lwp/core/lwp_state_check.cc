// SPDX-License-Identifier: GPL-2.0-or-later
// Incoming LWP state (a migration stream): whether the model may run on it.
// Checked against the destination CPU's capabilities and the invariants the
// model relies on (AMD pub. 43724 rev 3.08, sections 4.2, 6 and 7), so a
// hostile or corrupt stream is refused with the field named instead of
// running a guest on state no instruction could have produced.

#include "lwp/lwp-model.h"

namespace {

bool canonical(const LwpCpuEnv &env, uint64_t addr)
{
    const int shift = env.va_bits == 57 ? 7 : 16;
    return static_cast<uint64_t>(static_cast<int64_t>(addr << shift) >> shift) == addr;
}

// [addr, addr + len) is canonical and does not wrap; below 4 GiB outside
// long mode.
bool range_ok(const LwpCpuEnv &env, uint64_t addr, uint64_t len)
{
    const uint64_t last = addr + len - 1;
    if (last < addr || !canonical(env, addr) || !canonical(env, last)) {
        return false;
    }
    return env.long_mode || last <= UINT32_MAX;
}

// Event flags (1..6) the CPU implements, and INT.
uint32_t supported_flags(const LwpCaps &caps)
{
    uint32_t events = 0;
    for (unsigned id = 1; id <= caps.max_events && id <= LWP_MAX_EVENT; id++) {
        events |= 1u << id;
    }
    return caps.features & (events | LWP_FEAT_INT);
}

} // namespace

extern "C" const char *lwp_state_check(const LwpState *s, const LwpCpuEnv *env) noexcept
{
    const LwpCaps &caps = *env->caps;
    const uint32_t min_size = 32u * caps.min_buffer_size * LWP_RECORD_SIZE;
    // Filters bits 24:13 are reserved (figure 6-3).
    const uint32_t filters_reserved = 0x01FFE000;

    if (!(caps.features & LWP_FEAT_AVAIL)) {
        return "the destination CPU has no LWP (enable 'lwp')";
    }
    if (env->lwp_cfg >> 48) {
        return "LWP_CFG reserved bits 63:48";
    }
    if (!lwp_cfg_write_ok(&caps, env->lwp_cfg)) {
        return "LWP_CFG enables features the destination CPU does not support";
    }
    if (!s->cbaddr) {
        return nullptr;
    }
    if (!range_ok(*env, s->cbaddr, caps.cb_size * 8u)) {
        return "LWPCB address range";
    }
    if (s->buffer_size % LWP_RECORD_SIZE || s->buffer_size < (min_size ? min_size : 1u) ||
        s->buffer_size > 0x0FFFFFFF) {
        return "BufferSize";
    }
    if (!range_ok(*env, s->buffer_base, s->buffer_size)) {
        return "ring buffer address range";
    }
    if (s->head % LWP_RECORD_SIZE || s->head >= s->buffer_size) {
        return "BufferHeadOffset";
    }
    if (s->flags & ~supported_flags(caps)) {
        return "Flags (events or INT the destination CPU does not support)";
    }
    if (s->filters & filters_reserved) {
        return "Filters reserved bits 24:13";
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
    // A pending record is an LWPINS record or one of an enabled event.
    if (s->pending[0] && s->pending[0] != LWP_EVENT_INS &&
        (s->pending[0] > LWP_MAX_EVENT || !(s->flags & (1u << s->pending[0])))) {
        return "SavedEventRecord";
    }
    return nullptr;
}
