// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of LLWPCB (AMD pub. 43724 rev 3.08, section 5.1 and 6): the
// validation of the LWPCB, what is cached and written back, address rules
// in and outside 64-bit mode, and faults without side effects.

#include <gtest/gtest.h>

#include <string>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

class Llwpcb : public LwpTest {};

TEST_F(Llwpcb, LoadsTheSessionAndCachesTheLwpcb)
{
    cb.flags = 0x8000000E;
    cb.random = 3;
    cb.head = 0x40;
    cb.threshold = 0x200;
    cb.filters = 0x8E001F0A;
    cb.base_ip = 0x400000;
    cb.limit_ip = 0x401000;
    cb.tail = 0x20;
    cb.interval[1] = 7;
    cb.interval[2] = 0x12345;
    cb.interval[3] = 0x100;
    cb.counter[1] = 3;
    cb.counter[2] = 0x200;
    cb.counter[3] = 0x1FFFFFF;
    st.rng = 0x1234;
    start();

    EXPECT_EQ(st.cbaddr, kCb);
    EXPECT_EQ(st.buffer_base, kRing);
    EXPECT_EQ(st.buffer_size, kRingSize);
    EXPECT_EQ(st.head, 0x40u);
    EXPECT_EQ(st.flags, 0x8000000Eu);
    EXPECT_EQ(st.filters, 0x8E001F0Au);
    EXPECT_EQ(st.random, 3);
    EXPECT_EQ(st.threshold, 0x200u);
    EXPECT_EQ(st.tail, 0x20u);
    EXPECT_EQ(st.base_ip, 0x400000u);
    EXPECT_EQ(st.limit_ip, 0x401000u);
    EXPECT_EQ(st.interval[1], 7u);
    EXPECT_EQ(st.interval[2], 0x12345u);
    EXPECT_EQ(st.interval[3], 0x100u);
    EXPECT_EQ(st.counter[1], 3);
    EXPECT_EQ(st.counter[2], 0x200);
    EXPECT_EQ(st.counter[3], 0x1FFFFFF);
    EXPECT_EQ(st.cache_valid, 1);
    EXPECT_EQ(st.rng, 0x1234u);
    for (uint8_t b : st.pending) {
        EXPECT_EQ(b, 0);
    }
}

TEST_F(Llwpcb, WritesBackOnlyFlagsWhenNothingElseChanges)
{
    place(kCb, cb);
    LwpOutcome out;
    lwp_llwpcb(&st, &env, mem.mem(), kCb, &out);
    ASSERT_EQ(out.status, LWP_OK);
    ASSERT_EQ(out.nwrites, 1u);
    EXPECT_EQ(out.writes[0].addr, kCb);
    EXPECT_EQ(out.writes[0].len, 4u);
    EXPECT_FALSE(out.interrupt);
}

TEST_F(Llwpcb, SoftwareBytesAreNeitherCheckedNorWritten)
{
    place(kCb, cb);
    std::vector<uint8_t> junk(16, 0xA5);
    mem.poke(kCb + 72, junk.data(), junk.size());
    LwpOutcome out = llwpcb(kCb);
    ASSERT_EQ(out.status, LWP_OK);
    for (uint32_t i = 0; i < out.nwrites; i++) {
        const uint64_t a = out.writes[i].addr, e = a + out.writes[i].len;
        EXPECT_TRUE(e <= kCb + 72 || a >= kCb + 88);
    }
    EXPECT_EQ(mem.bytes(kCb + 72, 16), junk);
}

// Flags &= LWP_CFG[31:0] & supported, events and INT only, written back.
struct FlagsCase {
    const char *name;
    uint32_t requested;
    uint32_t cfg;          // LWP_CFG[31:0]
    uint32_t enabled;
};

class LlwpcbFlags : public LwpTest,
                    public ::testing::WithParamInterface<FlagsCase> {};

