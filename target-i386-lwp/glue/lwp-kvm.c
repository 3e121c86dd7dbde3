/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: LWP under KVM.  The host's KVM decides: LWP is offered only when
 * KVM_GET_SUPPORTED_CPUID reports it (8000_0001.ECX[15], leaf 8000_001C) and
 * XCR0[62] is among the XSAVE components KVM supports.  The numeric fields
 * of leaf 8000_001C cannot be filtered like feature bits: "-cpu host" takes
 * the host's, and any other model must be covered by the host (the rules of
 * migration, lwp_caps_covers()), or the guest does not start.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "cpu.h"
#include "kvm/kvm_i386.h"
#include "system/kvm.h"
#include "lwp/lwp-caps.h"
#include "lwp/lwp-policy.h"
#include "lwp-qemu.h"

/* Leaf 8000_001C as this host's KVM supports it. */
static void lwp_kvm_host_caps(LwpCaps *host)
{
    KVMState *s = kvm_state;
    LwpCpuidRegs regs = {
        .ebx = kvm_arch_get_supported_cpuid(s, 0x8000001C, 0, R_EBX),
        .ecx = kvm_arch_get_supported_cpuid(s, 0x8000001C, 0, R_ECX),
        .edx = kvm_arch_get_supported_cpuid(s, 0x8000001C, 0, R_EDX),
    };

    lwp_caps_from_cpuid(&regs, host);
    if (!(kvm_arch_get_supported_cpuid(s, 0x80000001, 0, R_ECX) &
          CPUID_EXT3_LWP)) {
        memset(host, 0, sizeof(*host));
    }
}

static void lwp_kvm_drop(X86CPU *cpu)
{
    CPUX86State *env = &cpu->env;

    env->features[FEAT_8000_0001_ECX] &= ~CPUID_EXT3_LWP;
    env->features[FEAT_8000_001C_EDX] = 0;
    env->features[FEAT_8000_001C_ECX] = 0;
    env->features[FEAT_XSAVE_XCR0_HI] &= ~(XSTATE_LWP_MASK >> 32);
}

bool x86_lwp_kvm_realize(X86CPU *cpu, Error **errp)
{
    CPUX86State *env = &cpu->env;
    bool enforce = cpu->enforce_cpuid;
    LwpCaps host;

    if (!(env->features[FEAT_8000_0001_ECX] & CPUID_EXT3_LWP)) {
        return true;
    }
    lwp_kvm_host_caps(&host);
    /* The feature bits went through QEMU's usual filtering already. */
    if (!(env->features[FEAT_XSAVE_XCR0_HI] & (XSTATE_LWP_MASK >> 32))) {
        if (enforce) {
            error_setg(errp, "host KVM does not support LWP state "
                       "(XCR0 bit 62): 'lwp' is unavailable");
            return false;
        }
        warn_report("host KVM does not support LWP state (XCR0 bit 62): "
                    "'lwp' disabled");
        lwp_kvm_drop(cpu);
        return true;
    }
    if (cpu->max_features) {
        /* -cpu host / max: the host's LWP, field for field. */
        cpu->lwp_cb_size = host.cb_size;
        cpu->lwp_event_size = host.event_size;
        cpu->lwp_max_events = host.max_events;
        cpu->lwp_event_offset = host.event_offset;
        cpu->lwp_latency_max = host.latency_max;
        cpu->lwp_latency_rnd = host.latency_rnd;
        cpu->lwp_version = host.version;
        cpu->lwp_min_buffer_size = host.min_buffer_size;
    }
    return true;
}

bool x86_lwp_kvm_check_caps(X86CPU *cpu, Error **errp)
{
    const char *missing;
    LwpCaps host;

    if (!(cpu->lwp_caps.features & LWP_FEAT_AVAIL)) {
        return true;
    }
    lwp_kvm_host_caps(&host);
    if (!lwp_caps_covers(&host, &cpu->lwp_caps, &missing)) {
        error_setg(errp, "host LWP cannot provide '%s' as this CPU model "
                   "requests it (use -cpu host, or set '%s' to the host's "
                   "value)", missing, missing);
        return false;
    }
    return true;
}
