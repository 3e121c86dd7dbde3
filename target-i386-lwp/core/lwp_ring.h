// SPDX-License-Identifier: GPL-2.0-or-later
// Storing event records into the ring buffer and resetting event counters
// (AMD pub. 43724 rev 3.08, section 1.1 steps 3-5, sections 6 and 8.3).

#ifndef LWP_CORE_RING_H
#define LWP_CORE_RING_H

#include <stdint.h>

#include "lwp/lwp-model.h"
#include "lwp_access.h"

namespace lwp {

// Stores @record at the head of @st's ring buffer, handling a full buffer
// (MissedEvents), the threshold interrupt and head flushes.  @missed tells
// whether the buffer was full.  False on a fault (recorded in @access);
// @st is then partly updated and must be discarded.
bool store_record(LwpState &st, const LwpCpuEnv &env, Access &access,
                  const uint8_t record[LWP_RECORD_SIZE], bool *missed);

// Whether the store of one record, made now or later in the same state,
// cannot raise the threshold interrupt (a full ring's missed event cannot)
// and needs nothing re-read from the LWPCB.  Memory is not looked at: the
// store may still fault.
bool store_is_quiet(const LwpState &st);

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

// Reloads the counter of event @id after its record was stored.
void reset_counter(LwpState &st, unsigned id);

// Next output of the generator behind LWPCB.Random (xorshift64*).
uint64_t next_random(uint64_t *rng);

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
