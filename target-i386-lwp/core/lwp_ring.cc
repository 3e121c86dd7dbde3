// SPDX-License-Identifier: GPL-2.0-or-later
// The ring buffer protocol between LWP and the program emptying it (AMD
// pub. 43724 rev 3.08, sections 1.1, 6 and 8.3): store, full buffer,
// threshold interrupt, tail re-reads, head flushes, counter reset.

#include "lwp_ring.h"

#include <string.h>

#include "lwp_bytes.h"
#include "lwpcb.h"

namespace lwp {

namespace {

// Any fixed non-zero value: xorshift never leaves the all-zero state.
constexpr uint64_t kRngSeed = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kRngMultiplier = 0x2545F4914F6CDD1Dull;

// After XRSTOR only the volatile state is back; the rest of what the store
// path needs is re-read from the LWPCB now that a #PF can be taken.
bool refresh_cache(LwpState &st, const LwpCpuEnv &env, Access &access)
{
    const LwpCaps &caps = *env.caps;
    uint8_t fixed[kCbStoreFieldsEnd];
    if (!access.read(st.cbaddr, fixed, sizeof(fixed))) {
        return false;
    }
    // The enabled events came from the XSAVE area; only INT is the LWPCB's.
    const uint32_t int_flag = load_le32(fixed + kCbFlags) & kFlagsInt &
                              available_flags(env);
    st.flags = (st.flags & kFlagsEvents) | int_flag;
    st.random = static_cast<uint8_t>(load_le32(fixed + kCbBufferSize) >>
                                     kRandomShift);
    st.threshold = load_le32(fixed + kCbThreshold) & ~(LWP_RECORD_SIZE - 1);
    st.base_ip = load_le64(fixed + kCbBaseIp);
    st.limit_ip = load_le64(fixed + kCbLimitIp);
    st.tail = load_le32(fixed + kCbTail);
    for (unsigned id = 1; id <= LWP_MAX_EVENT; id++) {
        st.interval[id] = 0;
        if (!(st.flags & event_bit(id))) {
            continue;
        }
        uint32_t raw;
        if (!access.read_u32(st.cbaddr + event_interval_offset(caps, id),
                             &raw)) {
            return false;
        }
        st.interval[id] = static_cast<uint32_t>(
            effective_interval(id, event_field_value(raw)));
    }
    st.cache_valid = 1;
    return true;
}

// Bytes between tail and head: what the program has not consumed yet.
uint32_t space_used(const LwpState &st)
{
    const uint64_t size = st.buffer_size;
    return static_cast<uint32_t>((st.head + size - st.tail % size) % size);
}

bool reread_tail(LwpState &st, Access &access)
{
    return access.read_u32(st.cbaddr + kCbTail, &st.tail);
}

} // namespace

bool ensure_cache(LwpState &st, const LwpCpuEnv &env, Access &access)
{
    return st.cache_valid || refresh_cache(st, env, access);
}

bool store_pending(LwpState &st, const LwpCpuEnv &env, Access &access)
{
    if (!st.pending[0]) {
        return true;
    }
    uint8_t record[LWP_RECORD_SIZE];
    memcpy(record, st.pending, sizeof(record));
    bool missed;
    if (!store_record(st, env, access, record, &missed)) {
        return false;
    }
    memset(st.pending, 0, sizeof(st.pending));
    // The event this record reports has now been stored: its counter
    // restarts like after any other store.
    const unsigned id = record[0];
    if (id >= 1 && id <= cb_event_count(*env.caps) &&
        (st.flags & event_bit(id))) {
        reset_counter(st, id);
    }
    return true;
}

uint64_t next_random(uint64_t *rng)
{
    uint64_t x = *rng ? *rng : kRngSeed;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *rng = x;
    return x * kRngMultiplier;
}

bool store_record(LwpState &st, const LwpCpuEnv &env, Access &access,
                  const uint8_t record[LWP_RECORD_SIZE], bool *missed)
{
    *missed = false;
    // LLWPCB and XRSTOR never enable a ring smaller than one record; a
    // state that claims otherwise did not come from the model.
    if (st.buffer_size < LWP_RECORD_SIZE) {
        return access.fail_gp();
    }
    if (!ensure_cache(st, env, access)) {
        return false;
    }
    if (!access.write(st.buffer_base + st.head, record, LWP_RECORD_SIZE)) {
        return false;
    }

    // A stale tail may make the buffer look full: re-read before believing it.
    bool tail_fresh = false;
    bool flush_head = false;
    const uint32_t next = (st.head + LWP_RECORD_SIZE) % st.buffer_size;
    if (next == st.tail) {
        if (!reread_tail(st, access)) {
            return false;
        }
        tail_fresh = true;
    }
    if (next == st.tail) {
        // Full: the record just written stays in the slot at the head and
        // will be overwritten by the next one.
        uint64_t missed_events;
        if (!access.read_u64(st.cbaddr + kCbMissedEvents, &missed_events) ||
            !access.write_u64(st.cbaddr + kCbMissedEvents, missed_events + 1)) {
            return false;
        }
        *missed = true;
        flush_head = true;
    } else {
        st.head = next;
    }

    // Table 6-1: the space used is computed when LWP advances the head, so a
    // full ring (head not advanced) does not interrupt again.  Threshold >
    // BufferSize never interrupts; 0 interrupts on every advancing store.
    if (!*missed && (st.flags & kFlagsInt) && st.threshold <= st.buffer_size &&
        space_used(st) >= st.threshold) {
        if (!tail_fresh && !reread_tail(st, access)) {
            return false;
        }
        if (space_used(st) >= st.threshold) {
            // The handler must see the head that crossed the threshold.
            flush_head = true;
            access.signal_interrupt();
        }
    }
    if (flush_head && !access.write_u32(st.cbaddr + kCbHead, st.head)) {
        return false;
    }
    return true;
}

bool count_event(LwpState &st, unsigned id)
{
    // Counters are 26-bit fields in the LWPCB and the XSAVE area: saturate
    // rather than wrap to a large positive value.
    if (st.counter[id] > kEventFieldMin) {
        st.counter[id]--;
    }
    return st.counter[id] < 0;
}

void reset_counter(LwpState &st, unsigned id)
{
    // Overrun (counter below -1) shortens the next interval so that the
    // average distance between samples stays the interval (step 5).
    int64_t value = static_cast<int64_t>(st.interval[id]) +
                    (static_cast<int64_t>(st.counter[id]) + 1);
    if (value < 0) {
        value = 0;
    }
    if (value > kEventFieldMax) {
        value = kEventFieldMax;
    }
    if (st.random) {
        const uint32_t mask = (1u << st.random) - 1;
        // The high half of xorshift64*'s output is its best-mixed part.
        const uint32_t bits = static_cast<uint32_t>(next_random(&st.rng) >> 32);
        value = (value & ~static_cast<int64_t>(mask)) | (bits & mask);
    }
    st.counter[id] = static_cast<int32_t>(value);
}

} // namespace lwp
