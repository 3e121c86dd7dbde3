// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the record path's lean entry points (lwp_store_lean,
// lwp_store_fields, lwp_tb_defer_known): the memory they ask for is what
// AMD pub. 43724 rev 3.08 section 8.3 lets a store touch (the tail and
// MissedEvents only when the ring looks full or past its threshold), and
// what they decide is what the general path (lwp_store_pending,
// lwp_tb_defer) decides, write for write, or they decline with nothing
// changed.

#include <gtest/gtest.h>

#include <random>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

bool in_one_page(uint64_t addr, uint64_t len)
{
    return (addr & ~(kPage - 1)) == ((addr + len - 1) & ~(kPage - 1));
}

// Stores as the glue does (lwp_store_pending_lean): the record alone, or,
// when that declines, on a copy of the LWPCB's fields if they lie in one
// page that may be read and written; the record's slot must be writable.
// Then performs the writes, listed in *@out as an outcome of the general
// path would list them, and commits.
class LeanStorer {
public:
    LeanStorer(FakeMem &mem, bool long_mode) : mem_(mem), long_mode_(long_mode)
    {
    }

    bool store(LwpState &st, const LwpCaps *caps, LwpOutcome *out)
    {
        LwpLeanStore s;
        uint64_t cb = 0;
        if (!lwp_store_lean(&st, long_mode_, 0, nullptr, &s)) {
            uint8_t fields[LWP_STORE_FIELDS_LEN];
            if (!lwp_store_fields(&st, long_mode_, &cb) ||
                !in_one_page(cb, sizeof(fields)) ||
                !mem_.allows(cb, sizeof(fields), true) ||
                !mem_.allows(cb, sizeof(fields), false)) {
                return false;
            }
            mem_.peek(cb, fields, sizeof(fields));
            fields_read++;
            if (!lwp_store_lean(&st, long_mode_, 0, fields, &s)) {
                return false;
            }
        }
        if (!in_one_page(s.slot, LWP_RECORD_SIZE) ||
            !mem_.allows(s.slot, LWP_RECORD_SIZE, false)) {
            return false;
        }
        *out = LwpOutcome{};
        out->status = LWP_OK;
        out->writes[0].addr = s.slot;
        out->writes[0].len = LWP_RECORD_SIZE;
        memcpy(out->writes[0].data, st.pending, LWP_RECORD_SIZE);
        out->nwrites = 1;
        for (uint32_t i = 0; i < s.nfields; i++) {
            LwpWrite &w = out->writes[out->nwrites++];
            w.addr = cb + s.fields[i].off;
            w.len = s.fields[i].len;
            for (uint32_t b = 0; b < w.len; b++) {
                w.data[b] = static_cast<uint8_t>(s.fields[i].value >> (8 * b));
            }
        }
        mem_.apply(*out);
        lwp_store_commit(&st, caps, &s.commit);
        return true;
    }

    unsigned fields_read = 0;

private:
    FakeMem &mem_;
    bool long_mode_;
};

class StoreLean : public RingStoreTest {
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
};

TEST_F(StoreLean, AQuietStoreWritesTheSlotOnlyAndNeverReadsTheLwpcb)
{
    start_ire();
    LeanStorer storer(mem, true);
    for (uint32_t i = 1; i <= 3; i++) {
        gather(0x100 + i);
        LwpOutcome out;
        ASSERT_TRUE(storer.store(st, env.caps, &out));
        EXPECT_EQ(out.nwrites, 1u);                // the record (8.3)
        EXPECT_EQ(out.writes[0].addr, kRing + 32 * (i - 1));
        EXPECT_EQ(st.head, 32 * i);
        EXPECT_EQ(mem.peek32(kRing + 32 * (i - 1) + 4), 0x100 + i);
        EXPECT_EQ(st.pending[0], 0);
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000);
    }
    // Nothing read (8.3: "need not read the software-maintained tail
    // pointer unless...").
    EXPECT_EQ(storer.fields_read, 0u);
    EXPECT_EQ(mem.peek32(kCb + 16), 0u);           // head not flushed
}

