// SPDX-License-Identifier: GPL-2.0-or-later
// Storing event records into the ring buffer and resetting event counters
// (AMD pub. 43724 rev 3.08, section 1.1 steps 3-5, sections 6 and 8.3).

#ifndef LWP_CORE_RING_H
#define LWP_CORE_RING_H

#include <stdint.h>
#include <string.h>

#include "lwp/lwp-model.h"
#include "lwp_access.h"
#include "lwp_address.h"
#include "lwpcb.h"

namespace lwp {

// Stores @record at the head of @st's ring buffer, handling a full buffer
// (MissedEvents), the threshold interrupt and head flushes.  @missed tells
// whether the buffer was full.  False on a fault (recorded in @access);
// @st is then partly updated and must be discarded.
bool store_record(LwpState &st, const LwpCpuEnv &env, Access &access,
                  const uint8_t record[LWP_RECORD_SIZE], bool *missed);

// Bytes between tail and head: what the program has not consumed yet.
// head < buffer_size (lwp_state_check); the tail is the program's and may
// be anything.  Every store asks: no division unless the tail is out of
// range.
template <typename Ring>
uint32_t space_used(const Ring &st)
{
    const uint32_t size = st.buffer_size;
    const uint32_t tail = st.tail < size ? st.tail : st.tail % size;
    return st.head >= tail ? st.head - tail : st.head + size - tail;
}

// Where the head goes after a store: head < buffer_size and both are
// multiples of LWP_RECORD_SIZE (lwp_state_check), so no division.
template <typename Ring>
uint32_t next_head(const Ring &st)
{
    const uint32_t next = st.head + LWP_RECORD_SIZE;
    return next >= st.buffer_size ? 0 : next;
}

// Table 6-1's threshold condition on the head and the tail as they stand:
// ring_store re-reads the tail while it appears true (8.3).  Threshold >
// BufferSize never interrupts.
template <typename Ring>
bool threshold_appears_met(const Ring &st)
{
    return (st.flags & kFlagsInt) && st.threshold <= st.buffer_size &&
           space_used(st) >= st.threshold;
}

// Whether ring_store of one record at the head reads and writes nothing of
// the LWPCB: the ring does not look full, and after the head advances the
// threshold does not appear met.  Such a store writes its slot and
// advances the head, nothing else.
template <typename Ring>
bool store_is_plain(const Ring &st)
{
    Ring after = st;
    after.head = next_head(st);
    return after.head != st.tail && !threshold_appears_met(after);
}

// The ring fields of LwpState that ring_store reads and writes: what the
// fast path works on instead of a copy of the whole state.
struct RingView {
    uint64_t cbaddr;
    uint64_t buffer_base;
    uint32_t buffer_size;
    uint32_t head;
    uint32_t flags;
    uint32_t threshold;
    uint32_t tail;
    uint8_t tail_credit;