TEST_P(LlwpcbFlags, AreMaskedByAvailabilityAndWrittenBack)
{
    const FlagsCase c = GetParam();
    env.lwp_cfg = c.cfg | static_cast<uint64_t>(kCoreId) << 32;
    cb.flags = c.requested;
    start();
    EXPECT_EQ(st.flags, c.enabled);
    EXPECT_EQ(mem.peek32(kCb), c.enabled);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LlwpcbFlags,
    ::testing::Values(
        FlagsCase{"Everything", 0xFFFFFFFF, 0x8000000F, 0x8000000E},
        FlagsCase{"ReservedBitsAreNotAFault", 0x7FFFFF81, 0x8000000F, 0},
        FlagsCase{"IntNotAvailable", 0x8000000E, 0x0000000F, 0x0000000E},
        FlagsCase{"OnlyValAvailable", 0x8000000E, 0x00000003, 0x00000002},
        FlagsCase{"NothingRequested", 0, 0x8000000F, 0},
        // DME is not supported by family 15h even if LWP_CFG had it.
        FlagsCase{"UnsupportedEvent", 0x00000010, 0x8000001F, 0},
        FlagsCase{"Bit0IsNotAnEvent", 0x00000001, 0x8000000F, 0}),
    [](const ::testing::TestParamInfo<FlagsCase> &i) { return std::string(i.param.name); });

// EventIntervaln: 26-bit signed; event 1 minimum 0, others LWP_MIN_HW_INTERVAL.
struct IntervalCase {
    const char *name;
    unsigned id;
    uint32_t raw;
    uint32_t used;
    bool written_back;
};

class LlwpcbInterval : public LwpTest,
                       public ::testing::WithParamInterface<IntervalCase> {};

TEST_P(LlwpcbInterval, IsRaisedToTheMinimumAndWrittenBack)
{
    const IntervalCase c = GetParam();
    caps = all_events();
    env = env64(&caps);
    cb.flags = 0x7E;
    for (unsigned id = 2; id <= 6; id++) {
        cb.interval[id] = 0x1000;
    }
    cb.interval[c.id] = c.raw;
    place(kCb, cb);
    LwpOutcome out;
    lwp_llwpcb(&st, &env, mem.mem(), kCb, &out);
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(st.interval[c.id], c.used);
    bool written = false;
    for (uint32_t i = 0; i < out.nwrites; i++) {
        written |= out.writes[i].addr == interval_at(kCb, c.id);
    }
    EXPECT_EQ(written, c.written_back);
    mem.apply(out);
    EXPECT_EQ(mem.peek32(interval_at(kCb, c.id)), c.written_back ? c.used : c.raw);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LlwpcbInterval,
    ::testing::Values(
        IntervalCase{"ValZero", 1, 0, 0, false},
        IntervalCase{"ValPositive", 1, 100, 100, false},
        IntervalCase{"ValMinusOne", 1, 0x03FFFFFF, 0, true},
        IntervalCase{"ValMostNegative", 1, 0x02000000, 0, true},
        IntervalCase{"ValLargest", 1, 0x01FFFFFF, 0x01FFFFFF, false},
        IntervalCase{"IreZero", 2, 0, 0xFF, true},
        IntervalCase{"IreBelowMinimum", 2, 0xFE, 0xFF, true},
        IntervalCase{"IreAtMinimum", 2, 0xFF, 0xFF, false},
        IntervalCase{"IreNegative", 2, 0x03FFFFFF, 0xFF, true},
        IntervalCase{"BreAboveMinimum", 3, 0x100, 0x100, false},
        IntervalCase{"DmeZero", 4, 0, 0xFF, true},
        IntervalCase{"CnhSmall", 5, 1, 0xFF, true},
        IntervalCase{"RnhLargest", 6, 0x01FFFFFF, 0x01FFFFFF, false}),
    [](const ::testing::TestParamInfo<IntervalCase> &i) { return std::string(i.param.name); });

TEST_F(Llwpcb, DisabledEventsKeepTheirIntervalUntouched)
{
    cb.flags = 0x00000002;
    cb.interval[2] = 0;      // below the minimum, but IRE is not enabled
    start();
    EXPECT_EQ(mem.peek32(interval_at(kCb, 2)), 0u);
    EXPECT_EQ(st.interval[2], 0u);
    EXPECT_EQ(st.counter[2], 0);
}

struct CounterCase {
    uint32_t raw;
    int32_t loaded;
};

class LlwpcbCounter : public LwpTest,
                      public ::testing::WithParamInterface<CounterCase> {};

TEST_P(LlwpcbCounter, IsSignedAndNegativeMeansZero)
{
    cb.flags = 0x0000000E;
    cb.counter[1] = GetParam().raw;
    cb.counter[3] = GetParam().raw;
    start();
    EXPECT_EQ(st.counter[1], GetParam().loaded);
    EXPECT_EQ(st.counter[3], GetParam().loaded);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LlwpcbCounter,
    ::testing::Values(CounterCase{0, 0}, CounterCase{5, 5},
                      CounterCase{0x01FFFFFF, 0x01FFFFFF},
                      CounterCase{0x03FFFFFF, 0}, CounterCase{0x02000000, 0}));

