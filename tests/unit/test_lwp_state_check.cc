// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of lwp_state_check: the check an incoming migration stream's
// LWP state passes before the model runs on it.  Each invariant is refused
// on its own, at its boundary, naming the field.

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

class StateCheck : public ::testing::Test {
protected:
    LwpCaps caps = family15h();
    LwpCpuEnv env = env64(&caps);
    LwpState st = zero_state();

    void SetUp() override
    {
        env.long_mode = true;
        st.cbaddr = 0x10000;
        st.buffer_base = 0x20000;
        st.buffer_size = 32 * 32;
        st.head = 31 * 32;
        st.flags = LWP_FEAT_VAL | LWP_FEAT_IRE | LWP_FEAT_INT;
    }
    std::string why() const
    {
        const char *bad = lwp_state_check(&st, &env);
        return bad ? bad : "";
    }
};

TEST_F(StateCheck, AValidSessionAndADisabledOnePass)
{
    EXPECT_EQ(why(), "");
    st = zero_state();
    EXPECT_EQ(why(), "");
}

TEST_F(StateCheck, HeadAtBufferSizeIsRefused)
{
    st.head = st.buffer_size;
    EXPECT_EQ(why(), "BufferHeadOffset");
    st.head = 33;
    EXPECT_EQ(why(), "BufferHeadOffset");
}

TEST_F(StateCheck, BufferSizeBoundaries)
{
    st.buffer_size = 32 * 32 - 32;            // below LwpMinBufferSize (32 records)
    st.head = 0;
    EXPECT_EQ(why(), "BufferSize");
    st.buffer_size = 32 * 32 + 16;
    EXPECT_EQ(why(), "BufferSize");
    st.buffer_size = 0x10000000;
    st.buffer_base = 0x100000000ull;
    EXPECT_EQ(why(), "BufferSize");
}

TEST_F(StateCheck, LwpCfgReservedAndUnsupportedBits)
{
    env.lwp_cfg |= 1ull << 48;
    EXPECT_EQ(why(), "LWP_CFG reserved bits 63:48");
    env.lwp_cfg = LWP_FEAT_DME;
    EXPECT_EQ(why(), "LWP_CFG enables features the destination CPU does not support");
}

TEST_F(StateCheck, AddressesMustBeCanonicalAndBelow4GOutsideLongMode)
{
    st.cbaddr = 0x0000800000000000ull;
    EXPECT_EQ(why(), "LWPCB address range");
    st.cbaddr = 0x10000;
    st.buffer_base = 0x00007FFFFFFFFF00ull;   // runs over the canonical hole
    EXPECT_EQ(why(), "ring buffer address range");
    st.buffer_base = 0xFFFFFE00;              // ends above 4 GiB
    env.long_mode = false;
    EXPECT_EQ(why(), "ring buffer address range");
    env.long_mode = true;
    EXPECT_EQ(why(), "");
}

TEST_F(StateCheck, FlagsFiltersThresholdCountersPending)
{
    st.flags |= LWP_FEAT_DME;
    EXPECT_EQ(why(), "Flags (events or INT the destination CPU does not support)");
    st.flags &= ~LWP_FEAT_DME;
    st.filters = 1u << 13;
    EXPECT_EQ(why(), "Filters reserved bits 24:13");
    st.filters = 0;
    st.threshold = 16;
    EXPECT_EQ(why(), "Threshold/Random");
    st.threshold = 0;
    st.counter[2] = 1 << 25;
    EXPECT_EQ(why(), "event counters");
    st.counter[2] = -(1 << 25);
    EXPECT_EQ(why(), "");
    st.pending[0] = LWP_EVENT_BRE;           // BRE is not enabled
    EXPECT_EQ(why(), "SavedEventRecord");
    st.pending[0] = LWP_EVENT_INS;
    EXPECT_EQ(why(), "");
}

TEST_F(StateCheck, NoLwpOnTheDestination)
{
    caps.features = 0;
    EXPECT_EQ(why(), "the destination CPU has no LWP (enable 'lwp')");
}

} // namespace