TEST_F(StoreLean, AMissedEventReadsTheTailAndMissedEventsAndCountsIt)
{
    start_ire();
    LeanStorer storer(mem, true);
    for (uint32_t i = 1; i < kRecords; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_TRUE(storer.store(st, env.caps, &out));
    }
    ASSERT_EQ(storer.fields_read, 0u);
    for (uint32_t n = 1; n <= 3; n++) {
        gather(0x900 + n, -2);
        LwpOutcome out;
        ASSERT_TRUE(storer.store(st, env.caps, &out));
        // Table 6-1: the last slot overwritten, MissedEvents + 1, the head
        // not advanced; step 5: the counter reset all the same.
        EXPECT_EQ(st.head, kRingSize - 32);
        EXPECT_EQ(mem.peek32(kRing + kRingSize - 32 + 4), 0x900 + n);
        EXPECT_EQ(mem.peek64(kCb + 24), n);
        EXPECT_EQ(mem.peek32(kCb + 16), kRingSize - 32);   // head flushed
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 1);
        // 8.3: "rereads it whenever the ring buffer appears to be full".
        EXPECT_EQ(storer.fields_read, n);
        EXPECT_EQ(out.nwrites, 3u);
    }
    // The program empties the ring: the re-read tail ends the misses.
    mem.poke32(kCb + 64, 32 * 4);
    gather(0x999);
    LwpOutcome out;
    ASSERT_TRUE(storer.store(st, env.caps, &out));
    EXPECT_EQ(mem.peek64(kCb + 24), 3u);
    EXPECT_EQ(st.head, 0u);
    EXPECT_EQ(st.tail, 32u * 4);
}

TEST_F(StoreLean, AnLwpcbInTheRingsPageIsStillReadFromItsFields)
{
    // The ring's page holds the LWPCB too: the tail must still be read.
    cb.buffer_base = kCb + 0x800;
    cb.buffer_size = kRingSize;
    start_ire();
    LeanStorer storer(mem, true);
    for (uint32_t i = 1; i < kRecords; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_TRUE(storer.store(st, env.caps, &out)) << i;
    }
    gather(0x99, -2);
    LwpOutcome out;
    ASSERT_TRUE(storer.store(st, env.caps, &out));
    EXPECT_EQ(mem.peek64(kCb + 24), 1u);           // a missed event
    EXPECT_EQ(st.head, kRingSize - 32);
}

TEST_F(StoreLean, ARingOverTheLwpcbsFieldsIsTheGeneralPaths)
{
    // The record's slot would overwrite the fields the copy was made of
    // (nothing stops a program from laying its ring over its LWPCB).
    start_ire();
    st.buffer_base = kCb;
    st.buffer_size = 2 * 32;
    gather(1);
    const LwpState before = st;
    uint8_t fields[LWP_STORE_FIELDS_LEN] = {};
    LwpLeanStore s;
    // Quiet (the tail is not read): the record alone, which the general
    // path writes the same.
    EXPECT_TRUE(lwp_store_lean(&st, true, 0, nullptr, &s));
    st.tail = 32;                                  // looks full next
    EXPECT_FALSE(lwp_store_lean(&st, true, 0, nullptr, &s));
    EXPECT_FALSE(lwp_store_lean(&st, true, 0, fields, &s));
    st.tail = before.tail;
    EXPECT_TRUE(states_equal(st, before));
}

TEST_F(StoreLean, AThresholdStoreThatInterruptsIsDeclined)
{
    start_ire(64, true);
    LeanStorer storer(mem, true);
    gather(1);
    LwpOutcome out;
    ASSERT_TRUE(storer.store(st, env.caps, &out));
    EXPECT_EQ(storer.fields_read, 0u);
    // The second reaches the threshold: the re-read tail confirms it, and
    // the interrupt is the general path's.
    gather(2);
    const LwpState before = st;
    const auto snap = mem.snapshot();
    EXPECT_FALSE(storer.store(st, env.caps, &out));
    EXPECT_EQ(storer.fields_read, 1u);
    EXPECT_TRUE(states_equal(st, before));
    EXPECT_TRUE(mem.same_as(snap));
    // Unless the program emptied the ring meanwhile: no interrupt then,
    // and the store is the lean path's, with the tail re-read.
    mem.poke32(kCb + 64, 32);
    ASSERT_TRUE(storer.store(st, env.caps, &out));
    EXPECT_EQ(out.nwrites, 1u);
    EXPECT_EQ(st.head, 64u);
    EXPECT_EQ(st.tail, 32u);
    EXPECT_EQ(mem.peek32(kCb + 16), 0u);           // head not flushed
}

TEST_F(StoreLean, DeclinesWithNothingChangedWhereItMayNotWrite)
{
    start_ire();
    gather(1);
    mem.protect(kRing, kPage, true, false);
    LeanStorer storer(mem, true);
    const LwpState before = st;
    LwpOutcome out;
    EXPECT_FALSE(storer.store(st, env.caps, &out));
    EXPECT_TRUE(states_equal(st, before));
    // Stale cache and live intervals are the general path's.
    mem.protect(kRing, kPage, true, true);
    st.cache_valid = 0;
    uint8_t fields[LWP_STORE_FIELDS_LEN] = {};
    uint64_t cb;
    LwpLeanStore s;
    EXPECT_FALSE(lwp_store_lean(&st, true, 0, nullptr, &s));
    EXPECT_FALSE(lwp_store_lean(&st, true, 0, fields, &s));
    EXPECT_FALSE(lwp_store_fields(&st, true, &cb));
    st.cache_valid = 1;
    st.intervals_live = 1;
    EXPECT_FALSE(lwp_store_lean(&st, true, 0, fields, &s));
    EXPECT_FALSE(lwp_store_fields(&st, true, &cb));
}

