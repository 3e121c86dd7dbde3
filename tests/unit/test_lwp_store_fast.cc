// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the record store's fast path (lwp_store_fast and
// lwp_store_commit): what it stores, by the rules of AMD pub. 43724 rev
// 3.08 sections 1.1 (steps 3-5), 6 (table 6-1) and 8.3, and that it
// decides exactly what the general path (lwp_store_pending) decides, or
// declines with nothing changed.

#include <gtest/gtest.h>

#include <random>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

class StoreFast : public RingStoreTest {
protected:
    // The fast path, then the writes and the commit, as the glue does.
    bool store_fast(LwpOutcome *out)
    {
        LwpStoreCommit commit;
        if (!lwp_store_fast(&st, &env, mem.mem(), out, &commit)) {
            return false;
        }
        mem.apply(*out);
        lwp_store_commit(&st, env.caps, &commit);
        return true;
    }
};

TEST_F(StoreFast, StoresAtTheHeadAndAdvancesItWithoutFlushing)
{
    start_ire();
    for (uint32_t i = 1; i <= 3; i++) {
        gather(0x100 + i);
        LwpOutcome out;
        ASSERT_TRUE(store_fast(&out));
        EXPECT_EQ(out.nwrites, 1u);              // the record only (8.3)
        EXPECT_FALSE(out.interrupt);
        EXPECT_EQ(st.head, 32 * i);
        EXPECT_EQ(mem.peek32(kRing + 32 * (i - 1) + 4), 0x100 + i);
        EXPECT_EQ(mem.peek32(kRing + 32 * (i - 1)) & 0xff,
                  uint32_t{LWP_EVENT_IRE});
        EXPECT_EQ(st.pending[0], 0);
        // Step 5: reset to the interval, no overrun.
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000);
    }
    EXPECT_EQ(head_in_lwpcb(), 0u);
}

TEST_F(StoreFast, OverrunShortensTheNextInterval)
{
    start_ire();
    gather(1, -4);                               // three more while pending
    LwpOutcome out;
    ASSERT_TRUE(store_fast(&out));
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 3);
}

TEST_F(StoreFast, FullRingOverwritesTheLastSlotCountsMissedAndResets)
{
    start_ire();
    for (uint32_t i = 1; i < kRecords; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_TRUE(store_fast(&out));
    }
    ASSERT_EQ(st.head, kRingSize - 32);
    const unsigned reads = mem.reads;

    for (uint32_t n = 1; n <= 3; n++) {
        gather(0x900 + n, -2);
        LwpOutcome out;
        ASSERT_TRUE(store_fast(&out));
        // Table 6-1 MissedEvents: head unchanged, the last record
        // overwritten, the 64-bit counter incremented.
        EXPECT_EQ(st.head, kRingSize - 32);
        EXPECT_EQ(mem.peek32(kRing + kRingSize - 32 + 4), 0x900 + n);
        EXPECT_EQ(missed_in_lwpcb(), n);
        EXPECT_EQ(head_in_lwpcb(), kRingSize - 32);
        EXPECT_FALSE(out.interrupt);
        // 8.3: the tail is re-read whenever the ring appears full, and
        // MissedEvents is kept in memory: two reads per missed event.
        EXPECT_EQ(mem.reads, reads + 2 * n);
        // Step 5: a missed event resets the counter too.
        EXPECT_EQ(st.counter[LWP_EVENT_IRE], 0x1000 - 1);
    }
    // The records before the head were never touched.
    EXPECT_EQ(mem.peek32(kRing + kRingSize - 64 + 4), kRecords - 1);
}

TEST_F(StoreFast, TailReReadWhenFullMakesRoom)
{
    start_ire();
    for (uint32_t i = 1; i < kRecords; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_TRUE(store_fast(&out));
    }
    mem.poke32(kCb + 64, 64);                    // two records consumed
    gather(77);
    LwpOutcome out;
    ASSERT_TRUE(store_fast(&out));
    EXPECT_EQ(st.head, 0u);
    EXPECT_EQ(st.tail, 64u);
    EXPECT_EQ(missed_in_lwpcb(), 0u);
    EXPECT_EQ(mem.peek32(kRing + kRingSize - 32 + 4), 77u);
}

TEST_F(StoreFast, TailIsNotReadWhileTheRingLooksNeitherFullNorAtThreshold)
{
    start_ire();
    const unsigned reads = mem.reads;
    mem.poke32(kCb + 64, 0x200);
    gather(1);
    LwpOutcome out;
    ASSERT_TRUE(store_fast(&out));
    EXPECT_EQ(mem.reads, reads);
    EXPECT_EQ(st.tail, 0u);
}

TEST_F(StoreFast, ThresholdInterruptsAndFlushesTheHead)
{
    start_ire(96, true);
    for (uint32_t i = 1; i <= 4; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_TRUE(store_fast(&out));
        // Space used after the store: 32 * i; interrupt from 96 on.
        EXPECT_EQ(out.interrupt, 32 * i >= 96) << i;
        EXPECT_EQ(head_in_lwpcb(), 32 * i >= 96 ? 32 * i : 0) << i;
    }
}