struct SizeCase {
    uint32_t raw;           // bits 27:0
    uint8_t min_buffer_size;
    uint32_t used;          // 0: #GP
};

class LlwpcbBufferSize : public LwpTest,
                         public ::testing::WithParamInterface<SizeCase> {};

TEST_P(LlwpcbBufferSize, IsRoundedDownAndHasAMinimum)
{
    const SizeCase c = GetParam();
    caps.min_buffer_size = c.min_buffer_size;
    cb.buffer_size = c.raw;
    place(kCb, cb);
    if (c.used) {
        ASSERT_EQ(llwpcb(kCb).status, LWP_OK);
        EXPECT_EQ(st.buffer_size, c.used);
        // BufferSize itself is the program's: never rewritten.
        EXPECT_EQ(mem.peek32(kCb + 4), c.raw);
    } else {
        expect_fault_without_effect([&] { return llwpcb(kCb); }, LWP_FAULT_GP);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, LlwpcbBufferSize,
    ::testing::Values(SizeCase{1024, 1, 1024}, SizeCase{1055, 1, 1024},
                      SizeCase{1056, 1, 1056}, SizeCase{1023, 1, 0},
                      SizeCase{992, 1, 0}, SizeCase{0, 1, 0},
                      SizeCase{2048, 2, 2048}, SizeCase{2047, 2, 0},
                      // Without a minimum, one record is still needed.
                      SizeCase{32, 0, 32}, SizeCase{63, 0, 32},
                      SizeCase{31, 0, 0}, SizeCase{0, 0, 0}));

TEST_F(Llwpcb, RandomIsByteSevenHighNibbleAndNotPartOfTheSize)
{
    cb.random = 0xF;
    start();
    EXPECT_EQ(st.random, 0xF);
    EXPECT_EQ(st.buffer_size, kRingSize);
}

struct HeadCase {
    uint32_t raw;
    uint32_t used;
};

class LlwpcbHead : public LwpTest, public ::testing::WithParamInterface<HeadCase> {};

TEST_P(LlwpcbHead, IsRoundedDownAndZeroWhenOutside)
{
    cb.head = GetParam().raw;
    start();
    EXPECT_EQ(st.head, GetParam().used);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LlwpcbHead,
    ::testing::Values(HeadCase{0, 0}, HeadCase{33, 32}, HeadCase{992, 992},
                      HeadCase{1023, 992}, HeadCase{1024, 0},
                      HeadCase{0x5000, 0}, HeadCase{0xFFFFFFFF, 0}));

TEST_F(Llwpcb, ThresholdIsRoundedDown)
{
    cb.threshold = 100;
    start();
    EXPECT_EQ(st.threshold, 96u);
}

// Every reason for #GP in a 64-bit LWPCB, as a mutation of a valid one.
struct GpCase {
    const char *name;
    void (*mutate)(std::vector<uint8_t> &img, const LwpCaps &caps);
};

void set_byte(std::vector<uint8_t> &img, size_t at, uint8_t v)
{
    img[at] |= v;
}

class LlwpcbGp : public LwpTest, public ::testing::WithParamInterface<GpCase> {};

TEST_P(LlwpcbGp, FaultsWithoutEffect)
{
    cb.flags = 0x8000000E;
    std::vector<uint8_t> img = cb.image(caps);
    GetParam().mutate(img, caps);
    mem.poke(kCb, img.data(), img.size());
    expect_fault_without_effect([&] { return llwpcb(kCb); }, LWP_FAULT_GP);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LlwpcbGp,
    ::testing::Values(
        GpCase{"Reserved20", [](auto &i, auto &) { set_byte(i, 20, 1); }},
        GpCase{"Reserved23", [](auto &i, auto &) { set_byte(i, 23, 0x80); }},
        GpCase{"Reserved56", [](auto &i, auto &) { set_byte(i, 56, 1); }},
        GpCase{"Reserved63", [](auto &i, auto &) { set_byte(i, 63, 0x80); }},
        GpCase{"Reserved68", [](auto &i, auto &) { set_byte(i, 68, 1); }},
        GpCase{"Reserved71", [](auto &i, auto &) { set_byte(i, 71, 0x80); }},
        GpCase{"ReservedAfterSoftware88", [](auto &i, auto &) { set_byte(i, 88, 1); }},
        GpCase{"ReservedBeforeEvents", [](auto &i, auto &c) {
            set_byte(i, c.event_offset - 1, 0x80); }},
        GpCase{"FiltersBit13", [](auto &i, auto &) { set_byte(i, 37, 0x20); }},
        GpCase{"FiltersBit24", [](auto &i, auto &) { set_byte(i, 39, 0x01); }},
        GpCase{"Interval1Bit26", [](auto &i, auto &c) { set_byte(i, c.event_offset + 3, 0x04); }},
        GpCase{"Interval2Bit31", [](auto &i, auto &c) { set_byte(i, c.event_offset + 11, 0x80); }},
        GpCase{"Counter1Bit26", [](auto &i, auto &c) { set_byte(i, c.event_offset + 7, 0x04); }},
        GpCase{"Counter2Bit31", [](auto &i, auto &c) { set_byte(i, c.event_offset + 15, 0x80); }},
        // Reserved bits count even for an event that is not being enabled.
        GpCase{"DisabledEventReserved", [](auto &i, auto &c) {
            i[0] = 0x02; set_byte(i, c.event_offset + 23, 0x10); }},
        GpCase{"BufferSizeZero", [](auto &i, auto &) {
            i[4] = i[5] = i[6] = 0; i[7] &= 0xF0; }},
        GpCase{"BufferSizeBelowMinimum", [](auto &i, auto &) {
            i[4] = 0xE0; i[5] = 0x03; }},
        GpCase{"BufferBaseNotCanonical", [](auto &i, auto &) { i[14] = 0x80; }},
        GpCase{"BufferEndNotCanonical", [](auto &i, auto &) {
            // Base 0x7FFFFFFFFE00: the ring runs past the canonical hole.
            i[8] = 0x00; i[9] = 0xFE; i[10] = i[11] = i[12] = 0xFF; i[13] = 0x7F;
            i[14] = i[15] = 0; }}),
    [](const ::testing::TestParamInfo<GpCase> &i) { return std::string(i.param.name); });

TEST_F(Llwpcb, NonCanonicalLwpcbIsGp)
{
    expect_fault_without_effect([&] { return llwpcb(0x0000800000000000ull); },
                                LWP_FAULT_GP);
    // Starts canonical, ends past the hole.
    expect_fault_without_effect(
        [&] { return llwpcb(0x00007FFFFFFFFFC0ull); }, LWP_FAULT_GP);
    EXPECT_EQ(mem.reads, 0u);
}

TEST_F(Llwpcb, HigherHalfAnd57BitAddressesWork)
{
    const uint64_t high_cb = 0xFFFF800000010000ull;
    const uint64_t high_ring = 0xFFFF800000020000ull;
    mem.map(high_cb, kPage);
    mem.map(high_ring, kPage);
    cb.buffer_base = high_ring;
    start(high_cb);
    EXPECT_EQ(st.buffer_base, high_ring);

    // Canonical with LA57 only.
    const uint64_t la57 = 0x0000800000000000ull;
    mem.map(la57, kPage);
    cb.buffer_base = kRing;
    place(la57, cb);
    EXPECT_EQ(llwpcb(la57).status, LWP_FAULT_GP);
    env.va_bits = 57;
    EXPECT_EQ(llwpcb(la57).status, LWP_OK);
    EXPECT_EQ(st.cbaddr, la57);
}

TEST_F(Llwpcb, SixtyFourBitModeIgnoresDs)
{
    // env64() has a null, zero-limit DS with a base: none of it matters.
    start();
    EXPECT_EQ(st.cbaddr, kCb);
    EXPECT_EQ(st.buffer_base, kRing);
}

// #PF: first inaccessible byte, reads before writes.
TEST_F(Llwpcb, UnreadableLwpcbIsReadFault)
{
    place(kCb, cb);
    mem.protect(kCb, kPage, false, false);
    LwpOutcome out = expect_fault_without_effect([&] { return llwpcb(kCb); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kCb);
    EXPECT_FALSE(out.fault_write);
}

TEST_F(Llwpcb, LwpcbStraddlingIntoUnmappedPageFaultsThere)
{
    const uint64_t at = kCb + kPage - 64;
    mem.map(kCb + kPage, kPage);
    place(at, cb);
    mem.unmap(kCb + kPage, kPage);
    LwpOutcome out = expect_fault_without_effect([&] { return llwpcb(at); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kCb + kPage);
    EXPECT_FALSE(out.fault_write);
}

TEST_F(Llwpcb, ReadOnlyLwpcbIsWriteFault)
{
    place(kCb, cb);
    mem.protect(kCb, kPage, true, false);
    LwpOutcome out = expect_fault_without_effect([&] { return llwpcb(kCb); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kCb);
    EXPECT_TRUE(out.fault_write);
}

TEST_F(Llwpcb, ReadOnlySecondPageOfLwpcbIsWriteFaultThere)
{
    const uint64_t at = kCb + kPage - 64;
    mem.map(kCb + kPage, kPage);
    place(at, cb);
    mem.protect(kCb + kPage, kPage, true, false);
    LwpOutcome out = expect_fault_without_effect([&] { return llwpcb(at); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, kCb + kPage);
    EXPECT_TRUE(out.fault_write);
}

TEST_F(Llwpcb, UnwritableRingPageIsNotTouched)
{
    // Spec 5.1 step 4 and the exception table: LLWPCB reads and writes
    // only the LWPCB.  A ring whose second page is read-only (or absent)
    // loads; the first store there is the one that faults.
    cb.buffer_base = kRing + kPage - 512;
    mem.map(kRing + kPage, kPage, true, false);
    place(kCb, cb);
    LwpOutcome out;
    lwp_llwpcb(&st, &env, mem.mem(), kCb, &out);
    EXPECT_EQ(out.status, LWP_OK);
    EXPECT_EQ(st.cbaddr, kCb);
    EXPECT_EQ(st.buffer_base, kRing + kPage - 512);
    for (uint32_t i = 0; i < out.nwrites; i++) {
        EXPECT_TRUE(out.writes[i].addr >= kCb &&
                    out.writes[i].addr + out.writes[i].len <= kCb + kPage)
            << "LLWPCB wrote outside the LWPCB at " << out.writes[i].addr;
    }
}

TEST_F(Llwpcb, UnmappedRingIsNotTouched)
{
    cb.buffer_base = 0x7000000;          // nothing mapped there
    place(kCb, cb);
    LwpOutcome out;
    lwp_llwpcb(&st, &env, mem.mem(), kCb, &out);
    EXPECT_EQ(out.status, LWP_OK);
    EXPECT_EQ(st.buffer_base, 0x7000000u);
}

TEST_F(Llwpcb, ContentGpComesBeforeWriteFault)
{
    cb.buffer_size = 0;
    place(kCb, cb);
    mem.protect(kCb, kPage, true, false);
    expect_fault_without_effect([&] { return llwpcb(kCb); }, LWP_FAULT_GP);
}

// Step 2: an enabled session is flushed first.
TEST_F(Llwpcb, FlushesTheOldSessionBeforeLoadingTheNewOne)
{
    const uint64_t cb2 = 0x30000, ring2 = 0x40000;
    mem.map(cb2, kPage);
    mem.map(ring2, kPage);
    cb.interval[1] = 9;
    cb.counter[1] = 5;
    start();
    lwpval();
    lwpval();
    ASSERT_EQ(st.counter[1], 3);

    Lwpcb other;
    other.buffer_base = ring2;
    other.counter[1] = 11;
    place(cb2, other);
    ASSERT_EQ(llwpcb(cb2).status, LWP_OK);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 1)), 3u);
    EXPECT_EQ(mem.peek32(kCb + 16), 0u);
    EXPECT_EQ(st.cbaddr, cb2);
    EXPECT_EQ(st.counter[1], 11);
}

TEST_F(Llwpcb, FlushFaultKeepsTheOldSessionRunning)
{
    const uint64_t cb2 = 0x30000;
    mem.map(cb2, kPage);
    start();
    lwpins();
    Lwpcb other;
    other.buffer_base = kRing;
    place(cb2, other);
    mem.protect(kCb, kPage, true, false);
    LwpOutcome out = expect_fault_without_effect([&] { return llwpcb(cb2); },
                                                 LWP_FAULT_PF);
    EXPECT_TRUE(out.fault_write);
    // The first flush write: EventCounter1 of the old LWPCB.
    EXPECT_EQ(out.fault_addr, counter_at(kCb, 1));
    EXPECT_EQ(st.cbaddr, kCb);
    EXPECT_EQ(mem.peek32(cb2), other.flags);
}

TEST_F(Llwpcb, FaultOnTheNewLwpcbWritesNothingOfTheFlush)
{
    const uint64_t cb2 = 0x30000;
    mem.map(cb2, kPage, false, false);
    start();
    lwpins();
    LwpOutcome out = expect_fault_without_effect([&] { return llwpcb(cb2); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, cb2);
    EXPECT_EQ(mem.peek32(kCb + 16), 0u);
}

TEST_F(Llwpcb, ZeroDisablesAfterFlushingAndKeepsTheGenerator)
{
    cb.counter[1] = 4;
    start();
    lwpval();
    lwpins();
    st.rng = 0xABCDEF;
    LwpOutcome out = llwpcb(0);
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 1)), 3u);
    EXPECT_EQ(mem.peek32(kCb + 16), 32u);
    LwpState expect = zero_state();
    expect.rng = 0xABCDEF;
    EXPECT_TRUE(states_equal(st, expect));
}

