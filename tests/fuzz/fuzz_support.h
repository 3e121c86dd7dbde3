// SPDX-License-Identifier: GPL-2.0-or-later
// Shared by the libFuzzer targets of the LWP core: a guest memory whose
// pages the input maps, fills and protects (so any access may fault), a CPU
// environment taken from the input, and the model's promises checked after
// every operation -- a fault changes no state and asks for no write; a
// success writes only where probe_write allowed it.  A broken promise
// aborts, which libFuzzer reports with the input.

#ifndef LWP_FUZZ_SUPPORT_H
#define LWP_FUZZ_SUPPORT_H

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "lwp/lwp-caps.h"
#include "lwp/lwp-model.h"

namespace lwpfuzz {

constexpr uint64_t kPage = 4096;

[[noreturn]] inline void broken(const char *what)
{
    std::fprintf(stderr, "lwp-fuzz: broken promise: %s\n", what);
    std::abort();
}

#define LWP_FUZZ_CHECK(cond) \
    do { if (!(cond)) { lwpfuzz::broken(#cond); } } while (0)

class FuzzMem {
public:
    struct Page {
        std::vector<uint8_t> data = std::vector<uint8_t>(kPage);
        bool readable = true;
        bool writable = true;
    };

    FuzzMem()
    {
        mem_.opaque = this;
        mem_.read = &FuzzMem::read_cb;
        mem_.probe_write = &FuzzMem::probe_cb;
    }
    const LwpMem *mem() const { return &mem_; }

    Page &map(uint64_t page) { return pages_[page & ~(kPage - 1)]; }

    bool readable(uint64_t addr, uint64_t len) const { return check(addr, len, false); }
    bool writable(uint64_t addr, uint64_t len) const { return check(addr, len, true); }

    // Perform an outcome's writes, as the QEMU glue does.
    void apply(const LwpOutcome &out)
    {
        for (uint32_t i = 0; i < out.nwrites; i++) {
            const LwpWrite &w = out.writes[i];
            for (uint32_t j = 0; j < w.len; j++) {
                pages_[(w.addr + j) & ~(kPage - 1)].data[(w.addr + j) & (kPage - 1)] =
                    w.data[j];
            }
        }
    }

private:
    bool check(uint64_t addr, uint64_t len, bool write) const
    {
        for (uint64_t i = 0; i < len; i++) {
            auto it = pages_.find((addr + i) & ~(kPage - 1));
            if (it == pages_.end() || !(write ? it->second.writable : it->second.readable)) {
                return false;
            }
        }
        return true;
    }
    static bool read_cb(void *opaque, uint64_t addr, void *buf, uint32_t len)
    {
        FuzzMem *m = static_cast<FuzzMem *>(opaque);
        if (!m->readable(addr, len)) {
            return false;
        }
        for (uint32_t i = 0; i < len; i++) {
            static_cast<uint8_t *>(buf)[i] =
                m->pages_[(addr + i) & ~(kPage - 1)].data[(addr + i) & (kPage - 1)];
        }
        return true;
    }
    static bool probe_cb(void *opaque, uint64_t addr, uint32_t len)
    {
        return static_cast<FuzzMem *>(opaque)->writable(addr, len);
    }

    std::map<uint64_t, Page> pages_;
    LwpMem mem_;
};

inline bool states_equal(const LwpState &a, const LwpState &b)
{
    return a.cbaddr == b.cbaddr && a.buffer_base == b.buffer_base &&
           a.buffer_size == b.buffer_size && a.head == b.head && a.flags == b.flags &&
           a.filters == b.filters && !std::memcmp(a.counter, b.counter, sizeof(a.counter)) &&
           !std::memcmp(a.pending, b.pending, sizeof(a.pending)) &&
           a.cache_valid == b.cache_valid && a.random == b.random &&
           !std::memcmp(a.interval, b.interval, sizeof(a.interval)) &&
           a.threshold == b.threshold && a.tail == b.tail && a.base_ip == b.base_ip &&
           a.limit_ip == b.limit_ip && a.rng == b.rng && a.tail_credit == b.tail_credit &&
           a.intervals_live == b.intervals_live;
}

// Addresses the input can choose among: low memory, around 4 GiB, near the
// top of the canonical lower half, and the top of the address space.
inline uint64_t pick_address(FuzzedDataProvider &in)
{
    static const uint64_t bases[] = {
        0x10000, 0xFFFFF000, 0x100000000ull, 0x00007FFFFFFFE000ull,
        0xFFFFFFFFFFFFE000ull, 0xFFFF800000000000ull,
    };
    const uint64_t base = bases[in.ConsumeIntegralInRange<size_t>(0, 5)];
    return base + in.ConsumeIntegralInRange<uint64_t>(0, 3 * kPage);
}

// Caps: family 15h, or the same with every event, IP filtering and a
// bigger minimum buffer, as the input says.
inline LwpCaps pick_caps(FuzzedDataProvider &in)
{
    LwpCaps caps;
    lwp_caps_family15h(&caps);
    if (in.ConsumeBool()) {
        caps.features |= LWP_FEAT_DME | LWP_FEAT_CNH | LWP_FEAT_RNH;
        caps.ip_filtering = true;
        caps.max_events = 6;
        caps.cb_size = 0x19;
        caps.latency_max = 10;
    }
    caps.min_buffer_size = in.ConsumeIntegralInRange<uint8_t>(0, 2);
    const char *field, *why;
    if (!lwp_caps_check(&caps, &field, &why)) {
        // Not a CPU QEMU would create: use the family 15h part.
        lwp_caps_family15h(&caps);
    }
    return caps;
}

inline LwpCpuEnv pick_env(FuzzedDataProvider &in, const LwpCaps *caps)
{
    LwpCpuEnv env{};
    env.caps = caps;
    env.lwp_cfg = in.ConsumeIntegral<uint32_t>() & caps->features & ~1u;
    env.lwp_cfg |= static_cast<uint64_t>(in.ConsumeIntegral<uint16_t>()) << 32;
    env.cpl = in.ConsumeBool() ? 3 : in.ConsumeIntegralInRange<uint8_t>(0, 3);
    env.long_mode = in.ConsumeBool();
    env.mode64 = env.long_mode && in.ConsumeBool();
    env.ds_base = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint32_t>();
    env.ds_limit = in.ConsumeBool() ? 0xFFFFFFFF : in.ConsumeIntegral<uint32_t>();
    env.ds_expand_down = in.ConsumeBool() && in.ConsumeBool();
    env.ds_big = in.ConsumeBool();
    env.ds_writable = !in.ConsumeBool() || in.ConsumeBool();
    env.ds_usable = !in.ConsumeBool() || in.ConsumeBool();
    env.va_bits = in.ConsumeBool() ? 48 : 57;
    // Latitude mode's freedoms of 8.3 (docs/lwp-latitude.rst) for a quarter
    // of the inputs, chosen by what is left of them rather than read from
    // them, so that every corpus entry keeps its meaning.
    const size_t left = in.remaining_bytes();
    if (left % 4 == 3) {
        env.latitude.tail_reread = static_cast<uint8_t>(left / 4 % 17);
        env.latitude.interval_draw = left / 68 % 2;
        env.latitude.seed = left;
    }
    return env;
}

// Map a few pages at input-chosen addresses, filled and protected by it.
inline void fill_memory(FuzzedDataProvider &in, FuzzMem &mem, uint64_t around)
{
    const unsigned n = in.ConsumeIntegralInRange<unsigned>(0, 6);
    for (unsigned i = 0; i < n; i++) {
        const uint64_t page = in.ConsumeBool() ? around + (i - 1) * kPage
                                               : pick_address(in);
        FuzzMem::Page &p = mem.map(page);
        p.readable = !in.ConsumeBool() || in.ConsumeBool();
        p.writable = !in.ConsumeBool() || in.ConsumeBool();
        const std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(
            in.ConsumeIntegralInRange<size_t>(0, 256));
        const size_t at = in.ConsumeIntegralInRange<size_t>(0, kPage - 1);
        for (size_t j = 0; j < bytes.size() && at + j < kPage; j++) {
            p.data[at + j] = bytes[j];
        }
    }
}

// The model's promises about one operation's outcome.
inline void check_outcome(const FuzzMem &mem, const LwpState &before, const LwpState &after,
                          const LwpOutcome &out)
{
    LWP_FUZZ_CHECK(out.status == LWP_OK || out.status == LWP_FAULT_GP ||
                   out.status == LWP_FAULT_PF);
    if (out.status != LWP_OK) {
        LWP_FUZZ_CHECK(states_equal(before, after));
        return;
    }
    LWP_FUZZ_CHECK(out.nwrites <= LWP_MAX_WRITES);
    for (uint32_t i = 0; i < out.nwrites; i++) {
        LWP_FUZZ_CHECK(out.writes[i].len >= 1 && out.writes[i].len <= LWP_RECORD_SIZE);
        LWP_FUZZ_CHECK(mem.writable(out.writes[i].addr, out.writes[i].len));
    }
    if (after.cbaddr) {
        LWP_FUZZ_CHECK(after.buffer_size && after.buffer_size % LWP_RECORD_SIZE == 0);
        LWP_FUZZ_CHECK(after.head % LWP_RECORD_SIZE == 0 && after.head < after.buffer_size);
    }
}

// Run input-chosen instructions and hardware events on @st.
inline void run_operations(FuzzedDataProvider &in, FuzzMem &mem, LwpState &st,
                           const LwpCpuEnv &env)
{
    for (int step = 0; step < 24 && in.remaining_bytes(); step++) {
        LwpState next = st;
        LwpOutcome out{};
        bool ran = true;
        switch (in.ConsumeIntegralInRange<int>(0, 8)) {
        case 0:
            lwp_llwpcb(&next, &env, mem.mem(), in.ConsumeBool() ? 0 : pick_address(in), &out);
            break;
        case 1:
            lwp_slwpcb(&next, &env, mem.mem(), &out);
            break;
        case 2: {
            const uint64_t ip = in.ConsumeIntegral<uint64_t>();
            (void)lwp_lwpval_stores(&next, &env, ip);
            lwp_lwpval(&next, &env, mem.mem(), in.ConsumeIntegral<uint64_t>(),
                       in.ConsumeIntegral<uint32_t>(), in.ConsumeIntegral<uint32_t>(), ip, &out);
            break;
        }
        case 3:
            lwp_lwpins(&next, &env, mem.mem(), in.ConsumeIntegral<uint64_t>(),
                       in.ConsumeIntegral<uint32_t>(), in.ConsumeIntegral<uint32_t>(),
                       in.ConsumeIntegral<uint64_t>(), &out);
            break;
        case 4: {
            uint8_t records[2][LWP_RECORD_SIZE];
            LwpRetired insn{};
            if (next.pending[0]) {
                lwp_store_pending(&next, &env, mem.mem(), &out);
                break;
            }
            if (!next.cache_valid) {
                lwp_prepare(&next, &env, mem.mem(), &out);
                break;
            }
            insn.ip = in.ConsumeIntegral<uint64_t>();
            insn.fallthrough = insn.ip + in.ConsumeIntegralInRange<uint8_t>(1, 15);
            insn.next_ip = in.ConsumeBool() ? insn.fallthrough : in.ConsumeIntegral<uint64_t>();
            insn.branch = in.ConsumeIntegralInRange<uint8_t>(0, LWP_BRANCH_CLASSES - 1);
            insn.counted = in.ConsumeBool();
            insn.taken = in.ConsumeBool();
            const unsigned n =
                lwp_retire(&next, env.caps, LWP_CFG_COREID(env.lwp_cfg), &insn,
                           records);
            LWP_FUZZ_CHECK(n <= 2);
            for (unsigned i = 0; i < n; i++) {
                LwpState before = next;
                std::memcpy(next.pending, records[i], LWP_RECORD_SIZE);
                lwp_store_pending(&next, &env, mem.mem(), &out);
                std::memcpy(before.pending, records[i], LWP_RECORD_SIZE);
                check_outcome(mem, before, next, out);
                if (out.status != LWP_OK) {
                    break;
                }
                mem.apply(out);
            }
            st = next;
            ran = false;
            break;
        }
        case 5: {
            LwpTbShape tb{};
            uint32_t split = 0;
            if (next.pending[0] || (!next.cache_valid && env.caps->ip_filtering)) {
                ran = false;
                break;
            }
            tb.first_ip = in.ConsumeIntegral<uint64_t>();
            tb.icount = in.ConsumeIntegralInRange<uint32_t>(1, 512);
            tb.charged = in.ConsumeIntegralInRange<uint32_t>(tb.icount - 1, tb.icount);
            tb.last_ip = tb.first_ip + in.ConsumeIntegralInRange<uint32_t>(0, 4096);
            tb.branch = in.ConsumeIntegralInRange<uint8_t>(0, LWP_BRANCH_CLASSES - 1);
            tb.last_at_exit = in.ConsumeBool();
            const LwpState before = next;
            const LwpTbAction a = lwp_tb_plan(&next, env.caps, &tb, &split);
            // Its last instruction is counted at the exit only if it can be.
            LWP_FUZZ_CHECK(a <= LWP_TB_SPLIT ||
                           (a == LWP_TB_RETIRE_LAST && tb.last_at_exit &&
                            tb.charged == tb.icount &&
                            tb.branch != LWP_BRANCH_NONE));
            if (a == LWP_TB_RETIRE_LAST) {
                // The branch retiring at the exit leaves what the TB cut to
                // length leaves: its instructions counted one by one, none
                // of them but the last gathering a record.
                const uint8_t core_id = LWP_CFG_COREID(env.lwp_cfg);
                LwpState cut = before;
                LwpRetired insn{};
                uint8_t records[2][LWP_RECORD_SIZE];
                uint8_t exit_records[2][LWP_RECORD_SIZE];
                insn.counted = true;
                for (uint32_t i = 0; i + 1 < tb.icount; i++) {
                    insn.ip = tb.first_ip;
                    LWP_FUZZ_CHECK(lwp_retire(&cut, env.caps, core_id, &insn,
                                              records) == 0);
                }
                insn.ip = tb.last_ip;
                insn.next_ip = tb.first_ip;
                insn.branch = tb.branch;
                insn.taken = true;
                LwpState at_exit = next;
                const unsigned n = lwp_retire(&cut, env.caps, core_id, &insn,
                                              records);
                LWP_FUZZ_CHECK(lwp_retire(&at_exit, env.caps, core_id, &insn,
                                          exit_records) == n && n > 0);
                LWP_FUZZ_CHECK(std::memcmp(records, exit_records,
                                           n * LWP_RECORD_SIZE) == 0);
                LWP_FUZZ_CHECK(std::memcmp(cut.counter, at_exit.counter,
                                           sizeof(cut.counter)) == 0);
            }
            if (a == LWP_TB_SPLIT) {
                // A TB is cut before or at its end.
                LWP_FUZZ_CHECK(split >= 1 && split <= tb.icount);
            }
            st = next;
            ran = false;
            break;
        }
        case 6: {
            uint8_t area[LWP_XSAVE_SIZE];
            std::memset(area, 0xCC, sizeof(area));
            const bool present = lwp_xsave(&next, area);
            lwp_xrstor(&next, &env, area, present);
            st = next;
            ran = false;
            break;
        }
        case 7:
            LWP_FUZZ_CHECK(lwp_cbaddr_write(&next, 0));
            st = next;
            ran = false;
            break;
        default: {
            LwpHwConfig cfg;
            lwp_hw_config(&next, env.caps, &cfg);
            ran = false;
            break;
        }
        }
        if (!ran) {
            continue;
        }
        check_outcome(mem, st, next, out);
        if (out.status == LWP_OK) {
            mem.apply(out);
            st = next;
        }
    }
}

} // namespace lwpfuzz

#endif
