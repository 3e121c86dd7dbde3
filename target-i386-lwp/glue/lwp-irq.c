/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: the LWP threshold interrupt goes to the CPU's own local APIC as
 * a fixed, edge-triggered interrupt at the LWP_CFG vector.  It is separate
 * from the performance-counter LVT entry (spec 8.5) and addressed to no APIC
 * ID, so neither a rewritten xAPIC ID nor the broadcast ID can misroute it.
 * An illegal vector (0-15) is the APIC's error, not an interrupt.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "cpu.h"
#include "hw/i386/apic.h"
#include "hw/i386/apic_internal.h"
#include "lwp-irq.h"

void x86_lwp_raise_threshold_irq(CPUX86State *env, uint8_t vector)
{
    X86CPU *cpu = env_archcpu(env);
    bool locked = bql_locked();

    /* TCG uses QEMU's own local APIC model ("apic"; hw/intc/apic.c). */
    if (!cpu->apic_state || !object_dynamic_cast(OBJECT(cpu->apic_state), "apic")) {
        return;
    }
    if (!locked) {
        bql_lock();
    }
    if (vector < 16) {
        /*
         * Vectors 0-15 are illegal for a local APIC: it delivers nothing
         * and records "Receive Illegal Vector" in ESR (an interrupt it
         * generates itself counts as received).  Like QEMU's APIC model
         * for its other ESR errors, no LVT Error interrupt follows.
         */
        APIC_COMMON(cpu->apic_state)->esr |= APIC_ESR_RECV_ILLEGAL_VECT;
    } else {
        apic_raise_local_vector(cpu->apic_state, vector);
    }
    if (!locked) {
        bql_unlock();
    }
}