TEST_F(StoreLean, GathersTheDeferredRecordAsLwpTbDeferDoes)
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
TEST_F(StoreLean, ACounterRestartedAheadOfItsStoreEndsAsAStoreAfterTheTb)
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
    LwpLeanStore s, late;
    ASSERT_TRUE(lwp_store_lean(&st, true, 0, nullptr, &s));
    ASSERT_TRUE(lwp_store_lean(&stored_late, true, 0, nullptr, &late));
    EXPECT_EQ(s.slot, late.slot);
    lwp_store_commit(&st, &caps, &s.commit);
    lwp_store_commit(&stored_late, &caps, &late.commit);
    EXPECT_EQ(stored_late.counter[LWP_EVENT_IRE], 0x1000 - overrun);
    EXPECT_TRUE(states_equal(st, stored_late));
}

// The model's other entry points settle a restart first: never a counter
// restarted twice, whatever runs before the record's store.
TEST_F(StoreLean, EntryPointsSettleARestartFirst)
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

TEST_F(StoreLean, TheQuietStoreWritesTheRecordAloneAndDeclinesTheRest)
{
    start_ire(96, true);
    LwpLeanStore s;
    for (uint32_t i = 1; i <= 2; i++) {
        gather(i);
        ASSERT_TRUE(lwp_store_lean(&st, true, 0, nullptr, &s)) << i;
        EXPECT_EQ(s.slot, kRing + 32 * (i - 1));
        EXPECT_EQ(s.nfields, 0u);
        EXPECT_EQ(s.commit.head, 32 * i);
        const uint8_t *rec = st.pending;
        mem.poke(s.slot, rec, LWP_RECORD_SIZE);
        lwp_store_commit(&st, &caps, &s.commit);
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000);
    }
    // The third reaches the threshold (96): 8.3's re-read and the
    // interrupt are not the quiet store's.
    gather(3);
    const LwpState before = st;
    EXPECT_FALSE(lwp_store_lean(&st, true, 0, nullptr, &s));
    EXPECT_TRUE(states_equal(st, before));
    // Legacy mode: a slot that would wrap around 4 GiB.
    st.buffer_base = 0xFFFFFFF0ull - st.head;
    EXPECT_FALSE(lwp_store_lean(&st, false, 0, nullptr, &s));
    uint64_t slot;
    EXPECT_FALSE(lwp_record_slot(&st, false, &slot));
}

// Random rings: the lean path's decision, when it takes one, is the
// general path's, write for write; otherwise it changes nothing.
TEST_F(StoreLean, AgreesWithTheGeneralPath)
{
    std::mt19937 rng(2026);
    unsigned lean = 0, declined = 0, missed = 0, quiet = 0, read = 0;
    for (unsigned iter = 0; iter < 4000; iter++) {
        FakeMem m1, m2;
        uint64_t missed_before;
        const LwpState s =
            random_store_case(rng, kCb, kRing, m1, m2, &missed_before);

        const bool long_mode = rng() % 3 != 0;
        const LwpCpuEnv e = long_mode ? env : env32(&caps);
        LwpState general = s;
        LwpOutcome out_g;
        lwp_store_pending(&general, &e, m2.mem(), &out_g);

        // The quiet store, when it says so, is the general path's store
        // of the record alone (if that one may be written).
        LwpLeanStore q_store;
        if (lwp_store_lean(&s, long_mode, 0, nullptr, &q_store) &&
            out_g.status == LWP_OK) {
            quiet++;
            ASSERT_EQ(out_g.nwrites, 1u) << iter;
            EXPECT_EQ(q_store.nfields, 0u) << iter;
            EXPECT_EQ(out_g.writes[0].addr, q_store.slot) << iter;
            EXPECT_FALSE(out_g.interrupt) << iter;
            EXPECT_EQ(general.head, q_store.commit.head) << iter;
            EXPECT_EQ(general.tail, q_store.commit.tail) << iter;
        }

        LwpState q = s;
        LeanStorer storer(m1, long_mode);
        const auto before = m1.snapshot();
        LwpOutcome out_q;
        if (!storer.store(q, env.caps, &out_q)) {
            declined++;
            EXPECT_TRUE(states_equal(q, s)) << iter;
            EXPECT_TRUE(m1.same_as(before)) << iter;
            continue;
        }
        lean++;
        read += storer.fields_read;
        ASSERT_EQ(out_g.status, LWP_OK) << iter;
        m2.apply(out_g);
        missed += m2.peek64(kCb + 24) != missed_before;
        expect_same_store(out_q, out_g, q, general, m1, m2, iter);
    }
    // Every way was exercised: quiet stores, fields read, missed events,
    // declines.
    EXPECT_GT(lean, 1000u);
    EXPECT_GT(quiet, 500u);
    EXPECT_GT(read, 300u);
    EXPECT_GT(missed, 100u);
    EXPECT_GT(declined, 100u);
}

} // namespace

