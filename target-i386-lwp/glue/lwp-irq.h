/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: delivery of the LWP threshold interrupt (spec 8.5).
 */
#ifndef QEMU_LWP_IRQ_H
#define QEMU_LWP_IRQ_H

/* Signal @vector on the local APIC of the CPU that owns @env. */
void x86_lwp_raise_threshold_irq(CPUX86State *env, uint8_t vector);

#endif
