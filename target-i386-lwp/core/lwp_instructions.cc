// SPDX-License-Identifier: GPL-2.0-or-later
// The LWP instructions (AMD pub. 43724 rev 3.08, section 5): LLWPCB,
// SLWPCB, LWPVAL and LWPINS.  #UD (LWP not available, not in protected
// mode, bad ModRM/vvvv) is the decoder's business and never reaches here.
//
// Every entry point works on a copy of the state and commits it only when
// the whole instruction succeeded, so a fault leaves LWP exactly as it was.

#include <string.h>

#include "lwp/lwp-model.h"
#include "lwp_access.h"
#include "lwp_address.h"
#include "lwp_bytes.h"
#include "lwp_outcome.h"
#include "lwp_ring.h"
#include "lwpcb.h"

namespace {

using namespace lwp;

// SLWPCB's flush (5.2), also the first step of LLWPCB on an enabled LWP:
// the pending record goes to the ring, counters and head to the LWPCB.
bool flush(LwpState &st, const LwpCpuEnv &env, Access &access)
{
    const LwpCaps &caps = *env.caps;
    if (!store_pending(st, env, access)) {
        return false;
    }
    for (unsigned id = 1; id <= LWP_MAX_EVENT; id++) {
        if (event_in_cb(st, caps, id) &&
            !access.write_u32(st.cbaddr + event_counter_offset(caps, id),
                              event_field_encode(st.counter[id]))) {
            return false;
        }
    }
    return access.write_u32(st.cbaddr + kCbHead, st.head);
}

// LLWPCB steps 4-8 for a non-zero effective address: validate the new
// LWPCB and build the session it describes into @st.
bool load_lwpcb(LwpState &st, const LwpCpuEnv &env, Access &access,
                uint64_t ea)
{
    const LwpCaps &caps = *env.caps;
    const uint32_t len = cb_bytes(caps);
    if (!effective_range_ok(env, ea, len)) {
        return access.fail_gp();
    }
    const uint64_t cbaddr = linear_from_effective(env, ea);
    CbImage cb;
    cb.len = len;
    if (!access.read(cbaddr, cb.bytes, len)) {
        return false;
    }

    if (!cb_reserved_fields_clear(caps, cb)) {
        return access.fail_gp();
    }
    const uint32_t size_field = cb.u32(kCbBufferSize);
    const uint32_t size = size_field & kBufferSizeMask & ~(LWP_RECORD_SIZE - 1);
    if (size == 0 || size < min_buffer_bytes(caps)) {
        return access.fail_gp();
    }
    const uint64_t buffer_ea = cb.u64(kCbBufferBase);
    if (!env.mode64 && (buffer_ea >> 32)) {
        return access.fail_gp();
    }
    if (!effective_range_ok(env, buffer_ea, size)) {
        return access.fail_gp();
    }
    const uint64_t buffer_base = linear_from_effective(env, buffer_ea);

    // Step 4: "LWP reads and writes the LWPCB, which may cause a #PF" --
    // Flags and intervals are written right away, so all of it must be
    // writable before any of it is.  The ring is not touched: its first
    // store faults after the instruction, with the record pending (the
    // exception table lists no #PF of LLWPCB for the ring buffer).
    if (!access.check_writable(cbaddr, len)) {
        return false;
    }

    LwpState fresh{};
    fresh.rng = st.rng;
    fresh.flags = cb.u32(kCbFlags) & available_flags(env);
    if (!access.write_u32(cbaddr + kCbFlags, fresh.flags)) {
        return false;
    }
    for (unsigned id = 1; id <= cb_event_count(caps); id++) {
        if (!(fresh.flags & event_bit(id))) {
            continue;
        }
        const uint32_t at = event_interval_offset(caps, id);
        const int32_t requested = event_field_value(cb.u32(at));
        const int32_t interval = effective_interval(id, requested);
        // The program learns the hardware minimum from the LWPCB (1.1 step 5).
        if (interval != requested &&
            !access.write_u32(cbaddr + at, event_field_encode(interval))) {
            return false;
        }
        fresh.interval[id] = static_cast<uint32_t>(interval);
        const int32_t counter =
            event_field_value(cb.u32(event_counter_offset(caps, id)));
        fresh.counter[id] = counter < 0 ? 0 : counter;
    }

    fresh.cbaddr = cbaddr;
    fresh.buffer_base = buffer_base;
    fresh.buffer_size = size;
    const uint32_t head = cb.u32(kCbHead) & ~(LWP_RECORD_SIZE - 1);
    fresh.head = head >= size ? 0 : head;
    fresh.filters = cb.u32(kCbFilters);
    fresh.random = static_cast<uint8_t>(size_field >> kRandomShift);
    fresh.threshold = cb.u32(kCbThreshold) & ~(LWP_RECORD_SIZE - 1);
    fresh.tail = cb.u32(kCbTail);
    fresh.base_ip = cb.u64(kCbBaseIp);
    fresh.limit_ip = cb.u64(kCbLimitIp);
    fresh.cache_valid = 1;
    // Latitude mode, 8.3: the intervals "can be cached in the hardware when
    // the LLWPCB instruction is executed, or ... read from the LWPCB each
    // time the counter overflows"; each session draws which.
    draw_interval_policy(fresh, env);
    st = fresh;
    return true;
}

// Figures 2-2 and 2-8: the records of LWPVAL and LWPINS.
void build_user_record(uint8_t record[LWP_RECORD_SIZE], uint8_t event_id,
                       const LwpCpuEnv &env, uint64_t data2, uint32_t data1,
                       uint32_t imm, uint64_t ip)
{
    memset(record, 0, LWP_RECORD_SIZE);
    record[0] = event_id;
    record[1] = LWP_CFG_COREID(env.lwp_cfg);
    store_le16(record + 2, static_cast<uint16_t>(imm));
    store_le32(record + 4, data1);
    store_le64(record + 8, ip);
    store_le64(record + 16, data2);
}

} // namespace

