// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the hardware events the emulator counts (AMD pub. 43724
// rev 3.08, sections 1.1, 2.2, 2.3, 6 and 8.1): which events translated
// code counts, how a TB is charged or split, what a retiring instruction
// gathers, and storing a gathered record.

#include <gtest/gtest.h>

#include <string.h>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

uint64_t load64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

constexpr uint32_t kIre = 1u << LWP_EVENT_IRE;
constexpr uint32_t kBre = 1u << LWP_EVENT_BRE;

class Events : public LwpTest {
protected:
    void start_events(uint32_t flags, uint32_t interval, uint32_t counter)
    {
        cb.flags = flags;
        for (unsigned id = 2; id <= 3; id++) {
            cb.interval[id] = interval;
            cb.counter[id] = counter;
        }
        start();
    }

    LwpTbShape tb(uint32_t icount, uint8_t branch = LWP_BRANCH_NONE)
    {
        LwpTbShape t{};
        t.first_ip = 0x1000;
        t.last_ip = 0x1000 + 4 * (icount - 1);
        t.icount = icount;
        t.charged = icount;
        t.branch = branch;
        return t;
    }

    bool taken_to_next = false;    // a taken Jcc whose target is the next insn

    LwpTbAction plan(const LwpTbShape &t, uint32_t *split)
    {
        return lwp_tb_plan(&st, &caps, &t, split);
    }

    unsigned retire(uint64_t ip, uint8_t branch, uint64_t next,
                    uint8_t records[2][LWP_RECORD_SIZE])
    {
        LwpRetired r{};
        r.ip = ip;
        r.fallthrough = ip + 2;
        r.next_ip = next;
        r.branch = branch;
        r.counted = true;
        r.taken = next != ip + 2 || taken_to_next;
        return lwp_retire(&st, env.caps, LWP_CFG_COREID(env.lwp_cfg), &r,
                          records);
    }
};

TEST_F(Events, ConfigFollowsFlagsAndFilters)
{
    cb.filters = LWP_FILTER_NCB | LWP_FILTER_NAB;
    start_events(kIre | kBre, 0x1000, 0x1000);
    LwpHwConfig cfg;
    lwp_hw_config(&st, &caps, &cfg);
    EXPECT_TRUE(cfg.ire);
    EXPECT_TRUE(cfg.bre);
    EXPECT_FALSE(cfg.val);
    EXPECT_FALSE(cfg.ipf);                     // no LwpIpFiltering on family 15h
    EXPECT_EQ(cfg.branch_weight[LWP_BRANCH_NONE], 0);
    EXPECT_EQ(cfg.branch_weight[LWP_BRANCH_COND], 0);
    EXPECT_EQ(cfg.branch_weight[LWP_BRANCH_REL], 1);
    EXPECT_EQ(cfg.branch_weight[LWP_BRANCH_ABS], 0);
}

TEST_F(Events, NothingCountsWithoutASession)
{
    LwpHwConfig cfg;
    lwp_hw_config(&st, &caps, &cfg);
    EXPECT_FALSE(cfg.ire || cfg.bre || cfg.val || cfg.ipf);
}

TEST_F(Events, IpFilteringNeedsTheCapability)
{
    cb.filters = LWP_FILTER_IPF;
    cb.base_ip = 0x2000;
    cb.limit_ip = 0x2fff;
    start_events(kIre, 0x1000, 0x1000);
    EXPECT_TRUE(lwp_ip_counted(&st, &caps, 0x1000));   // ignored: not enumerated
    caps.ip_filtering = true;
    EXPECT_FALSE(lwp_ip_counted(&st, &caps, 0x1fff));
    EXPECT_TRUE(lwp_ip_counted(&st, &caps, 0x2000));   // inclusive
    EXPECT_TRUE(lwp_ip_counted(&st, &caps, 0x2fff));   // inclusive
    EXPECT_FALSE(lwp_ip_counted(&st, &caps, 0x3000));
    st.filters |= LWP_FILTER_IPI;
    EXPECT_TRUE(lwp_ip_counted(&st, &caps, 0x1fff));
    EXPECT_FALSE(lwp_ip_counted(&st, &caps, 0x2000));
}

TEST_F(Events, WholeTbIsChargedWhenNoCounterCrosses)
{
    start_events(kIre | kBre, 0x1000, 300);
    uint32_t split;
    EXPECT_EQ(plan(tb(10, LWP_BRANCH_COND), &split), LWP_TB_CHARGE);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 290);
    EXPECT_EQ(st.counter[LWP_EVENT_BRE], 299);
}

