// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of storing event records (AMD pub. 43724 rev 3.08, sections
// 1.1, 6 and 8.3): ring wraparound, full buffer and MissedEvents, tail
// re-reads, the threshold interrupt, head flushes, counter reset with
// overrun and Random, and the LWPCB refresh after XRSTOR.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

class Ring : public LwpTest {
protected:
    static constexpr uint32_t kRecords = kRingSize / LWP_RECORD_SIZE;

    uint32_t head_in_lwpcb() { return mem.peek32(kCb + 16); }
    uint64_t missed_in_lwpcb() { return mem.peek64(kCb + 24); }
    void set_tail(uint32_t tail) { mem.poke32(kCb + 64, tail); }
};

TEST_F(Ring, HeadAdvancesAndIsNotFlushedOnAnOrdinaryStore)
{
    start();
    for (uint32_t i = 1; i <= 5; i++) {
        LwpOutcome out = lwpins(0, i);
        ASSERT_EQ(out.status, LWP_OK);
        EXPECT_EQ(out.value, 0u);
        EXPECT_EQ(out.nwrites, 1u);      // the record only
        EXPECT_EQ(st.head, 32 * i);
        EXPECT_EQ(mem.peek32(kRing + 32 * (i - 1) + 4), i);
    }
    EXPECT_EQ(head_in_lwpcb(), 0u);
}

TEST_F(Ring, WrapsAroundAtBufferSize)
{
    cb.head = kRingSize - 64;
    cb.tail = 96;
    start();
    ASSERT_EQ(lwpins(0, 1).status, LWP_OK);
    EXPECT_EQ(st.head, kRingSize - 32);
    ASSERT_EQ(lwpins(0, 2).status, LWP_OK);
    EXPECT_EQ(st.head, 0u);
    ASSERT_EQ(lwpins(0, 3).status, LWP_OK);
    EXPECT_EQ(st.head, 32u);
    EXPECT_EQ(mem.peek32(kRing + kRingSize - 64 + 4), 1u);
    EXPECT_EQ(mem.peek32(kRing + kRingSize - 32 + 4), 2u);
    EXPECT_EQ(mem.peek32(kRing + 4), 3u);
}

TEST_F(Ring, FullBufferOverwritesTheLastSlotAndCountsMissedEvents)
{
    start();
    for (uint32_t i = 1; i < kRecords; i++) {
        ASSERT_EQ(lwpins(0, i).value, 0u);
    }
    ASSERT_EQ(st.head, kRingSize - 32);

    LwpOutcome out = lwpins(0, 1000);
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.value, 1u);                       // CF
    EXPECT_EQ(st.head, kRingSize - 32);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
    EXPECT_EQ(head_in_lwpcb(), kRingSize - 32);     // flushed
    EXPECT_EQ(mem.peek32(kRing + kRingSize - 32 + 4), 1000u);
    EXPECT_FALSE(out.interrupt);                    // threshold > size

    out = lwpins(0, 1001);
    EXPECT_EQ(out.value, 1u);
    EXPECT_EQ(missed_in_lwpcb(), 2u);
    EXPECT_EQ(mem.peek32(kRing + kRingSize - 32 + 4), 1001u);
    // Records before the head were never touched.
    EXPECT_EQ(mem.peek32(kRing + kRingSize - 64 + 4), kRecords - 1);
}

TEST_F(Ring, MissedEventsIsASixtyFourBitCounter)
{
    cb.missed = 0xFFFFFFFFull;
    cb.head = 32;
    cb.tail = 64;
    start();
    EXPECT_EQ(lwpins().value, 1u);
    EXPECT_EQ(missed_in_lwpcb(), 0x100000000ull);
}

TEST_F(Ring, TailReReadMakesRoom)
{
    start();
    for (uint32_t i = 1; i < kRecords; i++) {
        lwpins();
    }
    // The program consumed two records since LLWPCB cached tail = 0.
    set_tail(64);
    LwpOutcome out = lwpins(0, 77);
    EXPECT_EQ(out.value, 0u);
    EXPECT_EQ(st.head, 0u);
    EXPECT_EQ(st.tail, 64u);
    EXPECT_EQ(missed_in_lwpcb(), 0u);
    EXPECT_EQ(mem.peek32(kRing + kRingSize - 32 + 4), 77u);
    // Room for exactly one more.
    EXPECT_EQ(lwpins().value, 0u);
    EXPECT_EQ(lwpins().value, 1u);
}

TEST_F(Ring, TailIsOnlyReReadWhenTheBufferLooksFull)
{
    start();
    set_tail(0x200);     // ignored while nothing looks full
    lwpins();
    EXPECT_EQ(st.tail, 0u);
}

