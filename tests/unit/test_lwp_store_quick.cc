// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the record path's quick entry points (lwp_store_quiet,
// lwp_store_quick, lwp_tb_defer_known): the memory they ask for is what AMD pub. 43724 rev
// 3.08 section 8.3 lets a store touch (the tail and MissedEvents only when
// the ring looks full or past its threshold), and what they decide is what
// the general path (lwp_store_pending, lwp_tb_defer) decides, write for
// write, or they decline with nothing changed.

#include <gtest/gtest.h>

#include <random>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

// Maps windows as the glue does (lwp_quick_map): a write's page if it is
// writable, the LWPCB fields asked for copied if readable and writable.
class QuickMapper {
public:
    QuickMapper(FakeMem &mem, bool long_mode)
        : mem_(mem)
    {
        env.long_mode = long_mode;
        env.tail_reread = 0;
        env.window[0].len = 0;
        env.window[1].len = 0;
    }

    bool map(const LwpQuickNeed &need)
    {
        LwpHostWindow &w = env.window[need.read];
        const uint64_t page = need.addr & ~(kPage - 1);
        if (((need.addr + need.len - 1) & ~(kPage - 1)) != page ||
            need.len > sizeof(copy_) || (need.read && w.len) ||
            !mem_.allows(need.addr, need.len, false) ||
            (need.read && !mem_.allows(need.addr, need.len, true))) {
            return false;
        }
        asked.push_back(need);
        if (need.read) {
            mem_.peek(need.addr, copy_, need.len);
            w.lo = need.addr;
            w.len = need.len;
            w.host = copy_;
        } else {
            w.lo = page;
            w.len = kPage;
            w.host = nullptr;
        }
        return true;
    }

    LwpQuickEnv env;
    std::vector<LwpQuickNeed> asked;

private:
    FakeMem &mem_;
    uint8_t copy_[128];
};

class StoreQuick : public RingStoreTest {
protected:
    // A TB of ten instructions at 0x1000, all charged at its start, whose
    // crossing's record may wait for its end.
    static LwpTbShape ten_charged_tb()
    {
        LwpTbShape t = {};
        t.first_ip = 0x1000;
        t.last_ip = 0x1024;
        t.icount = 10;
        t.charged = 10;
        t.may_defer = true;
        return t;
    }

    // The glue's loop: ask, map, ask again; perform and commit.
    LwpQuickStatus store(QuickMapper &m, LwpOutcome *out)
    {
        LwpStoreCommit commit;
        LwpQuickNeed need;
        LwpQuickStatus status;
        for (unsigned tries = 0;; tries++) {
            status = lwp_store_quick(&st, &m.env, out, &commit, &need);
            if (status != LWP_QUICK_NEED_WINDOW || tries == 2 || !m.map(need)) {
                break;
            }
        }
        if (status == LWP_QUICK_DONE) {
            mem.apply(*out);
            lwp_store_commit(&st, env.caps, &commit);
        }
        return status;
    }
};

TEST_F(StoreQuick, AQuietStoreAsksForTheSlotOnlyAndNeverReadsTheLwpcb)
{
    start_ire();
    QuickMapper m(mem, true);
    for (uint32_t i = 1; i <= 3; i++) {
        gather(0x100 + i);
        LwpOutcome out;
        ASSERT_EQ(store(m, &out), LWP_QUICK_DONE);
        EXPECT_EQ(out.nwrites, 1u);                // the record (8.3)
        EXPECT_EQ(st.head, 32 * i);
        EXPECT_EQ(mem.peek32(kRing + 32 * (i - 1) + 4), 0x100 + i);
        EXPECT_EQ(st.pending[0], 0);
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000);
    }
    // One page mapped for the three, for writing; nothing read (8.3: "need
    // not read the software-maintained tail pointer unless...").
    ASSERT_EQ(m.asked.size(), 1u);
    EXPECT_FALSE(m.asked[0].read);
    EXPECT_EQ(m.asked[0].addr, kRing);
    EXPECT_EQ(mem.peek32(kCb + 16), 0u);           // head not flushed
}

