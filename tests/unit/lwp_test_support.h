// SPDX-License-Identifier: GPL-2.0-or-later
// Shared fixtures for the LWP model's unit tests: a page-granular fake guest
// memory behind LwpMem, an LWPCB builder and a CPU environment builder.

#ifndef LWP_TEST_SUPPORT_H
#define LWP_TEST_SUPPORT_H

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "lwp/lwp-caps.h"
#include "lwp/lwp-model.h"

namespace lwptest {

constexpr uint64_t kPage = 4096;

// Simulated linear address space: 4 KiB pages, each readable and/or
// writable.  The model never writes it; apply() performs an outcome's
// writes the way the QEMU glue will.
class FakeMem {
public:
    struct Page {
        std::array<uint8_t, kPage> data{};
        bool readable = true;
        bool writable = true;
        bool operator==(const Page &o) const
        {
            return data == o.data && readable == o.readable &&
                   writable == o.writable;
        }
    };

    FakeMem()
    {
        mem_.opaque = this;
        mem_.read = &FakeMem::read_cb;
        mem_.probe_write = &FakeMem::probe_cb;
    }
    FakeMem(const FakeMem &) = delete;
    FakeMem &operator=(const FakeMem &) = delete;

    const LwpMem *mem() const { return &mem_; }

    void map(uint64_t addr, uint64_t len, bool readable = true,
             bool writable = true)
    {
        for (uint64_t p = addr & ~(kPage - 1); p < addr + len; p += kPage) {
            Page &page = pages_[p];
            page.readable = readable;
            page.writable = writable;
        }
    }
    void protect(uint64_t addr, uint64_t len, bool readable, bool writable)
    {
        for (uint64_t p = addr & ~(kPage - 1); p < addr + len; p += kPage) {
            auto it = pages_.find(p);
            ASSERT_NE(it, pages_.end());
            it->second.readable = readable;
            it->second.writable = writable;
        }
    }
    void unmap(uint64_t addr, uint64_t len)
    {
        for (uint64_t p = addr & ~(kPage - 1); p < addr + len; p += kPage) {
            pages_.erase(p);
        }
    }

    // Direct access for tests, ignoring permissions (pages must exist).
    void poke(uint64_t addr, const void *data, uint64_t len)
    {
        const uint8_t *src = static_cast<const uint8_t *>(data);
        for (uint64_t i = 0; i < len; i++) {
            byte(addr + i) = src[i];
        }
    }
    void peek(uint64_t addr, void *buf, uint64_t len)
    {
        uint8_t *dst = static_cast<uint8_t *>(buf);
        for (uint64_t i = 0; i < len; i++) {
            dst[i] = byte(addr + i);
        }
    }
    std::vector<uint8_t> bytes(uint64_t addr, uint64_t len)
    {
        std::vector<uint8_t> v(len);
        peek(addr, v.data(), len);
        return v;
    }
    void poke32(uint64_t addr, uint32_t v)
    {
        uint8_t b[4];
        for (int i = 0; i < 4; i++) {
            b[i] = static_cast<uint8_t>(v >> (8 * i));
        }
        poke(addr, b, 4);
    }
    void poke64(uint64_t addr, uint64_t v)
    {
        poke32(addr, static_cast<uint32_t>(v));
        poke32(addr + 4, static_cast<uint32_t>(v >> 32));
    }
    uint32_t peek32(uint64_t addr)
    {
        uint32_t v = 0;
        for (int i = 3; i >= 0; i--) {
            v = v << 8 | byte(addr + i);
        }
        return v;
    }
    uint64_t peek64(uint64_t addr)
    {
        return peek32(addr) | static_cast<uint64_t>(peek32(addr + 4)) << 32;
    }

    // Performs the writes of a successful outcome, each of which must be
    // permitted (the model promised it checked them).
    void apply(const LwpOutcome &out)
    {
        ASSERT_EQ(out.status, LWP_OK);
        ASSERT_LE(out.nwrites, static_cast<uint32_t>(LWP_MAX_WRITES));
        for (uint32_t i = 0; i < out.nwrites; i++) {
            const LwpWrite &w = out.writes[i];
            ASSERT_GE(w.len, 1u);
            ASSERT_LE(w.len, static_cast<uint32_t>(LWP_RECORD_SIZE));
            ASSERT_TRUE(permitted(w.addr, w.len, false)) << std::hex << w.addr;
            poke(w.addr, w.data, w.len);
        }
    }

    // Whether [addr, addr + len) may be read (@read) or written.
    bool allows(uint64_t addr, uint64_t len, bool read) const
    {
        return permitted(addr, len, read);
    }

    bool operator==(const FakeMem &o) const { return pages_ == o.pages_; }
    std::map<uint64_t, Page> snapshot() const { return pages_; }
    bool same_as(const std::map<uint64_t, Page> &snap) const
    {
        return pages_ == snap;
    }

