// SPDX-License-Identifier: GPL-2.0-or-later
// Hardware events counted by the emulator (AMD pub. 43724 rev 3.08,
// sections 1.1, 2.2, 2.3, 6 and 8.1): which events translated code counts,
// how a translation block is charged, and what an instruction that retires
// gathers.  Records are stored by lwp_store_pending, one at a time.

#include <string.h>

#include "lwp/lwp-model.h"
#include "lwp_access.h"
#include "lwp_bytes.h"
#include "lwp_outcome.h"
#include "lwp_ring.h"
#include "lwpcb.h"

namespace {

using namespace lwp;

constexpr uint32_t kUnlimited = UINT32_MAX;

// The Flags bit first: it alone answers for the events a session did not
// enable, and this runs several times for every record.
[[gnu::hot]] bool enabled(const LwpState &st, const LwpCaps &caps, unsigned id)
{
    return (st.flags & event_bit(id)) && st.cbaddr &&
           (caps.features & (1u << id)) && id <= cb_event_count(caps);
}

bool ip_filter_applies(const LwpState &st, const LwpCaps &caps)
{
    return caps.ip_filtering && (st.filters & LWP_FILTER_IPF);
}

// Table 6-2: each filter removes exactly one class of branches.
[[gnu::hot]] int32_t branch_weight(const LwpState &st, unsigned branch)
{
    switch (branch) {
    case LWP_BRANCH_COND:
        return !(st.filters & LWP_FILTER_NCB);
    case LWP_BRANCH_REL:
        return !(st.filters & LWP_FILTER_NRB);
    case LWP_BRANCH_ABS:
        return !(st.filters & LWP_FILTER_NAB);
    default:
        return 0;
    }
}

bool in_range(const LwpState &st, uint64_t ip)
{
    return ip >= st.base_ip && ip <= st.limit_ip;
}

// How many of the TB's counted instructions run before a counter crosses
// zero: the index of the instruction that makes it negative.
uint32_t ire_crossing(const LwpState &st, const LwpTbShape &tb)
{
    const int32_t c = st.counter[LWP_EVENT_IRE];
    if (tb.charged == 0) {
        return kUnlimited;
    }
    const uint32_t at = c < 0 ? 0 : static_cast<uint32_t>(c);
    return at < tb.charged ? at : kUnlimited;
}

uint32_t bre_crossing(const LwpState &st, int32_t weight, const LwpTbShape &tb)
{
    if (weight == 0 || tb.icount == 0) {
        return kUnlimited;
    }
    return st.counter[LWP_EVENT_BRE] - weight < 0 ? tb.icount - 1 : kUnlimited;
}

// Whether the instructions-retired counter crosses zero in the TB once, at
// its charged instruction @cross, and restarts from the overrun after the
// TB exactly where it would have restarted at @cross: from exactly -1
// there, the interval outlasts the instructions that follow (no second
// crossing).  Random bits would be drawn over a different overrun.
bool one_ire_crossing(const LwpState &st, const LwpTbShape &tb, uint32_t cross)
{
    return cross < tb.charged && st.counter[LWP_EVENT_IRE] >= 0 &&
           st.random == 0 &&
           tb.charged - cross - 1 < st.interval[LWP_EVENT_IRE];
}

// Figure 2-3 (generic record) and figure 2-4 (branch record).
[[gnu::hot]] void build_hw_record(uint8_t record[LWP_RECORD_SIZE],
                                  unsigned id, uint8_t core_id,
                                  const LwpRetired &insn)
{
    memset(record, 0, LWP_RECORD_SIZE);
    record[0] = static_cast<uint8_t>(id);
    record[1] = core_id;
    store_le64(record + 8, insn.ip);
    if (id == LWP_EVENT_BRE) {
        // Not next_ip != fallthrough: a Jcc to the next instruction can be taken.
        const bool taken = insn.branch != LWP_BRANCH_COND || insn.taken;
        // TKN is bit 31 of the first dword; FUS, PRV and PRD stay 0.
        record[3] = taken ? 0x80 : 0;
        store_le64(record + 16, insn.next_ip);
    }
}

// lwp_tb_defer once the slot is known to take the record: the TB is
// charged whole and its crossing instruction's record waits in pending.
[[gnu::hot]] void gather_deferred(LwpState &st, const LwpCaps &caps,
                                  uint8_t core_id, const LwpTbShape &tb,
                                  uint64_t ip)
{
    st.counter[LWP_EVENT_IRE] -= static_cast<int32_t>(tb.charged);
    if (enabled(st, caps, LWP_EVENT_BRE)) {
        st.counter[LWP_EVENT_BRE] -= branch_weight(st, tb.branch & 3);
    }
    LwpRetired insn{};
    insn.ip = ip;
    insn.counted = true;
    build_hw_record(st.pending, LWP_EVENT_IRE, core_id, insn);
}

// A step of an enabled session, on a copy committed only if it succeeds.
template <typename Step>
void run_on_copy(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                 LwpOutcome *out, bool needed, Step step)
{
    outcome_begin(out);
    if (!st->cbaddr || !needed) {
        return;
    }
    Access access(*env, *mem, *out);
    LwpState next = *st;
    if (!step(next, *env, access)) {
        outcome_abandon(out);
        return;
    }
    *st = next;
}

} // namespace

