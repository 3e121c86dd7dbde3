// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the LWP capability model: CPUID Fn8000_001C packing, the
// guest-visible leaf and the consistency rules behind the CPU properties.

#include <gtest/gtest.h>

#include <string>

#include "lwp/lwp-caps.h"

namespace {

LwpCaps family15h()
{
    LwpCaps caps;
    lwp_caps_family15h(&caps);
    return caps;
}

TEST(LwpCaps, Family15hMatchesRealSilicon)
{
    // FX-81xx (family 15h model 01h) dump: EBX=80032013 ECX=00010200 EDX=8000000F.
    LwpCaps caps = family15h();
    LwpCpuidRegs r;
    lwp_caps_to_cpuid(&caps, &r);
    EXPECT_EQ(r.eax, 0u);
    EXPECT_EQ(r.ebx, 0x80032013u);
    EXPECT_EQ(r.ecx, 0x00010200u);
    EXPECT_EQ(r.edx, 0x8000000Fu);
}

TEST(LwpCaps, CpuidRoundTripsEveryField)
{
    const LwpCpuidRegs in = {0, 0x80082A1Fu, 0xF0FF7FEBu, 0x8000007Fu};
    LwpCaps caps;
    lwp_caps_from_cpuid(&in, &caps);
    EXPECT_EQ(caps.cb_size, 0x1F);
    EXPECT_EQ(caps.event_size, 0x2A);
    EXPECT_EQ(caps.max_events, 0x08);
    EXPECT_EQ(caps.event_offset, 0x80);
    EXPECT_EQ(caps.latency_max, 0x0B);
    EXPECT_TRUE(caps.data_address);
    EXPECT_EQ(caps.latency_rnd, 7);
    EXPECT_EQ(caps.version, 0x3F);
    EXPECT_EQ(caps.min_buffer_size, 0xFF);
    EXPECT_TRUE(caps.branch_prediction);
    EXPECT_TRUE(caps.ip_filtering);
    EXPECT_TRUE(caps.cache_levels);
    EXPECT_TRUE(caps.cache_latency);
    LwpCpuidRegs out;
    lwp_caps_to_cpuid(&caps, &out);
    EXPECT_EQ(out.ebx, in.ebx);
    // Reserved ECX bits 27:24 are not representable and come back zero.
    EXPECT_EQ(out.ecx, in.ecx & ~0x0F000000u);
    EXPECT_EQ(out.edx, in.edx);
}

struct LeafCase {
    uint64_t lwp_cfg;
    bool xcr0_lwp;
    uint32_t eax;
};

class LwpCpuidLeaf : public ::testing::TestWithParam<LeafCase> {};

TEST_P(LwpCpuidLeaf, EaxIsCfgAndEdxPlusXcr0Bit62)
{
    const LeafCase c = GetParam();
    LwpCaps caps = family15h();
    LwpCpuidRegs r;
    lwp_cpuid_leaf(&caps, c.lwp_cfg, c.xcr0_lwp, &r);
    EXPECT_EQ(r.eax, c.eax);
    EXPECT_EQ(r.ebx, 0x80032013u);
    EXPECT_EQ(r.ecx, 0x00010200u);
    EXPECT_EQ(r.edx, 0x8000000Fu);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LwpCpuidLeaf,
    ::testing::Values(
        LeafCase{0, false, 0},
        LeafCase{0, true, 1},
        // LWP_CFG bit 0 is not an "available" bit: EAX[0] is XCR0[62] only.
        LeafCase{1, false, 0},
        LeafCase{0x8000000F, false, 0x8000000E},
        LeafCase{0x8000000F, true, 0x8000000F},
        // COREID and VECTOR (bits 47:32) never reach EAX.
        LeafCase{0x0000FFFF8000000Aull, true, 0x8000000B},
        // Bits the CPU does not support are masked by EDX.
        LeafCase{0x00000070, true, 1}));

TEST(LwpCpuidLeaf, UnsupportedLwpReadsAsZero)
{
    LwpCaps caps = family15h();
    caps.features = 0;
    LwpCpuidRegs r;
    lwp_cpuid_leaf(&caps, 0x8000000F, true, &r);
    EXPECT_EQ(r.eax | r.ebx | r.ecx | r.edx, 0u);
}

TEST(LwpCapsCheck, Family15hIsConsistent)
{
    LwpCaps caps = family15h();
    const char *field = "x", *why = "x";
    EXPECT_TRUE(lwp_caps_check(&caps, &field, &why));
    EXPECT_EQ(field, nullptr);
    EXPECT_EQ(why, nullptr);
}

TEST(LwpCapsCheck, NoLwpAtAllIsConsistent)
{
    LwpCaps caps{};
    EXPECT_TRUE(lwp_caps_check(&caps, nullptr, nullptr));
}

struct BadCaps {
    const char *name;
    void (*mutate)(LwpCaps &);
    const char *field;
};

class LwpCapsCheckRejects : public ::testing::TestWithParam<BadCaps> {};

TEST_P(LwpCapsCheckRejects, NamesTheProperty)
{
    LwpCaps caps = family15h();
    GetParam().mutate(caps);
    const char *field = nullptr, *why = nullptr;
    EXPECT_FALSE(lwp_caps_check(&caps, &field, &why));
    ASSERT_NE(field, nullptr);
    EXPECT_EQ(std::string(field), GetParam().field);
    EXPECT_NE(why, nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LwpCapsCheckRejects,
    ::testing::Values(
        BadCaps{"FeaturesWithoutAvail", [](LwpCaps &c) { c.features = LWP_FEAT_VAL; }, "lwp"},
        BadCaps{"ReservedFeature", [](LwpCaps &c) { c.features |= 1u << 7; }, "lwp"},
        BadCaps{"VersionZero", [](LwpCaps &c) { c.version = 0; }, "lwp-version"},
        BadCaps{"VersionTooBig", [](LwpCaps &c) { c.version = 128; }, "lwp-version"},
        BadCaps{"EventSize", [](LwpCaps &c) { c.event_size = 16; }, "lwp-event-size"},
        BadCaps{"EventOffsetUnaligned", [](LwpCaps &c) { c.event_offset = 0x84; }, "lwp-event-offset"},
        BadCaps{"EventOffsetInsideFixedPart", [](LwpCaps &c) { c.event_offset = 80; }, "lwp-event-offset"},
        BadCaps{"MaxEventsBelowSupported", [](LwpCaps &c) { c.max_events = 2; }, "lwp-max-events"},
        BadCaps{"MaxEventsAboveDefined", [](LwpCaps &c) { c.max_events = 7; c.cb_size = 0x20; }, "lwp-max-events"},
        BadCaps{"CbSizeTooSmall", [](LwpCaps &c) { c.cb_size = 0x12; }, "lwp-cb-size"},
        BadCaps{"LatencyWithoutDme", [](LwpCaps &c) { c.latency_max = 12; }, "lwpdme"},
        BadCaps{"DataAddressWithoutDme", [](LwpCaps &c) { c.data_address = true; }, "lwpdme"},
        BadCaps{"DmeLatencyTooSmall", [](LwpCaps &c) {
            c.features |= LWP_FEAT_DME; c.max_events = 4; c.cb_size = 0x14;
            c.latency_max = 9; c.cache_latency = true; }, "lwp-latency-max"},
        BadCaps{"DmeLatencyRnd", [](LwpCaps &c) {
            c.features |= LWP_FEAT_DME; c.max_events = 4; c.cb_size = 0x14;
            c.latency_max = 12; c.latency_rnd = 5; c.cache_latency = true; }, "lwp-latency-rnd"},
        BadCaps{"DmeWithoutFilter", [](LwpCaps &c) {
            c.features |= LWP_FEAT_DME; c.max_events = 4; c.cb_size = 0x14;
            c.latency_max = 12; }, "lwpdme"},
        BadCaps{"BranchPredictionWithoutBre", [](LwpCaps &c) {
            c.features &= ~LWP_FEAT_BRE; c.branch_prediction = true; }, "lwpbrpred"}),
    [](const ::testing::TestParamInfo<BadCaps> &info) { return std::string(info.param.name); });

} // namespace
