// SPDX-License-Identifier: GPL-2.0-or-later
// LWPCB layout and field encodings (AMD pub. 43724 rev 3.08, section 6).

#include "lwpcb.h"

#include "lwp_bytes.h"

namespace lwp {

namespace {

constexpr uint32_t kRecordsPerMinUnit = 32;

// Reserved byte ranges of the fixed part: [begin, end).
struct ReservedBytes {
    uint32_t begin, end;
};
constexpr ReservedBytes kFixedReserved[] = {
    {20, 24},
    {56, 64},
    {68, 72},
};

bool bytes_clear(const CbImage &cb, uint32_t begin, uint32_t end)
{
    for (uint32_t i = begin; i < end && i < cb.len; i++) {
        if (cb.bytes[i]) {
            return false;
        }
    }
    return true;
}

} // namespace

uint32_t event_interval_offset(const LwpCaps &caps, unsigned id)
{
    return caps.event_offset + 8 * (id - 1);
}

uint32_t event_counter_offset(const LwpCaps &caps, unsigned id)
{
    return event_interval_offset(caps, id) + 4;
}

uint32_t min_buffer_bytes(const LwpCaps &caps)
{
    return kRecordsPerMinUnit * caps.min_buffer_size * LWP_RECORD_SIZE;
}

uint32_t available_flags(const LwpCpuEnv &env)
{
    uint32_t events = 0;
    for (unsigned id = 1; id <= cb_event_count(*env.caps); id++) {
        events |= event_bit(id);
    }
    return static_cast<uint32_t>(env.lwp_cfg) & env.caps->features &
           (events | kFlagsInt);
}

int32_t event_field_value(uint32_t raw)
{
    // Shift the 26-bit field to the top and back to sign-extend it.
    return static_cast<int32_t>(raw << 6) >> 6;
}

uint32_t event_field_encode(int32_t value)
{
    return static_cast<uint32_t>(value) & kEventFieldMask;
}

int32_t effective_interval(unsigned id, int32_t interval)
{
    const int32_t minimum = id == LWP_EVENT_VAL ? 0 : LWP_MIN_HW_INTERVAL;
    return interval < minimum ? minimum : interval;
}

uint32_t CbImage::u32(uint32_t offset) const
{
    return offset + 4 <= len ? load_le32(bytes + offset) : 0;
}

uint64_t CbImage::u64(uint32_t offset) const
{
    return offset + 8 <= len ? load_le64(bytes + offset) : 0;
}

bool cb_reserved_fields_clear(const LwpCaps &caps, const CbImage &cb)
{
    for (const ReservedBytes &r : kFixedReserved) {
        if (!bytes_clear(cb, r.begin, r.end)) {
            return false;
        }
    }
    if (!bytes_clear(cb, kCbFixedEnd, caps.event_offset)) {
        return false;
    }
    if (cb.u32(kCbFilters) & kFiltersReserved) {
        return false;
    }
    // Every event slot the LWPCB has, enabled or not: the reserved bits
    // are part of the layout, not of the event.
    for (unsigned id = 1; id <= cb_event_count(caps); id++) {
        if ((cb.u32(event_interval_offset(caps, id)) & ~kEventFieldMask) ||
            (cb.u32(event_counter_offset(caps, id)) & ~kEventFieldMask)) {
            return false;
        }
    }
    return true;
}

} // namespace lwp
