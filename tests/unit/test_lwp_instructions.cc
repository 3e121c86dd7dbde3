// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of SLWPCB, LWPVAL and LWPINS (AMD pub. 43724 rev 3.08,
// sections 2.1, 2.7 and 5.2-5.4): record layout byte by byte, sampling,
// the disabled cases, SLWPCB's flush and returned address.

#include <gtest/gtest.h>

#include <vector>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

class Instructions : public LwpTest {};

const std::vector<uint8_t> kExpectedUserRecord(uint8_t event_id)
{
    return {
        event_id, kCoreId, 0x34, 0x12,           // EventId, CoreId, Flags
        0xDD, 0xCC, 0xBB, 0xAA,                  // Data1
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,   // InstructionAddress
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,   // Data2
        0, 0, 0, 0, 0, 0, 0, 0,                  // reserved
    };
}

TEST_F(Instructions, LwpvalRecordLayout)
{
    start();
    // Garbage in the slot: every byte of the record is written.
    std::vector<uint8_t> junk(32, 0xEE);
    mem.poke(kRing, junk.data(), junk.size());
    LwpOutcome out = lwpval(0x0102030405060708ull, 0xAABBCCDD, 0xFFFF1234,
                            0x1122334455667788ull);
    ASSERT_EQ(out.status, LWP_OK);
    ASSERT_EQ(out.nwrites, 1u);
    EXPECT_EQ(out.writes[0].addr, kRing);
    EXPECT_EQ(out.writes[0].len, 32u);
    EXPECT_EQ(mem.bytes(kRing, 32), kExpectedUserRecord(LWP_EVENT_VAL));
}

TEST_F(Instructions, LwpinsRecordLayout)
{
    cb.flags = 0;       // LWPINS needs no event enabled
    start();
    std::vector<uint8_t> junk(32, 0xEE);
    mem.poke(kRing, junk.data(), junk.size());
    LwpOutcome out = lwpins(0x0102030405060708ull, 0xAABBCCDD, 0x00011234,
                            0x1122334455667788ull);
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.value, 0u);
    EXPECT_EQ(mem.bytes(kRing, 32), kExpectedUserRecord(LWP_EVENT_INS));
}

TEST_F(Instructions, CoreIdComesFromLwpCfg)
{
    env.lwp_cfg = (env.lwp_cfg & 0xFFFF00FFFFFFFFFFull) | 0x0000C30000000000ull;
    env.lwp_cfg = (env.lwp_cfg & ~0x000000FF00000000ull) | 0x0000000700000000ull;
    start();
    lwpins();
    EXPECT_EQ(mem.bytes(kRing, 2), (std::vector<uint8_t>{0xFF, 0x07}));
}

TEST_F(Instructions, LwpvalSamplesEveryIntervalPlusOne)
{
    cb.interval[1] = 3;
    cb.counter[1] = 0;
    start();
    std::vector<unsigned> stored;
    for (unsigned i = 1; i <= 13; i++) {
        const bool predicted = lwp_lwpval_stores(&st, &env, 0);
        const uint32_t head = st.head;
        ASSERT_EQ(lwpval(0, i).status, LWP_OK);
        const bool did = st.head != head;
        EXPECT_EQ(predicted, did) << "call " << i;
        if (did) {
            stored.push_back(i);
        }
    }
    EXPECT_EQ(stored, (std::vector<unsigned>{1, 5, 9, 13}));
    EXPECT_EQ(mem.peek32(kRing + 32 + 4), 5u);
}

TEST_F(Instructions, LwpvalFirstSampleAfterTheStartingCount)
{
    cb.interval[1] = 1;
    cb.counter[1] = 4;
    start();
    std::vector<unsigned> stored;
    for (unsigned i = 1; i <= 9; i++) {
        const uint32_t head = st.head;
        lwpval();
        if (st.head != head) {
            stored.push_back(i);
        }
    }
    EXPECT_EQ(stored, (std::vector<unsigned>{5, 7, 9}));
}

TEST_F(Instructions, LwpvalWhenNotStoringOnlyCounts)
{
    cb.interval[1] = 5;
    cb.counter[1] = 5;
    start();
    mem.reads = mem.probes = 0;
    EXPECT_FALSE(lwp_lwpval_stores(&st, &env, 0));
    LwpOutcome out = lwpval();
    EXPECT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.nwrites, 0u);
    EXPECT_EQ(st.counter[1], 4);
    EXPECT_EQ(mem.reads + mem.probes, 0u);
}

TEST_F(Instructions, LwpvalDisabledDoesNothingAtAll)
{
    st.counter[1] = 0;
    st.flags = 0x2;       // stale bits must not matter without an LWPCB
    const LwpState before = st;
    EXPECT_FALSE(lwp_lwpval_stores(&st, &env, 0));
    LwpOutcome out = lwpval(1, 2, 3, 4);
    EXPECT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.nwrites, 0u);
    EXPECT_TRUE(states_equal(st, before));
    EXPECT_EQ(mem.reads + mem.probes, 0u);
}

TEST_F(Instructions, LwpvalWithoutTheValEventDoesNothingAtAll)
{
    cb.flags = 0x80000004;
    start();
    mem.reads = mem.probes = 0;
    const LwpState before = st;
    EXPECT_FALSE(lwp_lwpval_stores(&st, &env, 0));
    LwpOutcome out = lwpval();
    EXPECT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.nwrites, 0u);
    EXPECT_TRUE(states_equal(st, before));
    EXPECT_EQ(mem.reads + mem.probes, 0u);
}

