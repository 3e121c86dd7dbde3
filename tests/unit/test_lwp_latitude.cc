// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of latitude mode's freedoms of AMD pub. 43724 rev 3.08
// section 8.3 (docs/lwp-latitude.rst), each against the sentence that
// allows it and against exact mode:
//  - BufferHeadOffset reaches the LWPCB only at a threshold, a full ring,
//    LLWPCB and SLWPCB (and the XSAVE area holds the internal head);
//  - the tail is re-read while the threshold appears met only every nth
//    store ("lwp-tail-reread"), never less than every time the ring looks
//    full, so no record is lost beyond what MissedEvents counts;
//  - each session draws whether its intervals are cached at LLWPCB or read
//    from the LWPCB at each overflow ("lwp-interval-reread").

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "lwp_test_support.h"

namespace {

using namespace lwptest;

constexpr uint32_t kHead = 16;
constexpr uint32_t kMissed = 24;
constexpr uint32_t kTail = 64;

class Latitude : public LwpTest {
protected:
    uint32_t head_in_lwpcb() { return mem.peek32(kCb + kHead); }
    uint64_t missed_in_lwpcb() { return mem.peek64(kCb + kMissed); }
    void set_tail(uint32_t tail) { mem.poke32(kCb + kTail, tail); }

    void tail_reread(uint8_t n) { env.latitude.tail_reread = n; }

    // A seed whose first draw (at LLWPCB, from a zero generator) makes the
    // session live (@live) or cached.
    uint64_t seed_for(bool live)
    {
        for (uint64_t seed = 1; seed < 1000; seed++) {
            LwpState s = zero_state();
            LwpCpuEnv e = env;
            e.latitude.interval_draw = true;
            e.latitude.seed = seed;
            FakeMem m;
            m.map(kCb, kPage);
            m.map(kRing, kPage);
            std::vector<uint8_t> img = cb.image(caps);
            m.poke(kCb, img.data(), img.size());
            LwpOutcome out;
            lwp_llwpcb(&s, &e, m.mem(), kCb, &out);
            if (out.status == LWP_OK && s.intervals_live == live) {
                return seed;
            }
        }
        ADD_FAILURE() << "no seed draws intervals_live=" << live;
        return 0;
    }

    // Starts a session with interval draws on, cached or live as asked.
    void start_drawn(bool live)
    {
        env.latitude.interval_draw = true;
        env.latitude.seed = seed_for(live);
        start();
        ASSERT_EQ(st.intervals_live, live ? 1 : 0);
    }
};

// (a) The head write-back, in exact mode and with every freedom taken:
// the same points, the ones 8.3 names.
class LatitudeHead : public Latitude,
                     public ::testing::WithParamInterface<bool> {
protected:
    void SetUp() override
    {
        if (GetParam()) {
            tail_reread(4);
            env.latitude.interval_draw = true;
            env.latitude.seed = 0x1234;
        }
    }
};

INSTANTIATE_TEST_SUITE_P(Modes, LatitudeHead, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &i) {
                             return std::string(i.param ? "Latitude"
                                                        : "Exact");
                         });

TEST_P(LatitudeHead, StaleUntilTheThresholdThenExact)
{
    cb.threshold = 128;
    start();
    for (uint32_t i = 1; i <= 3; i++) {
        LwpOutcome out = lwpins(0, i);
        ASSERT_EQ(out.status, LWP_OK);
        EXPECT_FALSE(out.interrupt);
        EXPECT_EQ(out.nwrites, 1u);          // the record only
        EXPECT_EQ(st.head, 32 * i);
        EXPECT_EQ(head_in_lwpcb(), 0u);      // deferred (8.3)
    }
    // 8.3: "Exceeding the buffer threshold always forces the head pointer
    // to memory so that the interrupt handler ... sees the threshold".
    LwpOutcome out = lwpins(0, 4);
    EXPECT_TRUE(out.interrupt);
    EXPECT_EQ(head_in_lwpcb(), 128u);
    EXPECT_EQ(head_in_lwpcb(), st.head);
}

