// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of XSAVE/XRSTOR of LWP state, component 62 (AMD pub. 43724
// rev 3.08, section 7): the area's layout byte by byte, XRSTOR's rules and
// its address checks at CPL != 0 (docs/lwp-xrstor-checks.rst).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

using Area = std::array<uint8_t, LWP_XSAVE_SIZE>;

void put32(Area &a, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        a[at + i] = static_cast<uint8_t>(v >> (8 * i));
    }
}

void put64(Area &a, size_t at, uint64_t v)
{
    put32(a, at, static_cast<uint32_t>(v));
    put32(a, at + 4, static_cast<uint32_t>(v >> 32));
}

class Xsave : public LwpTest {
protected:
    // A state as LLWPCB and a few events leave it.
    LwpState running_state()
    {
        LwpState s = zero_state();
        s.cbaddr = 0x00007F0012345000ull;
        s.buffer_base = 0x00007F0012400000ull;
        s.buffer_size = 0x0ABCDE0;
        s.head = 0x1E0;
        s.flags = 0x80000006;
        s.filters = 0x8E001F0A;
        s.counter[1] = 0x123;
        s.counter[2] = -5;
        s.counter[3] = 0x777;       // BRE not enabled: not saved
        for (unsigned i = 0; i < LWP_RECORD_SIZE; i++) {
            s.pending[i] = static_cast<uint8_t>(0xC0 + i);
        }
        s.pending[0] = LWP_EVENT_IRE;
        s.cache_valid = 1;
        s.random = 3;
        s.interval[1] = 10;
        s.interval[2] = 0x1000;
        s.threshold = 0x100;
        s.tail = 0x40;
        s.base_ip = 1;
        s.limit_ip = 2;
        s.rng = 0xFEED;
        return s;
    }

    // The valid area the family 15h LWPCB at kCb would produce.
    Area valid_area()
    {
        Area a{};
        put64(a, 0, kCb);
        put32(a, 8, 0x0000000E);
        put32(a, 12, 0x40);
        put64(a, 16, kRing);
        put32(a, 24, kRingSize);
        put32(a, 28, 0x12);
        put32(a, 64, 5);
        put32(a, 68, 6);
        put32(a, 72, 7);
        return a;
    }

    void xrstor(const Area &a, bool present = true)
    {
        lwp_xrstor(&st, &env, a.data(), present);
    }
};

TEST_F(Xsave, DisabledSavesNothing)
{
    Area a;
    a.fill(0xAA);
    st.rng = 3;
    st.counter[1] = 9;
    EXPECT_FALSE(lwp_xsave(&st, a.data()));
    for (uint8_t b : a) {
        EXPECT_EQ(b, 0xAA);
    }
}

TEST_F(Xsave, LayoutByteByByte)
{
    st = running_state();
    Area a;
    a.fill(0xAA);
    ASSERT_TRUE(lwp_xsave(&st, a.data()));
    const std::vector<uint8_t> expected = {
        // 0: LWPCBAddress
        0x00, 0x50, 0x34, 0x12, 0x00, 0x7F, 0x00, 0x00,
        // 8: Flags (events only, no INT), 12: BufferHeadOffset
        0x06, 0x00, 0x00, 0x00, 0xE0, 0x01, 0x00, 0x00,
        // 16: BufferBase
        0x00, 0x00, 0x40, 0x12, 0x00, 0x7F, 0x00, 0x00,
        // 24: BufferSize, 28: Filters
        0xE0, 0xCD, 0xAB, 0x00, 0x0A, 0x1F, 0x00, 0x8E,
        // 32: SavedEventRecord
        0x02, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7,
        0xC8, 0xC9, 0xCA, 0xCB, 0xCC, 0xCD, 0xCE, 0xCF,
        0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7,
        0xD8, 0xD9, 0xDA, 0xDB, 0xDC, 0xDD, 0xDE, 0xDF,
        // 64: EventCounter1, 68: EventCounter2 (-5 as 26 bits)
        0x23, 0x01, 0x00, 0x00, 0xFB, 0xFF, 0xFF, 0x03,
        // 72..87: EventCounter3..6, not enabled
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // 88..127: reserved
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    };
    ASSERT_EQ(expected.size(), static_cast<size_t>(LWP_XSAVE_SIZE));
    EXPECT_EQ(std::vector<uint8_t>(a.begin(), a.end()), expected);
}

TEST_F(Xsave, SaveDoesNotChangeTheState)
{
    st = running_state();
    const LwpState before = st;
    Area a;
    lwp_xsave(&st, a.data());
    EXPECT_TRUE(states_equal(st, before));
}

