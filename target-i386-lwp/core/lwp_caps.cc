// SPDX-License-Identifier: GPL-2.0-or-later
// LWP capability model: CPUID Fn8000_001C encoding and consistency rules
// (AMD pub. 43724 rev 3.08, section 3 and table 3-1).

#include "lwp/lwp-caps.h"

namespace {

// Fixed part of the LWPCB (table 6-1): bytes 0..87 precede the event area.
constexpr unsigned kLwpcbFixedBytes = 88;
// LWP version 1 event records are 32 bytes.
constexpr unsigned kV1EventSize = 32;
// Highest EventId with a defined meaning; 255 (LWPINS) is never counted.
constexpr unsigned kHighestDefinedEvent = 6;

template <typename T>
constexpr uint32_t field(T value, unsigned shift)
{
    return static_cast<uint32_t>(value) << shift;
}

constexpr uint32_t bits(uint32_t reg, unsigned shift, unsigned width)
{
    return (reg >> shift) & ((1u << width) - 1);
}

// Highest EventId whose "supported" bit is set (0 if none).
unsigned highest_supported_event(uint32_t features)
{
    unsigned highest = 0;
    for (unsigned id = 1; id <= kHighestDefinedEvent; id++) {
        if (features & (1u << id)) {
            highest = id;
        }
    }
    return highest;
}

struct CheckResult {
    const char *field;
    const char *why;
};

// Returns {nullptr, nullptr} when consistent.
CheckResult check(const LwpCaps &c)
{
    if (!(c.features & LWP_FEAT_AVAIL)) {
        if (c.features) {
            return {"lwp", "LWP features are set but LWP itself is not"};
        }
        return {nullptr, nullptr};
    }
    if (c.features & ~LWP_FEAT_DEFINED) {
        return {"lwp", "has reserved feature bits 30:7 set (they must be zero)"};
    }
    if (c.version < 1 || c.version > 127) {
        return {"lwp-version", "must be 1..127"};
    }
    if (c.event_size != kV1EventSize) {
        return {"lwp-event-size", "must be 32 (LWP version 1 records)"};
    }
    if (c.event_offset % 8 || c.event_offset < kLwpcbFixedBytes) {
        return {"lwp-event-offset", "must be a multiple of 8 and at least 88"};
    }
    if (c.max_events < highest_supported_event(c.features) ||
        c.max_events > kHighestDefinedEvent) {
        return {"lwp-max-events",
                "must cover every supported event and be at most 6"};
    }
    if (c.cb_size < c.event_offset / 8 + c.max_events) {
        return {"lwp-cb-size",
                "must be at least lwp-event-offset/8 + lwp-max-events"};
    }
    const bool dme = c.features & LWP_FEAT_DME;
    if (!dme && (c.latency_max || c.data_address || c.latency_rnd ||
                 c.cache_levels || c.cache_latency)) {
        return {"lwpdme", "is required by the cache-miss fields (lwpdaddr, lwpcachelvl, "
                "lwpcachelat, lwp-latency-max, lwp-latency-rnd)"};
    }
    if (dme) {
        if (c.latency_max < 10 || c.latency_max > 31) {
            return {"lwp-latency-max", "must be 10..31 with lwpdme"};
        }
        if (c.latency_rnd > 4) {
            return {"lwp-latency-rnd", "must be 0..4"};
        }
        if (!c.cache_levels && !c.cache_latency) {
            return {"lwpdme", "needs lwpcachelvl or lwpcachelat"};
        }
    }
    if (c.branch_prediction && !(c.features & LWP_FEAT_BRE)) {
        return {"lwpbrpred", "needs the branches retired event (lwpbre)"};
    }
    return {nullptr, nullptr};
}

} // namespace

extern "C" {

void lwp_caps_family15h(LwpCaps *caps) noexcept
{
    // CPUID 8000_001C of an FX-81xx: EBX=80032013 ECX=00010200 EDX=8000000F.
    *caps = LwpCaps{};
    caps->features = LWP_FEAT_AVAIL | LWP_FEAT_VAL | LWP_FEAT_IRE |
                     LWP_FEAT_BRE | LWP_FEAT_INT;
    caps->cb_size = 0x13;
    caps->event_size = 32;
    caps->max_events = 3;
    caps->event_offset = 0x80;
    caps->version = 1;
    caps->min_buffer_size = 1;
}

void lwp_caps_to_cpuid(const LwpCaps *c, LwpCpuidRegs *r) noexcept
{
    r->eax = 0;
    r->ebx = field(c->cb_size, 0) | field(c->event_size, 8) |
             field(c->max_events, 16) | field(c->event_offset, 24);
    r->ecx = field(c->latency_max & 0x1f, 0) | field(c->data_address, 5) |
             field(c->latency_rnd & 0x7, 6) | field(c->version & 0x7f, 9) |
             field(c->min_buffer_size, 16) | field(c->branch_prediction, 28) |
             field(c->ip_filtering, 29) | field(c->cache_levels, 30) |
             field(c->cache_latency, 31);
    r->edx = c->features;
}

void lwp_caps_from_cpuid(const LwpCpuidRegs *r, LwpCaps *c) noexcept
{
    *c = LwpCaps{};
    c->features = r->edx;
    c->cb_size = bits(r->ebx, 0, 8);
    c->event_size = bits(r->ebx, 8, 8);
    c->max_events = bits(r->ebx, 16, 8);
    c->event_offset = bits(r->ebx, 24, 8);
    c->latency_max = bits(r->ecx, 0, 5);
    c->data_address = bits(r->ecx, 5, 1);
    c->latency_rnd = bits(r->ecx, 6, 3);
    c->version = bits(r->ecx, 9, 7);
    c->min_buffer_size = bits(r->ecx, 16, 8);
    c->branch_prediction = bits(r->ecx, 28, 1);
    c->ip_filtering = bits(r->ecx, 29, 1);
    c->cache_levels = bits(r->ecx, 30, 1);
    c->cache_latency = bits(r->ecx, 31, 1);
}

void lwp_cpuid_leaf(const LwpCaps *caps, uint64_t lwp_cfg, bool xcr0_lwp,
                    LwpCpuidRegs *regs) noexcept
{
    if (!(caps->features & LWP_FEAT_AVAIL)) {
        *regs = LwpCpuidRegs{};
        return;
    }
    lwp_caps_to_cpuid(caps, regs);
    regs->eax = (static_cast<uint32_t>(lwp_cfg) & regs->edx & ~LWP_FEAT_AVAIL) |
                (xcr0_lwp ? LWP_FEAT_AVAIL : 0);
}

bool lwp_caps_check(const LwpCaps *caps, const char **field_name,
                    const char **why) noexcept
{
    const CheckResult r = check(*caps);
    if (field_name) {
        *field_name = r.field;
    }
    if (why) {
        *why = r.why;
    }
    return r.field == nullptr;
}

} // extern "C"