TEST_F(StoreQuick, AMissedEventReadsTheTailAndMissedEventsAndCountsIt)
{
    start_ire();
    QuickMapper m(mem, true);
    for (uint32_t i = 1; i < kRecords; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_EQ(store(m, &out), LWP_QUICK_DONE);
    }
    for (uint32_t n = 1; n <= 3; n++) {
        QuickMapper fresh(mem, true);
        gather(0x900 + n, -2);
        LwpOutcome out;
        ASSERT_EQ(store(fresh, &out), LWP_QUICK_DONE);
        // Table 6-1: the last slot overwritten, MissedEvents + 1, the head
        // not advanced; step 5: the counter reset all the same.
        EXPECT_EQ(st.head, kRingSize - 32);
        EXPECT_EQ(mem.peek32(kRing + kRingSize - 32 + 4), 0x900 + n);
        EXPECT_EQ(mem.peek64(kCb + 24), n);
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 1);
        // 8.3: "rereads it whenever the ring buffer appears to be full".
        ASSERT_EQ(fresh.asked.size(), 2u);
        EXPECT_TRUE(fresh.asked[1].read);
        EXPECT_EQ(fresh.asked[1].addr, kCb);
    }
}

TEST_F(StoreQuick, AnLwpcbInTheRingsPageIsStillReadFromItsFields)
{
    // The ring's page, mapped for writing only, holds the LWPCB too: the
    // tail must still be read, from the fields' own window.
    cb.buffer_base = kCb + 0x800;
    cb.buffer_size = kRingSize;
    start_ire();
    QuickMapper m(mem, true);
    for (uint32_t i = 1; i < kRecords; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_EQ(store(m, &out), LWP_QUICK_DONE) << i;
    }
    gather(0x99, -2);
    LwpOutcome out;
    ASSERT_EQ(store(m, &out), LWP_QUICK_DONE);
    EXPECT_EQ(mem.peek64(kCb + 24), 1u);           // a missed event
    EXPECT_EQ(st.head, kRingSize - 32);
}

TEST_F(StoreQuick, AThresholdStoreReportsItsInterrupt)
{
    start_ire(64, true);
    QuickMapper m(mem, true);
    gather(1);
    LwpOutcome out;
    ASSERT_EQ(store(m, &out), LWP_QUICK_DONE);
    EXPECT_FALSE(out.interrupt);
    gather(2);
    ASSERT_EQ(store(m, &out), LWP_QUICK_DONE);
    EXPECT_TRUE(out.interrupt);                    // 64 bytes used
    EXPECT_EQ(mem.peek32(kCb + 16), 64u);          // the head flushed
}

TEST_F(StoreQuick, DeclinesWithNothingChangedWhereItMayNotMap)
{
    start_ire();
    gather(1);
    mem.protect(kRing, kPage, true, false);
    QuickMapper m(mem, true);
    const LwpState before = st;
    LwpOutcome out;
    EXPECT_EQ(store(m, &out), LWP_QUICK_NEED_WINDOW);
    EXPECT_TRUE(states_equal(st, before));
    // Stale cache and live intervals are the general path's.
    mem.protect(kRing, kPage, true, true);
    st.cache_valid = 0;
    LwpStoreCommit commit;
    LwpQuickNeed need;
    EXPECT_EQ(lwp_store_quick(&st, &m.env, &out, &commit, &need),
              LWP_QUICK_DECLINED);
}

TEST_F(StoreQuick, GathersTheDeferredRecordAsLwpTbDeferDoes)
{
    start_ire();
    const LwpTbShape t = ten_charged_tb();
    st.counter[LWP_EVENT_IRE] = 3;
    LwpState general = st;
    ASSERT_TRUE(lwp_tb_defer(&general, &env, mem.mem(), &t, 0x100c));
    uint64_t slot;
    ASSERT_TRUE(lwp_record_slot(&st, true, &slot));
    EXPECT_EQ(slot, kRing);
    lwp_tb_defer_known(&st, &caps, LWP_CFG_COREID(env.lwp_cfg), &t, 0x100c);
    EXPECT_TRUE(states_equal(st, general));
    EXPECT_EQ(st.pending[0], LWP_EVENT_IRE);
}