extern "C" {

void lwp_llwpcb(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                uint64_t ea, LwpOutcome *out) noexcept
{
    lwp_settle(st);
    outcome_begin(out);
    Access access(*env, *mem, *out);
    LwpState next = *st;
    // A fault while flushing leaves the old session running (step 2).
    if (next.cbaddr && !flush(next, *env, access)) {
        outcome_abandon(out);
        return;
    }
    if (ea == 0) {
        const uint64_t rng = next.rng;
        next = LwpState{};
        next.rng = rng;
    } else if (!load_lwpcb(next, *env, access, ea)) {
        outcome_abandon(out);
        return;
    }
    *st = next;
}

void lwp_slwpcb(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                LwpOutcome *out) noexcept
{
    lwp_settle(st);
    outcome_begin(out);
    if (!st->cbaddr) {
        return;
    }
    Access access(*env, *mem, *out);
    LwpState next = *st;
    if (!flush(next, *env, access)) {
        outcome_abandon(out);
        return;
    }
    out->value = effective_from_linear(*env, next.cbaddr);
    *st = next;
}

bool lwp_lwpval_stores(const LwpState *st, const LwpCpuEnv *env,
                       uint64_t ip) noexcept
{
    // Mirrors lwp_lwpval: decrementing a counter <= 0 makes it negative.
    // An IP range not yet re-read after XRSTOR may still allow the store.
    return st->cbaddr && (st->flags & event_bit(LWP_EVENT_VAL)) &&
           st->counter[LWP_EVENT_VAL] <= 0 &&
           (!st->cache_valid || lwp_ip_counted(st, env->caps, ip));
}

void lwp_lwpval(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                uint64_t data2, uint32_t data1, uint32_t imm, uint64_t ip,
                LwpOutcome *out) noexcept
{
    lwp_settle(st);
    outcome_begin(out);
    if (!st->cbaddr || !(st->flags & event_bit(LWP_EVENT_VAL))) {
        return;
    }
    LwpState next = *st;
    // The IP filter applies to every event (6), LWPVAL's included.
    if (next.cbaddr && (next.filters & LWP_FILTER_IPF) && !next.cache_valid) {
        Access access(*env, *mem, *out);
        if (!ensure_cache(next, *env, access)) {
            outcome_abandon(out);
            return;
        }
    }
    if (!lwp_ip_counted(&next, env->caps, ip)) {
        *st = next;
        return;
    }
    if (count_event(next, LWP_EVENT_VAL)) {
        uint8_t record[LWP_RECORD_SIZE];
        build_user_record(record, LWP_EVENT_VAL, *env, data2, data1, imm, ip);
        Access access(*env, *mem, *out);
        bool missed;
        if (!store_record(next, *env, access, record, &missed) ||
            !reread_interval(next, *env, access, LWP_EVENT_VAL)) {
            outcome_abandon(out);
            return;
        }
        reset_counter(next, LWP_EVENT_VAL);
    }
    *st = next;
}

void lwp_lwpins(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                uint64_t data2, uint32_t data1, uint32_t imm, uint64_t ip,
                LwpOutcome *out) noexcept
{
    lwp_settle(st);
    outcome_begin(out);
    if (!st->cbaddr) {
        return;
    }
    LwpState next = *st;
    uint8_t record[LWP_RECORD_SIZE];
    build_user_record(record, LWP_EVENT_INS, *env, data2, data1, imm, ip);
    Access access(*env, *mem, *out);
    bool missed;
    if (!store_record(next, *env, access, record, &missed)) {
        outcome_abandon(out);
        return;
    }
    out->value = missed;
    *st = next;
}

} // extern "C"