TEST_P(LatitudeHead, StaleUntilSlwpcbThenExact)
{
    start();
    for (uint32_t i = 1; i <= 5; i++) {
        ASSERT_EQ(lwpins(0, i).status, LWP_OK);
        EXPECT_EQ(head_in_lwpcb(), 0u);
    }
    ASSERT_EQ(slwpcb().status, LWP_OK);
    EXPECT_EQ(head_in_lwpcb(), 160u);
    EXPECT_EQ(st.head, 160u);
}

TEST_P(LatitudeHead, LlwpcbOfAnotherLwpcbWritesTheOldSessionsHead)
{
    start();
    for (uint32_t i = 1; i <= 3; i++) {
        ASSERT_EQ(lwpins(0, i).status, LWP_OK);
    }
    EXPECT_EQ(head_in_lwpcb(), 0u);
    constexpr uint64_t kCb2 = kCb + 0x800;
    place(kCb2, cb);
    ASSERT_EQ(llwpcb(kCb2).status, LWP_OK);
    EXPECT_EQ(head_in_lwpcb(), 96u);
    EXPECT_EQ(mem.peek32(kCb2 + kHead), 0u);  // read, not written
}

TEST_P(LatitudeHead, FullRingWritesTheHead)
{
    cb.head = 64;
    cb.tail = 128;
    start();
    ASSERT_EQ(lwpins(0, 1).status, LWP_OK);
    EXPECT_EQ(head_in_lwpcb(), 64u);          // as the program left it
    LwpOutcome out = lwpins(0, 2);            // 128 - 32: the last free slot
    EXPECT_EQ(out.value, 1u);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
    EXPECT_EQ(head_in_lwpcb(), 96u);
}

TEST_P(LatitudeHead, XsaveHoldsTheInternalHeadWhileTheLwpcbIsStale)
{
    start();
    for (uint32_t i = 1; i <= 3; i++) {
        ASSERT_EQ(lwpins(0, i).status, LWP_OK);
    }
    uint8_t area[LWP_XSAVE_SIZE];
    ASSERT_TRUE(lwp_xsave(&st, area));
    const uint32_t saved = area[12] | area[13] << 8 | area[14] << 16 |
                           static_cast<uint32_t>(area[15]) << 24;
    EXPECT_EQ(saved, 96u);
    EXPECT_EQ(head_in_lwpcb(), 0u);           // XSAVE touches no LWPCB (8.2.5)
}

// (b) Tail re-reads while the threshold appears met.  The program empties
// the ring completely before every store; the threshold is two records.
TEST_F(Latitude, ExactModeReReadsTheTailAtEveryApparentThreshold)
{
    cb.threshold = 64;
    start();
    ASSERT_EQ(lwpins().status, LWP_OK);
    ASSERT_TRUE(lwpins().interrupt);          // confirmed on the tail read
    for (int i = 0; i < 6; i++) {
        set_tail(st.head);
        LwpOutcome out = lwpins();
        EXPECT_FALSE(out.interrupt) << i;     // every time: the ring is empty
        EXPECT_EQ(st.tail_credit, 0);
    }
}

TEST_F(Latitude, TailReReadEveryNthStoreWhileTheThresholdAppearsMet)
{
    constexpr uint8_t kN = 3;
    tail_reread(kN);
    cb.threshold = 64;
    start();
    ASSERT_EQ(lwpins().status, LWP_OK);
    // Its first appearance re-reads: confirmed, n - 1 stores may skip.
    LwpOutcome out = lwpins();
    ASSERT_TRUE(out.interrupt);
    EXPECT_EQ(st.tail, 0u);
    EXPECT_EQ(st.tail_credit, kN - 1);
    EXPECT_EQ(head_in_lwpcb(), 64u);
    // The program empties the ring; the next n - 1 stores believe the old
    // tail, interrupt with the ring below its threshold and force the head.
    for (unsigned i = 1; i < kN; i++) {
        set_tail(st.head);
        out = lwpins();
        EXPECT_TRUE(out.interrupt) << i;
        EXPECT_EQ(st.tail, 0u) << i;
        EXPECT_EQ(head_in_lwpcb(), st.head) << i;
        EXPECT_EQ(st.tail_credit, kN - 1 - i);
    }
    // The nth re-reads: the ring holds one record, below the threshold.
    set_tail(st.head);
    const uint32_t consumed = st.head;
    out = lwpins();
    EXPECT_FALSE(out.interrupt);
    EXPECT_EQ(st.tail, consumed);
    EXPECT_EQ(st.tail_credit, 0);
    EXPECT_EQ(out.nwrites, 1u);               // no head flush either
    // A new appearance after a re-read that found none re-reads again.
    set_tail(st.head);
    out = lwpins();
    EXPECT_FALSE(out.interrupt);
    EXPECT_EQ(st.tail, st.head - 32);
}