TEST_F(Xsave, ProcessorSuppliedValuesDisable)
{
    st = running_state();
    Area a = valid_area();
    xrstor(a, false);
    EXPECT_TRUE(is_reset(st));
}

TEST_F(Xsave, ZeroLwpcbAddressDisables)
{
    st = running_state();
    Area a = valid_area();
    put64(a, 0, 0);
    xrstor(a);
    EXPECT_EQ(st.cbaddr, 0u);
    EXPECT_TRUE(is_reset(st));
}

TEST_F(Xsave, RestoresTheVolatileState)
{
    st.rng = 0x77;
    Area a = valid_area();
    xrstor(a);
    EXPECT_EQ(st.cbaddr, kCb);
    EXPECT_EQ(st.buffer_base, kRing);
    EXPECT_EQ(st.buffer_size, kRingSize);
    EXPECT_EQ(st.head, 0x40u);
    EXPECT_EQ(st.flags, 0x0000000Eu);
    EXPECT_EQ(st.filters, 0x12u);
    EXPECT_EQ(st.counter[1], 5);
    EXPECT_EQ(st.counter[2], 6);
    EXPECT_EQ(st.counter[3], 7);
    EXPECT_EQ(st.cache_valid, 0);
    EXPECT_EQ(st.pending[0], 0);
    EXPECT_EQ(st.rng, 0x77u);
}

struct SizeHeadCase {
    uint32_t size_field;   // bytes 24-27
    uint32_t head;
    uint32_t size;         // 0: LWP disabled
    uint32_t used_head;
};

class XrstorSizeHead : public Xsave,
                       public ::testing::WithParamInterface<SizeHeadCase> {};

TEST_P(XrstorSizeHead, RoundingMinimumAndHeadRange)
{
    const SizeHeadCase c = GetParam();
    Area a = valid_area();
    put32(a, 24, c.size_field);
    put32(a, 12, c.head);
    xrstor(a);
    if (!c.size) {
        EXPECT_TRUE(is_reset(st));
        return;
    }
    EXPECT_EQ(st.buffer_size, c.size);
    EXPECT_EQ(st.head, c.used_head);
}

INSTANTIATE_TEST_SUITE_P(
    Table, XrstorSizeHead,
    ::testing::Values(
        SizeHeadCase{1024, 0, 1024, 0},
        SizeHeadCase{1055, 0, 1024, 0},
        SizeHeadCase{1023, 0, 0, 0},
        SizeHeadCase{0, 0, 0, 0},
        // Bits 31:28 are reserved, not part of the size.
        SizeHeadCase{0xF0000400, 0, 1024, 0},
        SizeHeadCase{0x0FFFFFFF, 0x40, 0x0FFFFFE0, 0x40},
        SizeHeadCase{1024, 992, 1024, 992},
        SizeHeadCase{1024, 993, 1024, 0},
        SizeHeadCase{1024, 1000, 1024, 0},
        SizeHeadCase{1024, 1024, 1024, 0},
        SizeHeadCase{1024, 40, 1024, 32},
        SizeHeadCase{1055, 1000, 1024, 0}));

TEST_F(Xsave, NoMinimumStillNeedsOneRecord)
{
    caps.min_buffer_size = 0;
    Area a = valid_area();
    put32(a, 24, 31);
    xrstor(a);
    EXPECT_TRUE(is_reset(st));
    put32(a, 24, 32);
    put32(a, 12, 0);
    xrstor(a);
    EXPECT_EQ(st.buffer_size, 32u);
}

struct FlagsCase {
    const char *name;
    uint32_t area_flags;
    uint32_t cfg;
    uint32_t enabled;
};

class XrstorFlags : public Xsave, public ::testing::WithParamInterface<FlagsCase> {};

