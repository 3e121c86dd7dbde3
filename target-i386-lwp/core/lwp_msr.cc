// SPDX-License-Identifier: GPL-2.0-or-later
// The LWP MSRs (AMD pub. 43724 rev 3.08, sections 4.2 and 4.3) and the reset
// state they share with INIT and XRSTOR's processor-supplied values.

#include <string.h>

#include "lwp/lwp-model.h"

namespace {

// What a family 15h part does with WRMSR LWP_CFG (a bit-by-bit probe of an
// FX-8150, 8000_001C.EDX = 8000000F, recorded in VirtualBox's CPU
// database): bits 63:48 and bit 0 are write-ignored -- no #GP, and the
// write leaves them as they were (zero: nothing can set them); bits 47:40
// VECTOR and 39:32 COREID take any value; of bits 31:1, a feature the CPU
// supports is writable and any other bit raises #GP (4.2: "only supported
// features can be made available").
constexpr uint64_t kCfgWriteIgnored = 0xFFFF000000000001ull;
constexpr uint64_t kCfgFeatureBits = 0x00000000FFFFFFFEull;

} // namespace

extern "C" {

bool lwp_cfg_write_ok(const LwpCaps *caps, uint64_t value) noexcept
{
    return !(value & kCfgFeatureBits & ~static_cast<uint64_t>(caps->features));
}

uint64_t lwp_cfg_written(uint64_t old_value, uint64_t value) noexcept
{
    return (value & ~kCfgWriteIgnored) | (old_value & kCfgWriteIgnored);
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