TEST_F(Events, CrossingInsideATbCutsItAfterTheCrossingInstruction)
{
    start_events(kIre, 0x1000, 3);
    uint32_t split;
    EXPECT_EQ(plan(tb(10), &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 4u);                       // the 4th instruction crosses
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 3);    // nothing charged
    // Cut to 4, the crossing is its last instruction: a split at its end.
    EXPECT_EQ(plan(tb(4), &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 4u);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 3);
    // A TB is cut even at its last one, and charged nothing.
    st.counter[LWP_EVENT_IRE] = 0;
    EXPECT_EQ(plan(tb(1), &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 1u);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0);
}

TEST_F(Events, BranchCrossingSplitsOffTheBranch)
{
    start_events(kBre, 0x1000, 0);
    uint32_t split;
    EXPECT_EQ(plan(tb(5, LWP_BRANCH_REL), &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 5u);
    EXPECT_EQ(st.counter[LWP_EVENT_BRE], 0);    // the branch counts as it retires
    EXPECT_EQ(plan(tb(5, LWP_BRANCH_NONE), &split), LWP_TB_CHARGE);
    EXPECT_EQ(st.counter[LWP_EVENT_BRE], 0);
    st.filters = LWP_FILTER_NRB;                 // a filtered branch never crosses
    EXPECT_EQ(plan(tb(5, LWP_BRANCH_REL), &split), LWP_TB_CHARGE);
}

// A crossing at the TB's last instruction, a branch its exits can count
// (last_at_exit): the TB is not cut, and what it leaves is what the TB cut
// to length leaves, its instructions counted one by one as they retire.
TEST_F(Events, CrossingAtACountableBranchRetiresItAtTheExit)
{
    start_events(kIre | kBre, 0x1000, 100);
    st.counter[LWP_EVENT_BRE] = 0;
    const LwpState before = st;
    uint8_t cut[2][LWP_RECORD_SIZE];
    uint32_t split;
    // The cut TB: four instructions, then the branch as it retires.
    ASSERT_EQ(plan(tb(5, LWP_BRANCH_REL), &split), LWP_TB_SPLIT);
    ASSERT_EQ(split, 5u);
    for (uint32_t i = 0; i < 4; i++) {
        ASSERT_EQ(retire(0x1000 + 4 * i, LWP_BRANCH_NONE, 0x1004 + 4 * i,
                         cut), 0u);
    }
    ASSERT_EQ(retire(0x1010, LWP_BRANCH_REL, 0x4000, cut), 1u);
    const LwpState after_cut = st;

    st = before;
    LwpTbShape t = tb(5, LWP_BRANCH_REL);
    t.last_at_exit = true;
    EXPECT_EQ(plan(t, &split), LWP_TB_RETIRE_LAST);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 96);   // charged all but the branch
    EXPECT_EQ(st.counter[LWP_EVENT_BRE], 0);
    uint8_t exit[2][LWP_RECORD_SIZE];
    ASSERT_EQ(retire(0x1010, LWP_BRANCH_REL, 0x4000, exit), 1u);
    EXPECT_EQ(memcmp(exit[0], cut[0], LWP_RECORD_SIZE), 0);
    EXPECT_EQ(exit[0][0], LWP_EVENT_BRE);
    EXPECT_EQ(load64(exit[0] + 8), 0x1010u);
    EXPECT_EQ(load64(exit[0] + 16), 0x4000u);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], after_cut.counter[LWP_EVENT_IRE]);
    EXPECT_EQ(st.counter[LWP_EVENT_BRE], after_cut.counter[LWP_EVENT_BRE]);
}

TEST_F(Events, InstructionsCrossingAtTheBranchRetireItAtTheExitToo)
{
    start_events(kIre | kBre, 0x1000, 4);       // the 5th instruction crosses
    st.counter[LWP_EVENT_BRE] = 0;              // ... and the branch too
    LwpTbShape t = tb(5, LWP_BRANCH_COND);
    t.last_at_exit = true;
    uint32_t split;
    ASSERT_EQ(plan(t, &split), LWP_TB_RETIRE_LAST);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0);
    uint8_t records[2][LWP_RECORD_SIZE];
    // 8.1: both events on one instruction, instructions retired first.
    ASSERT_EQ(retire(0x1010, LWP_BRANCH_COND, 0x1012, records), 2u);
    EXPECT_EQ(records[0][0], LWP_EVENT_IRE);
    EXPECT_EQ(records[1][0], LWP_EVENT_BRE);
    EXPECT_EQ(records[1][3], 0);                // not taken: TKN clear
}