TEST_F(StoreFast, ThresholdReReadsTheTailFirst)
{
    start_ire(96, true);
    for (uint32_t i = 1; i <= 2; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_TRUE(store_fast(&out));
    }
    mem.poke32(kCb + 64, 64);                    // consumed: not at threshold
    gather(3);
    LwpOutcome out;
    ASSERT_TRUE(store_fast(&out));
    EXPECT_FALSE(out.interrupt);
    EXPECT_EQ(st.tail, 64u);
    EXPECT_EQ(head_in_lwpcb(), 0u);
}

// What the fast path leaves to the general path: it must decline before
// changing anything, and the general path then decides (here: faults).
TEST_F(StoreFast, DeclinesAnUnwritableRingSlot)
{
    start_ire();
    gather(1);
    mem.protect(kRing, kPage, true, false);
    const LwpState before = st;
    LwpOutcome out;
    LwpStoreCommit commit;
    EXPECT_FALSE(lwp_store_fast(&st, &env, mem.mem(), &out, &commit));
    EXPECT_TRUE(states_equal(st, before));
    lwp_store_pending(&st, &env, mem.mem(), &out);
    EXPECT_EQ(out.status, LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kRing);
}

TEST_F(StoreFast, DeclinesWhenTheLwpcbCannotBeReadAtFull)
{
    start_ire();
    for (uint32_t i = 1; i < kRecords; i++) {
        gather(i);
        LwpOutcome out;
        ASSERT_TRUE(store_fast(&out));
    }
    gather(2);
    mem.protect(kCb, kPage, false, false);
    const LwpState before = st;
    LwpOutcome out;
    LwpStoreCommit commit;
    EXPECT_FALSE(lwp_store_fast(&st, &env, mem.mem(), &out, &commit));
    EXPECT_TRUE(states_equal(st, before));
}

TEST_F(StoreFast, DeclinesAStoreWrappingAt4GiBAndAStaleCache)
{
    start_ire();
    gather(1);
    LwpOutcome out;
    LwpStoreCommit commit;
    LwpCpuEnv legacy = env32(&caps);
    // Legacy mode: the record's 32 bytes would wrap around 4 GiB.
    LwpState wrapping = st;
    wrapping.buffer_base = 0xFFFFFFF0ull;
    EXPECT_FALSE(lwp_store_fast(&wrapping, &legacy, mem.mem(), &out, &commit));
    st.cache_valid = 0;
    EXPECT_FALSE(lwp_store_fast(&st, &env, mem.mem(), &out, &commit));
    st.cache_valid = 1;
    st.pending[0] = 0;
    EXPECT_FALSE(lwp_store_fast(&st, &env, mem.mem(), &out, &commit));
}

TEST_F(StoreFast, StoresInLegacyModeAtTheTruncatedLinearAddress)
{
    start_ire();
    env = env32(&caps);
    // Linear addresses are 32 bits outside long mode (Access::split).
    st.buffer_base = kRing | 0x500000000ull;
    gather(0x33);
    LwpOutcome out;
    ASSERT_TRUE(store_fast(&out));
    EXPECT_EQ(out.writes[0].addr, kRing);
    EXPECT_EQ(mem.peek32(kRing + 4), 0x33u);
    EXPECT_EQ(st.head, 32u);
}

TEST_F(StoreFast, DeclinesARingLaidOverTheLwpcbFieldsItWrites)
{
    // The ring's last slot holds MissedEvents (offset 24) and the head
    // (16): only the general path orders those overlapping writes.
    cb.buffer_base = kCb;
    cb.buffer_size = 1024;
    cb.head = 0;
    cb.tail = 32;
    start_ire();
    gather(5);
    LwpOutcome out;
    LwpStoreCommit commit;
    EXPECT_FALSE(lwp_store_fast(&st, &env, mem.mem(), &out, &commit));
}

// Random rings: the fast path's decision, when it takes one, is the
// general path's, write for write; otherwise it changes nothing.
TEST_F(StoreFast, AgreesWithTheGeneralPath)
{
    std::mt19937 rng(2025);
    unsigned fast = 0, declined = 0;
    for (unsigned iter = 0; iter < 4000; iter++) {
        FakeMem m1, m2;
        uint64_t missed;
        const LwpState s = random_store_case(rng, kCb, kRing, m1, m2, &missed);

        // Legacy mode, a third of the time: the same linear addresses.
        const LwpCpuEnv e = rng() % 3 ? env : env32(&caps);
        LwpState general = s;
        LwpOutcome out_g;
        lwp_store_pending(&general, &e, m2.mem(), &out_g);

        LwpState quick = s;
        LwpOutcome out_f;
        LwpStoreCommit commit;
        if (!lwp_store_fast(&quick, &e, m1.mem(), &out_f, &commit)) {
            declined++;
            EXPECT_TRUE(states_equal(quick, s));
            continue;
        }
        fast++;
        ASSERT_EQ(out_g.status, LWP_OK) << iter;
        m1.apply(out_f);
        lwp_store_commit(&quick, env.caps, &commit);
        m2.apply(out_g);
        expect_same_store(out_f, out_g, quick, general, m1, m2, iter);
    }
    // Both ways were exercised.
    EXPECT_GT(fast, 1000u);
    EXPECT_GT(declined, 100u);
}

} // namespace
