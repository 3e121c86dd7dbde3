// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the LWP MSRs (AMD pub. 43724 rev 3.08, sections 4.2, 4.3)
// and of the reset state.

#include <gtest/gtest.h>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

struct CfgCase {
    uint64_t value;
    bool ok;
};

class LwpCfgWrite : public ::testing::TestWithParam<CfgCase> {};

TEST_P(LwpCfgWrite, FamilyFifteenSiliconMasks)
{
    const LwpCaps caps = family15h();     // EDX = 8000000F
    EXPECT_EQ(lwp_cfg_write_ok(&caps, GetParam().value), GetParam().ok);
}

// The FX-8150's WRMSR probe (VirtualBox CPU database): bits 30:4 #GP,
// bits 63:48 and 0 write-ignored, bits 47:32 and 31, 3:1 writable.
INSTANTIATE_TEST_SUITE_P(
    Table, LwpCfgWrite,
    ::testing::Values(
        CfgCase{0, true},
        CfgCase{0x8000000F, true},
        CfgCase{0x00000001, true},             // bit 0: ignored, no #GP
        CfgCase{0x80000000, true},
        // COREID and VECTOR take any value.
        CfgCase{0x0000FFFF8000000Full, true},
        CfgCase{0x00000010, false},            // DME: not supported
        CfgCase{0x00000040, false},            // RNH: not supported
        CfgCase{0x00000080, false},            // reserved for future events
        CfgCase{0x40000000, false},
        CfgCase{0x7FFFFFF0, false},            // all of 30:4
        CfgCase{0x0001000000000000ull, true},  // bits 63:48: ignored, no #GP
        CfgCase{0x8000000000000000ull, true},
        CfgCase{0xFFFF000000000001ull, true}));

TEST(LwpCfgWrite, EachBitOfThirtyToFourFaults)
{
    const LwpCaps caps = family15h();
    for (unsigned bit = 4; bit <= 30; bit++) {
        EXPECT_FALSE(lwp_cfg_write_ok(&caps, 1ull << bit)) << "bit " << bit;
    }
}

TEST(LwpCfgWrite, IgnoredBitsKeepTheirValue)
{
    EXPECT_EQ(lwp_cfg_written(0, 0xFFFFFFFF8000000Full), 0x0000FFFF8000000Eull);
    EXPECT_EQ(lwp_cfg_written(0x0000123400000002ull, 1), 0u);
    EXPECT_EQ(lwp_cfg_written(0, 0x0000ABCD00000008ull), 0x0000ABCD00000008ull);
    // A value holding ignored bits (it cannot arise) keeps them.
    EXPECT_EQ(lwp_cfg_written(0x8000000000000001ull, 0), 0x8000000000000001ull);
}

TEST(LwpCfgWrite, FollowsTheCapabilities)
{
    LwpCaps caps = all_events();
    EXPECT_TRUE(lwp_cfg_write_ok(&caps, 0x8000007F));
    caps.features = 0;
    EXPECT_FALSE(lwp_cfg_write_ok(&caps, 2));
    EXPECT_TRUE(lwp_cfg_write_ok(&caps, 1));
    EXPECT_TRUE(lwp_cfg_write_ok(&caps, 0x0000123400000000ull));
}

class LwpCbaddrWrite : public LwpTest {};

TEST_F(LwpCbaddrWrite, NonZeroIsRefusedAndChangesNothing)
{
    start();
    const LwpState before = st;
    EXPECT_FALSE(lwp_cbaddr_write(&st, kCb));
    EXPECT_FALSE(lwp_cbaddr_write(&st, 1));
    EXPECT_TRUE(states_equal(st, before));
}

TEST_F(LwpCbaddrWrite, ZeroStopsWithoutSavingAndDropsThePendingRecord)
{
    cb.counter[1] = 5;
    start();
    lwpval();
    lwpins();
    st.pending[0] = LWP_EVENT_INS;
    const auto snap = mem.snapshot();
    EXPECT_TRUE(lwp_cbaddr_write(&st, 0));
    EXPECT_TRUE(is_reset(st));
    EXPECT_TRUE(mem.same_as(snap));
    // Nothing left to flush.
    LwpOutcome out = slwpcb();
    EXPECT_EQ(out.value, 0u);
    EXPECT_EQ(out.nwrites, 0u);
    EXPECT_EQ(mem.peek32(kCb + 16), 0u);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 1)), 5u);
}

TEST_F(LwpCbaddrWrite, ZeroWhenDisabledIsFine)
{
    EXPECT_TRUE(lwp_cbaddr_write(&st, 0));
    EXPECT_TRUE(is_reset(st));
}

TEST(LwpStateReset, ZeroesEverything)
{
    LwpState st;
    std::memset(&st, 0xA5, sizeof(st));
    lwp_state_reset(&st);
    EXPECT_TRUE(is_reset(st));
}

} // namespace