// Threshold: after the store, space = (head - tail) % size >= threshold.
struct ThresholdCase {
    const char *name;
    uint32_t threshold;       // as in the LWPCB
    uint32_t flags;           // LWPCB.Flags
    uint32_t cfg;             // LWP_CFG[31:0]
    unsigned stores;
    unsigned first_interrupt; // 1-based store that interrupts first; 0 never
};

class RingThreshold : public Ring,
                      public ::testing::WithParamInterface<ThresholdCase> {};

TEST_P(RingThreshold, InterruptsAndFlushesTheHead)
{
    const ThresholdCase c = GetParam();
    env.lwp_cfg = c.cfg | static_cast<uint64_t>(kCoreId) << 32;
    cb.threshold = c.threshold;
    cb.flags = c.flags;
    start();
    unsigned first = 0;
    for (unsigned i = 1; i <= c.stores; i++) {
        LwpOutcome out = lwpins();
        ASSERT_EQ(out.status, LWP_OK);
        if (out.interrupt) {
            if (!first) {
                first = i;
            }
            EXPECT_EQ(head_in_lwpcb(), st.head);
        }
        // Once reached, the condition holds for every later store.
        EXPECT_EQ(out.interrupt, first != 0);
    }
    EXPECT_EQ(first, c.first_interrupt);
}

INSTANTIATE_TEST_SUITE_P(
    Table, RingThreshold,
    ::testing::Values(
        ThresholdCase{"AtTwoRecords", 64, 0x80000002, 0x8000000F, 4, 2},
        ThresholdCase{"RoundedDown", 95, 0x80000002, 0x8000000F, 4, 2},
        ThresholdCase{"ZeroEveryStore", 0, 0x80000002, 0x8000000F, 3, 1},
        ThresholdCase{"EqualToSizeNeverReached", 1024, 0x80000002, 0x8000000F, 40, 0},
        ThresholdCase{"AboveSizeNever", 2048, 0x80000002, 0x8000000F, 40, 0},
        ThresholdCase{"LastSlot", 992, 0x80000002, 0x8000000F, 31, 31},
        ThresholdCase{"IntNotRequested", 0, 0x00000002, 0x8000000F, 3, 0},
        ThresholdCase{"IntNotAvailable", 0, 0x80000002, 0x0000000F, 3, 0}),
    [](const ::testing::TestParamInfo<ThresholdCase> &i) { return std::string(i.param.name); });

TEST_F(Ring, ThresholdReReadsTheTailBeforeInterrupting)
{
    cb.threshold = 64;
    start();
    lwpins();
    set_tail(32);        // the program consumed the first record
    LwpOutcome out = lwpins();
    EXPECT_FALSE(out.interrupt);
    EXPECT_EQ(st.tail, 32u);
    EXPECT_EQ(out.nwrites, 1u);          // no head flush either
    EXPECT_EQ(head_in_lwpcb(), 0u);
    out = lwpins();
    EXPECT_TRUE(out.interrupt);
    EXPECT_EQ(head_in_lwpcb(), 96u);
}

// Table 6-1: the threshold is evaluated when the head advances; a store into
// a full ring does not advance it, so it does not interrupt again.
TEST_F(Ring, FullBufferDoesNotInterruptAgain)
{
    cb.threshold = 0x200;
    cb.head = 32;
    cb.tail = 64;
    start();
    LwpOutcome out = lwpins();
    EXPECT_EQ(out.value, 1u);
    EXPECT_FALSE(out.interrupt);
    EXPECT_EQ(head_in_lwpcb(), 32u);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
}

TEST_F(Ring, FullBufferWithoutThresholdDoesNotInterrupt)
{
    cb.threshold = 1024;     // full is size - 32 bytes used
    cb.head = 32;
    cb.tail = 64;
    start();
    LwpOutcome out = lwpins();
    EXPECT_EQ(out.value, 1u);
    EXPECT_FALSE(out.interrupt);
}

