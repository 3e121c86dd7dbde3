/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: the LWP threshold interrupt goes to the CPU's own local APIC as
 * a fixed, edge-triggered interrupt at the LWP_CFG vector.  It is separate
 * from the performance-counter LVT entry (spec 8.5), so it is sent as a
 * self-directed MSI, which every local APIC model (userspace or in-kernel)
 * accepts.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "cpu.h"
#include "hw/i386/apic.h"
#include "hw/i386/apic_internal.h"
#include "hw/pci/msi.h"
#include "lwp-irq.h"

void x86_lwp_raise_threshold_irq(CPUX86State *env, uint8_t vector)
{
    X86CPU *cpu = env_archcpu(env);
    MSIMessage msg = {
        .address = APIC_DEFAULT_ADDRESS | (cpu->apic_id & 0xff) << 12,
        .data = vector,
    };
    bool locked = bql_locked();

    if (!cpu->apic_state) {
        return;
    }
    if (!locked) {
        bql_lock();
    }
    apic_get_class(NULL)->send_msi(&msg);
    if (!locked) {
        bql_unlock();
    }
}
