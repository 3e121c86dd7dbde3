// SPDX-License-Identifier: GPL-2.0-or-later
// The LWP control block (LWPCB, AMD pub. 43724 rev 3.08, section 6): byte
// layout, field encodings and the validation LLWPCB applies to it.

#ifndef LWP_CORE_LWPCB_H
#define LWP_CORE_LWPCB_H

#include <stdint.h>

#include "lwp/lwp-model.h"

namespace lwp {

// Fixed part of the LWPCB (figure 6-1, table 6-1); byte offsets.
constexpr uint32_t kCbFlags = 0;
constexpr uint32_t kCbBufferSize = 4;     // bits 27:0; bits 31:28 are Random
constexpr uint32_t kCbBufferBase = 8;
constexpr uint32_t kCbHead = 16;
constexpr uint32_t kCbMissedEvents = 24;
constexpr uint32_t kCbThreshold = 32;
constexpr uint32_t kCbFilters = 36;
constexpr uint32_t kCbBaseIp = 40;
constexpr uint32_t kCbLimitIp = 48;
constexpr uint32_t kCbTail = 64;
constexpr uint32_t kCbFixedEnd = 88;      // reserved area starts here, up to E
// Everything the store path may need from the fixed part (through the tail).
constexpr uint32_t kCbStoreFieldsEnd = kCbTail + 4;

// The largest LWPCB CPUID can describe (LwpCbSize is 8 bits, quadwords).
constexpr uint32_t kMaxCbBytes = 255 * 8;

constexpr uint32_t kBufferSizeMask = 0x0FFFFFFF;
constexpr unsigned kRandomShift = 28;
constexpr uint32_t kFiltersReserved = 0x01FFE000;   // bits 24:13
// EventIntervaln / EventCountern: a 26-bit signed value, bits 31:26 reserved.
constexpr uint32_t kEventFieldMask = 0x03FFFFFF;
constexpr int32_t kEventFieldMax = 0x01FFFFFF;
constexpr int32_t kEventFieldMin = -0x02000000;

// Flags bits that name events (1..LWP_MAX_EVENT); bit 0 is not an event.
constexpr uint32_t kFlagsEvents = ((1u << (LWP_MAX_EVENT + 1)) - 1) & ~1u;
constexpr uint32_t kFlagsInt = 1u << 31;

inline uint32_t event_bit(unsigned id)
{
    return 1u << id;
}

// Bytes of the LWPCB (LwpCbSize quadwords).
inline uint32_t cb_bytes(const LwpCaps &caps)
{
    return static_cast<uint32_t>(caps.cb_size) * 8;
}

// Events with an EventIntervaln/EventCountern pair inside the LWPCB.
// Inline: every record asks.
inline unsigned cb_event_count(const LwpCaps &caps)
{
    // Clamp to what the LWPCB really has room for, so that inconsistent
    // capabilities can never make the model index outside it.
    const uint32_t size = cb_bytes(caps);
    unsigned count = caps.max_events < LWP_MAX_EVENT ? caps.max_events
                                                     : LWP_MAX_EVENT;
    if (caps.event_offset < kCbFixedEnd || caps.event_offset >= size) {
        return 0;
    }
    const unsigned room = (size - caps.event_offset) / 8;
    return count < room ? count : room;
}

// Whether event @id is on in Flags and has its fields in the LWPCB: the
// events whose counters a flush writes and a stored record restarts.
inline bool event_in_cb(const LwpState &st, const LwpCaps &caps, unsigned id)
{
    return id >= 1 && id <= cb_event_count(caps) && (st.flags & event_bit(id));
}

// Offset of EventIntervaln; EventCountern follows at + 4.
uint32_t event_interval_offset(const LwpCaps &caps, unsigned id);
uint32_t event_counter_offset(const LwpCaps &caps, unsigned id);

// Smallest ring buffer, bytes: 32 * LwpMinBufferSize records.
uint32_t min_buffer_bytes(const LwpCaps &caps);

// Flags bits that LLWPCB/XRSTOR may enable: the available features
// (LWP_CFG[31:0], a subset of the supported ones) that are events with a
// slot in the LWPCB, and INT.
uint32_t available_flags(const LwpCpuEnv &env);

// 26-bit two's complement field to int32_t and back.
int32_t event_field_value(uint32_t raw);
uint32_t event_field_encode(int32_t value);

// EventIntervaln as LLWPCB uses it: event 1 may be 0, the others have the
// hardware minimum; negative values are raised to those.
int32_t effective_interval(unsigned id, int32_t interval);

// A complete LWPCB read by LLWPCB.
struct CbImage {
    uint8_t bytes[kMaxCbBytes];
    uint32_t len;

    uint32_t u32(uint32_t offset) const;
    uint64_t u64(uint32_t offset) const;
};

// True if every reserved field of @cb is zero (table 6-1, figure 6-3).
bool cb_reserved_fields_clear(const LwpCaps &caps, const CbImage &cb);

} // namespace lwp

#endif // LWP_CORE_LWPCB_H