    // Callback traffic, to check that an operation touched no memory.
    unsigned reads = 0;
    unsigned probes = 0;

private:
    uint8_t &byte(uint64_t addr)
    {
        auto it = pages_.find(addr & ~(kPage - 1));
        if (it == pages_.end()) {
            ADD_FAILURE() << "test touches unmapped 0x" << std::hex << addr;
            static uint8_t dummy;
            return dummy;
        }
        return it->second.data[addr & (kPage - 1)];
    }
    bool permitted(uint64_t addr, uint64_t len, bool read) const
    {
        for (uint64_t i = 0; i < len; i++) {
            auto it = pages_.find((addr + i) & ~(kPage - 1));
            if (it == pages_.end() ||
                !(read ? it->second.readable : it->second.writable)) {
                return false;
            }
        }
        return true;
    }
    static bool read_cb(void *opaque, uint64_t addr, void *buf, uint32_t len)
    {
        FakeMem *m = static_cast<FakeMem *>(opaque);
        m->reads++;
        if (!m->permitted(addr, len, true)) {
            return false;
        }
        m->peek(addr, buf, len);
        return true;
    }
    static bool probe_cb(void *opaque, uint64_t addr, uint32_t len)
    {
        FakeMem *m = static_cast<FakeMem *>(opaque);
        m->probes++;
        return m->permitted(addr, len, false);
    }

    std::map<uint64_t, Page> pages_;
    LwpMem mem_;
};

// Field-by-field, so that padding never makes equal states differ.
inline bool states_equal(const LwpState &a, const LwpState &b)
{
    return a.cbaddr == b.cbaddr && a.buffer_base == b.buffer_base &&
           a.buffer_size == b.buffer_size && a.head == b.head &&
           a.flags == b.flags && a.filters == b.filters &&
           std::memcmp(a.counter, b.counter, sizeof(a.counter)) == 0 &&
           std::memcmp(a.pending, b.pending, sizeof(a.pending)) == 0 &&
           a.cache_valid == b.cache_valid && a.random == b.random &&
           std::memcmp(a.interval, b.interval, sizeof(a.interval)) == 0 &&
           a.threshold == b.threshold && a.tail == b.tail &&
           a.base_ip == b.base_ip && a.limit_ip == b.limit_ip &&
           a.rng == b.rng && a.tail_credit == b.tail_credit &&
           a.intervals_live == b.intervals_live && a.restarted == b.restarted;
}

inline LwpState zero_state()
{
    LwpState st;
    std::memset(&st, 0, sizeof(st));
    return st;
}

// LwpState fields that XSAVE/XRSTOR carry (the rest is LWPCB cache).
inline bool is_reset(const LwpState &st)
{
    return states_equal(st, zero_state());
}

inline LwpCaps family15h()
{
    LwpCaps caps;
    lwp_caps_family15h(&caps);
    return caps;
}

// Every event of version 1, for tests of events 4..6.
inline LwpCaps all_events()
{
    LwpCaps caps = family15h();
    caps.features = LWP_FEAT_DEFINED;
    caps.max_events = 6;
    caps.cb_size = 0x16;
    caps.latency_max = 12;
    caps.cache_latency = true;
    return caps;
}

constexpr uint8_t kCoreId = 0x5A;
constexpr uint8_t kVector = 0x41;

inline uint64_t full_cfg(const LwpCaps &caps)
{
    return caps.features | static_cast<uint64_t>(kCoreId) << 32 |
           static_cast<uint64_t>(kVector) << 40;
}

inline LwpCpuEnv env64(const LwpCaps *caps)
{
    LwpCpuEnv env{};
    env.caps = caps;
    env.lwp_cfg = full_cfg(*caps);
    env.cpl = 3;
    env.mode64 = true;
    env.va_bits = 48;
    // DS is ignored in 64-bit mode: make it look hostile.
    env.ds_base = 0x12345000;
    env.ds_limit = 0;
    env.ds_usable = false;
    return env;
}

inline LwpCpuEnv env32(const LwpCaps *caps, uint64_t ds_base = 0,
                       uint32_t ds_limit = 0xFFFFFFFF)
{
    LwpCpuEnv env{};
    env.caps = caps;
    env.lwp_cfg = full_cfg(*caps);
    env.cpl = 3;
    env.mode64 = false;
    env.va_bits = 48;
    env.ds_base = ds_base;
    env.ds_limit = ds_limit;
    env.ds_big = true;
    env.ds_writable = true;
    env.ds_usable = true;
    return env;
}

// An LWPCB as a program fills it in (table 6-1), to be laid out in memory.
struct Lwpcb {
    uint32_t flags = 0x80000002;     // VAL + INT
    uint32_t buffer_size = 1024;     // the family 15h minimum
    uint8_t random = 0;
    uint64_t buffer_base = 0;
    uint32_t head = 0;
    uint64_t missed = 0;
    uint32_t threshold = 0x10000;    // above BufferSize: no interrupts
    uint32_t filters = 0;
    uint64_t base_ip = 0;
    uint64_t limit_ip = 0;
    uint32_t tail = 0;
    uint32_t interval[LWP_MAX_EVENT + 1] = {0, 0, 0x1000, 0x1000, 0x1000,
                                            0x1000, 0x1000};
    uint32_t counter[LWP_MAX_EVENT + 1] = {};

