/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: latitude mode, the timing freedoms AMD pub. 43724 gives an LWP
 * implementation, taken on purpose and seeded (docs/lwp-latitude.rst).
 * Kept in X86CPU: the properties, and the state that a pending late event
 * needs across migration.
 */
#ifndef QEMU_LWP_LATITUDE_H
#define QEMU_LWP_LATITUDE_H

/*
 * "lwp-irq-delay" bound: one second of guest time at one instruction per
 * nanosecond, several scheduler time slices of a guest OS.
 */
#define LWP_LATITUDE_IRQ_DELAY_MAX 1000000000u

/*
 * "lwp-store-delay" bound: a record is stored at the latest at the end of
 * its translation block, at most 511 instructions after its own.
 */
#define LWP_LATITUDE_STORE_DELAY_MAX 511u

typedef struct QemuLwpLatitude {
    uint64_t seed;          /* "lwp-seed" */
    uint32_t irq_delay;     /* "lwp-irq-delay": latest delivery, instructions */
    uint32_t store_delay;   /* "lwp-store-delay": latest record store, insns */
    uint32_t tail_reread;   /* "lwp-tail-reread": 8.3's "every nth time" */
    bool interval_reread;   /* "lwp-interval-reread": draw live intervals */

    LwpLatitudeCfg model;   /* what the model is told, set at reset */

    uint64_t rng;           /* the draws' generator, seeded at reset */
    int64_t irq_deadline;   /* QEMU_CLOCK_VIRTUAL, while irq_pending */
    uint8_t irq_pending;
    uint8_t irq_vector;     /* LWP_CFG's vector when the threshold was met */
    QEMUTimer *irq_timer;   /* system mode only */
} QemuLwpLatitude;

#endif