TEST_F(Latitude, TailRereadOfOneIsExactMode)
{
    tail_reread(1);
    cb.threshold = 64;
    start();
    ASSERT_EQ(lwpins().status, LWP_OK);
    ASSERT_TRUE(lwpins().interrupt);
    EXPECT_EQ(st.tail_credit, 0);
    set_tail(st.head);
    EXPECT_FALSE(lwpins().interrupt);
}

// 8.3: "It also rereads it whenever the ring buffer appears to be full":
// a run of skipped re-reads never reaches a ring that looks full.
TEST_F(Latitude, ALookingFullRingIsReReadWhateverTheCredit)
{
    tail_reread(16);
    cb.threshold = 0;                         // every store appears at threshold
    start();
    for (uint32_t i = 0; i < 31; i++) {
        ASSERT_EQ(lwpins(0, i).status, LWP_OK);
    }
    EXPECT_EQ(st.head, 992u);
    EXPECT_GT(st.tail_credit, 0);
    set_tail(992);                            // the program took all 31
    LwpOutcome out = lwpins(0, 31);           // next == cached tail 0
    EXPECT_EQ(out.value, 0u);                 // not missed
    EXPECT_EQ(missed_in_lwpcb(), 0u);
    EXPECT_EQ(st.tail, 992u);
    EXPECT_EQ(st.head, 0u);
    EXPECT_EQ(mem.peek32(kRing + 992 + 4), 31u);
}

// The lwp-tail-reread property alone leaves intervals cached and draws
// nothing: the Random generator runs as in exact mode.
TEST_F(Latitude, TailRereadDrawsNothing)
{
    tail_reread(8);
    start();
    EXPECT_EQ(st.rng, 0u);
    EXPECT_EQ(st.intervals_live, 0);
}

// A consumer polling the LWPCB's head, and emptying what it sees, against
// every mode: what it reads is every record in order, none twice, and the
// ones it never sees are exactly those MissedEvents counts.  No store
// writes outside the hardware's part of the ring and the LWPCB's head and
// MissedEvents.
class LatitudeRing : public Latitude,
                     public ::testing::WithParamInterface<int> {
};

INSTANTIATE_TEST_SUITE_P(TailReread, LatitudeRing,
                         ::testing::Values(0, 1, 2, 3, 5, 16));

