/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: LWP capability policy across hosts (AMD pub. 43724, 3.3 and
 * 8.2.3) in the style of Xen's CPUID policy library: pure functions over
 * plain LwpCaps, no hypervisor involved.
 *
 *  - lwp_caps_baseline(): the least common denominator of a pool of hosts,
 *    field by field with the rule each field needs.
 *  - lwp_caps_covers(): whether a destination's capabilities can carry a
 *    guest that was started with another set (migration check).
 */
#ifndef LWP_POLICY_H
#define LWP_POLICY_H

#include "lwp-caps.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a pool has no common LWP configuration. */
typedef struct LwpPolicyConflict {
    const char *field;        /* property name, e.g. "lwp-event-size" */
    unsigned host_a, host_b;  /* indexes of two hosts that disagree */
} LwpPolicyConflict;

/*
 * Least common denominator of @n >= 1 hosts into @out.  Feature and flag bits
 * are ANDed; LwpMaxEvents, LwpVersion and LwpLatencyMax take the minimum;
 * LwpMinBufferSize, LwpCbSize and LwpLatencyRnd the maximum; LwpEventSize and
 * LwpEventOffset must agree.  Fields that depend on a feature no longer
 * common (the cache fields without LwpDME, LwpBranchPrediction without
 * LwpBRE) are cleared.  A host without LWP makes the baseline "no LWP".
 * Returns false (and fills @conflict) when the pool is incompatible.
 */
bool lwp_caps_baseline(const LwpCaps *hosts, unsigned n, LwpCaps *out,
                       LwpPolicyConflict *conflict) LWP_NOEXCEPT;

/*
 * True if a guest started with capabilities @guest can run on @dest; if
 * not, *missing names the first capability @dest lacks (a property name).
 */
bool lwp_caps_covers(const LwpCaps *dest, const LwpCaps *guest,
                     const char **missing) LWP_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* LWP_POLICY_H */
