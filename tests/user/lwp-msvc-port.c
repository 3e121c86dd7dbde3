/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A value-profiling program written against MSVC's LWP intrinsics
 * (<intrin.h>: __llwpcb, __slwpcb, __lwpval32, __lwpins32) and ported to
 * GCC's identical -mlwp intrinsics.  It samples the divisor of a division
 * every fourth time round a loop, marks the end with LWPINS, and prints the
 * ring buffer.  The output depends only on the architecture, so it is the
 * same on AMD family 15h hardware; lwp-msvc-port.expected was derived from
 * the specification by hand, not recorded from a run.
 */
#ifdef _MSC_VER
#include <intrin.h>
#define NOINLINE __declspec(noinline)
#define ALIGN64 __declspec(align(64))
#else
#include <x86intrin.h>
#define NOINLINE __attribute__((noinline))
#define ALIGN64 __attribute__((aligned(64)))
#endif
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#pragma pack(push, 1)
typedef struct {
    uint32_t Flags, BufferSize;
    uint64_t BufferBase;
    uint32_t BufferHeadOffset, Reserved0;
    uint64_t MissedEvents;
    uint32_t Threshold, Filters;
    uint64_t BaseIP, LimitIP, Reserved1;
    uint32_t BufferTailOffset, Reserved2;
    uint64_t Software[2];
    uint8_t Reserved3[0x80 - 88];
    struct { uint32_t Interval, Counter; } Event[3];
} LWPCB;

typedef struct {
    uint8_t EventId, CoreId;
    uint16_t Flags;
    uint32_t Data1;
    uint64_t InstructionAddress, Data2, Reserved;
} LWP_EVENT;
#pragma pack(pop)

static ALIGN64 LWPCB Lwpcb;
static ALIGN64 LWP_EVENT Ring[32];

#define LWPVAL32 __lwpval32
#define LWPINS32 __lwpins32
#include "../common/lwp-workload.h"

int main(void)
{
    memset(&Lwpcb, 0, sizeof(Lwpcb));
    Lwpcb.Flags = 1u << 1;                      /* LWPVAL */
    Lwpcb.BufferSize = sizeof(Ring);
    Lwpcb.BufferBase = (uintptr_t)Ring;
    Lwpcb.Event[0].Interval = 3;                /* every 4th sample */
    __llwpcb(&Lwpcb);

    unsigned sum = Workload(1000);
    volatile LWPCB *cb = (volatile LWPCB *)__slwpcb();
    uint32_t head = cb->BufferHeadOffset, tail = cb->BufferTailOffset;
    __llwpcb(0);

    printf("sum %u, missed %llu\n", sum, (unsigned long long)cb->MissedEvents);
    for (uint32_t off = tail; off != head; off = (off + 32) % sizeof(Ring)) {
        const LWP_EVENT *e = &Ring[off / 32];
        uintptr_t ip = (uintptr_t)e->InstructionAddress;
        printf(WORKLOAD_RECORD_FORMAT, e->EventId, e->Flags, e->Data1,
               (unsigned long long)e->Data2, WORKLOAD_IP_NAME(ip));
    }
    return 0;
}