TEST_F(Llwpcb, ZeroWhenDisabledTouchesNothing)
{
    st.rng = 5;
    LwpOutcome out = llwpcb(0);
    EXPECT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.nwrites, 0u);
    EXPECT_EQ(mem.reads + mem.probes, 0u);
    EXPECT_EQ(st.rng, 5u);
}

TEST_F(Llwpcb, ReloadingTheActiveLwpcbSeesTheFlushedValues)
{
    // The flush's writes are not in memory yet when the LWPCB is re-read:
    // the model must read its own writes.
    cb.interval[1] = 10;
    cb.counter[1] = 10;
    start();
    for (int i = 0; i < 3; i++) {
        lwpval();
    }
    lwpins();
    LwpOutcome out;
    lwp_llwpcb(&st, &env, mem.mem(), kCb, &out);
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(st.counter[1], 7);
    EXPECT_EQ(st.head, 32u);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 1)), 10u);   // not applied yet
    mem.apply(out);
    EXPECT_EQ(mem.peek32(counter_at(kCb, 1)), 7u);
}

TEST_F(Llwpcb, CplDoesNotMatter)
{
    env.cpl = 0;
    start();
    EXPECT_EQ(st.cbaddr, kCb);
}

// Outside 64-bit mode: DS base, limit, type.
class Llwpcb32 : public LwpTest {
protected:
    Llwpcb32()
    {
        env = env32(&caps, 0x1000);
    }
};