TEST_P(LatitudeRing, NoRecordLostOrDuplicatedBeyondMissedEvents)
{
    uint64_t all_missed = 0;
    unsigned early = 0;                       // interrupts below the threshold
    for (uint32_t seed = 1; seed <= 40; seed++) {
        std::mt19937 rng(seed);
        LwpState fresh = zero_state();
        st = fresh;
        FakeMem &m = mem;
        m.poke(kCb, std::vector<uint8_t>(kPage, 0).data(), kPage);
        m.poke(kRing, std::vector<uint8_t>(kPage, 0).data(), kPage);
        tail_reread(static_cast<uint8_t>(GetParam()));
        cb.head = 0;
        cb.tail = 0;
        cb.buffer_size = 1024 + 32 * (rng() % 8);   // the minimum and up
        cb.threshold = 32 * (rng() % (cb.buffer_size / 32 + 1));
        cb.flags = rng() % 4 ? 0x80000002 : 0x00000002;
        start();
        const uint32_t size = st.buffer_size;

        uint32_t tail = 0;                    // the program's
        uint32_t expect = 1;                  // next sequence number to see
        uint64_t seen_missed = 0;
        uint32_t outstanding = 0;             // stored, not yet consumed
        auto consume = [&](uint32_t head) {
            while (tail != head) {
                outstanding--;
                const uint32_t seq = m.peek32(kRing + tail + 4);
                // Later records only; a gap is a record MissedEvents counts.
                ASSERT_GE(seq, expect) << seed;
                seen_missed += seq - expect;
                expect = seq + 1;
                tail = (tail + 32) % size;
            }
            set_tail(tail);
        };

        const uint32_t stores = 400;
        for (uint32_t seq = 1; seq <= stores; seq++) {
            const uint32_t slot = st.head;
            LwpOutcome out = lwpins(0, seq);
            ASSERT_EQ(out.status, LWP_OK);
            // Writes: the head slot, and the LWPCB's head and MissedEvents.
            for (uint32_t w = 0; w < out.nwrites; w++) {
                const LwpWrite &wr = out.writes[w];
                const bool record = wr.addr == kRing + slot && wr.len == 32;
                const bool head = wr.addr == kCb + kHead && wr.len == 4;
                const bool missed = wr.addr == kCb + kMissed && wr.len == 8;
                EXPECT_TRUE(record || head || missed)
                    << std::hex << wr.addr << " seed " << std::dec << seed;
            }
            // The head never runs into what the program still owns: the
            // ring holds exactly the records stored and not consumed.
            // A record is missed only when the ring is full by the tail
            // the program has written, not by a stale copy of it (8.3:
            // the tail is re-read "whenever the ring buffer appears to be
            // full").
            if (out.value) {
                ASSERT_EQ((slot + 32) % size, tail) << seed;
            }
            outstanding += out.value ? 0 : 1;
            early += out.interrupt && 32 * outstanding < st.threshold;
            ASSERT_LT(outstanding, size / 32) << seed;
            ASSERT_EQ((st.head + size - tail) % size, 32 * outstanding)
                << seed;
            // Now and then the program polls the head the LWPCB shows.
            if (rng() % 3 == 0 || out.interrupt) {
                consume(head_in_lwpcb());
            }
        }
        ASSERT_EQ(slwpcb().status, LWP_OK);
        consume(head_in_lwpcb());
        // Every record is seen once or counted: the gaps, and the stores at
        // the end that found the ring full.
        EXPECT_EQ(outstanding, 0u) << seed;
        EXPECT_EQ(seen_missed + (stores + 1 - expect), missed_in_lwpcb())
            << seed;
        all_missed += missed_in_lwpcb();
    }
    // The runs met full rings; only a relaxed re-read interrupts early.
    EXPECT_GT(all_missed, 0u);
    if (GetParam() > 1) {
        EXPECT_GT(early, 0u);
    } else {
        EXPECT_EQ(early, 0u);
    }
}

// (c) Interval caching.
TEST_F(Latitude, ExactModeCachesTheIntervalsAtLlwpcb)
{
    cb.interval[LWP_EVENT_VAL] = 2;
    for (uint64_t seed = 1; seed <= 32; seed++) {
        env.latitude.seed = seed;            // no effect without the draw
        st = zero_state();
        start();
        EXPECT_EQ(st.intervals_live, 0);
        mem.poke32(interval_at(kCb, LWP_EVENT_VAL), 5);
        ASSERT_EQ(lwpval().status, LWP_OK);  // counter 0: stores, resets
        EXPECT_EQ(st.counter[LWP_EVENT_VAL], 2);
    }
}

TEST_F(Latitude, ACachedSessionDoesNotSeeALaterIntervalWrite)
{
    cb.interval[LWP_EVENT_VAL] = 2;
    start_drawn(false);
    mem.poke32(interval_at(kCb, LWP_EVENT_VAL), 5);
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(st.counter[LWP_EVENT_VAL], 2);
    EXPECT_EQ(st.interval[LWP_EVENT_VAL], 2u);
}

TEST_F(Latitude, ALiveSessionReadsTheIntervalAtEachOverflow)
{
    cb.interval[LWP_EVENT_VAL] = 2;
    start_drawn(true);
    mem.poke32(interval_at(kCb, LWP_EVENT_VAL), 5);
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(st.counter[LWP_EVENT_VAL], 5);
    // Not at every LWPVAL: only when the counter overflows (8.3).
    mem.poke32(interval_at(kCb, LWP_EVENT_VAL), 1);
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(lwpval().status, LWP_OK);
    }
    EXPECT_EQ(st.counter[LWP_EVENT_VAL], 0);
    EXPECT_EQ(st.head, 32u);
    ASSERT_EQ(lwpval().status, LWP_OK);       // overflows: reads 1
    EXPECT_EQ(st.head, 64u);
    EXPECT_EQ(st.counter[LWP_EVENT_VAL], 1);
}