// A record gathered with its counter restarted at once (the glue then
// stores it TBs later): spec 1.1 step 5 resets the counter to the
// interval less the overrun, which is the same whether the events after
// the record are counted before the reset or after it.
TEST_F(StoreQuick, ACounterRestartedAheadOfItsStoreEndsAsAStoreAfterTheTb)
{
    start_ire();
    const LwpTbShape t = ten_charged_tb();
    // Crosses at its 4th instruction: 6 more retire in the TB, and 20
    // after it before the store.
    st.counter[LWP_EVENT_IRE] = 3;
    const int32_t overrun = 6 + 20;
    LwpState stored_late = st;
    lwp_tb_defer_known(&stored_late, &caps, LWP_CFG_COREID(env.lwp_cfg), &t,
                       0x100c);
    stored_late.counter[LWP_EVENT_IRE] -= 20;
    const LwpState unstored = stored_late;

    lwp_tb_defer_restart(&st, &caps, LWP_CFG_COREID(env.lwp_cfg), &t, 0x100c);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 6);
    EXPECT_NE(st.restarted, 0);
    EXPECT_EQ(0, memcmp(st.pending, stored_late.pending, LWP_RECORD_SIZE));
    st.counter[LWP_EVENT_IRE] -= 20;

    // XSAVE sees the architectural state: the record pending, the counter
    // below zero by the overrun.
    uint8_t lazy_area[LWP_XSAVE_SIZE], area[LWP_XSAVE_SIZE];
    ASSERT_TRUE(lwp_xsave(&st, lazy_area));
    ASSERT_TRUE(lwp_xsave(&unstored, area));
    EXPECT_EQ(0, memcmp(lazy_area, area, sizeof(area)));
    EXPECT_EQ(unstored.counter[LWP_EVENT_IRE], -1 - overrun);

    // Settled, it is that state; undone, the record is gone and the
    // counter is where the TB's charge left it.
    LwpState settled = st;
    lwp_settle(&settled);
    EXPECT_TRUE(states_equal(settled, unstored));
    LwpState undone = st;
    lwp_tb_defer_undo(&undone);
    EXPECT_EQ(undone.pending[0], 0);
    EXPECT_EQ(undone.restarted, 0);
    EXPECT_EQ(undone.counter[LWP_EVENT_IRE], 3 - 10 - 20);

    // Stored: the same ring and counter as the late store of the record.
    uint64_t slot, late_slot;
    LwpStoreCommit commit, late_commit;
    ASSERT_TRUE(lwp_store_quiet(&st, true, 0, &slot, &commit));
    ASSERT_TRUE(lwp_store_quiet(&stored_late, true, 0, &late_slot,
                                &late_commit));
    EXPECT_EQ(slot, late_slot);
    lwp_store_commit(&st, &caps, &commit);
    lwp_store_commit(&stored_late, &caps, &late_commit);
    EXPECT_EQ(stored_late.counter[LWP_EVENT_IRE], 0x1000 - overrun);
    EXPECT_TRUE(states_equal(st, stored_late));
}

// The model's other entry points settle a restart first: never a counter
// restarted twice, whatever runs before the record's store.
TEST_F(StoreQuick, EntryPointsSettleARestartFirst)
{
    start_ire();
    const LwpTbShape t = ten_charged_tb();
    st.counter[LWP_EVENT_IRE] = 3;
    lwp_tb_defer_restart(&st, &caps, LWP_CFG_COREID(env.lwp_cfg), &t, 0x100c);
    LwpState settled = st;
    lwp_settle(&settled);
    ASSERT_NE(st.counter[LWP_EVENT_IRE], settled.counter[LWP_EVENT_IRE]);

    LwpState a = settled, b = st;
    LwpOutcome out_a, out_b;
    lwp_lwpins(&a, &env, mem.mem(), 1, 2, 3, 0x2000, &out_a);
    lwp_lwpins(&b, &env, mem.mem(), 1, 2, 3, 0x2000, &out_b);
    EXPECT_TRUE(states_equal(a, b));

    // SLWPCB's flush stores the record and restarts its counter once.
    a = settled;
    b = st;
    lwp_slwpcb(&a, &env, mem.mem(), &out_a);
    lwp_slwpcb(&b, &env, mem.mem(), &out_b);
    EXPECT_EQ(out_a.status, LWP_OK);
    EXPECT_TRUE(states_equal(a, b));
    EXPECT_EQ(b.pending[0], 0);
    EXPECT_EQ(b.counter[LWP_EVENT_IRE], 0x1000 - 6);
}