TEST_F(Llwpcb32, AddsTheDsBaseToBothAddresses)
{
    cb.buffer_base = kRing - 0x1000;
    place(kCb, cb);
    ASSERT_EQ(llwpcb(kCb - 0x1000).status, LWP_OK);
    EXPECT_EQ(st.cbaddr, kCb);
    EXPECT_EQ(st.buffer_base, kRing);
    EXPECT_EQ(mem.peek32(kCb), cb.flags);
}

TEST_F(Llwpcb32, BufferBaseUpperHalfMustBeZero)
{
    cb.buffer_base = 0x100000000ull | (kRing - 0x1000);
    place(kCb, cb);
    expect_fault_without_effect([&] { return llwpcb(kCb - 0x1000); },
                                LWP_FAULT_GP);
}

struct SegmentCase {
    const char *name;
    uint32_t limit;
    bool expand_down, big, writable, usable;
    uint64_t cb_ea, ring_ea;      // LWPCB is 152 bytes, ring 1024
    bool ok;
};

class Llwpcb32Segment : public LwpTest,
                        public ::testing::WithParamInterface<SegmentCase> {};

TEST_P(Llwpcb32Segment, LimitAndTypeOfDs)
{
    const SegmentCase c = GetParam();
    env = env32(&caps, 0);
    env.ds_limit = c.limit;
    env.ds_expand_down = c.expand_down;
    env.ds_big = c.big;
    env.ds_writable = c.writable;
    env.ds_usable = c.usable;
    mem.map(c.cb_ea, kPage);
    mem.map(c.ring_ea, kPage * 2);
    cb.buffer_base = c.ring_ea;
    place(c.cb_ea, cb);
    if (c.ok) {
        EXPECT_EQ(llwpcb(c.cb_ea).status, LWP_OK);
    } else {
        expect_fault_without_effect([&] { return llwpcb(c.cb_ea); },
                                    LWP_FAULT_GP);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, Llwpcb32Segment,
    ::testing::Values(
        SegmentCase{"Flat", 0xFFFFFFFF, false, true, true, true, 0x10000, 0x20000, true},
        SegmentCase{"LwpcbEndsAtLimit", 0x10097, false, true, true, true, 0x10000, 0x8000, true},
        SegmentCase{"LwpcbOneBytePastLimit", 0x10096, false, true, true, true, 0x10000, 0x8000, false},
        SegmentCase{"RingEndsAtLimit", 0x203FF, false, true, true, true, 0x10000, 0x20000, true},
        SegmentCase{"RingPastLimit", 0x203FE, false, true, true, true, 0x10000, 0x20000, false},
        SegmentCase{"NullDs", 0xFFFFFFFF, false, true, true, false, 0x10000, 0x20000, false},
        SegmentCase{"ReadOnlyDs", 0xFFFFFFFF, false, true, false, true, 0x10000, 0x20000, false},
        SegmentCase{"ExpandDownAbove", 0x0FFFF, true, true, true, true, 0x10000, 0x20000, true},
        SegmentCase{"ExpandDownLwpcbAtLimit", 0x10000, true, true, true, true, 0x10000, 0x20000, false},
        SegmentCase{"ExpandDownRingBelow", 0x1FFFF, true, true, true, true, 0x30000, 0x1F000, false},
        SegmentCase{"ExpandDownSmallTop", 0x0FFF, true, false, true, true, 0x2000, 0xF000, true},
        SegmentCase{"ExpandDownSmallPast64K", 0x0FFF, true, false, true, true, 0x2000, 0xFE00, false},
        SegmentCase{"ExpandDownSmallLwpcbAbove64K", 0x0FFF, true, false, true, true, 0x10000, 0x2000, false}),
    [](const ::testing::TestParamInfo<SegmentCase> &i) { return std::string(i.param.name); });

TEST_F(Llwpcb32, LinearAddressesWrapAt4GiB)
{
    // DS base near the top: the LWPCB at linear 0xFFFFFFC0 straddles 4 GiB.
    env = env32(&caps, 0xFFFFEFC0);
    mem.map(0xFFFFF000, kPage);
    mem.map(0, kPage);
    cb.buffer_base = 0x21040;         // linear kRing
    cb.interval[1] = 5;
    std::vector<uint8_t> img = cb.image(caps);
    mem.poke(0xFFFFFFC0, img.data(), 0x40);
    mem.poke(0, img.data() + 0x40, img.size() - 0x40);
    ASSERT_EQ(llwpcb(0x1000).status, LWP_OK);
    EXPECT_EQ(st.cbaddr, 0xFFFFFFC0u);
    EXPECT_EQ(st.buffer_base, kRing);
    EXPECT_EQ(st.interval[1], 5u);

    lwpval();
    LwpOutcome out = slwpcb();
    ASSERT_EQ(out.status, LWP_OK);
    EXPECT_EQ(out.value, 0x1000u);
    // EventCounter1 lives past the wrap, at linear E + 4 - 0x40.
    EXPECT_EQ(mem.peek32(caps.event_offset + 4 - 0x40), 5u);
    EXPECT_EQ(mem.peek32(0xFFFFFFC0 + 16), 32u);
}

TEST_F(Llwpcb32, RecordStraddling4GiBIsSplit)
{
    // Ring at linear 0xFFFFFFF0: its first record wraps to linear 0.
    env = env32(&caps, 0xFFFFF000);
    mem.map(0xFFFFF000, kPage);
    mem.map(0, kPage);
    cb.buffer_base = 0xFF0;
    place(0xFFFFF100, cb);
    ASSERT_EQ(llwpcb(0x100).status, LWP_OK);
    EXPECT_EQ(st.buffer_base, 0xFFFFFFF0u);
    LwpOutcome out = lwpins(0x1122334455667788ull, 0xAABBCCDD, 0x77, 0x401000);
    ASSERT_EQ(out.status, LWP_OK);
    ASSERT_EQ(out.nwrites, 2u);
    EXPECT_EQ(out.writes[0].addr, 0xFFFFFFF0u);
    EXPECT_EQ(out.writes[0].len, 16u);
    EXPECT_EQ(out.writes[1].addr, 0u);
    EXPECT_EQ(out.writes[1].len, 16u);
    EXPECT_EQ(mem.peek32(0xFFFFFFF0u), 0x0077u << 16 | kCoreId << 8 | 0xFF);
    EXPECT_EQ(mem.peek64(0), 0x1122334455667788ull);
}

} // namespace
