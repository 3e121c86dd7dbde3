// SPDX-License-Identifier: GPL-2.0-or-later
// Address rules LWP applies to the LWPCB and the ring buffer: effective to
// linear conversion through DS, DS limit and type checks outside 64-bit
// mode, canonical form in 64-bit mode.

#ifndef LWP_CORE_ADDRESS_H
#define LWP_CORE_ADDRESS_H

#include <stdint.h>

#include "lwp/lwp-model.h"

namespace lwp {

// Linear addresses wrap at 4 GiB outside 64-bit mode.
constexpr uint64_t kLinear32Mask = 0xFFFFFFFFull;

constexpr unsigned kDefaultVaBits = 48;

// Width used for canonical checks (LwpCpuEnv.va_bits, 48 if unset).
inline unsigned canonical_bits(const LwpCpuEnv &env)
{
    return env.va_bits ? env.va_bits : kDefaultVaBits;
}

inline bool is_canonical(uint64_t addr, unsigned bits)
{
    if (bits >= 64) {
        return true;
    }
    const unsigned unused = 64 - bits;
    const int64_t extended = static_cast<int64_t>(addr << unused) >> unused;
    return static_cast<uint64_t>(extended) == addr;
}

// [addr, addr + len) holds only canonical addresses of a @bits-wide space
// and does not wrap around the top of the address space.  Inline: every
// record's store asks.
inline bool canonical_range(uint64_t addr, uint64_t len, unsigned bits)
{
    if (len == 0) {
        return is_canonical(addr, bits);
    }
    const uint64_t last = addr + (len - 1);
    if (last < addr) {
        return false;
    }
    // Both ends canonical and on the same side of the hole means every
    // byte in between is canonical too.
    return is_canonical(addr, bits) && is_canonical(last, bits) &&
           (addr >> 63) == (last >> 63);
}

// A store through DS to offsets [offset, offset + len) passes the segment
// checks: DS usable, writable, and the whole range inside the limit.
bool ds_store_ok(const LwpCpuEnv &env, uint64_t offset, uint64_t len);

// Effective (DS-relative) address to linear, as LLWPCB converts it.
uint64_t linear_from_effective(const LwpCpuEnv &env, uint64_t ea);

// Linear address back to effective, as SLWPCB and XRSTOR compute it.
uint64_t effective_from_linear(const LwpCpuEnv &env, uint64_t linear);

// LLWPCB: the range given by its effective address may be used by LWP
// (DS checks outside 64-bit mode, canonical form in 64-bit mode).
bool effective_range_ok(const LwpCpuEnv &env, uint64_t ea, uint64_t len);

// XRSTOR at CPL != 0: the range given by its linear address is one the
// program could reach for stores through the current DS (see
// docs/lwp-xrstor-checks.rst).
bool linear_range_ok(const LwpCpuEnv &env, uint64_t linear, uint64_t len);

} // namespace lwp

#endif // LWP_CORE_ADDRESS_H
