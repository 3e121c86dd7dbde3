/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: entry points from QEMU's i386 target into the LWP glue.
 */
#ifndef QEMU_LWP_GLUE_H
#define QEMU_LWP_GLUE_H

/* CPUID Fn8000_001C for @env (all zero unless the CPU has LWP). */
void x86_lwp_cpuid(CPUX86State *env, uint32_t *eax, uint32_t *ebx,
                   uint32_t *ecx, uint32_t *edx);

#endif
