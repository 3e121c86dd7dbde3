/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: delivery of the LWP threshold interrupt (spec 8.5).
 */
#ifndef QEMU_LWP_IRQ_H
#define QEMU_LWP_IRQ_H

#ifdef CONFIG_USER_ONLY
/*
 * linux-user has no local APIC and its emulated OS never makes the
 * threshold interrupt available (LWP_CFG[31] stays 0): nothing is sent.
 */
static inline void x86_lwp_raise_threshold_irq(CPUX86State *env,
                                               uint8_t vector)
{
}
#else
/*
 * The threshold was met: deliver @vector now, or later in latitude mode
 * (lwp-latitude.c).
 */
void x86_lwp_raise_threshold_irq(CPUX86State *env, uint8_t vector);
/* Signal @vector on the local APIC of the CPU that owns @env (hw/intc/). */
void x86_lwp_deliver_threshold_irq(CPUX86State *env, uint8_t vector);
#endif

#endif