    std::vector<uint8_t> image(const LwpCaps &caps) const
    {
        std::vector<uint8_t> b(caps.cb_size * 8u, 0);
        auto put32 = [&](size_t at, uint32_t v) {
            for (int i = 0; i < 4; i++) {
                b[at + i] = static_cast<uint8_t>(v >> (8 * i));
            }
        };
        auto put64 = [&](size_t at, uint64_t v) {
            put32(at, static_cast<uint32_t>(v));
            put32(at + 4, static_cast<uint32_t>(v >> 32));
        };
        put32(0, flags);
        put32(4, (buffer_size & 0x0FFFFFFF) |
                 static_cast<uint32_t>(random) << 28);
        put64(8, buffer_base);
        put32(16, head);
        put64(24, missed);
        put32(32, threshold);
        put32(36, filters);
        put64(40, base_ip);
        put64(48, limit_ip);
        put32(64, tail);
        for (unsigned id = 1; id <= caps.max_events; id++) {
            put32(caps.event_offset + 8 * (id - 1), interval[id]);
            put32(caps.event_offset + 8 * (id - 1) + 4, counter[id]);
        }
        return b;
    }
};

// A vCPU with LWP and its memory: LWPCB and ring buffer at fixed places.
class LwpTest : public ::testing::Test {
protected:
    static constexpr uint64_t kCb = 0x10000;
    static constexpr uint64_t kRing = 0x20000;
    static constexpr uint32_t kRingSize = 1024;

    LwpCaps caps = family15h();
    LwpCpuEnv env = env64(&caps);
    LwpState st = zero_state();
    FakeMem mem;
    Lwpcb cb;

    LwpTest()
    {
        cb.buffer_base = kRing;
        mem.map(kCb, kPage);
        mem.map(kRing, kPage);
    }

    uint32_t E() const { return caps.event_offset; }
    uint64_t interval_at(uint64_t base, unsigned id) const
    {
        return base + caps.event_offset + 8 * (id - 1);
    }
    uint64_t counter_at(uint64_t base, unsigned id) const
    {
        return interval_at(base, id) + 4;
    }

    void place(uint64_t addr, const Lwpcb &c)
    {
        std::vector<uint8_t> img = c.image(caps);
        mem.poke(addr, img.data(), img.size());
    }

    // Runs an instruction and, when it succeeds, performs its writes.
    LwpOutcome llwpcb(uint64_t ea)
    {
        LwpOutcome out;
        lwp_llwpcb(&st, &env, mem.mem(), ea, &out);
        if (out.status == LWP_OK) {
            mem.apply(out);
        }
        return out;
    }
    LwpOutcome slwpcb()
    {
        LwpOutcome out;
        lwp_slwpcb(&st, &env, mem.mem(), &out);
        if (out.status == LWP_OK) {
            mem.apply(out);
        }
        return out;
    }
    LwpOutcome lwpval(uint64_t data2 = 0, uint32_t data1 = 0, uint32_t imm = 0,
                      uint64_t ip = 0)
    {
        LwpOutcome out;
        lwp_lwpval(&st, &env, mem.mem(), data2, data1, imm, ip, &out);
        if (out.status == LWP_OK) {
            mem.apply(out);
        }
        return out;
    }
    LwpOutcome lwpins(uint64_t data2 = 0, uint32_t data1 = 0, uint32_t imm = 0,
                      uint64_t ip = 0)
    {
        LwpOutcome out;
        lwp_lwpins(&st, &env, mem.mem(), data2, data1, imm, ip, &out);
        if (out.status == LWP_OK) {
            mem.apply(out);
        }
        return out;
    }

    // Places cb at kCb and starts a session there.
    void start(uint64_t at = kCb)
    {
        place(at, cb);
        LwpOutcome out = llwpcb(at);
        ASSERT_EQ(out.status, LWP_OK);
        ASSERT_NE(st.cbaddr, 0u);
    }