TEST_F(Instructions, LwpvalStoreFaultDoesNotCount)
{
    cb.interval[1] = 2;
    start();
    mem.protect(kRing, kPage, true, false);
    ASSERT_TRUE(lwp_lwpval_stores(&st, &env, 0));
    LwpOutcome out = expect_fault_without_effect([&] { return lwpval(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kRing);
    EXPECT_TRUE(out.fault_write);
    EXPECT_EQ(st.counter[1], 0);
    // Retried after the page is fixed: stored once.
    mem.protect(kRing, kPage, true, true);
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(st.head, 32u);
    EXPECT_EQ(st.counter[1], 2);
}

TEST_F(Instructions, LwpinsDisabledClearsCfAndTouchesNothing)
{
    LwpOutcome out;
    out.value = 1;
    lwp_lwpins(&st, &env, mem.mem(), 1, 2, 3, 4, &out);
    EXPECT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.value, 0u);
    EXPECT_EQ(out.nwrites, 0u);
    EXPECT_TRUE(is_reset(st));
    EXPECT_EQ(mem.reads + mem.probes, 0u);
}

TEST_F(Instructions, LwpinsDoesNotTouchCounters)
{
    cb.counter[1] = 3;
    start();
    lwpins();
    EXPECT_EQ(st.counter[1], 3);
}

TEST_F(Instructions, LwpinsStoreFaultHasNoEffect)
{
    start();
    mem.protect(kRing, kPage, false, false);
    LwpOutcome out = expect_fault_without_effect([&] { return lwpins(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.value, 0u);
}

TEST_F(Instructions, WorkAtAnyCpl)
{
    start();
    for (uint8_t cpl : {0, 1, 2}) {
        env.cpl = cpl;
        EXPECT_EQ(lwpins().status, LWP_OK);
        st.counter[1] = 0;
        EXPECT_EQ(lwpval().status, LWP_OK);
    }
    EXPECT_EQ(st.head, 6 * 32u);
}

// SLWPCB.
TEST_F(Instructions, SlwpcbDisabledReturnsZeroWithoutMemoryAccess)
{
    LwpOutcome out;
    out.value = 0x55;
    lwp_slwpcb(&st, &env, mem.mem(), &out);
    EXPECT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.value, 0u);
    EXPECT_EQ(out.nwrites, 0u);
    EXPECT_EQ(mem.reads + mem.probes, 0u);
}

TEST_F(Instructions, SlwpcbFlushesEnabledCountersAndTheHead)
{
    caps = all_events();
    env = env64(&caps);
    cb.flags = 0x8000002A;     // VAL, BRE, CNH
    for (unsigned id = 1; id <= 6; id++) {
        cb.counter[id] = 0x100 + id;
    }
    start();
    lwpins();
    lwpins();
    st.counter[3] = -1;        // a counter that went negative: 26-bit form
    LwpOutcome out;
    lwp_slwpcb(&st, &env, mem.mem(), &out);
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.value, kCb);
    EXPECT_EQ(out.nwrites, 4u);
    mem.apply(out);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 1)), 0x101u);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 3)), 0x03FFFFFFu);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 5)), 0x105u);
    // Disabled events' counters are left alone.
    EXPECT_EQ(mem.peek32(counter_at(kCb, 2)), 0x102u);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 4)), 0x104u);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 6)), 0x106u);
    EXPECT_EQ(mem.peek32(kCb + 16), 64u);
    EXPECT_EQ(st.cbaddr, kCb);       // still running
}

TEST_F(Instructions, SlwpcbIgnoresDsBaseIn64BitMode)
{
    env.ds_base = 0x5000;
    start();
    EXPECT_EQ(slwpcb().value, kCb);
}

TEST_F(Instructions, SlwpcbSubtractsDsBaseOutside64BitMode)
{
    env = env32(&caps, 0x3000);
    cb.buffer_base = kRing - 0x3000;
    place(kCb, cb);
    ASSERT_EQ(llwpcb(kCb - 0x3000).status, LWP_OK);
    EXPECT_EQ(slwpcb().value, kCb - 0x3000);
    // DS changed since LLWPCB: the result follows the new base.
    env.ds_base = 0x18000;
    EXPECT_EQ(slwpcb().value, (kCb - 0x18000) & 0xFFFFFFFF);
}

TEST_F(Instructions, SlwpcbFaultHasNoEffect)
{
    start();
    lwpins();
    mem.protect(kCb, kPage, true, false);
    LwpOutcome out = expect_fault_without_effect([&] { return slwpcb(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, counter_at(kCb, 1));
    EXPECT_TRUE(out.fault_write);
    EXPECT_EQ(out.value, 0u);
}

TEST_F(Instructions, SlwpcbWithoutEventsWritesOnlyTheHead)
{
    cb.flags = 0x80000000;
    start();
    LwpOutcome out = slwpcb();
    ASSERT_EQ(out.status, LWP_OK);
    ASSERT_EQ(out.nwrites, 1u);
    EXPECT_EQ(out.writes[0].addr, kCb + 16);
}

TEST_F(Instructions, SequenceSurvivesStopAndRestart)
{
    // SLWPCB, LLWPCB 0, LLWPCB saved: the program's documented way to pause.
    cb.interval[1] = 2;
    cb.counter[1] = 1;
    start();
    lwpval();                 // counter 0
    lwpins();                 // head 32
    const uint64_t saved = slwpcb().value;
    ASSERT_EQ(llwpcb(0).status, LWP_OK);
    EXPECT_EQ(st.cbaddr, 0u);
    ASSERT_EQ(llwpcb(saved).status, LWP_OK);
    EXPECT_EQ(st.counter[1], 0);
    EXPECT_EQ(st.head, 32u);
    lwpval();                 // counter -1: stores at 32
    EXPECT_EQ(st.head, 64u);
    EXPECT_EQ(mem.peek32(kRing + 32), LWP_EVENT_VAL | kCoreId << 8);
}

} // namespace
