// SPDX-License-Identifier: GPL-2.0-or-later
// XSAVE/XRSTOR of LWP state, component 62 (AMD pub. 43724 rev 3.08,
// section 7, figure 7-1 and table 7-1).

#include <string.h>

#include "lwp/lwp-model.h"
#include "lwp_address.h"
#include "lwp_bytes.h"
#include "lwpcb.h"

namespace {

using namespace lwp;

// Table 7-1, byte offsets.
constexpr unsigned kXsCbAddr = 0;
constexpr unsigned kXsFlags = 8;
constexpr unsigned kXsHead = 12;
constexpr unsigned kXsBufferBase = 16;
constexpr unsigned kXsBufferSize = 24;   // bits 27:0; 31:28 reserved
constexpr unsigned kXsFilters = 28;
constexpr unsigned kXsPending = 32;
constexpr unsigned kXsCounters = 64;     // EventCounter1..6, 4 bytes each

unsigned counter_offset(unsigned id)
{
    return kXsCounters + 4 * (id - 1);
}

/*
 * XRSTOR at CPL != 0 (7.4): the area is under the program's control, so
 * the LWPCB and the ring must be memory the program could store to itself
 * through DS.  Our copy of the spec cuts the pseudo-code after its first
 * lines; the rest is derived from the prose and from LLWPCB's checks (5.1),
 * see docs/lwp-xrstor-checks.rst:
 *
 *   Check(addr, size):
 *     64-bit mode:  [addr, addr + size) canonical (no wrap)
 *     otherwise:    addr < 4 GiB; ea = truncate32(addr - DS.base);
 *                   DS usable and writable ("store-type segment check");
 *                   [ea, ea + size - 1] inside the limit (expand-down
 *                   aware); top must not pass 4 GiB
 *   restore fails unless Check(LWPCBAddress, LwpCbSize * 8) and
 *   Check(BufferBase, BufferSize) both pass
 */
bool restored_addresses_ok(const LwpCpuEnv &env, const LwpState &st)
{
    return linear_range_ok(env, st.cbaddr, cb_bytes(*env.caps)) &&
           linear_range_ok(env, st.buffer_base, st.buffer_size);
}

} // namespace

extern "C" {

bool lwp_xsave(const LwpState *st, uint8_t area[LWP_XSAVE_SIZE]) noexcept
{
    if (!st->cbaddr) {
        return false;
    }
    memset(area, 0, LWP_XSAVE_SIZE);
    store_le64(area + kXsCbAddr, st->cbaddr);
    // Only which events run; INT lives in the LWPCB and is re-read from
    // there after XRSTOR.
    const uint32_t events = st->flags & kFlagsEvents;
    store_le32(area + kXsFlags, events);
    store_le32(area + kXsHead, st->head);
    store_le64(area + kXsBufferBase, st->buffer_base);
    store_le32(area + kXsBufferSize, st->buffer_size & kBufferSizeMask);
    store_le32(area + kXsFilters, st->filters);
    memcpy(area + kXsPending, st->pending, LWP_RECORD_SIZE);
    // The architectural counters: a restart ahead of the store undone.
    LwpState settled = *st;
    lwp_settle(&settled);
    for (unsigned id = 1; id <= LWP_MAX_EVENT; id++) {
        if (events & event_bit(id)) {
            store_le32(area + counter_offset(id),
                       event_field_encode(settled.counter[id]));
        }
    }
    return true;
}

void lwp_xrstor(LwpState *st, const LwpCpuEnv *env,
                const uint8_t area[LWP_XSAVE_SIZE], bool present) noexcept
{
    const LwpCaps &caps = *env->caps;
    const uint64_t cbaddr = load_le64(area + kXsCbAddr);
    uint32_t size = load_le32(area + kXsBufferSize) & kBufferSizeMask;
    // 7.5: no saved state, or none worth restoring, means LWP disabled.
    if (!present || !cbaddr || size < min_buffer_bytes(caps) ||
        size < LWP_RECORD_SIZE) {
        lwp_state_reset(st);
        return;
    }
    size &= ~(LWP_RECORD_SIZE - 1);

    LwpState next{};
    // Not architectural state: keep the generator running.
    next.rng = st->rng;
    next.cbaddr = cbaddr;
    next.buffer_base = load_le64(area + kXsBufferBase);
    next.buffer_size = size;
    const uint32_t head = load_le32(area + kXsHead);
    next.head = head > size - LWP_RECORD_SIZE
                    ? 0 : head & ~(LWP_RECORD_SIZE - 1);
    next.flags = load_le32(area + kXsFlags) & available_flags(*env) &
                 kFlagsEvents;
    next.filters = load_le32(area + kXsFilters);
    for (unsigned id = 1; id <= LWP_MAX_EVENT; id++) {
        if (next.flags & event_bit(id)) {
            next.counter[id] =
                event_field_value(load_le32(area + counter_offset(id)));
        }
    }
    if (area[kXsPending]) {
        memcpy(next.pending, area + kXsPending, LWP_RECORD_SIZE);
    }
    // INT, Threshold, intervals, Random, IP range and tail come from the
    // LWPCB at the next store, when a #PF can be taken (8.2.5).
    next.cache_valid = 0;

    if (env->cpl != 0 && !restored_addresses_ok(*env, next)) {
        lwp_state_reset(st);
        return;
    }
    *st = next;
}

} // extern "C"