TEST_F(Events, OnlyTheLastInstructionsCrossingRetiresAtTheExit)
{
    start_events(kIre | kBre, 0x1000, 2);       // the 3rd instruction crosses
    LwpTbShape t = tb(5, LWP_BRANCH_REL);
    t.last_at_exit = true;
    uint32_t split;
    EXPECT_EQ(plan(t, &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 3u);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 2);
    // An uncharged last instruction (it leaves CPL 3) is no branch to count.
    st.counter[LWP_EVENT_IRE] = 100;
    st.counter[LWP_EVENT_BRE] = 0;
    t.charged = 4;
    EXPECT_EQ(plan(t, &split), LWP_TB_SPLIT);
    // IP filtering decides at the TB's start, instruction by instruction.
    caps.ip_filtering = true;
    st.filters = LWP_FILTER_IPF;
    st.base_ip = 0;
    st.limit_ip = UINT64_MAX;
    t.charged = 5;
    EXPECT_EQ(plan(t, &split), LWP_TB_SPLIT);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 100);
}

TEST_F(Events, UnchargedLastInstructionIsNotACrossing)
{
    start_events(kIre, 0x1000, 4);
    LwpTbShape t = tb(5);
    t.charged = 4;                               // e.g. ends with SYSCALL
    uint32_t split;
    EXPECT_EQ(plan(t, &split), LWP_TB_CHARGE);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0);
}

TEST_F(Events, IpFilterSkipsSplitsOrCharges)
{
    caps.ip_filtering = true;
    cb.filters = LWP_FILTER_IPF;
    cb.base_ip = 0x1008;
    cb.limit_ip = 0x1fff;
    start_events(kIre, 0x1000, 0x1000);
    uint32_t split;
    LwpTbShape below = tb(2);                    // 0x1000, 0x1004
    EXPECT_EQ(plan(below, &split), LWP_TB_SKIP);
    LwpTbShape straddling = tb(4);               // 0x1000 .. 0x100c
    EXPECT_EQ(plan(straddling, &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 1u);
    LwpTbShape inside = tb(4);
    inside.first_ip = 0x1010;
    inside.last_ip = 0x101c;
    EXPECT_EQ(plan(inside, &split), LWP_TB_CHARGE);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 4);
}

TEST_F(Events, RetireGathersAnInstructionsRetiredRecord)
{
    env.lwp_cfg |= uint64_t{0x5a} << 32;        // COREID
    start_events(kIre, 0x1000, 0);
    uint8_t rec[2][LWP_RECORD_SIZE];
    ASSERT_EQ(retire(0x401234, LWP_BRANCH_NONE, 0x401236, rec), 1u);
    EXPECT_EQ(rec[0][0], LWP_EVENT_IRE);
    EXPECT_EQ(rec[0][1], 0x5a);
    EXPECT_EQ(load64(rec[0] + 8), 0x401234u);
    for (unsigned i : {2u, 3u, 4u, 5u, 6u, 7u}) {
        EXPECT_EQ(rec[0][i], 0) << i;
    }
    for (unsigned i = 16; i < 32; i++) {
        EXPECT_EQ(rec[0][i], 0) << i;
    }
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], -1);
}

TEST_F(Events, BranchRecordHasTakenAndTarget)
{
    start_events(kBre, 0x1000, 0);
    uint8_t rec[2][LWP_RECORD_SIZE];
    // Conditional, not taken: TKN = 0, TargetAddress = fall-through.
    ASSERT_EQ(retire(0x5000, LWP_BRANCH_COND, 0x5002, rec), 1u);
    EXPECT_EQ(rec[0][0], LWP_EVENT_BRE);
    EXPECT_EQ(rec[0][3], 0x00);
    EXPECT_EQ(load64(rec[0] + 16), 0x5002u);
    st.counter[LWP_EVENT_BRE] = 0;
    // Unconditional: TKN = 1 even to the next instruction.
    ASSERT_EQ(retire(0x5000, LWP_BRANCH_REL, 0x5002, rec), 1u);
    EXPECT_EQ(rec[0][3], 0x80);
    st.counter[LWP_EVENT_BRE] = 0;
    ASSERT_EQ(retire(0x5000, LWP_BRANCH_COND, 0x4000, rec), 1u);
    EXPECT_EQ(rec[0][3], 0x80);                   // taken; FUS/PRV/PRD 0
    EXPECT_EQ(load64(rec[0] + 8), 0x5000u);
    EXPECT_EQ(load64(rec[0] + 16), 0x4000u);
    // Taken, to the next instruction: TKN from the condition, not the target.
    st.counter[LWP_EVENT_BRE] = 0;
    taken_to_next = true;
    ASSERT_EQ(retire(0x5000, LWP_BRANCH_COND, 0x5002, rec), 1u);
    EXPECT_EQ(rec[0][3], 0x80);
    EXPECT_EQ(load64(rec[0] + 16), 0x5002u);
}