namespace {

using namespace lwptest;

// lwp_tb_cross is the record path's one step at a crossing: the store the
// caller performed committed, the TB planned, the crossing's record
// gathered (spec 1.1: "the Store stage (and subsequent stages) may
// complete some number of cycles after the tagged instruction retires";
// step 5's reset).  It must leave the state exactly as those steps, taken
// one by one through their own entry points, leave it.
class TbCross : public RingStoreTest {
protected:
    // Ten instructions of four bytes at 0x1000, all charged at its start.
    static LwpCrossing crossing(uint64_t lo, uint64_t hi)
    {
        LwpCrossing c = {};
        c.tb.first_ip = 0x1000;
        c.tb.last_ip = 0x1024;
        c.tb.icount = 10;
        c.tb.charged = 10;
        c.tb.may_defer = true;
        c.tb.lens[0] = 0x4444444444444444ull;
        c.writable.lo = lo;
        c.writable.hi = hi;
        c.core_id = 7;
        c.long_mode = true;
        c.gather = true;
        return c;
    }
};

TEST_F(TbCross, AQuietCrossingIsCommitPlanAndRestartedGather)
{
    start_ire();
    const LwpCrossing c = crossing(kRing, kRing + kPage);
    for (int32_t counter = 0; counter < 10; counter++) {
        // The last crossing's record pending, its counter restarted when
        // it was gathered and now at @counter: this TB crosses at its
        // instruction @counter.
        gather(0x700 + counter);
        st.counter[LWP_EVENT_IRE] = counter;
        st.restarted = 0x100;
        LwpLeanStore s;
        ASSERT_TRUE(lwp_store_lean(&st, true, 0, nullptr, &s));

        LwpState steps = st;
        lwp_store_commit(&steps, &caps, &s.commit);
        uint32_t split_steps, split;
        ASSERT_EQ(lwp_tb_plan(&steps, &caps, &c.tb, &split_steps),
                  LWP_TB_DEFER);
        lwp_tb_defer_restart(&steps, &caps, c.core_id, &c.tb,
                             0x1000 + 4 * split_steps);

        ASSERT_EQ(lwp_tb_cross(&st, &caps, &c, &s.commit, &split),
                  LWP_TB_DEFERRED);
        EXPECT_EQ(split, static_cast<uint32_t>(counter));
        EXPECT_EQ(split, split_steps);
        EXPECT_TRUE(states_equal(st, steps)) << counter;
        // Instruction k of four bytes each is at 0x1000 + 4k (figure 2-3).
        uint64_t ip;
        memcpy(&ip, st.pending + 8, sizeof(ip));
        EXPECT_EQ(ip, 0x1000u + 4 * counter);
        EXPECT_EQ(st.head, LWP_RECORD_SIZE * (counter + 1));
        // Step 5 from the overrun the TB's later instructions make.
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - (9 - counter));
    }
}

TEST_F(TbCross, LeavesTheGatherToTheCallerWhereItCannotWriteOrLocate)
{
    start_ire();
    st.counter[LWP_EVENT_IRE] = 5;
    uint32_t split;

    // The head's slot outside what the caller may write: planned only.
    LwpState before = st;
    LwpCrossing c = crossing(kRing + 32, kRing + kPage);
    EXPECT_EQ(lwp_tb_cross(&st, &caps, &c, nullptr, &split), LWP_TB_DEFER);
    EXPECT_EQ(split, 5u);
    EXPECT_TRUE(states_equal(st, before));
    c = crossing(kRing, kRing + LWP_RECORD_SIZE - 1);
    EXPECT_EQ(lwp_tb_cross(&st, &caps, &c, nullptr, &split), LWP_TB_DEFER);
    EXPECT_TRUE(states_equal(st, before));
    c = crossing(0, 0);
    EXPECT_EQ(lwp_tb_cross(&st, &caps, &c, nullptr, &split), LWP_TB_DEFER);
    EXPECT_TRUE(states_equal(st, before));

    // The crossing's address not in the lengths: the 6th's length unknown.
    c = crossing(kRing, kRing + kPage);
    c.tb.lens[0] &= ~(0xfull << (4 * 4));
    EXPECT_EQ(lwp_tb_cross(&st, &caps, &c, nullptr, &split), LWP_TB_DEFER);
    EXPECT_TRUE(states_equal(st, before));

    // Latitude and lwp-sync-store gather elsewhere.
    c = crossing(kRing, kRing + kPage);
    c.gather = false;
    EXPECT_EQ(lwp_tb_cross(&st, &caps, &c, nullptr, &split), LWP_TB_DEFER);
    EXPECT_TRUE(states_equal(st, before));

    // Exactly the slot: gathered, at the 6th instruction's address.
    c = crossing(kRing, kRing + LWP_RECORD_SIZE);
    EXPECT_EQ(lwp_tb_cross(&st, &caps, &c, nullptr, &split), LWP_TB_DEFERRED);
    uint64_t ip;
    memcpy(&ip, st.pending + 8, sizeof(ip));
    EXPECT_EQ(ip, 0x1014u);
    EXPECT_EQ(st.pending[0], LWP_EVENT_IRE);
}