TEST_P(XrstorFlags, AreMaskedByAvailability)
{
    const FlagsCase c = GetParam();
    env.lwp_cfg = c.cfg;
    Area a = valid_area();
    put32(a, 8, c.area_flags);
    xrstor(a);
    EXPECT_EQ(st.flags, c.enabled);
    // Counters only for the events that are enabled.
    for (unsigned id = 1; id <= 3; id++) {
        EXPECT_EQ(st.counter[id], (c.enabled & (1u << id)) ? int32_t(4 + id) : 0);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, XrstorFlags,
    ::testing::Values(
        FlagsCase{"All", 0xFFFFFFFF, 0x8000000F, 0x0000000E},
        FlagsCase{"OnlyValAvailable", 0x0000000E, 0x00000003, 0x00000002},
        FlagsCase{"NoneAvailable", 0x0000000E, 0x80000001, 0},
        FlagsCase{"UnsupportedEvent", 0x00000070, 0x8000007F, 0},
        FlagsCase{"IntIsNotRestoredFromTheArea", 0x80000004, 0x8000000F, 0x00000004}),
    [](const ::testing::TestParamInfo<FlagsCase> &i) { return std::string(i.param.name); });

TEST_F(Xsave, CountersAreTwentySixBitSigned)
{
    Area a = valid_area();
    put32(a, 64, 0x03FFFFFF);
    put32(a, 68, 0x02000000);
    put32(a, 72, 0xFC000010);      // bits 31:26 are not part of the value
    xrstor(a);
    EXPECT_EQ(st.counter[1], -1);
    EXPECT_EQ(st.counter[2], -0x2000000);
    EXPECT_EQ(st.counter[3], 0x10);
}

TEST_F(Xsave, PendingRecordOnlyWithAnEventId)
{
    Area a = valid_area();
    for (unsigned i = 32; i < 64; i++) {
        a[i] = static_cast<uint8_t>(i);
    }
    a[32] = 0;
    xrstor(a);
    for (uint8_t b : st.pending) {
        EXPECT_EQ(b, 0);
    }
    a[32] = LWP_EVENT_INS;
    xrstor(a);
    EXPECT_EQ(std::vector<uint8_t>(st.pending, st.pending + 32),
              std::vector<uint8_t>(a.begin() + 32, a.begin() + 64));
}

TEST_F(Xsave, RoundTripThroughTheArea)
{
    cb.flags = 0x80000006;
    cb.interval[1] = 4;
    cb.counter[1] = 2;
    cb.counter[2] = 0x500;
    start();
    lwpval();
    lwpins();
    st.pending[0] = LWP_EVENT_INS;
    st.pending[4] = 0x99;
    const LwpState saved = st;
    Area a;
    ASSERT_TRUE(lwp_xsave(&st, a.data()));

    lwp_state_reset(&st);
    st.rng = saved.rng;
    xrstor(a);
    EXPECT_EQ(st.cbaddr, saved.cbaddr);
    EXPECT_EQ(st.buffer_base, saved.buffer_base);
    EXPECT_EQ(st.buffer_size, saved.buffer_size);
    EXPECT_EQ(st.head, saved.head);
    EXPECT_EQ(st.flags, saved.flags & 0x7E);
    EXPECT_EQ(st.counter[1], saved.counter[1]);
    EXPECT_EQ(st.counter[2], saved.counter[2]);
    EXPECT_EQ(std::vector<uint8_t>(st.pending, st.pending + 32),
              std::vector<uint8_t>(saved.pending, saved.pending + 32));

    // The first operation that stores re-reads the LWPCB and flushes the
    // pending record: SLWPCB.
    LwpOutcome out = slwpcb();
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(st.cache_valid, 1);
    EXPECT_EQ(st.flags, saved.flags);
    EXPECT_EQ(st.interval[1], 4u);
    EXPECT_EQ(st.pending[0], 0);
    EXPECT_EQ(mem.peek32(kRing + 32), LWP_EVENT_INS);
    EXPECT_EQ(mem.peek32(kRing + 32 + 4), 0x99u);
    EXPECT_EQ(mem.peek32(kCb + 16), 64u);
}

TEST_F(Xsave, XrstorOverwritesARunningSessionWithoutSavingIt)
{
    start();
    lwpins();
    Area a = valid_area();
    put64(a, 0, 0x30000);
    xrstor(a);
    EXPECT_EQ(st.cbaddr, 0x30000u);
    EXPECT_EQ(mem.peek32(kCb + 16), 0u);
}

// CPL != 0: the restored addresses must be reachable through DS (or be
// canonical in 64-bit mode); failures disable LWP without a fault.
struct CheckCase {
    const char *name;
    bool mode64;
    uint8_t cpl;
    uint64_t ds_base;
    uint32_t ds_limit;
    bool expand_down, big, writable, usable;
    uint64_t cbaddr, ring;     // linear; LWPCB 152 bytes, ring 1024
    bool enabled;
};

class XrstorChecks : public Xsave, public ::testing::WithParamInterface<CheckCase> {};

TEST_P(XrstorChecks, DisableOnFailure)
{
    const CheckCase c = GetParam();
    env = c.mode64 ? env64(&caps) : env32(&caps, c.ds_base, c.ds_limit);
    env.cpl = c.cpl;
    if (!c.mode64) {
        env.ds_expand_down = c.expand_down;
        env.ds_big = c.big;
        env.ds_writable = c.writable;
        env.ds_usable = c.usable;
    }
    Area a = valid_area();
    put64(a, 0, c.cbaddr);
    put64(a, 16, c.ring);
    xrstor(a);
    EXPECT_EQ(st.cbaddr != 0, c.enabled);
    if (!c.enabled) {
        EXPECT_TRUE(is_reset(st));
    }
}

constexpr uint64_t kHole = 0x0000800000000000ull;

INSTANTIATE_TEST_SUITE_P(
    Table, XrstorChecks,
    ::testing::Values(
        CheckCase{"Canonical64", true, 3, 0, 0, false, false, false, false, 0x10000, 0x20000, true},
        CheckCase{"HigherHalf64", true, 3, 0, 0, false, false, false, false,
                  0xFFFF800000000000ull, 0xFFFF800000001000ull, true},
        CheckCase{"LwpcbNotCanonical64", true, 3, 0, 0, false, false, false, false, kHole, 0x20000, false},
        CheckCase{"LwpcbCrossesHole64", true, 3, 0, 0, false, false, false, false, kHole - 0x40, 0x20000, false},
        CheckCase{"RingNotCanonical64", true, 3, 0, 0, false, false, false, false, 0x10000, kHole + 0x1000, false},
        CheckCase{"RingCrossesHole64", true, 3, 0, 0, false, false, false, false, 0x10000, kHole - 0x200, false},
        CheckCase{"Cpl0TrustsTheKernel64", true, 0, 0, 0, false, false, false, false, kHole, kHole, true},
        CheckCase{"Cpl1Checks64", true, 1, 0, 0, false, false, false, false, kHole, 0x20000, false},
        CheckCase{"Flat32", false, 3, 0, 0xFFFFFFFF, false, true, true, true, 0x10000, 0x20000, true},
        CheckCase{"BaseSubtracted32", false, 3, 0x8000, 0x183FF, false, true, true, true, 0x10000, 0x20000, true},
        CheckCase{"RingPastLimit32", false, 3, 0x8000, 0x183FE, false, true, true, true, 0x10000, 0x20000, false},
        CheckCase{"LwpcbPastLimit32", false, 3, 0, 0x10096, false, true, true, true, 0x10000, 0x8000, false},
        CheckCase{"LwpcbEndsAtLimit32", false, 3, 0, 0x10097, false, true, true, true, 0x10000, 0x8000, true},
        // Below the base: the effective address wraps to near 4 GiB.
        CheckCase{"BelowTheBase32", false, 3, 0x18000, 0xFFFFF, false, true, true, true, 0x10000, 0x20000, false},
        CheckCase{"BelowTheBaseExpandDown32", false, 3, 0x18000, 0xFFFFF, true, true, true, true,
                  0x10000, 0x118000, true},
        CheckCase{"NullDs32", false, 3, 0, 0xFFFFFFFF, false, true, true, false, 0x10000, 0x20000, false},
        CheckCase{"ReadOnlyDs32", false, 3, 0, 0xFFFFFFFF, false, true, false, true, 0x10000, 0x20000, false},
        CheckCase{"ExpandDownSmall32", false, 3, 0, 0x0FFF, true, false, true, true, 0x2000, 0xF000, true},
        CheckCase{"ExpandDownSmallPast64K32", false, 3, 0, 0x0FFF, true, false, true, true, 0x2000, 0xFE00, false},
        CheckCase{"ExpandDownAtLimit32", false, 3, 0, 0x2000, true, true, true, true, 0x2000, 0x20000, false},
        CheckCase{"Above4GiB32", false, 3, 0, 0xFFFFFFFF, false, true, true, true, 0x100010000ull, 0x20000, false},
        CheckCase{"Cpl0TrustsTheKernel32", false, 0, 0, 0, false, true, false, false, 0x10000, 0x20000, true}),
    [](const ::testing::TestParamInfo<CheckCase> &i) { return std::string(i.param.name); });

TEST_F(Xsave, DsChangedSinceLlwpcbMakesXrstorDisable)
{
    env = env32(&caps, 0, 0xFFFFFFFF);
    start();
    Area a;
    ASSERT_TRUE(lwp_xsave(&st, a.data()));
    env.ds_limit = 0xFFFF;         // the LWPCB at 0x10000 is now out of reach
    xrstor(a);
    EXPECT_EQ(st.cbaddr, 0u);
    env.cpl = 0;                   // the kernel is not subject to DS
    xrstor(a);
    EXPECT_EQ(st.cbaddr, kCb);
}

} // namespace
