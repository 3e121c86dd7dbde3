/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: CPUID Fn8000_001C from the C++ capability model.
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "lwp/lwp-caps.h"
#include "lwp-qemu.h"

void x86_lwp_cpuid(CPUX86State *env, uint32_t *eax, uint32_t *ebx,
                   uint32_t *ecx, uint32_t *edx)
{
    LwpCaps caps = { 0 };
    LwpCpuidRegs regs;

    if (env->features[FEAT_8000_0001_ECX] & CPUID_EXT3_LWP) {
        lwp_caps_family15h(&caps);
    }
    /* LWP_CFG arrives with the MSR emulation; until then nothing is available. */
    lwp_cpuid_leaf(&caps, 0, env->xcr0 & (1ULL << 62), &regs);
    *eax = regs.eax;
    *ebx = regs.ebx;
    *ecx = regs.ecx;
    *edx = regs.edx;
}