extern "C" {

void lwp_hw_config(const LwpState *st, const LwpCaps *caps,
                   LwpHwConfig *cfg) noexcept
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->val = enabled(*st, *caps, LWP_EVENT_VAL);
    cfg->ire = enabled(*st, *caps, LWP_EVENT_IRE);
    cfg->bre = enabled(*st, *caps, LWP_EVENT_BRE);
    cfg->ipf = (cfg->val || cfg->ire || cfg->bre) &&
               ip_filter_applies(*st, *caps);
    if (cfg->bre) {
        for (unsigned b = 0; b < LWP_BRANCH_CLASSES; b++) {
            cfg->branch_weight[b] = branch_weight(*st, b);
        }
    }
}

bool lwp_ip_counted(const LwpState *st, const LwpCaps *caps,
                    uint64_t ip) noexcept
{
    if (!ip_filter_applies(*st, *caps)) {
        return true;
    }
    return in_range(*st, ip) != static_cast<bool>(st->filters & LWP_FILTER_IPI);
}

} // extern "C"

namespace {

// lwp_tb_plan, for it and lwp_tb_cross.
[[gnu::hot]] LwpTbAction plan(LwpState *st, const LwpCaps *caps,
                              const LwpTbShape *tb, uint32_t *split)
{
    // lwp_hw_config's answers, only those this needs: it runs at every
    // record's TB.
    const bool ire = enabled(*st, *caps, LWP_EVENT_IRE);
    const bool bre = enabled(*st, *caps, LWP_EVENT_BRE);
    const bool ipf = (ire || bre || enabled(*st, *caps, LWP_EVENT_VAL)) &&
                     ip_filter_applies(*st, *caps);
    const int32_t weight = bre ? branch_weight(*st, tb->branch & 3) : 0;
    *split = 0;

    if (ipf) {
        const bool first = lwp_ip_counted(st, caps, tb->first_ip);
        const bool last = lwp_ip_counted(st, caps, tb->last_ip);
        // One range: a TB whose ends agree and that does not wrap lies
        // wholly on one side of each limit, unless a limit falls inside it.
        const bool straddles =
            tb->last_ip < tb->first_ip ||
            (st->base_ip > tb->first_ip && st->base_ip <= tb->last_ip) ||
            (st->limit_ip >= tb->first_ip && st->limit_ip < tb->last_ip);
        if (first != last || straddles) {
            if (tb->icount > 1) {
                *split = 1;
                return LWP_TB_SPLIT;
            }
        } else if (!first) {
            return LWP_TB_SKIP;
        }
    }

    const uint32_t ire_cross = ire ? ire_crossing(*st, *tb) : kUnlimited;
    const uint32_t bre_cross =
        bre ? bre_crossing(*st, weight, *tb) : kUnlimited;
    const uint32_t cross = bre_cross < ire_cross ? bre_cross : ire_cross;
    if (cross == kUnlimited) {
        if (ire) {
            st->counter[LWP_EVENT_IRE] -= static_cast<int32_t>(tb->charged);
        }
        if (bre) {
            st->counter[LWP_EVENT_BRE] -= weight;
        }
        return LWP_TB_CHARGE;
    }
    if (tb->may_defer && !ipf && bre_cross == kUnlimited &&
        one_ire_crossing(*st, *tb, ire_cross) && store_is_quiet(*st)) {
        *split = ire_cross;
        return LWP_TB_DEFER;
    }
    // The crossing instruction is the TB's last: it is seen retiring
    // without a cut when the TB's exits can count it.
    if (tb->last_at_exit && !ipf && cross + 1 == tb->icount &&
        tb->charged == tb->icount && tb->branch != LWP_BRANCH_NONE) {
        if (ire) {
            st->counter[LWP_EVENT_IRE] -= static_cast<int32_t>(tb->charged - 1);
        }
        return LWP_TB_RETIRE_LAST;
    }
    *split = cross + 1;
    return LWP_TB_SPLIT;
}

// Whether the record's slot at the head lies where the caller may write.
bool slot_writable(const LwpState &st, const LwpCrossing &c)
{
    uint64_t slot;
    return record_slot(st, c.long_mode, &slot) &&
           lwp_writable_holds(&c.writable, slot);
}

} // namespace

