/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: linux-user has no local APIC and its emulated OS never makes the
 * threshold interrupt available (LWP_CFG[31] stays 0), so nothing is sent.
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "lwp-irq.h"

void x86_lwp_raise_threshold_irq(CPUX86State *env, uint8_t vector)
{
}