TEST_F(Events, BothEventsOnOneBranchStoreInstructionsRetiredFirst)
{
    start_events(kIre | kBre, 0x1000, 0);
    uint8_t rec[2][LWP_RECORD_SIZE];
    ASSERT_EQ(retire(0x6000, LWP_BRANCH_ABS, 0x7000, rec), 2u);
    EXPECT_EQ(rec[0][0], LWP_EVENT_IRE);
    EXPECT_EQ(rec[1][0], LWP_EVENT_BRE);
    EXPECT_EQ(load64(rec[1] + 8), 0x6000u);
}

TEST_F(Events, NotABranchDoesNotCountForBranches)
{
    start_events(kBre, 0x1000, 0);
    uint8_t rec[2][LWP_RECORD_SIZE];
    EXPECT_EQ(retire(0x6000, LWP_BRANCH_NONE, 0x6002, rec), 0u);
    EXPECT_EQ(st.counter[LWP_EVENT_BRE], 0);
}

TEST_F(Events, StoringAGatheredRecordResetsItsCounterWithOverrun)
{
    start_events(kIre, 0x1000, 0);
    uint8_t rec[2][LWP_RECORD_SIZE];
    ASSERT_EQ(retire(0x401000, LWP_BRANCH_NONE, 0x401002, rec), 1u);
    st.counter[LWP_EVENT_IRE] = -3;             // two more while pending
    memcpy(st.pending, rec[0], LWP_RECORD_SIZE);
    LwpOutcome out;
    lwp_store_pending(&st, &env, mem.mem(), &out);
    ASSERT_EQ(out.status, LWP_OK);
    mem.apply(out);
    EXPECT_EQ(st.pending[0], 0);
    EXPECT_EQ(st.head, 32u);
    EXPECT_EQ(mem.peek32(kRing) & 0xff, uint32_t{LWP_EVENT_IRE});
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 2);
}

TEST_F(Events, PendingRecordSurvivesAFaultingStore)
{
    start_events(kIre, 0x1000, 0);
    uint8_t rec[2][LWP_RECORD_SIZE];
    ASSERT_EQ(retire(0x401000, LWP_BRANCH_NONE, 0x401002, rec), 1u);
    memcpy(st.pending, rec[0], LWP_RECORD_SIZE);
    mem.protect(kRing, kPage, true, false);
    const LwpState before = st;
    LwpOutcome out;
    lwp_store_pending(&st, &env, mem.mem(), &out);
    EXPECT_EQ(out.status, LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kRing);
    EXPECT_EQ(memcmp(&st, &before, sizeof(st)), 0);
}

// ---- a record stored after its TB (section 1.1, Store) --------------------

class Deferred : public Events {
protected:
    LwpTbShape deferrable(uint32_t icount)
    {
        LwpTbShape t = tb(icount);
        t.may_defer = true;
        return t;
    }

    // The record of the TB's instruction @index, as a store at that
    // instruction would make it (lwp_retire), with the counter it leaves.
    void at_instruction(uint32_t counter, uint32_t index, uint8_t rec[32])
    {
        LwpState copy = st;
        st.counter[LWP_EVENT_IRE] = static_cast<int32_t>(counter - index);
        uint8_t records[2][LWP_RECORD_SIZE];
        ASSERT_EQ(retire(0x1000 + 4 * index, LWP_BRANCH_NONE,
                         0x1004 + 4 * index, records), 1u);
        memcpy(rec, records[0], LWP_RECORD_SIZE);
        st = copy;
    }
};