// Outside long mode the slot is a 32-bit linear address (the buffer's
// base plus the head, truncated), and the window is compared with it so.
TEST_F(TbCross, ComparesTheTruncatedSlotOutsideLongMode)
{
    start_ire();
    st.counter[LWP_EVENT_IRE] = 5;
    st.buffer_base = 0x1'ffff'ffe0ull;           // slot 0xffffffe0 once cut
    const LwpState before = st;
    uint32_t split;
    LwpCrossing c = crossing(0xffff'f000ull, 0x1'0000'0000ull);
    c.long_mode = false;
    ASSERT_EQ(lwp_tb_cross(&st, &caps, &c, nullptr, &split), LWP_TB_DEFERRED);
    EXPECT_EQ(st.pending[0], LWP_EVENT_IRE);

    // The same window taken as 64-bit addresses does not hold the slot.
    st = before;
    c.long_mode = true;
    EXPECT_EQ(lwp_tb_cross(&st, &caps, &c, nullptr, &split), LWP_TB_DEFER);
    EXPECT_TRUE(states_equal(st, before));
}

// A window at the top of the address space ends at 2^64, which wraps to 0.
TEST_F(TbCross, TakesAWindowThatEndsAtTheTopOfTheAddressSpace)
{
    start_ire();
    st.counter[LWP_EVENT_IRE] = 5;
    st.buffer_base = 0xffff'ffff'ffff'f000ull;
    st.head = 0xfe0;                               // the page's last slot
    uint32_t split;
    LwpCrossing c = crossing(0xffff'ffff'ffff'f000ull, 0);
    LwpState fits = st;
    EXPECT_EQ(lwp_tb_cross(&fits, &caps, &c, nullptr, &split),
              LWP_TB_DEFERRED);
    // One byte short of it: the slot's last byte is outside.
    c.writable.hi = 0xffff'ffff'ffff'ffffull;
    LwpState short_by_one = st;
    EXPECT_EQ(lwp_tb_cross(&short_by_one, &caps, &c, nullptr, &split),
              LWP_TB_DEFER);
    EXPECT_TRUE(states_equal(short_by_one, st));
}

// A full ring's missed event leaves the head where it was (table 6-1), so
// the next record is gathered for the same slot, inside the same window.
TEST_F(TbCross, AfterAMissedEventGathersForTheSameSlot)
{
    start_ire();
    st.head = kRingSize - 32;
    st.tail = 0;                                   // full: head + 32 wraps to it
    mem.poke32(kCb + 64, 0);
    gather(0x55);
    st.counter[LWP_EVENT_IRE] = 3;
    st.restarted = 0x100;
    uint8_t fields[LWP_STORE_FIELDS_LEN];
    mem.peek(kCb, fields, sizeof(fields));
    LwpLeanStore s;
    ASSERT_TRUE(lwp_store_lean(&st, true, 0, fields, &s));
    EXPECT_EQ(s.commit.head, kRingSize - 32);
    EXPECT_EQ(s.nfields, 2u);                      // MissedEvents, the head
    const LwpCrossing c = crossing(s.slot, s.slot + LWP_RECORD_SIZE);
    uint32_t split;
    ASSERT_EQ(lwp_tb_cross(&st, &caps, &c, &s.commit, &split),
              LWP_TB_DEFERRED);
    EXPECT_EQ(st.head, kRingSize - 32);
    EXPECT_EQ(split, 3u);
    uint64_t ip;
    memcpy(&ip, st.pending + 8, sizeof(ip));
    EXPECT_EQ(ip, 0x100cu);
}

// lwp_tb_cross_plain is lwp_tb_cross's commonest case taken in one step:
// wherever it accepts, the lean store of the pending record writes no
// LWPCB field, lwp_tb_cross then gathers (LWP_TB_DEFERRED) at the same
// instruction, and the two leave the same state; it changes nothing
// itself.
class TbCrossPlain : public TbCross {
protected:
    // The pending record's counter restarted at its gather, now at 5.
    void waiting()
    {
        st = zero_state();
        start_ire();
        gather(0x77);
        st.counter[LWP_EVENT_IRE] = 5;
        st.restarted = 0x100;
    }

    bool plain(const LwpCrossing &c, LwpPlainCross *p)
    {
        return lwp_tb_cross_plain(&st, &caps, &c, p);
    }

    // The reference: lwp_store_lean, then lwp_tb_cross with the next
    // record's slot writable.  *@ref ends as lwp_tb_cross leaves it.
    void expect_same_as_tb_cross(const LwpCrossing &c, const LwpPlainCross &p,
                                 LwpState *ref, const char *what)
    {
        LwpLeanStore s;
        ASSERT_TRUE(lwp_store_lean(ref, c.long_mode, 0, nullptr, &s)) << what;
        EXPECT_EQ(s.nfields, 0u) << what;
        EXPECT_EQ(s.slot, p.slot) << what;
        EXPECT_EQ(s.commit.head, p.stored.head) << what;
        EXPECT_EQ(s.commit.tail, p.stored.tail) << what;
        EXPECT_EQ(s.commit.tail_credit, p.stored.tail_credit) << what;
        LwpCrossing with_slot = c;
        with_slot.writable.lo = p.next_slot;
        with_slot.writable.hi = p.next_slot + LWP_RECORD_SIZE;
        uint32_t split;
        ASSERT_EQ(lwp_tb_cross(ref, &caps, &with_slot, &s.commit, &split),
                  LWP_TB_DEFERRED) << what;
        EXPECT_EQ(split, p.split) << what;
    }
};

TEST_F(TbCrossPlain, StoresAndGathersAsTbCrossDoes)
{
    waiting();
    const LwpCrossing c = crossing(0, 0);
    LwpPlainCross p;
    ASSERT_TRUE(plain(c, &p));
    EXPECT_EQ(p.slot, kRing);
    EXPECT_EQ(p.next_slot, kRing + LWP_RECORD_SIZE);
    EXPECT_EQ(p.split, 5u);
    EXPECT_EQ(p.ip, 0x1014u);                      // 0x1000 + 5 * 4
    LwpState ref = st;
    expect_same_as_tb_cross(c, p, &ref, "first");
    lwp_tb_cross_plain_commit(&st, &caps, &c, &p);
    EXPECT_TRUE(states_equal(st, ref));
    EXPECT_EQ(st.head, LWP_RECORD_SIZE);
    EXPECT_EQ(st.pending[0], LWP_EVENT_IRE);
    uint64_t ip;
    memcpy(&ip, st.pending + 8, sizeof(ip));
    EXPECT_EQ(ip, 0x1014u);
    // Step 5 from the overrun of the 4 instructions after the crossing.
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 4);
    EXPECT_NE(st.restarted, 0);
}

// Every store that reads or writes the LWPCB, and every crossing
// lwp_tb_cross would not gather at once with instructions retired alone,
// is left to it.
TEST_F(TbCrossPlain, LeavesToTbCrossWhatIsNotItsCommonestCase)
{
    const LwpCrossing c = crossing(0, 0);
    LwpPlainCross p;
    struct Case {
        const char *what;
        void (*spoil)(LwpState &st, LwpCrossing &c);
    };
    const Case cases[] = {
        {"the ring looks full",
         [](LwpState &st, LwpCrossing &) { st.tail = st.head + 32; }},
        {"the next store finds it full",
         [](LwpState &st, LwpCrossing &) { st.tail = st.head + 64; }},
        {"the store meets the threshold",
         [](LwpState &st, LwpCrossing &) {
             st.flags |= 0x80000000u;
             st.threshold = 32;
         }},
        {"the next store meets the threshold",
         [](LwpState &st, LwpCrossing &) {
             st.flags |= 0x80000000u;
             st.threshold = 64;
         }},
        {"its counter did not restart",
         [](LwpState &st, LwpCrossing &) { st.restarted = 0; }},
        {"nothing waits",
         [](LwpState &st, LwpCrossing &) { st.pending[0] = 0; }},
        {"a branch record waits",
         [](LwpState &st, LwpCrossing &) { st.pending[0] = LWP_EVENT_BRE; }},
        {"branches retired are enabled",
         [](LwpState &st, LwpCrossing &) {
             st.flags |= 1u << LWP_EVENT_BRE;
         }},
        {"the cache is to be re-read",
         [](LwpState &st, LwpCrossing &) { st.cache_valid = 0; }},
        {"live intervals",
         [](LwpState &st, LwpCrossing &) { st.intervals_live = 1; }},
        {"no crossing in the TB",
         [](LwpState &st, LwpCrossing &) {
             st.counter[LWP_EVENT_IRE] = 10;
         }},
        {"a second crossing in the TB",
         [](LwpState &st, LwpCrossing &) { st.interval[LWP_EVENT_IRE] = 2; }},
        {"random bits in the reset",
         [](LwpState &st, LwpCrossing &) { st.random = 3; }},
        {"the TB may not defer",
         [](LwpState &, LwpCrossing &c) { c.tb.may_defer = false; }},
        {"latitude or lwp-sync-store",
         [](LwpState &, LwpCrossing &c) { c.gather = false; }},
        {"the crossing's length unknown",
         [](LwpState &, LwpCrossing &c) {
             c.tb.lens[0] &= ~(0xfull << (4 * 4));
         }},
        {"the slot wraps at 4 GiB",
         [](LwpState &st, LwpCrossing &c) {
             st.buffer_base = 0xffff'fff0ull;
             c.long_mode = false;
         }},
        {"the next slot wraps at 4 GiB",
         [](LwpState &st, LwpCrossing &c) {
             st.buffer_base = 0xffff'ffd0ull;
             c.long_mode = false;
         }},
    };
    for (const Case &k : cases) {
        waiting();
        LwpCrossing spoiled = c;
        k.spoil(st, spoiled);
        EXPECT_FALSE(plain(spoiled, &p)) << k.what;
    }
    // Each spoiled field alone decides: the unspoiled case is taken.
    waiting();
    EXPECT_TRUE(plain(c, &p));
    // IP filtering, on a CPU that has it.
    caps.ip_filtering = true;
    EXPECT_TRUE(plain(c, &p));
    st.filters |= LWP_FILTER_IPF;
    EXPECT_FALSE(plain(c, &p));
    caps = family15h();
    // Outside long mode a next slot that ends exactly at the 4 GiB line is
    // taken; one that starts at it wraps to 0, a slot of its own.
    waiting();
    st.buffer_base = 0xffff'ffc0ull;
    LwpCrossing legacy = c;
    legacy.long_mode = false;
    ASSERT_TRUE(plain(legacy, &p));
    EXPECT_EQ(p.next_slot, 0xffff'ffe0ull);
    waiting();
    st.buffer_base = 0xffff'ffe0ull;
    ASSERT_TRUE(plain(legacy, &p));
    EXPECT_EQ(p.slot, 0xffff'ffe0ull);
    EXPECT_EQ(p.next_slot, 0u);
}

// Random rings, counters and TBs: wherever lwp_tb_cross_plain accepts,
// lwp_store_lean and lwp_tb_cross agree and leave the same state.
TEST_F(TbCrossPlain, AgreesWithTbCrossOnRandomCases)
{
    std::mt19937 rng(25);
    unsigned taken = 0, declined = 0;
    for (unsigned iter = 0; iter < 20000; iter++) {
        waiting();
        const uint32_t size = 32 * (1 + rng() % 8);
        st.buffer_size = size;
        st.head = 32 * (rng() % (size / 32));
        st.tail = 32 * (rng() % (size / 32 + 1)) + (rng() % 4 ? 0 : size);
        st.threshold = 32 * (rng() % (size / 32 + 2));
        st.flags = (1u << LWP_EVENT_IRE) | (rng() % 2 ? 0x80000000u : 0);
        if (rng() % 16 == 0) {
            st.flags |= 1u << LWP_EVENT_BRE;
        }
        st.interval[LWP_EVENT_IRE] = 1 + rng() % 12;
        st.counter[LWP_EVENT_IRE] = static_cast<int32_t>(rng() % 14) - 2;
        st.random = rng() % 8 ? 0 : 1 + rng() % 3;
        st.restarted = rng() % 8 ? 1 + rng() % 64 : 0;
        st.tail_credit = rng() % 4 ? 0 : 1 + rng() % 3;
        st.cache_valid = rng() % 16 != 0;
        st.intervals_live = rng() % 16 == 0;
        caps.ip_filtering = rng() % 2;
        if (rng() % 8 == 0) {
            st.filters |= LWP_FILTER_IPF;
            st.base_ip = 0;
            st.limit_ip = UINT64_MAX;
        }
        LwpCrossing c = crossing(0, 0);
        c.long_mode = rng() % 4 != 0;
        if (rng() % 4 == 0) {
            st.buffer_base = 0xffff'f000ull + 16 * (rng() % 256);
        }
        c.tb.icount = 1 + rng() % 10;
        c.tb.charged = c.tb.icount - (rng() % 4 == 0);
        c.tb.last_ip = 0x1000 + 4 * (c.tb.icount - 1);
        if (rng() % 8 == 0) {
            c.tb.lens[0] &= ~(0xfull << (4 * (rng() % 10)));
        }
        c.tb.may_defer = rng() % 8 != 0;

        LwpPlainCross p;
        if (!plain(c, &p)) {
            declined++;
            continue;
        }
        taken++;
        LwpState ref = st;
        expect_same_as_tb_cross(c, p, &ref, "random");
        lwp_tb_cross_plain_commit(&st, &caps, &c, &p);
        ASSERT_TRUE(states_equal(st, ref)) << iter;
    }
    EXPECT_GT(taken, 1000u);
    EXPECT_GT(declined, 2000u);
}

TEST(TbLengths, SumsTheFirstNAndKnowsWhenOneIsMissing)
{
    // Lengths 1, 2, ..., 15, 1 from the first instruction on.
    uint64_t lens = 0;
    for (unsigned i = 0; i < LWP_TB_WORD_LENS; i++) {
        lens |= static_cast<uint64_t>(i % 15 + 1) << (LWP_TB_LEN_BITS * i);
    }
    uint32_t sum = 0;
    for (unsigned n = 1; n <= LWP_TB_WORD_LENS; n++) {
        sum += (n - 1) % 15 + 1;
        EXPECT_EQ(lwp_tb_lens_sum(lens, n), sum) << n;
    }
    // A zero length: that many are not known, nor any after.
    const uint64_t broken = lens & ~(0xfull << (LWP_TB_LEN_BITS * 3));
    EXPECT_EQ(lwp_tb_lens_sum(broken, 3), 6u);
    EXPECT_EQ(lwp_tb_lens_sum(broken, 4), 0u);

    LwpTbShape t = {};
    t.first_ip = 0xfffe;
    t.last_ip = 0x20;
    t.icount = 17;
    t.lens[0] = lens;
    t.csize = 2;                                   // 16-bit code wraps
    uint64_t ip;
    ASSERT_TRUE(lwp_tb_insn_ip_known(&t, 2, &ip));
    EXPECT_EQ(ip, 0x0001u);                        // 0xfffe + 1 + 2
    ASSERT_TRUE(lwp_tb_insn_ip_known(&t, 0, &ip));
    EXPECT_EQ(ip, 0xfffeu);
    ASSERT_TRUE(lwp_tb_insn_ip_known(&t, 16, &ip));
    EXPECT_EQ(ip, 0x20u);                          // the last one
    // Beyond the lengths and not the last: only the unwind data knows.
    t.icount = 19;
    EXPECT_FALSE(lwp_tb_insn_ip_known(&t, 17, &ip));
}

// A TB of 40 instructions of 1 to 15 bytes: the first 32 lengths are
// passed, in two words, and give every address up to the 33rd
// instruction's; after that only the last one's is known.
TEST(TbLengths, TheSecondWordContinuesTheFirst)
{
    LwpTbShape t = {};
    uint64_t expect[40];
    uint64_t at = 0x400000;
    for (unsigned i = 0; i < 40; i++) {
        const unsigned len = (i * 7) % 15 + 1;
        expect[i] = at;
        if (i < LWP_TB_LENS) {
            lwp_tb_lens_put(t.lens, i, len);
        }
        at += len;
    }
    t.first_ip = expect[0];
    t.last_ip = expect[39];
    t.icount = 40;
    uint64_t ip;
    for (unsigned i = 0; i <= LWP_TB_LENS; i++) {
        ASSERT_TRUE(lwp_tb_insn_ip_known(&t, i, &ip)) << i;
        EXPECT_EQ(ip, expect[i]) << i;
    }
    for (unsigned i = LWP_TB_LENS + 1; i < 39; i++) {
        EXPECT_FALSE(lwp_tb_insn_ip_known(&t, i, &ip)) << i;
    }
    ASSERT_TRUE(lwp_tb_insn_ip_known(&t, 39, &ip));
    EXPECT_EQ(ip, expect[39]);
    // The packing itself: instruction 16's length is word 1's first.
    EXPECT_EQ(t.lens[1] & LWP_TB_LEN_MASK, (16u * 7) % 15 + 1);
    EXPECT_EQ(t.lens[0] >> 60, (15u * 7) % 15 + 1);

    // A second word without a full first one is not believed.
    LwpTbShape odd = t;
    odd.lens[0] &= ~(LWP_TB_LEN_MASK << (LWP_TB_LEN_BITS * 15));
    EXPECT_FALSE(lwp_tb_insn_ip_known(&odd, 17, &ip));
    ASSERT_TRUE(lwp_tb_insn_ip_known(&odd, 15, &ip));
    EXPECT_EQ(ip, expect[15]);
    // 32-bit code wraps the sum.
    t.first_ip = 0xfffffff0u;
    t.csize = 1;
    ASSERT_TRUE(lwp_tb_insn_ip_known(&t, 20, &ip));
    EXPECT_EQ(ip, (expect[20] - expect[0] + 0xfffffff0u) & 0xffffffffu);
}

} // namespace
