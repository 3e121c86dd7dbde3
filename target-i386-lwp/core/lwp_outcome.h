// SPDX-License-Identifier: GPL-2.0-or-later
// Starting and abandoning an LwpOutcome: every entry point reports through
// one, and a faulting operation must leave nothing of its work in it.

#ifndef LWP_CORE_OUTCOME_H
#define LWP_CORE_OUTCOME_H

#include "lwp/lwp-model.h"

namespace lwp {

// Only the header fields: writes[] is meaningful up to nwrites, and the
// hot paths (LWPVAL) should not clear 1.5 KiB each time.
inline void outcome_begin(LwpOutcome *out)
{
    out->status = LWP_OK;
    out->fault_addr = 0;
    out->fault_write = false;
    out->nwrites = 0;
    out->interrupt = false;
    out->value = 0;
}

// The fault (status, fault_addr, fault_write) stays; its side effects go.
inline void outcome_abandon(LwpOutcome *out)
{
    out->nwrites = 0;
    out->interrupt = false;
    out->value = 0;
}

} // namespace lwp

#endif // LWP_CORE_OUTCOME_H
