/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The LWPCB and event record of LWP version 1 as a user program sees them
 * (AMD pub. 43724, figure 6-1 and figure 2-1), for the test programs of
 * every suite (linux-user, system guests, the Linux guest, benchmarks):
 * three events (LwpCbSize 19 quadwords, LwpEventOffset 80h).
 */
#ifndef LWP_USER_ABI_H
#define LWP_USER_ABI_H

#include <stdint.h>

struct lwpcb {
    uint32_t flags, buffer_size;
    uint64_t buffer_base;
    uint32_t head, reserved0;
    uint64_t missed;
    uint32_t threshold, filters;
    uint64_t base_ip, limit_ip, reserved1;
    uint32_t tail, reserved2;
    uint64_t software[2];
    uint8_t reserved3[0x80 - 88];
    struct { uint32_t interval, counter; } event[3];
} __attribute__((packed, aligned(64)));

struct lwp_record {
    uint8_t event_id, core_id;
    uint16_t flags;
    uint32_t data1;
    uint64_t ip, data2, reserved;
} __attribute__((packed));

#endif