TEST_F(Deferred, TheCrossingRecordIsGatheredAtTheStartAndRestartsAsAtTheInstruction)
{
    env.lwp_cfg |= uint64_t{0x21} << 32;        // COREID
    start_events(kIre, 0x1000, 3);
    uint8_t expected[LWP_RECORD_SIZE];
    at_instruction(3, 3, expected);
    uint32_t split;
    const LwpTbShape t = deferrable(10);
    ASSERT_EQ(plan(t, &split), LWP_TB_DEFER);
    EXPECT_EQ(split, 3u);                       // the 4th instruction crosses
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 3);    // lwp_tb_plan changes nothing
    ASSERT_TRUE(lwp_tb_defer(&st, &env, mem.mem(), &t, 0x100c));
    EXPECT_EQ(memcmp(st.pending, expected, LWP_RECORD_SIZE), 0);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 3 - 10);
    // Stored after the TB: the six instructions after the crossing one
    // shorten the restarted interval, as if stored at the 4th (step 5).
    LwpOutcome out;
    lwp_store_pending(&st, &env, mem.mem(), &out);
    ASSERT_EQ(out.status, LWP_OK);
    mem.apply(out);
    EXPECT_EQ(st.head, 32u);
    EXPECT_EQ(mem.peek32(kRing + 8), 0x100cu);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 6);
}

TEST_F(Deferred, BranchesNotCrossingAreChargedWithTheTb)
{
    start_events(kIre | kBre, 0x1000, 2);
    st.counter[LWP_EVENT_BRE] = 100;
    LwpTbShape t = deferrable(5);
    t.branch = LWP_BRANCH_COND;
    uint32_t split;
    ASSERT_EQ(plan(t, &split), LWP_TB_DEFER);
    ASSERT_TRUE(lwp_tb_defer(&st, &env, mem.mem(), &t, 0x1008));
    EXPECT_EQ(st.counter[LWP_EVENT_BRE], 99);
    // A branch crossing too: split, both gathered where they retire.
    memset(st.pending, 0, sizeof(st.pending));
    st.counter[LWP_EVENT_IRE] = 2;
    st.counter[LWP_EVENT_BRE] = 0;
    EXPECT_EQ(plan(t, &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 3u);
}

TEST_F(Deferred, NotWhereTheTranslatorOrTheRandomBitsForbid)
{
    uint32_t split;
    start_events(kIre, 0x1000, 3);
    EXPECT_EQ(plan(tb(10), &split), LWP_TB_SPLIT);   // may_defer clear
    cb.random = 4;
    start_events(kIre, 0x1000, 3);
    EXPECT_EQ(plan(deferrable(10), &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 4u);
}

TEST_F(Deferred, NotWhenTheIntervalEndsAgainInTheTb)
{
    uint32_t split;
    start_events(kIre, 0xff, 0);                // the family 15h minimum
    EXPECT_EQ(plan(deferrable(256), &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 1u);
    start_events(kIre, 0xff, 0);
    EXPECT_EQ(plan(deferrable(255), &split), LWP_TB_DEFER);
    EXPECT_EQ(split, 0u);
}

TEST_F(Deferred, NotWhenTheStoreMayInterrupt)
{
    uint32_t split;
    // Threshold 64 with INT: the second record reaches it.
    cb.threshold = 64;
    start_events(kIre | (1u << 31), 0x1000, 3);
    EXPECT_EQ(plan(deferrable(10), &split), LWP_TB_DEFER);
    st.head = 32;
    EXPECT_EQ(plan(deferrable(10), &split), LWP_TB_SPLIT);
    EXPECT_EQ(split, 4u);
    // A ring that looks full may not be once its tail is re-read.
    st.head = 1024 - 32;
    st.tail = 0;
    EXPECT_EQ(plan(deferrable(10), &split), LWP_TB_SPLIT);
    // Without INT nothing interrupts: a missed event is stored late too.
    st.flags &= ~(1u << 31);
    EXPECT_EQ(plan(deferrable(10), &split), LWP_TB_DEFER);
}

TEST_F(Deferred, NotWhenTheRecordsSlotWouldFault)
{
    start_events(kIre, 0x1000, 3);
    const LwpTbShape t = deferrable(10);
    uint32_t split;
    ASSERT_EQ(plan(t, &split), LWP_TB_DEFER);
    mem.protect(kRing, kPage, true, false);
    const LwpState before = st;
    EXPECT_FALSE(lwp_tb_defer(&st, &env, mem.mem(), &t, 0x100c));
    EXPECT_EQ(memcmp(&st, &before, sizeof(st)), 0);
}

TEST_F(Deferred, NotWithARecordPendingOrTheCacheToReRead)
{
    uint32_t split;
    start_events(kIre, 0x1000, 3);
    st.cache_valid = 0;
    EXPECT_EQ(plan(deferrable(10), &split), LWP_TB_SPLIT);
    start_events(kIre, 0x1000, 3);
    st.pending[0] = LWP_EVENT_IRE;
    EXPECT_EQ(plan(deferrable(10), &split), LWP_TB_SPLIT);
}

} // namespace
