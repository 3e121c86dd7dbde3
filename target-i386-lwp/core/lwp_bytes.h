// SPDX-License-Identifier: GPL-2.0-or-later
// Little-endian field access for the byte images LWP exchanges with guest
// memory (LWPCB, event records, XSAVE component 62).  The guest's layout is
// little-endian whatever the host is, so fields are assembled byte by byte.

#ifndef LWP_CORE_BYTES_H
#define LWP_CORE_BYTES_H

#include <stdint.h>

namespace lwp {

inline uint32_t load_le32(const uint8_t *p)
{
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 |
           static_cast<uint32_t>(p[3]) << 24;
}

inline uint64_t load_le64(const uint8_t *p)
{
    return static_cast<uint64_t>(load_le32(p)) |
           static_cast<uint64_t>(load_le32(p + 4)) << 32;
}

inline void store_le16(uint8_t *p, uint16_t v)
{
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}

inline void store_le32(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++) {
        p[i] = static_cast<uint8_t>(v >> (8 * i));
    }
}

inline void store_le64(uint8_t *p, uint64_t v)
{
    store_le32(p, static_cast<uint32_t>(v));
    store_le32(p + 4, static_cast<uint32_t>(v >> 32));
}

} // namespace lwp

#endif // LWP_CORE_BYTES_H
