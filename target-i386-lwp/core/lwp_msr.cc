// SPDX-License-Identifier: GPL-2.0-or-later
// The LWP MSRs (AMD pub. 43724 rev 3.08, sections 4.2 and 4.3) and the reset
// state they share with INIT and XRSTOR's processor-supplied values.

#include <string.h>

#include "lwp/lwp-model.h"

namespace {

// LWP_CFG bits 63:48 are reserved; 47:40 VECTOR and 39:32 COREID are free.
constexpr uint64_t kCfgReserved = 0xFFFF000000000000ull;

} // namespace

extern "C" {

bool lwp_cfg_write_ok(const LwpCaps *caps, uint64_t value) noexcept
{
    // Only supported features can be made available (4.2).
    const uint32_t features = static_cast<uint32_t>(value);
    return !(features & ~caps->features) && !(value & kCfgReserved);
}

bool lwp_cbaddr_write(LwpState *st, uint64_t value) noexcept
{
    // LLWPCB or XRSTOR load an LWPCB; WRMSR can only stop LWP (4.3).
    if (value) {
        return false;
    }
    lwp_state_reset(st);
    return true;
}

void lwp_state_reset(LwpState *st) noexcept
{
    // Padding too: nothing of the previous session may survive, whatever
    // later copies or compares the raw bytes.
    memset(st, 0, sizeof(*st));
}

} // extern "C"
