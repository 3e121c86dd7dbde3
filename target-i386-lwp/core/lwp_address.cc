// SPDX-License-Identifier: GPL-2.0-or-later
// Address rules for the LWPCB and the ring buffer (AMD pub. 43724 rev 3.08,
// sections 5.1 and 7.4).

#include "lwp_address.h"

namespace lwp {

bool ds_store_ok(const LwpCpuEnv &env, uint64_t offset, uint64_t len)
{
    if (!env.ds_usable || !env.ds_writable) {
        return false;
    }
    if (len == 0) {
        len = 1;
    }
    const uint64_t last = offset + (len - 1);
    if (last < offset) {
        return false;
    }
    if (env.ds_expand_down) {
        const uint64_t upper = env.ds_big ? 0xFFFFFFFFull : 0xFFFFull;
        return offset > env.ds_limit && last <= upper;
    }
    return last <= env.ds_limit;
}

uint64_t linear_from_effective(const LwpCpuEnv &env, uint64_t ea)
{
    if (env.mode64) {
        return ea;
    }
    return (ea + env.ds_base) & kLinear32Mask;
}

uint64_t effective_from_linear(const LwpCpuEnv &env, uint64_t linear)
{
    if (env.mode64) {
        return linear;
    }
    return (linear - env.ds_base) & kLinear32Mask;
}

bool effective_range_ok(const LwpCpuEnv &env, uint64_t ea, uint64_t len)
{
    if (env.mode64) {
        return canonical_range(ea, len, canonical_bits(env));
    }
    return ds_store_ok(env, ea, len);
}

bool linear_range_ok(const LwpCpuEnv &env, uint64_t linear, uint64_t len)
{
    if (env.mode64) {
        return canonical_range(linear, len, canonical_bits(env));
    }
    // Outside 64-bit mode DS can only produce 32-bit linear addresses; an
    // address above 4 GiB (restored from a 64-bit context) would otherwise
    // be silently truncated into something the check below accepts.
    if (linear >> 32) {
        return false;
    }
    return ds_store_ok(env, effective_from_linear(env, linear), len);
}

} // namespace lwp