// Faults while storing leave everything as it was.
TEST_F(Ring, UnwritableRingSlotIsWriteFault)
{
    cb.head = 64;
    start();
    mem.protect(kRing, kPage, true, false);
    LwpOutcome out = expect_fault_without_effect([&] { return lwpins(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kRing + 64);
    EXPECT_TRUE(out.fault_write);
}

TEST_F(Ring, UnreadableLwpcbWhenFullIsReadFaultOnTheTail)
{
    cb.head = 32;
    cb.tail = 64;
    start();
    mem.protect(kCb, kPage, false, false);
    LwpOutcome out = expect_fault_without_effect([&] { return lwpins(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kCb + 64);
    EXPECT_FALSE(out.fault_write);
}

TEST_F(Ring, ReadOnlyLwpcbWhenFullIsWriteFaultOnMissedEvents)
{
    cb.head = 32;
    cb.tail = 64;
    start();
    mem.protect(kCb, kPage, true, false);
    LwpOutcome out = expect_fault_without_effect([&] { return lwpins(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kCb + 24);
    EXPECT_TRUE(out.fault_write);
}

TEST_F(Ring, ReadOnlyLwpcbAtThresholdIsWriteFaultOnTheHead)
{
    cb.threshold = 0;
    start();
    mem.protect(kCb, kPage, true, false);
    LwpOutcome out = expect_fault_without_effect([&] { return lwpins(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kCb + 16);
    EXPECT_TRUE(out.fault_write);
}

// Counter reset (1.1 step 5).
TEST_F(Ring, OverrunShortensTheNextInterval)
{
    cb.interval[1] = 10;
    start();
    st.counter[1] = -3;          // two more events happened before storing
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(st.counter[1], 10 - 3);
}

TEST_F(Ring, OverrunLargerThanTheIntervalResetsToZero)
{
    cb.interval[1] = 2;
    start();
    st.counter[1] = -9;
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(st.counter[1], 0);
}

TEST_F(Ring, MissedEventStillResetsTheCounter)
{
    cb.interval[1] = 6;
    cb.head = 32;
    cb.tail = 64;
    start();
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
    EXPECT_EQ(st.counter[1], 6);
}

class RingRandom : public Ring {
protected:
    // Counter values after each of @n stores, starting from @seed.
    std::vector<int32_t> run(uint64_t seed, unsigned n)
    {
        st.rng = seed;
        std::vector<int32_t> values;
        for (unsigned i = 0; i < n; i++) {
            st.counter[1] = 0;
            EXPECT_EQ(lwpval().status, LWP_OK);
            values.push_back(st.counter[1]);
        }
        return values;
    }
};

TEST_F(RingRandom, ReplacesOnlyTheLowBitsDeterministically)
{
    cb.interval[1] = 0x1234;
    cb.random = 4;
    cb.tail = 0x3E0;      // plenty of room: stores never miss
    start();
    EXPECT_EQ(st.random, 4);
    const LwpState begin = st;
    const std::vector<int32_t> a = run(0, 24);
    std::set<int32_t> low;
    for (int32_t v : a) {
        EXPECT_EQ(v & ~0xF, 0x1230);
        low.insert(v & 0xF);
    }
    EXPECT_GT(low.size(), 4u);          // the low bits do vary
    EXPECT_NE(st.rng, 0u);              // a zero generator got seeded

    st = begin;
    EXPECT_EQ(run(0, 24), a);           // same start, same sequence
    st = begin;
    EXPECT_NE(run(0x1234567, 24), a);   // another start, another sequence
}

TEST_F(RingRandom, RandomZeroLeavesTheIntervalAlone)
{
    cb.interval[1] = 0x1234;
    start();
    st.rng = 99;
    const std::vector<int32_t> a = run(99, 4);
    for (int32_t v : a) {
        EXPECT_EQ(v, 0x1234);
    }
    EXPECT_EQ(st.rng, 99u);
}

TEST_F(RingRandom, FifteenBitsOfRandomness)
{
    cb.interval[1] = 0x1ABCDEF;
    cb.random = 15;
    start();
    for (int32_t v : run(7, 8)) {
        EXPECT_EQ(v & ~0x7FFF, 0x1AB8000);
        EXPECT_GE(v, 0);
    }
}

// After XRSTOR the cached LWPCB fields are re-read at the next store.
class RingAfterXrstor : public Ring {
protected:
    void save_and_restore()
    {
        uint8_t area[LWP_XSAVE_SIZE];
        ASSERT_TRUE(lwp_xsave(&st, area));
        LwpState restored = zero_state();
        lwp_xrstor(&restored, &env, area, true);
        ASSERT_EQ(restored.cbaddr, st.cbaddr);
        ASSERT_EQ(restored.cache_valid, 0);
        st = restored;
    }
};

TEST_F(RingAfterXrstor, RefreshesThresholdIntAndTailFromTheLwpcb)
{
    cb.threshold = 0x300;
    cb.flags = 0x80000002;
    start();
    lwpins();
    save_and_restore();
    // The LWPCB now says "interrupt at every store" and the program moved
    // the tail; both are picked up by the store.
    mem.poke32(kCb + 32, 0);
    set_tail(0x80);
    LwpOutcome out = lwpins();
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(st.cache_valid, 1);
    EXPECT_EQ(st.threshold, 0u);
    EXPECT_EQ(st.flags, 0x80000002u);
    EXPECT_EQ(st.tail, 0x80u);
    EXPECT_EQ(out.value, 0u);
    EXPECT_TRUE(out.interrupt);
}

TEST_F(RingAfterXrstor, IntInTheLwpcbStillNeedsAvailability)
{
    cb.threshold = 0;
    start();
    save_and_restore();
    env.lwp_cfg &= ~static_cast<uint64_t>(LWP_FEAT_INT);
    LwpOutcome out = lwpins();
    EXPECT_FALSE(out.interrupt);
    EXPECT_EQ(st.flags, 0x00000002u);
}

TEST_F(RingAfterXrstor, RefreshesIntervalsWithTheirMinimumAndRandom)
{
    cb.flags = 0x00000006;
    cb.interval[1] = 3;
    start();
    save_and_restore();
    mem.poke32(interval_at(kCb, 1), 0x03FFFFFF);   // -1: LLWPCB would use 0
    mem.poke32(interval_at(kCb, 2), 5);            // below the minimum
    mem.poke32(kCb + 4, 1024 | 2u << 28);          // Random = 2
    st.counter[1] = 0;
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(st.interval[1], 0u);
    EXPECT_EQ(st.interval[2], 0xFFu);
    EXPECT_EQ(st.random, 2);
    EXPECT_EQ(st.counter[1] & ~3, 0);
    // Refreshing never writes the LWPCB.
    EXPECT_EQ(mem.peek32(interval_at(kCb, 2)), 5u);
}

TEST_F(RingAfterXrstor, UnreadableLwpcbIsReadFaultWithoutEffect)
{
    start();
    save_and_restore();
    mem.protect(kCb, kPage, false, false);
    LwpOutcome out = expect_fault_without_effect([&] { return lwpins(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kCb);
    EXPECT_FALSE(out.fault_write);
    EXPECT_EQ(st.cache_valid, 0);
}

TEST_F(RingAfterXrstor, MissedEventsIsNotCached)
{
    cb.head = 32;
    cb.tail = 64;
    start();
    save_and_restore();
    mem.poke64(kCb + 24, 41);
    EXPECT_EQ(lwpins().value, 1u);
    EXPECT_EQ(missed_in_lwpcb(), 42u);
}

// Pending record (from XRSTOR; hardware events will also leave one).
TEST_F(Ring, PendingRecordIsStoredBySlwpcbAndItsCounterReset)
{
    cb.flags = 0x00000006;
    cb.interval[2] = 0x300;
    start();
    uint8_t record[LWP_RECORD_SIZE];
    for (unsigned i = 0; i < sizeof(record); i++) {
        record[i] = static_cast<uint8_t>(0x40 + i);
    }
    record[0] = LWP_EVENT_IRE;
    memcpy(st.pending, record, sizeof(record));
    st.counter[2] = -2;
    LwpOutcome out = slwpcb();
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(mem.bytes(kRing, 32),
              std::vector<uint8_t>(record, record + sizeof(record)));
    EXPECT_EQ(st.head, 32u);
    EXPECT_EQ(head_in_lwpcb(), 32u);
    EXPECT_EQ(st.pending[0], 0);
    EXPECT_EQ(st.counter[2], 0x300 - 1);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 2)), 0x2FFu);
}

TEST_F(Ring, PendingRecordStoreFaultKeepsItPending)
{
    start();
    st.pending[0] = LWP_EVENT_INS;
    mem.protect(kRing, kPage, true, false);
    LwpOutcome out = expect_fault_without_effect([&] { return slwpcb(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kRing);
    EXPECT_EQ(st.pending[0], LWP_EVENT_INS);
}

} // namespace

namespace {

// Spec 4.3: LWP keeps linear addresses.  A session started in 64-bit mode
// above 4 GiB keeps storing there when the thread runs compatibility-mode
// code (long mode, CS.L = 0); only legacy mode wraps at 4 GiB.
TEST_F(Ring, SixtyFourBitSessionKeepsItsAddressesInCompatibilityMode)
{
    constexpr uint64_t kHighCb = 0x100010000ull, kHighRing = 0x100020000ull;
    mem.map(kHighCb, 0x1000);
    mem.map(kHighRing, 0x1000);
    cb.buffer_base = kHighRing;
    start(kHighCb);
    env = env32(&caps);
    env.long_mode = true;
    LwpOutcome out = lwpins(0, 0x5150);
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(mem.peek32(kHighRing + 4), 0x5150u);
    EXPECT_EQ(st.head, 32u);
}

} // namespace