    explicit RingView(const LwpState &st)
        : cbaddr(st.cbaddr), buffer_base(st.buffer_base),
          buffer_size(st.buffer_size), head(st.head), flags(st.flags),
          threshold(st.threshold), tail(st.tail), tail_credit(st.tail_credit)
    {
    }
};

// Whether the store of one record, made now or later in the same state,
// cannot raise the threshold interrupt (a full ring's missed event cannot)
// and needs nothing re-read from the LWPCB.  Memory is not looked at: the
// store may still fault.  Inline: every deferred record asks.
inline bool store_is_quiet(const LwpState &st)
{
    // A live session (latitude mode) reads the interval from the LWPCB when
    // the counter restarts: a read that may fault and whose value the
    // deferral's no-second-crossing rule cannot know in advance.
    if (st.pending[0] || !st.cbaddr || !st.cache_valid ||
        st.buffer_size < LWP_RECORD_SIZE || st.intervals_live) {
        return false;
    }
    // ring_store's threshold rule, decided on the tail last read: a ring
    // that looks full may turn out not to be once re-read, and interrupt.
    if (!(st.flags & kFlagsInt) || st.threshold > st.buffer_size) {
        return true;
    }
    return store_is_plain(RingView(st));
}

// What only the general path handles: nothing to store, the cache to
// re-read after XRSTOR, a state LLWPCB would not have made, and latitude
// mode's interval read at the counter's reset.
inline bool store_is_lean(const LwpState &st, bool intervals_are_live)
{
    return st.pending[0] && st.cbaddr && st.cache_valid &&
           st.buffer_size >= LWP_RECORD_SIZE && !intervals_are_live;
}

// Whether the slot at the head takes a record now (the first write of a
// store; LeanAccess's common case).  Changes nothing.
bool record_slot_writable(const LwpState &st, const LwpCpuEnv &env,
                          const LwpMem &mem);

// Counts one occurrence of event @id; true when its counter went negative.
bool count_event(LwpState &st, unsigned id);

// After XRSTOR, re-read the LWPCB fields XSAVE does not hold (8.2.5).
bool ensure_cache(LwpState &st, const LwpCpuEnv &env, Access &access);

// Store st.pending, if any, and restart its event's counter.
bool store_pending(LwpState &st, const LwpCpuEnv &env, Access &access);

// Next output of the generator behind LWPCB.Random (xorshift64*).
inline uint64_t next_random(uint64_t *rng)
{
    // Any fixed non-zero value: xorshift never leaves the all-zero state.
    constexpr uint64_t kRngSeed = 0x9E3779B97F4A7C15ull;
    constexpr uint64_t kRngMultiplier = 0x2545F4914F6CDD1Dull;
    uint64_t x = *rng ? *rng : kRngSeed;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *rng = x;
    return x * kRngMultiplier;
}

// Reloads the counter of event @id after its record was stored.  Inline:
// it runs for every record.
inline void reset_counter(LwpState &st, unsigned id)
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

// lean_linear without the canonical check, for an access the glue then
// finds in one page it may access: such a range is canonical.
inline bool linear_in_found_page(bool long_mode, uint64_t *addr, uint32_t len)
{
    if (long_mode) {
        return true;
    }
    *addr &= kLinear32Mask;
    return *addr + len <= kLinear32Mask + 1;
}

// The linear address of the slot at @head of the ring at @base, as
// lwp_record_slot.
inline bool slot_at(uint64_t base, uint32_t head, bool long_mode,
                    uint64_t *slot)
{
    *slot = base + head;
    return linear_in_found_page(long_mode, slot, LWP_RECORD_SIZE);
}

// lwp_record_slot, inline for the crossing (lwp_tb_cross).
inline bool record_slot(const LwpState &st, bool long_mode, uint64_t *slot)
{
    return slot_at(st.buffer_base, st.head, long_mode, slot);
}

// reset_counter for the event of a stored record, if it is enabled.
void restart_counter(LwpState &st, const LwpCaps &caps, unsigned id);

// lwp_store_commit: inline, for the crossing that commits and plans in one
// call (lwp_tb_cross).
inline void commit_store(LwpState &st, const LwpCaps &caps,
                         const LwpStoreCommit &commit)
{
    const unsigned id = st.pending[0];
    st.head = commit.head;
    st.tail = commit.tail;
    st.tail_credit = commit.tail_credit;
    memset(st.pending, 0, sizeof(st.pending));
    if (st.restarted) {
        st.restarted = 0;
        return;
    }
    restart_counter(st, caps, id);
}

// Latitude mode (8.3): whether this session reads the intervals from the
// LWPCB at each overflow rather than using the ones cached at its start.
bool intervals_live(const LwpState &st, const LwpCpuEnv &env);

// At a session's start (LLWPCB, refresh after XRSTOR): draw whether it
// caches its intervals or reads them live; nothing in exact mode.
void draw_interval_policy(LwpState &st, const LwpCpuEnv &env);

// Before event @id's counter restarts: in a live session, read its interval
// from the LWPCB (a fault is recorded in @access).  True otherwise.
bool reread_interval(LwpState &st, const LwpCpuEnv &env, Access &access,
                     unsigned id);

} // namespace lwp

#endif // LWP_CORE_RING_H