    // A faulting operation must leave the state and memory as they were.
    template <typename Op>
    LwpOutcome expect_fault_without_effect(Op op, LwpStatus status)
    {
        const LwpState before = st;
        const auto snap = mem.snapshot();
        LwpOutcome out = op();
        EXPECT_EQ(out.status, status);
        EXPECT_EQ(out.nwrites, 0u);
        EXPECT_FALSE(out.interrupt);
        EXPECT_TRUE(states_equal(st, before));
        EXPECT_TRUE(mem.same_as(snap));
        return out;
    }
};

// A started session of instructions retired, and records made pending by
// hand, for the tests of a record's store (lwp_store_fast, the lean store).
class RingStoreTest : public LwpTest {
protected:
    static constexpr uint32_t kRecords = kRingSize / LWP_RECORD_SIZE;

    uint32_t head_in_lwpcb() { return mem.peek32(kCb + 16); }
    uint64_t missed_in_lwpcb() { return mem.peek64(kCb + 24); }

    // Instructions retired with interval 0x1000, INT per @flags_int.
    void start_ire(uint32_t threshold = 0x10000, bool flags_int = false)
    {
        cb.flags = (1u << LWP_EVENT_IRE) | (flags_int ? 0x80000000u : 0);
        cb.interval[LWP_EVENT_IRE] = 0x1000;
        cb.threshold = threshold;
        start();
    }

    // A record of event 2 made pending with @tag in its data, counter at
    // @counter (the overrun: -1 is none).
    void gather(uint32_t tag, int32_t counter = -1)
    {
        memset(st.pending, 0, sizeof(st.pending));
        st.pending[0] = LWP_EVENT_IRE;
        memcpy(st.pending + 4, &tag, sizeof(tag));
        st.counter[LWP_EVENT_IRE] = counter;
    }
};

// A random ring with an instructions-retired record pending, for
// comparing a store's lean paths with the general path: the LWPCB at @cb
// and the ring in the two pages at @ring_pages, mapped (now and then
// read-only) and filled alike in @a and @b.  *@missed is MissedEvents.
inline LwpState random_store_case(std::mt19937 &rng, uint64_t cb,
                                  uint64_t ring_pages, FakeMem &a, FakeMem &b,
                                  uint64_t *missed)
{
    const uint32_t size = 32 * (1 + rng() % 8);
    const uint64_t ring = ring_pages + 32 * (rng() % 4);
    const bool cb_writable = rng() % 16 != 0;
    const bool ring_writable = rng() % 16 != 0;
    for (FakeMem *m : {&a, &b}) {
        m->map(cb, kPage, true, cb_writable);
        m->map(ring_pages, 2 * kPage, true, ring_writable);
    }
    LwpState s = zero_state();
    s.cbaddr = cb;
    s.buffer_base = ring;
    s.buffer_size = size;
    s.head = 32 * (rng() % (size / 32));
    s.tail = 32 * (rng() % (size / 32));
    s.flags = (1u << LWP_EVENT_IRE) | (rng() % 2 ? 0x80000000u : 0);
    s.threshold = 32 * (rng() % (size / 32 + 2));
    s.cache_valid = 1;
    s.interval[LWP_EVENT_IRE] = 0x100 + rng() % 0x100;
    s.counter[LWP_EVENT_IRE] = -1 - static_cast<int32_t>(rng() % 4);
    s.random = rng() % 3 ? 0 : 1 + rng() % 15;
    s.rng = rng();
    for (unsigned i = 0; i < LWP_RECORD_SIZE; i++) {
        s.pending[i] = static_cast<uint8_t>(rng());
    }
    s.pending[0] = LWP_EVENT_IRE;
    const uint32_t mem_tail = 32 * (rng() % (size / 32));
    *missed = rng() % 2 ? 0 : 0xFFFFFFFFull + rng() % 3;
    for (FakeMem *m : {&a, &b}) {
        m->poke32(cb + 64, mem_tail);
        m->poke64(cb + 24, *missed);
        m->poke32(cb + 16, 0xAAAA);
    }
    return s;
}

// A store decided two ways -- @a by a fast or lean path, @b by the general
// path -- made the same writes and left the same state and memory.
inline void expect_same_store(const LwpOutcome &a, const LwpOutcome &b,
                              const LwpState &state_a, const LwpState &state_b,
                              const FakeMem &mem_a, const FakeMem &mem_b,
                              unsigned iter)
{
    EXPECT_TRUE(states_equal(state_a, state_b)) << iter;
    EXPECT_TRUE(mem_a == mem_b) << iter;
    EXPECT_EQ(a.interrupt, b.interrupt) << iter;
    ASSERT_EQ(a.nwrites, b.nwrites) << iter;
    for (uint32_t i = 0; i < a.nwrites; i++) {
        EXPECT_EQ(a.writes[i].addr, b.writes[i].addr) << iter;
        EXPECT_EQ(a.writes[i].len, b.writes[i].len) << iter;
    }
}

} // namespace lwptest

#endif // LWP_TEST_SUPPORT_H
