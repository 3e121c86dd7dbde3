// SPDX-License-Identifier: GPL-2.0-or-later
// LWP capability policy across hosts: least common denominator and the
// migration compatibility check (AMD pub. 43724, 3.3 and 8.2.3).

#include "lwp/lwp-policy.h"

#include <algorithm>

namespace {

// Clear what depends on features that did not survive the AND.
void drop_orphaned_fields(LwpCaps &c)
{
    if (!(c.features & LWP_FEAT_AVAIL)) {
        c = LwpCaps{};
        return;
    }
    // DME needs a way to filter cache events (table 3-1): without a common
    // one the event is not common either.
    if (!c.cache_levels && !c.cache_latency) {
        c.features &= ~LWP_FEAT_DME;
    }
    if (!(c.features & LWP_FEAT_DME)) {
        c.latency_max = 0;
        c.latency_rnd = 0;
        c.data_address = false;
        c.cache_levels = false;
        c.cache_latency = false;
    }
    if (!(c.features & LWP_FEAT_BRE)) {
        c.branch_prediction = false;
    }
}

struct Rule {
    const char *field;
    bool ok;
};

} // namespace

extern "C" {

bool lwp_caps_baseline(const LwpCaps *hosts, unsigned n, LwpCaps *out,
                       LwpPolicyConflict *conflict) noexcept
{
    *out = LwpCaps{};
    if (n == 0) {
        return true;
    }
    for (unsigned i = 0; i < n; i++) {
        if (!(hosts[i].features & LWP_FEAT_AVAIL)) {
            return true;            // one host without LWP: the pool has none
        }
    }
    LwpCaps b = hosts[0];
    for (unsigned i = 1; i < n; i++) {
        const LwpCaps &h = hosts[i];
        // The record and LWPCB layouts must agree: software built for one
        // host would misread records or the LWPCB on the other.
        const char *clash = h.event_size != b.event_size ? "lwp-event-size" :
                            h.event_offset != b.event_offset ? "lwp-event-offset" :
                            nullptr;
        if (clash) {
            // b keeps host 0's layout, so host 0 and host i disagree.
            if (conflict) {
                *conflict = LwpPolicyConflict{clash, 0, i};
            }
            *out = LwpCaps{};
            return false;
        }
        b.features &= h.features;
        b.data_address = b.data_address && h.data_address;
        b.branch_prediction = b.branch_prediction && h.branch_prediction;
        b.ip_filtering = b.ip_filtering && h.ip_filtering;
        b.cache_levels = b.cache_levels && h.cache_levels;
        b.cache_latency = b.cache_latency && h.cache_latency;
        b.max_events = std::min(b.max_events, h.max_events);
        b.version = std::min(b.version, h.version);
        b.latency_max = std::min(b.latency_max, h.latency_max);
        b.min_buffer_size = std::max(b.min_buffer_size, h.min_buffer_size);
        b.cb_size = std::max(b.cb_size, h.cb_size);
        b.latency_rnd = std::max(b.latency_rnd, h.latency_rnd);
    }
    drop_orphaned_fields(b);
    *out = b;
    return true;
}

bool lwp_caps_covers(const LwpCaps *dest, const LwpCaps *guest,
                     const char **missing) noexcept
{
    const LwpCaps &d = *dest, &g = *guest;
    uint32_t lost = g.features & ~d.features;
    static const char *const feature_names[32] = {
        "lwp", "lwpval", "lwpire", "lwpbre", "lwpdme", "lwpcnh", "lwprnh",
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, "lwpint",
    };
    const char *lost_feature = nullptr;
    for (int bit = 0; bit < 32 && lost; bit++) {
        if (lost & (1u << bit)) {
            lost_feature = feature_names[bit] ? feature_names[bit] : "lwp";
            break;
        }
    }
    const bool guest_has_lwp = g.features & LWP_FEAT_AVAIL;
    const bool guest_has_dme = g.features & LWP_FEAT_DME;
    // Each rule states what the destination must offer for software that
    // discovered the guest's values to keep working.
    const Rule rules[] = {
        {lost_feature, lost == 0},
        {"lwpdaddr", !g.data_address || d.data_address},
        {"lwpbrpred", !g.branch_prediction || d.branch_prediction},
        {"lwpipf", !g.ip_filtering || d.ip_filtering},
        {"lwpcachelvl", !g.cache_levels || d.cache_levels},
        {"lwpcachelat", !g.cache_latency || d.cache_latency},
        {"lwp-event-size", !guest_has_lwp || d.event_size == g.event_size},
        {"lwp-event-offset", !guest_has_lwp || d.event_offset == g.event_offset},
        {"lwp-max-events", d.max_events >= g.max_events},
        {"lwp-version", d.version >= g.version},
        {"lwp-latency-max", !guest_has_dme || d.latency_max >= g.latency_max},
        // The guest sized its LWPCBs and rings by its own CPUID.
        {"lwp-cb-size", !guest_has_lwp || d.cb_size <= g.cb_size},
        {"lwp-min-buffer-size", !guest_has_lwp || d.min_buffer_size <= g.min_buffer_size},
        {"lwp-latency-rnd", !guest_has_dme || d.latency_rnd <= g.latency_rnd},
    };
    for (const Rule &r : rules) {
        if (!r.ok) {
            if (missing) {
                *missing = r.field;
            }
            return false;
        }
    }
    if (missing) {
        *missing = nullptr;
    }
    return true;
}

} // extern "C"