TEST_F(Latitude, ALiveSessionKeepsTheHardwareMinimumWithoutWritingItBack)
{
    cb.flags = 1u << LWP_EVENT_IRE;
    cb.interval[LWP_EVENT_IRE] = 0x1000;
    start_drawn(true);
    mem.poke32(interval_at(kCb, LWP_EVENT_IRE), 10);
    st.pending[0] = LWP_EVENT_IRE;
    st.counter[LWP_EVENT_IRE] = -1;
    // The fast path leaves the read to the general path.
    LwpOutcome out;
    LwpStoreCommit commit;
    const LwpState before = st;
    EXPECT_FALSE(lwp_store_fast(&st, &env, mem.mem(), &out, &commit));
    EXPECT_TRUE(states_equal(st, before));
    lwp_store_pending(&st, &env, mem.mem(), &out);
    ASSERT_EQ(out.status, LWP_OK);
    mem.apply(out);
    EXPECT_EQ(st.counter[LWP_EVENT_IRE], LWP_MIN_HW_INTERVAL);
    EXPECT_EQ(mem.peek32(interval_at(kCb, LWP_EVENT_IRE)), 10u);
    EXPECT_EQ(out.nwrites, 1u);
}

TEST_F(Latitude, ALiveSessionsIntervalReadFaultsPreciselyACachedOneDoesNot)
{
    cb.interval[LWP_EVENT_VAL] = 2;
    start_drawn(true);
    mem.protect(kCb, kPage, false, false);
    LwpOutcome out = expect_fault_without_effect([&] { return lwpval(); },
                                                 LWP_FAULT_PF);
    EXPECT_EQ(out.fault_addr, interval_at(kCb, LWP_EVENT_VAL));
    EXPECT_FALSE(out.fault_write);

    mem.protect(kCb, kPage, true, true);
    st = zero_state();
    start_drawn(false);
    mem.protect(kCb, kPage, false, false);
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(st.counter[LWP_EVENT_VAL], 2);
}

TEST_F(Latitude, TheSeedPicksPerSessionAndReproducibly)
{
    env.latitude.interval_draw = true;
    env.latitude.seed = 77;
    std::vector<int> first, again;
    for (std::vector<int> *v : {&first, &again}) {
        st = zero_state();
        for (int session = 0; session < 64; session++) {
            start();
            v->push_back(st.intervals_live);
        }
    }
    EXPECT_EQ(first, again);
    int live = 0;
    for (int x : first) {
        live += x;
    }
    EXPECT_GT(live, 8);
    EXPECT_LT(live, 56);
    // Another seed, another sequence.
    env.latitude.seed = 78;
    std::vector<int> other;
    st = zero_state();
    for (int session = 0; session < 64; session++) {
        start();
        other.push_back(st.intervals_live);
    }
    EXPECT_NE(first, other);
}

TEST_F(Latitude, TheRefreshAfterXrstorDrawsAgainAndReadsTheLwpcb)
{
    cb.interval[LWP_EVENT_VAL] = 2;
    env.latitude.interval_draw = true;
    int live = 0;
    for (uint64_t seed = 1; seed <= 32; seed++) {
        env.latitude.seed = seed;
        st = zero_state();
        start();
        uint8_t area[LWP_XSAVE_SIZE];
        ASSERT_TRUE(lwp_xsave(&st, area));
        lwp_xrstor(&st, &env, area, true);
        EXPECT_EQ(st.intervals_live, 0);
        mem.poke32(interval_at(kCb, LWP_EVENT_VAL), 7);
        ASSERT_EQ(lwpval().status, LWP_OK);   // refresh, then store
        EXPECT_EQ(st.interval[LWP_EVENT_VAL], 7u);
        EXPECT_EQ(st.counter[LWP_EVENT_VAL], 7);
        live += st.intervals_live;
        mem.poke32(interval_at(kCb, LWP_EVENT_VAL), 2);
    }
    EXPECT_GT(live, 0);
    EXPECT_LT(live, 32);
}