TEST_F(StoreQuick, TheQuietStoreWritesTheRecordAloneAndDeclinesTheRest)
{
    start_ire(96, true);
    uint64_t slot;
    LwpStoreCommit commit;
    for (uint32_t i = 1; i <= 2; i++) {
        gather(i);
        ASSERT_TRUE(lwp_store_quiet(&st, true, 0, &slot, &commit)) << i;
        EXPECT_EQ(slot, kRing + 32 * (i - 1));
        EXPECT_EQ(commit.head, 32 * i);
        const uint8_t *rec = st.pending;
        mem.poke(slot, rec, LWP_RECORD_SIZE);
        lwp_store_commit(&st, &caps, &commit);
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000);
    }
    // The third reaches the threshold (96): 8.3's re-read and the
    // interrupt are not the quiet store's.
    gather(3);
    const LwpState before = st;
    EXPECT_FALSE(lwp_store_quiet(&st, true, 0, &slot, &commit));
    EXPECT_TRUE(states_equal(st, before));
    // Legacy mode: a slot that would wrap around 4 GiB.
    st.buffer_base = 0xFFFFFFF0ull - st.head;
    EXPECT_FALSE(lwp_store_quiet(&st, false, 0, &slot, &commit));
    EXPECT_FALSE(lwp_record_slot(&st, false, &slot));
}

// Random rings: the quick path's decision, when it takes one, is the
// general path's, write for write; otherwise it changes nothing.
TEST_F(StoreQuick, AgreesWithTheGeneralPath)
{
    std::mt19937 rng(2026);
    unsigned quick = 0, declined = 0, missed = 0, quiet = 0;
    for (unsigned iter = 0; iter < 4000; iter++) {
        FakeMem m1, m2;
        uint64_t missed_before;
        const LwpState s = random_store_case(rng, kCb, kRing, m1, m2, &missed_before);

        const bool long_mode = rng() % 3 != 0;
        const LwpCpuEnv e = long_mode ? env : env32(&caps);
        LwpState general = s;
        LwpOutcome out_g;
        lwp_store_pending(&general, &e, m2.mem(), &out_g);

        // The quiet store, when it says so, is the general path's store
        // of the record alone (if that one may be written).
        uint64_t quiet_slot;
        LwpStoreCommit quiet_commit;
        if (lwp_store_quiet(&s, long_mode, 0, &quiet_slot, &quiet_commit) &&
            out_g.status == LWP_OK) {
            quiet++;
            ASSERT_EQ(out_g.nwrites, 1u) << iter;
            EXPECT_EQ(out_g.writes[0].addr, quiet_slot) << iter;
            EXPECT_FALSE(out_g.interrupt) << iter;
            EXPECT_EQ(general.head, quiet_commit.head) << iter;
            EXPECT_EQ(general.tail, quiet_commit.tail) << iter;
        }

        LwpState q = s;
        QuickMapper mapper(m1, long_mode);
        LwpOutcome out_q;
        LwpStoreCommit commit;
        LwpQuickNeed need;
        LwpQuickStatus status;
        for (unsigned tries = 0;; tries++) {
            status = lwp_store_quick(&q, &mapper.env, &out_q, &commit, &need);
            if (status != LWP_QUICK_NEED_WINDOW || tries == 2 ||
                !mapper.map(need)) {
                break;
            }
        }
        EXPECT_TRUE(states_equal(q, s)) << iter;   // it never changes st
        if (status != LWP_QUICK_DONE) {
            declined++;
            EXPECT_TRUE(m1 == m2 || out_g.status == LWP_OK) << iter;
            continue;
        }
        quick++;
        ASSERT_EQ(out_g.status, LWP_OK) << iter;
        m1.apply(out_q);
        lwp_store_commit(&q, env.caps, &commit);
        m2.apply(out_g);
        missed += m2.peek64(kCb + 24) != missed_before;
        expect_same_store(out_q, out_g, q, general, m1, m2, iter);
    }
    // Every way was exercised: quiet stores, missed events, declines.
    EXPECT_GT(quick, 1000u);
    EXPECT_GT(quiet, 500u);
    EXPECT_GT(missed, 100u);
    EXPECT_GT(declined, 100u);
}

} // namespace
