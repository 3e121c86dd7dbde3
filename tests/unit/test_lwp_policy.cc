// SPDX-License-Identifier: GPL-2.0-or-later
// LWP capability policy: least common denominator of host pools and the
// migration coverage check, table-driven.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lwp/lwp-policy.h"

namespace {

LwpCaps zambezi()
{
    LwpCaps c;
    lwp_caps_family15h(&c);
    return c;
}

// A richer (hypothetical) implementation: every event, IP filtering, a
// simulated cache with latency and levels.
LwpCaps rich()
{
    LwpCaps c = zambezi();
    c.features |= LWP_FEAT_DME | LWP_FEAT_CNH | LWP_FEAT_RNH;
    c.max_events = 6;
    c.cb_size = 0x16;
    c.version = 2;
    c.min_buffer_size = 0;
    c.ip_filtering = true;
    c.branch_prediction = true;
    c.latency_max = 16;
    c.latency_rnd = 2;
    c.data_address = true;
    c.cache_levels = true;
    c.cache_latency = true;
    return c;
}

LwpCaps none()
{
    return LwpCaps{};
}

TEST(LwpBaseline, SingleHostIsItself)
{
    LwpCaps h = zambezi(), out;
    ASSERT_TRUE(lwp_caps_baseline(&h, 1, &out, nullptr));
    LwpCpuidRegs a, b;
    lwp_caps_to_cpuid(&h, &a);
    lwp_caps_to_cpuid(&out, &b);
    EXPECT_EQ(a.ebx, b.ebx);
    EXPECT_EQ(a.ecx, b.ecx);
    EXPECT_EQ(a.edx, b.edx);
}

TEST(LwpBaseline, FieldRules)
{
    LwpCaps pool[2] = {zambezi(), rich()}, out;
    ASSERT_TRUE(lwp_caps_baseline(pool, 2, &out, nullptr));
    EXPECT_EQ(out.features, zambezi().features);        // AND
    EXPECT_EQ(out.max_events, 3);                        // min
    EXPECT_EQ(out.version, 1);                           // min
    EXPECT_EQ(out.cb_size, 0x16);                        // max
    EXPECT_EQ(out.min_buffer_size, 1);                   // max
    EXPECT_FALSE(out.ip_filtering);                      // AND
    EXPECT_EQ(out.latency_max, 0);                       // DME gone: cleared
    EXPECT_EQ(out.latency_rnd, 0);
    EXPECT_FALSE(out.cache_levels || out.cache_latency || out.data_address);
    EXPECT_FALSE(out.branch_prediction);                 // AND with Zambezi's 0
    EXPECT_TRUE(lwp_caps_check(&out, nullptr, nullptr)); // still implementable
}

TEST(LwpBaseline, OrderDoesNotMatter)
{
    LwpCaps ab[2] = {zambezi(), rich()}, ba[2] = {rich(), zambezi()}, x, y;
    ASSERT_TRUE(lwp_caps_baseline(ab, 2, &x, nullptr));
    ASSERT_TRUE(lwp_caps_baseline(ba, 2, &y, nullptr));
    LwpCpuidRegs rx, ry;
    lwp_caps_to_cpuid(&x, &rx);
    lwp_caps_to_cpuid(&y, &ry);
    EXPECT_EQ(rx.ebx, ry.ebx);
    EXPECT_EQ(rx.ecx, ry.ecx);
    EXPECT_EQ(rx.edx, ry.edx);
}

TEST(LwpBaseline, RichPoolKeepsSharedExtras)
{
    LwpCaps r2 = rich();
    r2.latency_max = 12;
    r2.latency_rnd = 4;
    r2.cache_levels = false;
    LwpCaps pool[2] = {rich(), r2}, out;
    ASSERT_TRUE(lwp_caps_baseline(pool, 2, &out, nullptr));
    EXPECT_TRUE(out.features & LWP_FEAT_DME);
    EXPECT_EQ(out.latency_max, 12);
    EXPECT_EQ(out.latency_rnd, 4);
    EXPECT_TRUE(out.cache_latency);
    EXPECT_FALSE(out.cache_levels);
    EXPECT_TRUE(out.ip_filtering);
    EXPECT_TRUE(lwp_caps_check(&out, nullptr, nullptr));
}

TEST(LwpBaseline, HostWithoutLwpRemovesLwp)
{
    LwpCaps pool[3] = {zambezi(), none(), rich()}, out;
    ASSERT_TRUE(lwp_caps_baseline(pool, 3, &out, nullptr));
    EXPECT_EQ(out.features, 0u);
    EXPECT_EQ(out.cb_size, 0);
}

struct Incompatible {
    const char *name;
    void (*mutate)(LwpCaps &);
    const char *field;
};

class LwpBaselineIncompatible : public ::testing::TestWithParam<Incompatible> {};

TEST_P(LwpBaselineIncompatible, NamesFieldAndHosts)
{
    LwpCaps odd = zambezi();
    GetParam().mutate(odd);
    LwpCaps pool[3] = {zambezi(), zambezi(), odd}, out;
    LwpPolicyConflict c{};
    EXPECT_FALSE(lwp_caps_baseline(pool, 3, &out, &c));
    EXPECT_EQ(std::string(c.field), GetParam().field);
    EXPECT_EQ(c.host_a, 0u);
    EXPECT_EQ(c.host_b, 2u);
    EXPECT_EQ(out.features, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LwpBaselineIncompatible,
    ::testing::Values(
        Incompatible{"EventSize", [](LwpCaps &c) { c.event_size = 64; }, "lwp-event-size"},
        Incompatible{"EventOffset", [](LwpCaps &c) { c.event_offset = 0x60; c.cb_size = 0xf; },
                     "lwp-event-offset"}),
    [](const ::testing::TestParamInfo<Incompatible> &info) { return std::string(info.param.name); });

TEST(LwpCovers, SameCapsAndBaselineCovered)
{
    LwpCaps z = zambezi(), r = rich(), base;
    const char *missing = "x";
    EXPECT_TRUE(lwp_caps_covers(&z, &z, &missing));
    EXPECT_EQ(missing, nullptr);
    LwpCaps pool[2] = {z, r};
    ASSERT_TRUE(lwp_caps_baseline(pool, 2, &base, nullptr));
    // Every host of the pool can carry a guest configured with the baseline.
    EXPECT_TRUE(lwp_caps_covers(&z, &base, nullptr));
    EXPECT_TRUE(lwp_caps_covers(&r, &base, nullptr));
}

TEST(LwpCovers, GuestWithoutLwpFitsAnywhere)
{
    LwpCaps g = none(), d = none(), z = zambezi();
    EXPECT_TRUE(lwp_caps_covers(&d, &g, nullptr));
    EXPECT_TRUE(lwp_caps_covers(&z, &g, nullptr));
}

struct Uncovered {
    const char *name;
    void (*mutate_dest)(LwpCaps &);
    const char *missing;
};

class LwpCoversRefuses : public ::testing::TestWithParam<Uncovered> {};

TEST_P(LwpCoversRefuses, NamesTheMissingCapability)
{
    LwpCaps guest = rich(), dest = rich();
    GetParam().mutate_dest(dest);
    const char *missing = nullptr;
    EXPECT_FALSE(lwp_caps_covers(&dest, &guest, &missing));
    ASSERT_NE(missing, nullptr);
    EXPECT_EQ(std::string(missing), GetParam().missing);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LwpCoversRefuses,
    ::testing::Values(
        Uncovered{"NoLwp", [](LwpCaps &d) { d = LwpCaps{}; }, "lwp"},
        Uncovered{"NoVal", [](LwpCaps &d) { d.features &= ~LWP_FEAT_VAL; }, "lwpval"},
        Uncovered{"NoIre", [](LwpCaps &d) { d.features &= ~LWP_FEAT_IRE; }, "lwpire"},
        Uncovered{"NoInt", [](LwpCaps &d) { d.features &= ~LWP_FEAT_INT; }, "lwpint"},
        Uncovered{"NoIpf", [](LwpCaps &d) { d.ip_filtering = false; }, "lwpipf"},
        Uncovered{"NoDataAddress", [](LwpCaps &d) { d.data_address = false; }, "lwpdaddr"},
        Uncovered{"FewerEvents", [](LwpCaps &d) { d.max_events = 5; }, "lwp-max-events"},
        Uncovered{"OlderVersion", [](LwpCaps &d) { d.version = 1; }, "lwp-version"},
        Uncovered{"BiggerLwpcb", [](LwpCaps &d) { d.cb_size = 0x17; }, "lwp-cb-size"},
        Uncovered{"BiggerMinBuffer", [](LwpCaps &d) { d.min_buffer_size = 1; }, "lwp-min-buffer-size"},
        Uncovered{"EventSize", [](LwpCaps &d) { d.event_size = 64; }, "lwp-event-size"},
        Uncovered{"EventOffset", [](LwpCaps &d) { d.event_offset = 0x88; }, "lwp-event-offset"},
        Uncovered{"ShorterLatency", [](LwpCaps &d) { d.latency_max = 10; }, "lwp-latency-max"},
        Uncovered{"CoarserLatency", [](LwpCaps &d) { d.latency_rnd = 3; }, "lwp-latency-rnd"}),
    [](const ::testing::TestParamInfo<Uncovered> &info) { return std::string(info.param.name); });

} // namespace

namespace {

// The baseline of any consistent hosts is itself consistent (QEMU accepts
// it) and every host of the pool covers it.
TEST(LwpBaseline, AlwaysImplementableAndCoveredByEveryHost)
{
    LwpCaps levels = rich(), latency = rich();
    levels.cache_latency = false;
    latency.cache_levels = false;
    LwpCaps z = zambezi(), r = rich(), n = none();
    const std::vector<std::vector<LwpCaps>> pools = {
        {z}, {r}, {z, r}, {levels, latency}, {r, levels}, {z, n}, {latency, z, r},
    };
    for (const std::vector<LwpCaps> &pool : pools) {
        LwpCaps base;
        ASSERT_TRUE(lwp_caps_baseline(pool.data(), pool.size(), &base, nullptr));
        const char *field = nullptr, *why = nullptr;
        EXPECT_TRUE(lwp_caps_check(&base, &field, &why)) << (field ? field : "");
        for (const LwpCaps &host : pool) {
            EXPECT_TRUE(lwp_caps_covers(&host, &base, nullptr));
        }
    }
}

TEST(LwpBaseline, DmeWithoutACommonCacheFilterIsDropped)
{
    LwpCaps levels = rich(), latency = rich();
    levels.cache_latency = false;
    latency.cache_levels = false;
    LwpCaps pool[2] = {levels, latency}, out;
    ASSERT_TRUE(lwp_caps_baseline(pool, 2, &out, nullptr));
    EXPECT_FALSE(out.features & LWP_FEAT_DME);
    EXPECT_EQ(out.latency_max, 0);
    EXPECT_FALSE(out.data_address);
}

} // namespace