extern "C" {

[[gnu::flatten, gnu::hot]]
LwpTbAction lwp_tb_plan(LwpState *st, const LwpCaps *caps,
                        const LwpTbShape *tb, uint32_t *split) noexcept
{
    return plan(st, caps, tb, split);
}

[[gnu::flatten, gnu::hot]]
LwpTbAction lwp_tb_cross(LwpState *st, const LwpCaps *caps,
                         const LwpCrossing *c, const LwpStoreCommit *stored,
                         uint32_t *split) noexcept
{
    if (stored) {
        commit_store(*st, *caps, *stored);
    }
    const LwpTbAction action = plan(st, caps, &c->tb, split);
    uint64_t ip;
    if (action != LWP_TB_DEFER || !c->gather ||
        !lwp_tb_insn_ip_known(&c->tb, *split, &ip) ||
        !slot_writable(*st, *c)) {
        return action;
    }
    lwp_tb_defer_restart(st, caps, c->core_id, &c->tb, ip);
    return LWP_TB_DEFERRED;
}

// Every condition is one that lwp_tb_cross would find on the state after
// the pending record's store (commit_store leaves the counters as they are
// when the record's counter restarted at its gather), or stricter: IP
// filtering and branches retired leave it to lwp_tb_cross; the next store
// must be plain, not only quiet.
[[gnu::flatten, gnu::hot]]
bool lwp_tb_cross_plain(const LwpState *st, const LwpCaps *caps,
                        const LwpCrossing *c, LwpPlainCross *p) noexcept
{
    if (st->pending[0] != LWP_EVENT_IRE || !st->restarted || !c->gather ||
        !c->tb.may_defer || !store_is_lean(*st, st->intervals_live) ||
        !enabled(*st, *caps, LWP_EVENT_IRE) ||
        enabled(*st, *caps, LWP_EVENT_BRE) || ip_filter_applies(*st, *caps)) {
        return false;
    }
    RingView ring(*st);
    if (!store_is_plain(ring)) {
        return false;
    }
    ring.head = next_head(ring);
    if (!store_is_plain(ring)) {
        return false;
    }
    const uint32_t cross = ire_crossing(*st, c->tb);
    if (cross == kUnlimited || !one_ire_crossing(*st, c->tb, cross) ||
        !lwp_tb_insn_ip_known(&c->tb, cross, &p->ip) ||
        !record_slot(*st, c->long_mode, &p->slot)) {
        return false;
    }
    if (!slot_at(st->buffer_base, ring.head, c->long_mode, &p->next_slot)) {
        return false;
    }
    p->split = cross;
    p->stored.head = ring.head;
    p->stored.tail = st->tail;
    p->stored.tail_credit = st->tail_credit;
    return true;
}

[[gnu::flatten, gnu::hot]]
void lwp_tb_cross_plain_commit(LwpState *st, const LwpCaps *caps,
                               const LwpCrossing *c,
                               const LwpPlainCross *p) noexcept
{
    commit_store(*st, *caps, p->stored);
    lwp_tb_defer_restart(st, caps, c->core_id, &c->tb, p->ip);
}

bool lwp_tb_defer(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                  const LwpTbShape *tb, uint64_t ip) noexcept
{
    lwp_settle(st);
    if (!record_slot_writable(*st, *env, *mem)) {
        return false;
    }
    gather_deferred(*st, *env->caps, LWP_CFG_COREID(env->lwp_cfg), *tb, ip);
    return true;
}

[[gnu::hot]] void lwp_tb_defer_known(LwpState *st, const LwpCaps *caps, uint8_t core_id,
                        const LwpTbShape *tb, uint64_t ip) noexcept
{
    gather_deferred(*st, *caps, core_id, *tb, ip);
}

[[gnu::hot]] void lwp_tb_defer_restart(LwpState *st, const LwpCaps *caps,
                                       uint8_t core_id, const LwpTbShape *tb,
                                       uint64_t ip) noexcept
{
    gather_deferred(*st, *caps, core_id, *tb, ip);
    const int32_t below = st->counter[LWP_EVENT_IRE];
    reset_counter(*st, LWP_EVENT_IRE);
    st->restarted = st->counter[LWP_EVENT_IRE] - below;
}

[[gnu::hot]] unsigned lwp_retire(LwpState *st, const LwpCaps *caps,
                                  uint8_t core_id, const LwpRetired *insn,
                                  uint8_t records[2][LWP_RECORD_SIZE]) noexcept
{
    lwp_settle(st);
    // What lwp_hw_config would say, for these two events only: this runs
    // for every record.
    const bool ire = enabled(*st, *caps, LWP_EVENT_IRE);
    const bool bre = enabled(*st, *caps, LWP_EVENT_BRE);
    if ((!ire && !bre) || !lwp_ip_counted(st, caps, insn->ip)) {
        return 0;
    }
    unsigned n = 0;
    // 8.1: both events count; instructions retired is reported first.
    if (ire && insn->counted && count_event(*st, LWP_EVENT_IRE)) {
        build_hw_record(records[n++], LWP_EVENT_IRE, core_id, *insn);
    }
    if (bre && branch_weight(*st, insn->branch & 3) &&
        count_event(*st, LWP_EVENT_BRE)) {
        build_hw_record(records[n++], LWP_EVENT_BRE, core_id, *insn);
    }
    return n;
}

void lwp_store_pending(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                       LwpOutcome *out) noexcept
{
    lwp_settle(st);
    run_on_copy(st, env, mem, out, st->pending[0] != 0, store_pending);
}

void lwp_prepare(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                 LwpOutcome *out) noexcept
{
    lwp_settle(st);
    run_on_copy(st, env, mem, out, !st->cache_valid, ensure_cache);
}

} // extern "C"