TEST_F(Latitude, AMigratedLiveSessionGoesCachedWithoutTheProperty)
{
    cb.interval[LWP_EVENT_VAL] = 2;
    start_drawn(true);
    env.latitude = LwpLatitudeCfg{};
    mem.poke32(interval_at(kCb, LWP_EVENT_VAL), 5);
    ASSERT_EQ(lwpval().status, LWP_OK);
    EXPECT_EQ(st.counter[LWP_EVENT_VAL], 2);
}

// A record stored after its TB (lwp_tb_plan's LWP_TB_DEFER) must not need
// what a live session's restart does: an LWPCB read that may fault, and an
// interval the no-second-crossing rule cannot know in advance.
TEST_F(Latitude, ALiveSessionsCrossingIsNotDeferred)
{
    cb.flags = 1u << LWP_EVENT_IRE;
    cb.interval[LWP_EVENT_IRE] = 0x1000;
    cb.counter[LWP_EVENT_IRE] = 3;
    LwpTbShape t{};
    t.first_ip = 0x1000;
    t.last_ip = 0x1000 + 4 * 9;
    t.icount = 10;
    t.charged = 10;
    t.may_defer = true;
    uint32_t split;
    for (bool live : {false, true}) {
        st = zero_state();
        start_drawn(live);
        EXPECT_EQ(lwp_tb_plan(&st, &caps, &t, &split),
                  live ? LWP_TB_SPLIT : LWP_TB_DEFER) << live;
        EXPECT_EQ(split, live ? 4u : 3u);
    }
}

// The fast path decides what the general path decides in latitude mode
// too, the tail's credit included.
TEST_F(Latitude, FastPathAgreesWithTheGeneralPath)
{
    std::mt19937 rng(2026);
    unsigned fast = 0;
    for (unsigned iter = 0; iter < 3000; iter++) {
        FakeMem m1, m2;
        const uint32_t size = 32 * (1 + rng() % 8);
        for (FakeMem *m : {&m1, &m2}) {
            m->map(kCb, kPage);
            m->map(kRing, kPage);
        }
        LwpState s = zero_state();
        s.cbaddr = kCb;
        s.buffer_base = kRing;
        s.buffer_size = size;
        s.head = 32 * (rng() % (size / 32));
        s.tail = 32 * (rng() % (size / 32));
        s.flags = (1u << LWP_EVENT_IRE) | (rng() % 4 ? 0x80000000u : 0);
        s.threshold = 32 * (rng() % (size / 32 + 2));
        s.cache_valid = 1;
        s.interval[LWP_EVENT_IRE] = 0x100;
        s.counter[LWP_EVENT_IRE] = -1;
        s.pending[0] = LWP_EVENT_IRE;
        LwpCpuEnv e = env;
        e.latitude.tail_reread = static_cast<uint8_t>(rng() % 17);
        s.tail_credit = static_cast<uint8_t>(rng() % 16);
        const uint32_t mem_tail = 32 * (rng() % (size / 32));
        for (FakeMem *m : {&m1, &m2}) {
            m->poke32(kCb + kTail, mem_tail);
        }
        LwpState general = s;
        LwpOutcome out_g;
        lwp_store_pending(&general, &e, m2.mem(), &out_g);
        ASSERT_EQ(out_g.status, LWP_OK);
        LwpState quick = s;
        LwpOutcome out_f;
        LwpStoreCommit commit;
        ASSERT_TRUE(lwp_store_fast(&quick, &e, m1.mem(), &out_f, &commit));
        fast++;
        m1.apply(out_f);
        lwp_store_commit(&quick, e.caps, &commit);
        m2.apply(out_g);
        EXPECT_TRUE(states_equal(quick, general)) << iter;
        EXPECT_TRUE(m1 == m2) << iter;
        EXPECT_EQ(out_f.interrupt, out_g.interrupt) << iter;
        EXPECT_EQ(out_f.nwrites, out_g.nwrites) << iter;
    }
    EXPECT_EQ(fast, 3000u);
}

} // namespace
